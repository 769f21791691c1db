"""The simulated Lean 4 kernel on whole commands and statements: #print axioms and axiom tracking,
command messages and positions, namespaces, nested `by`, check_proof, and the statements it rejects
(with Lean's text, or tagged as outside the simulated fragment)."""
from __future__ import annotations

import pytest

from leangym.sim import kernel
from leangym.sim.formula import is_tautology
from leangym.sim.kernel import check_proof, statement_formula
from leangym.sim.process import SimProcess

from test_sim_kernel import T_OR


# --------------------------------------------------------------------------- commands and axioms


def test_command_then_print_axioms():
    p = SimProcess()
    r = p.command("theorem t (p : Prop) : p → p := by\n  intro h\n  exact h")
    assert r["messages"] == [] and r["sorries"] == [] and isinstance(r["env"], int)
    r = p.command("#print axioms t")
    assert [m["data"] for m in r["messages"]] == ["'t' does not depend on any axioms"]
    assert r["messages"][0]["severity"] == "info"


def axioms_of(source: str, name: str = "t") -> str:
    p = SimProcess()
    r = p.command(source + f"\n#print axioms {name}")
    return r["messages"][-1]["data"]


def test_axiom_tracking():
    assert axioms_of("theorem t (p : Prop) : p ∨ ¬p := by\n  exact Classical.em p") == \
        "'t' depends on axioms: [propext, Classical.choice, Quot.sound]"
    assert axioms_of("theorem t : 2 + 2 = 4 := by norm_num") == "'t' depends on axioms: [propext]"
    assert axioms_of("theorem t : 2 + 2 = 4 := by decide") == "'t' does not depend on any axioms"
    assert axioms_of("theorem t : 2 + 2 = 4 := by rfl") == "'t' does not depend on any axioms"
    assert axioms_of("theorem t (p : Prop) : ¬¬p → p := by\n  intro h\n  by_contra hn\n  exact h hn") == \
        "'t' depends on axioms: [propext, Classical.choice, Quot.sound]"
    assert axioms_of("theorem t (p : Prop) : ¬p → ¬p := by\n  intro h\n  by_contra hn\n  exact h hn") == \
        "'t' does not depend on any axioms"
    assert axioms_of("axiom foo (p : Prop) : p\ntheorem t (q : Prop) : q := by exact foo q") == \
        "'t' depends on axioms: [foo]"
    assert axioms_of("theorem t (p : Prop) : p := by sorry") == "'t' depends on axioms: [sorryAx]"
    assert axioms_of("theorem s (p : Prop) : p ∨ ¬p := Classical.em p\ntheorem t (q : Prop) : q ∨ ¬q := by\n"
                     "  exact s q") == "'t' depends on axioms: [propext, Classical.choice, Quot.sound]"


def test_command_messages():
    p = SimProcess()
    r = p.command("theorem t (p q : Prop) (hp : p) : p ∧ q := by\n  constructor\n  exact hp")
    assert [m["severity"] for m in r["messages"]] == ["error"]
    m = r["messages"][0]
    assert m["data"] == "unsolved goals\ncase right\np q : Prop\nhp : p\n⊢ q"
    assert m["pos"] == {"line": 1, "column": 43}  # at `by`
    r = p.command("theorem u (p : Prop) : p := by\n  exact foo")
    assert r["messages"][0]["data"] == "(sim) unknown identifier 'foo': not in the simulated fragment (or not Lean)"
    assert r["messages"][0]["pos"] == {"line": 2, "column": 8}
    r = p.command("theorem v (p : Prop) : p := by\n  sorry")
    assert [m["data"] for m in r["messages"]] == ["declaration uses 'sorry'"]
    assert r["sorries"][0]["goal"] == "p : Prop\n⊢ p"
    # a bullet's error is recovered: the next bullet still runs and reports
    r = p.command("theorem w (p q : Prop) (hp : p) (hq : q) : p ∧ q := by\n  constructor\n  · exact hq\n  · exact hp")
    assert [m["data"].split("\n")[0] for m in r["messages"]] == ["type mismatch", "type mismatch"]
    r = p.command("theorem x : 1 = 1 := rfl\ntheorem x : 1 = 1 := rfl")
    assert r["messages"][-1]["data"] == "'x' has already been declared"
    r = p.command("theorem x : 2 = 2 := rfl")  # nor in a later command: the environment keeps x
    assert r["messages"][-1]["data"] == "'x' has already been declared"


def test_namespaces():
    p = SimProcess()
    r = p.command("namespace A.B\ntheorem t (p : Prop) (hp : p) : p := hp\n#print axioms t\nend A.B\n"
                  "#print axioms A.B.t\n#print axioms t")
    assert [m["data"] for m in r["messages"]] == ["'A.B.t' does not depend on any axioms",
                                                   "'A.B.t' does not depend on any axioms", "unknown constant 't'"]
    r = p.command("namespace A\ntheorem t : 1 = 1 := rfl\nend B")
    assert r["messages"][-1]["data"] == "invalid 'end', name mismatch (expected A)"
    assert p.command("end A")["messages"][-1]["data"] == "invalid 'end', insufficient scopes"
    assert p.command("# print axioms A.B.t")["messages"][-1]["severity"] == "error"  # `#print` is one token


def test_nested_by_and_show_from():
    p = SimProcess()
    src = ("theorem t (p q : Prop) (hp : p) (hpq : p → q) : q ∧ p := by\n"
           "  have hq : q := by\n"
           "    apply hpq\n"
           "    exact hp\n"
           "  exact ⟨hq, show p from hp⟩\n")
    assert p.command(src)["messages"] == []
    r = p.command("theorem u (p q : Prop) (hp : p) : q := by\n  have hq : q := by\n    exact hp\n  exact hq")
    assert r["messages"][0]["data"].startswith("type mismatch") and r["messages"][0]["pos"]["line"] == 3


def test_open_in_and_multiple_commands():
    p = SimProcess()
    src = ("import Mathlib\nopen Classical in\ntheorem a1 (p : Prop) : p ∨ ¬p := em p\n\n"
           "/-- doc -/\nlemma a2 (p : Prop) : ¬¬(p ∨ ¬p) := fun h => h (Or.inr fun hp => h (Or.inl hp))\n"
           "#print axioms a1\n#print axioms a2\n#print axioms nope")
    r = p.command(src)
    assert [m["data"] for m in r["messages"]] == [
        "'a1' depends on axioms: [propext, Classical.choice, Quot.sound]", "'a2' does not depend on any axioms",
        "unknown constant 'nope'"]


def test_timeout_in_command(monkeypatch):
    # the same step limit, reached sooner: the real budget (COMMAND_STEPS, 2 million steps) takes
    # about 1.5 s of `repeat skip` to run out
    monkeypatch.setattr(kernel, "COMMAND_STEPS", 20_000)
    r = SimProcess().command("theorem t (p : Prop) : p := by\n  repeat skip")
    m = r["messages"][0]
    assert m["severity"] == "error" and "maximum number of heartbeats" in m["data"], r
    assert m["data"] == kernel.HEARTBEATS


def test_recovery_is_off_inside_backtracking():
    p = SimProcess()
    src = ("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by\n"
           "  constructor\n"
           "  · first\n"
           "    | (· exact hq)\n"
           "    | exact hp\n"
           "  · try (· exact hp)\n"
           "    exact hq")
    assert p.command(src)["messages"] == []


def test_root_names_are_declared_and_printed_at_the_root():
    """As in Lean: `_root_.u` inside `namespace X` declares `u`, and `#print axioms` prints `u`."""
    from leangym.sim.local import LocalProcess

    out = LocalProcess().run_command("namespace X\ntheorem _root_.u (p : Prop) (hp : p) : p := by exact hp\n"
                                     "#print axioms _root_.u\nend X\n#print axioms u\n#print axioms X.u\n")
    assert [m.text for m in out.messages] == ["'u' does not depend on any axioms",
                                              "'u' does not depend on any axioms", "unknown constant 'X.u'"]


# --------------------------------------------------------------------------- check_proof


def test_check_proof_and_helpers():
    assert check_proof(T_OR, "intro h\nrcases h with h | h\n· exact Or.inr h\n· exact Or.inl h")
    assert not check_proof(T_OR, "intro h\nsorry")
    assert not check_proof(T_OR, "intro h\nexact h")
    assert not check_proof("theorem t : False := by sorry", "exact (by\n  · skip)")  # an error in a nested `by`
    f = statement_formula("theorem t (p q : Prop) (h : p) : q → p := by sorry")
    assert f == ("imp", ("var", "p"), ("imp", ("var", "q"), ("var", "p")))
    assert is_tautology(f)
    assert not is_tautology(statement_formula("theorem t (p q : Prop) : p → q := by sorry"))
    assert is_tautology(statement_formula("theorem t : 2 + 2 = 4 := by sorry"))


CHECKS = [
    ("theorem t (p q r : Prop) (h : p ∨ q) (hr : r) : r := by sorry", "have := Or.elim h (fun a => hr) (fun b => hr)\nexact this", True),
    ("theorem t (p : Prop) : p ∨ ¬p := by sorry", "exact (Classical.em p).elim Or.inl Or.inr", True),
    ("theorem t (p q : Prop) (hp : p) : p ∨ q := by sorry", "exact .inl hp", True),
    ("theorem t (p q : Prop) (hp : p) : p ∨ q := by sorry", "exact .inr hp", False),
    ("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry", "exact .intro hp hq", True),
    ("theorem t (p q : Prop) (hp : p) : p ∨ q := by sorry", "have h := Or.inl hp\nexact h", False),  # ?b unknown
    ("theorem t (p q : Prop) (h : p → q) (hp : p) : q := by sorry", "exact id h hp", True),
    ("theorem t (p q : Prop) (h : p → q) (hnq : ¬q) : ¬p := by sorry", "exact mt h", False),
    ("theorem t (p q : Prop) (h : p → q) : ¬q → ¬p := by sorry", "exact mt h", True),
    ("theorem t (p q : Prop) : p → q → p ∧ q := by sorry", "exact And.intro", True),
    ("theorem t (p q : Prop) : p → q → q ∧ p := by sorry", "exact And.intro", False),
    ("theorem t (p q : Prop) : p → q := by sorry", "exact fun h => h", False),
    ("theorem t (p q : Prop) (h : p ∧ q) : p := by sorry", "obtain ⟨-, hq⟩ := h\nexact h.1", False),
    ("theorem t (p : Prop) (hp : p) : p := by sorry", "first\n  | exact foo\n  | exact hp", True),
    ("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry", "constructor\ncase right => exact hq\ncase left => exact hp", True),
    ("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry", "constructor\nall_goals\n  first\n  | exact hp\n  | exact hq", True),
    ("theorem t : ¬ (1 = 2) := by sorry", "intro h\ncontradiction", True),
    ("theorem t : (5 : ℕ) - 7 = 0 ∧ 7 / 0 = 0 ∧ 7 % 0 = 7 := by sorry", "decide", True),
    ("theorem t : 2 ^ 10 = 1023 := by sorry", "norm_num", False),
    ("theorem t : 2 + 2 = 4 := by sorry", "exact Eq.refl 4", True),
    ("theorem t : 2 + 2 = 4 := by sorry", "exact Eq.refl 5", False),
    ("theorem t (p : Prop) (hp : p) : p := by sorry", "exact?", False),
    ("theorem t (p : Prop) : p := by sorry", "exact p", False),
]


@pytest.mark.parametrize("stmt,script,expected", CHECKS)
def test_check_proof_table(stmt, script, expected):
    assert check_proof(stmt, script) is expected


# --------------------------------------------------------------------------- statements outside the fragment


def test_bad_statements():
    p = SimProcess()
    assert p.proof_from_sorry("theorem t (p : Prop) : p := by exact foo")["error"]
    assert p.proof_from_sorry("theorem t (p : Prop) (h : p) : p := by exact h") == {"error": "No sorries found in theorem"}
    assert "unknown identifier 'x'" in p.proof_from_sorry("theorem t : x = 2 := by sorry")["error"]
    assert "(sim)" in p.proof_from_sorry("theorem t (x : ℤ) : x = x := by sorry")["error"]  # ℕ is supported
    assert "Neg ℕ" in p.proof_from_sorry("theorem t : -1 = 1 := by sorry")["error"]
    ok = p.proof_from_sorry("import Mathlib\nopen Nat\nset_option maxHeartbeats 400000\n\n"
                            "lemma foo (p : Prop) : p → p := by\n  sorry")
    assert ok["value"]["goals"][0]["type"] == "p → p"
    assert p.proof_from_sorry("example : (2 : ℕ) + 2 = 4 := by sorry")["value"]["goals"][0]["type"] == "2 + 2 = 4"


def test_deep_formula_does_not_crash():
    p = SimProcess()
    deep = "¬" * 3000 + "p"
    r = p.proof_from_sorry(f"theorem t (p : Prop) : {deep} := by sorry")
    assert r == {"error": "maximum recursion depth has been reached"}  # Lean's answer, not a crash
    # the process is still usable afterwards, and a moderately deep formula is fine
    r = p.proof_from_sorry("theorem t (p : Prop) : " + "¬" * 30 + "p := by sorry")
    assert r["value"]["goals"][0]["type"] == "¬" * 30 + "p"


@pytest.mark.parametrize("stmt,lean_text", [
    ("theorem t (x : ℕ → ℤ) (h : x 1 = 2) : x 1 = 2 := by sorry", "type expected, got\n  (ℕ : Type)"),
    ("theorem t (n : ℕ) (h : Nat.Prime n) : 2 ≤ n := by sorry", "unknown identifier 'Nat.Prime'"),
    ("theorem t (n : ℕ) : ∑ k in Finset.range n, k = n := by sorry", "unexpected character '∑'"),
    ("theorem t (x : ℕ) : -1 < (x : ℤ) := by sorry", "Neg ℕ"),  # ℤ in Lean: the sim's guess of ℕ is tagged
    # the statement is parsed whole before it is elaborated: `7!` is not blamed on the `7` before it
    ("theorem t : 7! % 23 = 3 := by sorry", "unexpected token '!'; expected ':='"),
    ("theorem t (n : ℕ) (h₀ : 3 ≤ n) : (n)! < n ^ (n - 1) := by sorry", "unexpected token '!'"),
])
def test_statements_outside_the_fragment_are_tagged(stmt, lean_text):
    """The sim cannot tell Lean it does not model (Mathlib's notation, types, constants) from text
    that is not Lean: such statement errors say so instead of reading as Lean's verdict."""
    err = SimProcess().proof_from_sorry(stmt)["error"]
    assert err.split(": ", 1)[1].startswith("(sim) ") and lean_text in err, err
    assert "not in the simulated fragment (or not Lean)" in err
    assert [m["data"] for m in SimProcess().command(stmt)["messages"]] == [err.split(": ", 1)[1]]


def test_statement_errors_the_sim_knows_keep_leans_text():
    p = SimProcess()
    assert p.proof_from_sorry("theorem t (n : ℕ) (h : Nat.Prime n) : 2 ≤ n := by sorry")["error"] == \
        "1:23: (sim) unknown identifier 'Nat.Prime': not in the simulated fragment (or not Lean)"
    # wrong in any Lean: a number or a proof used as a type, a numeral as a proposition, a cut-off text
    assert p.proof_from_sorry("theorem t (x : ℕ) (h : x) : True := by sorry")["error"] == "1:23: type expected, got\n  (x : ℕ)"
    assert p.proof_from_sorry("theorem t (p : Prop) (h : p) (g : h) : True := by sorry")["error"] == \
        "1:34: type expected, got\n  (h : p)"
    assert p.proof_from_sorry("theorem t : 2 := by sorry")["error"].startswith("1:12: failed to synthesize\n  OfNat Prop 2")
    assert p.proof_from_sorry("theorem t : True := by sorry /- ")["error"] == "1:32: unterminated comment"
    assert p.proof_from_sorry("theorem t (p : Prop) : p")["error"] == "1:24: unexpected end of input; expected ':='"
    # an axiom's type cut short by notation the sim lacks is not blamed on the part that was read
    assert p.command("axiom a : 7! = 2")["messages"][0]["data"].startswith("(sim) failed to synthesize\n  OfNat Prop 7")


MINIF2F_HEADER = "import Mathlib\n\nset_option maxHeartbeats 0\n\nopen BigOperators Real Nat Topology Rat\n\n"
# Written for this test in miniF2F's shapes (not rows of the data set): Lean 4 + Mathlib statements
# outside the simulated fragment (ℝ, ℂ, ℤ, casts to ℤ, ∑/∏ … in …, Finset, Nat.Prime, n !,
# Real.sqrt, functions ℕ → ℕ). Real Lean accepts each, so the simulator must reject each as its own
# limit. (Should the simulator come to read one, move it to MINIF2F_LIKE_IN_THE_FRAGMENT.)
MINIF2F_LIKE_OUTSIDE_THE_FRAGMENT = [
    ("mathd_algebra_101", "theorem mathd_algebra_101 (x : ℝ) (h₀ : 3 * x + 2 = 11) : x = 3 := by sorry"),
    ("mathd_numbertheory_102", "theorem mathd_numbertheory_102 : (∑ k in Finset.range 10, k) % 7 = 3 := by sorry"),
    ("amc12a_2001_p103", "theorem amc12a_2001_p103 (n : ℕ) (h₀ : Nat.Prime n) (h₁ : n ∣ 12) : n ≤ 3 := by sorry"),
    ("mathd_numbertheory_104", "theorem mathd_numbertheory_104 : 6 ! % 11 = 5 := by sorry"),
    ("imo_1961_p105", "theorem imo_1961_p105 (a : ℝ) (h₀ : 0 ≤ a) :\n  Real.sqrt (a ^ 2) = a := by sorry"),
    ("mathd_algebra_106", "theorem mathd_algebra_106 (x : ℕ) (h₀ : (x : ℤ) - 5 = -2) : x = 3 := by sorry"),
    ("aime_1990_p107", "theorem aime_1990_p107 (f : ℕ → ℕ) (h₀ : ∀ n, f (n + 1) = f n + 2) (h₁ : f 0 = 1) :\n"
                       "  f 10 = 21 := by sorry"),
    ("mathd_numbertheory_108", "theorem mathd_numbertheory_108 :\n"
                               "  Finset.card (Finset.filter (fun n => 3 ∣ n) (Finset.range 30)) = 10 := by sorry"),
    ("amc12b_2002_p109", "theorem amc12b_2002_p109 (a b : ℝ) (h₀ : 0 < a ∧ 0 < b)\n"
                         "  (h₁ : a + b = 10) (h₂ : a * b = 21) :\n"
                         "  a ^ 2 + b ^ 2 = 58 := by sorry"),
    ("induction_110", "theorem induction_110 (n : ℕ) (h₀ : 0 < n) :\n"
                      "  ∏ k in Finset.Icc 1 n, (1 + 1 / (k : ℚ)) = n + 1 := by sorry"),
    ("mathd_algebra_111", "theorem mathd_algebra_111 (z : ℂ) (h₀ : z = 1 + Complex.I) :\n"
                          "  z ^ 2 = 2 * Complex.I := by sorry"),
    ("numbertheory_112", "theorem numbertheory_112 (a : ℤ) (h₀ : a % 4 = 3) : a ^ 2 % 4 = 1 := by sorry"),
    ("mathd_numbertheory_113", "theorem mathd_numbertheory_113 (n : ℕ) (h₀ : 0 < n) : (n)! ∣ (n + 1)! := by sorry"),
]
# the same shapes inside the fragment: read, so a rejection above is not the header's or the layout's
MINIF2F_LIKE_IN_THE_FRAGMENT = [
    ("mathd_numbertheory_201", "theorem mathd_numbertheory_201 : (29 * 79 + 31 * 81) % 10 = 2 := by sorry"),
    ("mathd_numbertheory_202", "theorem mathd_numbertheory_202 (n : ℕ) (h₀ : n % 5 = 3) : 2 * n % 5 = 1 := by sorry"),
    ("mathd_algebra_203", "theorem mathd_algebra_203 (a b : ℕ) (h₀ : a + b = 10)\n"
                          "  (h₁ : a = b + 2) : a = 6 := by sorry"),
]


def _minif2f_rejections(source: str, tmp_path) -> dict[str, str]:
    """name -> the simulator's error, for each statement it rejects: of the miniF2F-like fixture
    (written to ``tmp_path``), or of the local miniF2F copy (skip if none)."""
    import json

    from leangym.datasets.minif2f import FILE_NAME, load_minif2f, local_copy
    from leangym.datasets.rows import DatasetError

    if source == "fixture":
        path = tmp_path / FILE_NAME
        rows = [{"name": name, "split": ("valid", "test")[i % 2], "header": MINIF2F_HEADER, "formal_statement": stmt}
                for i, (name, stmt) in enumerate(MINIF2F_LIKE_OUTSIDE_THE_FRAGMENT + MINIF2F_LIKE_IN_THE_FRAGMENT)]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    else:
        try:
            path = local_copy()  # $LEANGYM_MINIF2F, else ../shared
        except DatasetError as e:  # a LEANGYM_MINIF2F naming nothing: skip, not fail (as in test_datasets.py)
            pytest.skip(str(e))
        if path is None:
            pytest.skip("no local miniF2F copy")
    theorems = load_minif2f(path)
    if source == "fixture":
        assert len(theorems) == len(rows)
    p = SimProcess()
    return {t.name: e for t in theorems if (e := p.proof_from_sorry(t.source_with_sorry).get("error"))}


@pytest.mark.parametrize("source", ["fixture", "local copy"])
def test_minif2f_rejections_are_all_tagged(source, tmp_path):
    """Every miniF2F statement the sim rejects says that the rejection may be the sim's (its
    statements are Lean 4 + Mathlib, accepted by real Lean)."""
    errors = _minif2f_rejections(source, tmp_path)
    assert errors and all("(sim)" in e for e in errors.values()), \
        {name: e for name, e in errors.items() if "(sim)" not in e}
    if source == "fixture":  # the fixture's rejections are exactly the statements outside the fragment
        assert sorted(errors) == sorted(name for name, _ in MINIF2F_LIKE_OUTSIDE_THE_FRAGMENT), errors
