"""Free ℕ variables in the simulated kernel: statements, goal printing, omega/linarith/ring,
ℕ lemmas, and above all soundness (false statements are never proved).

Truth of a statement with ℕ variables is checked by brute force on a small grid
of values: it cannot prove a statement valid, but every statement a tactic
proves must survive it, and every statement listed as false here has a small
counterexample.
"""
from __future__ import annotations

import itertools
import json

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from leangym.sim import arith
from leangym.sim.formula import NAT, FragmentError, evaluate, show, term_closed
from leangym.sim.kernel import Kernel, check_proof, statement_formula, with_proof
from leangym.sim.lemmas import NAT_LEMMAS
from leangym.sim.local import LocalProcess
from leangym.sim.process import SimProcess
from leangym.session import ProofSession

DOC = "theorem t (a b : ℕ) : a + b = b + a := by sorry"
ALLOWED = {"propext", "Classical.choice", "Quot.sound"}
NEW_TACTICS = ["omega", "linarith", "ring", "ring_nf", "ring1"]
# every way the new machinery could be (mis)used to close a goal, alone or combined with old tactics
ATTACKS = NEW_TACTICS + [
    "by_contra h\nomega", "by_contra h\nlinarith", "exfalso\nomega", "exfalso\nlinarith", "intro h\nomega",
    "rfl", "decide", "simp", "norm_num", "assumption", "contradiction", "trivial", "constructor",
    "exact Nat.add_comm _ _", "exact Nat.mul_comm _ _", "exact add_comm _ _", "exact mul_comm _ _",
    "exact Nat.add_zero _", "exact Nat.zero_add _", "exact Nat.mul_one _", "exact Nat.one_mul _",
    "exact Nat.add_assoc _ _ _", "exact Nat.mul_assoc _ _ _", "exact Nat.le_refl _", "exact Nat.zero_le _",
    "apply Nat.le_refl", "exact rfl", "exact Eq.refl _", "linarith [Nat.zero_le a]",
    "first | omega | linarith | ring", "constructor <;> omega", "exact h", "exact Nat.le_trans h h",
    "exact Nat.le_of_lt h", "exact absurd h (Nat.lt_irrefl _)",
]


def grid_holds(stmt: str, size: int = 5) -> bool:
    """The statement (hypotheses → conclusion) holds for all variables in 0..size-1."""
    f = statement_formula(stmt)
    names = [h.name for h in _decl_hyps(stmt) if h.type == NAT]
    for values in itertools.product(range(size), repeat=len(names)):
        env = dict(zip(names, values))
        try:
            if not evaluate(_subst(f, env), {}):
                return False
        except FragmentError:
            return False  # cannot decide: treat as not known to hold
    return True


def _decl_hyps(stmt: str):
    _, sorries = Kernel().run_command(stmt, declare=False)
    return sorries[0][0].hyps


def _subst_term(t, env):
    if t[0] == "nvar":
        return ("num", env[t[1]])
    if t[0] == "op":
        return ("op", t[1], _subst_term(t[2], env), _subst_term(t[3], env))
    return t


def _subst(f, env):
    k = f[0]
    if k == "rel":
        return ("rel", f[1], _subst_term(f[2], env), _subst_term(f[3], env))
    if k in ("not", "and", "or", "imp", "iff"):
        return (k,) + tuple(_subst(x, env) for x in f[1:])
    return f


def axioms_of(stmt: str, script: str) -> tuple[list, list]:
    """(errors, axioms) of the assembled proof followed by `#print axioms t`."""
    messages, _ = Kernel().run_command(with_proof(stmt, script) + "\n#print axioms t\n")
    errors = [m["data"] for m in messages if m["severity"] == "error" or "sorry" in m["data"]]
    infos = [m["data"] for m in messages if m["severity"] == "info"]
    assert len(infos) == 1, messages
    if "does not depend on any axioms" in infos[0]:
        return errors, []
    return errors, infos[0].split("[", 1)[1].rstrip("]").split(", ")


# ----------------------------------------------------------------------------- the doc example


def test_doc_example_states_and_prints_like_lean():
    session = ProofSession(LocalProcess(), DOC)
    assert session.root.text == "a b : ℕ\n⊢ a + b = b + a"


@pytest.mark.parametrize("script", ["omega", "ring", "linarith", "exact Nat.add_comm a b", "exact Nat.add_comm _ _",
                                    "exact add_comm a b", "ring_nf", "apply Nat.add_comm"])
def test_doc_example_proofs(script):
    assert check_proof(DOC, script)
    session = ProofSession(LocalProcess(), DOC)
    result = session.apply(session.root, script)
    assert result.ok and result.states == ()
    v = session.verify(script)
    assert v.ok, v.error
    assert set(v.axioms) <= ALLOWED
    errors, axioms = axioms_of(DOC, script)
    assert errors == [] and set(axioms) <= ALLOWED


def test_axioms_reported():
    assert axioms_of(DOC, "omega") == ([], ["propext"])
    assert axioms_of(DOC, "exact Nat.add_comm a b") == ([], [])
    for script in ("linarith", "ring"):
        errors, axioms = axioms_of(DOC, script)
        assert errors == [] and axioms and set(axioms) <= ALLOWED


def test_doc_example_wrong_proofs_fail_with_lean_messages():
    p = SimProcess()
    root = p.proof_from_sorry(DOC)["value"]["proof_state_id"]

    def err(tactic):
        reply = p.try_apply_tactic(root, tactic)
        assert "error" in reply, (tactic, reply)
        return reply["error"]

    assert "type mismatch\\n  Nat.add_comm b a\\nhas type\\n  b + a = a + b : Prop" in err("exact Nat.add_comm b a")
    assert "expected type must not contain free variables" in err("decide")
    assert "The rfl tactic failed" not in err("rfl") and "tactic 'rfl' failed" in err("rfl")
    assert "needs its explicit ℕ argument" in err("exact Nat.add_comm")
    assert "type mismatch\\n  a\\nhas type\\n  ℕ : Type" in err("exact a")


# ----------------------------------------------------------------------------- statements and goals


def test_goal_printing_groups_nat_variables():
    p = SimProcess()
    goal = lambda s: p.proof_from_sorry(s)["value"]["goals"][0]  # noqa: E731
    g = goal("theorem t (a b : ℕ) (h : a < b) (n : Nat) : a * (b + n) ≥ 2 ^ n - 1 := by sorry")
    assert [h["user_name"] for h in g["hypotheses"]] == ["a", "b", "h", "n"]
    assert [h["type"] for h in g["hypotheses"]] == ["ℕ", "ℕ", "a < b", "ℕ"]
    assert g["type"] == "a * (b + n) ≥ 2 ^ n - 1"
    s = ProofSession(LocalProcess(), "theorem t (a b : ℕ) (h : a < b) (n : Nat) : a + n < b + n := by sorry")
    assert s.root.text == "a b : ℕ\nh : a < b\nn : ℕ\n⊢ a + n < b + n"
    # closed subterms are printed as written
    s = ProofSession(LocalProcess(), "theorem t (a : ℕ) : a + (2 + 3) = 5 + a := by sorry")
    assert s.root.text == "a : ℕ\n⊢ a + (2 + 3) = 5 + a"


def test_shadowing_an_nat_variable_prints_dagger():
    s = ProofSession(LocalProcess(), "theorem t (a : ℕ) : a = 0 → a + 1 = 1 := by sorry")
    r = s.apply(s.root, "intro a")
    assert r.ok and r.states[0].text == "a✝ : ℕ\na : a✝ = 0\n⊢ a✝ + 1 = 1"
    assert s.apply(r.states[0], "omega").ok


def test_other_binder_types_and_quantifiers_stay_outside():
    p = SimProcess()
    for stmt, what in [("theorem t (x : ℤ) : x = x := by sorry", "variables of type ℤ"),
                       ("theorem t (x : ℝ) : x = x := by sorry", "variables of type ℝ"),
                       ("theorem t (a : ℕ) : ∀ n : ℕ, n + a = a + n := by sorry", "quantifiers"),
                       ("theorem t : ∃ n : ℕ, n = 1 := by sorry", "quantifiers"),
                       ("theorem t (a : ℕ) (a : ℕ) : a = a := by sorry", "reusing the name 'a'")]:
        err = p.proof_from_sorry(stmt)["error"]
        assert "(sim)" in err and what in err, err


def test_prop_machinery_on_nat_atoms():
    cases = [
        ("theorem t (a b : ℕ) (h : a < b) : a < b ∧ a < b := by sorry", "constructor <;> assumption"),
        ("theorem t (a b : ℕ) (h : a < b ∨ b < a) : b < a ∨ a < b := by sorry",
         "rcases h with h | h\n· exact Or.inr h\n· exact Or.inl h"),
        ("theorem t (a b : ℕ) (h : a < b) : a + 1 ≤ b := by sorry", "exact h"),  # Nat.lt is n+1 ≤ m
        ("theorem t (a b : ℕ) (h : a < b) : b > a := by sorry", "exact h"),
        ("theorem t (a b : ℕ) (h : a ≠ b) (h' : a = b) : False := by sorry", "exact h h'"),
        ("theorem t (a b : ℕ) : a ≤ b → a ≤ b := by sorry", "intro h\nexact h"),
        ("theorem t (a : ℕ) : a + (2 + 3) = a + 5 := by sorry", "rfl"),
        ("theorem t (a : ℕ) : a * 2 = a * 2 := by sorry", "simp"),
        ("theorem t (a : ℕ) : a ≤ a := by sorry", "exact Nat.le_refl a"),
        ("theorem t (a b c : ℕ) (h₁ : a ≤ b) (h₂ : b ≤ c) : a ≤ c := by sorry", "exact Nat.le_trans h₁ h₂"),
        ("theorem t (a : ℕ) : a + 0 = a := by sorry", "exact Nat.add_zero a"),
        ("theorem t (a b c : ℕ) : a + b + c = a + (b + c) := by sorry", "exact Nat.add_assoc a b c"),
        ("theorem t (a b : ℕ) : a * b = b * a := by sorry", "exact mul_comm a b"),
        ("theorem t (a : ℕ) (h : a < 3) : a < 5 := by sorry", "have h2 : a < 4 := by omega\nomega"),
        ("theorem t (a b : ℕ) : a = b ∨ a ≠ b := by sorry", "by_cases h : a = b\n· left; exact h\n· right; exact h"),
    ]
    for stmt, script in cases:
        assert check_proof(stmt, script), (stmt, script)


def test_user_theorems_with_nat_binders_are_reusable():
    k = Kernel()
    src = ("theorem lt_succ' (a : ℕ) : a < a + 1 := by omega\n\n"
           "theorem u (x y : ℕ) : x + y < x + y + 1 := by\n  exact lt_succ' (x + y)\n\n"
           "theorem v (x : ℕ) : x < x + 2 := by\n  exact lt_succ' x\n")
    messages, _ = k.run_command(src)
    errors = [m for m in messages if m["severity"] == "error"]
    assert len(errors) == 1 and errors[0]["pos"]["line"] == 7, messages  # only `v` is wrong


def test_clear_and_cases_respect_nat_variables():
    p = SimProcess()
    root = p.proof_from_sorry("theorem t (a b : ℕ) (h : a < b) : b > 0 := by sorry")["value"]["proof_state_id"]
    assert "depends on" in p.try_apply_tactic(root, "clear a")["error"]
    assert "(sim)" in p.try_apply_tactic(root, "cases a")["error"]
    ok = p.try_apply_tactic(root, "clear h")
    assert ok["value"][0]["goals"][0]["hypotheses"] == [{"user_name": "a", "type": "ℕ"}, {"user_name": "b", "type": "ℕ"}]


# ----------------------------------------------------------------------------- the arithmetic tactics


TRUE_FACTS = [
    ("theorem t (a b : ℕ) (h : a < b) : a + 1 ≤ b := by sorry", ["omega", "linarith"]),
    ("theorem t (a b c : ℕ) (h₁ : a ≤ b) (h₂ : b ≤ c) : a ≤ c := by sorry", ["omega", "linarith"]),
    ("theorem t (a : ℕ) (h : a ≠ 0) : 0 < a := by sorry", ["omega"]),
    ("theorem t (a b : ℕ) (h₁ : a < b) (h₂ : b < a) : False := by sorry", ["omega", "linarith"]),
    ("theorem t (a : ℕ) (h : a + 1 ≤ 0) : False := by sorry", ["omega", "linarith"]),
    ("theorem t (a b : ℕ) (h₁ : a < b) (h₂ : b < a) : 1 = 2 := by sorry", ["omega", "linarith"]),
    ("theorem t (a : ℕ) (h : 3 * a + 1 = 7) : a = 2 := by sorry", ["omega", "linarith"]),
    ("theorem t (a : ℕ) : 2 * a ≠ 1 := by sorry", ["omega"]),  # needs integer reasoning
    ("theorem t (a b : ℕ) (h : a ≤ b ∧ b ≤ a) : a = b := by sorry", ["omega"]),
    ("theorem t (a b : ℕ) : a * b + 1 > a * b := by sorry", ["omega", "linarith"]),
    ("theorem t (a b : ℕ) (h : ¬ a < b) : b ≤ a := by sorry", ["omega", "linarith"]),
    ("theorem t (a b : ℕ) (h : a < b) : ¬ b ≤ a := by sorry", ["omega", "linarith"]),
    ("theorem t (a : ℕ) (h : a ≤ 2) (h' : a ≠ 0) (h'' : a ≠ 1) : a = 2 := by sorry", ["omega"]),
    ("theorem t (a : ℕ) : a + (10 - 3) = 7 + a := by sorry", ["omega", "linarith", "ring"]),
    ("theorem t (a : ℕ) (h : a > 0) : a ^ 1 ≥ 1 := by sorry", ["omega", "linarith"]),
    ("theorem t (a b : ℕ) : (a + b) * (a + b) = a * a + 2 * a * b + b * b := by sorry", ["ring", "ring_nf"]),
    ("theorem t (a b : ℕ) : (a + b) ^ 2 = a ^ 2 + 2 * a * b + b ^ 2 := by sorry", ["ring"]),
    ("theorem t (a b c : ℕ) : a * (b + c) = c * a + a * b := by sorry", ["ring"]),
    ("theorem t (a : ℕ) : (a + 1) ^ 3 = a ^ 3 + 3 * a ^ 2 + 3 * a + 1 := by sorry", ["ring"]),
    ("theorem t (a : ℕ) : a * 0 + (5 - 7) * a = 0 := by sorry", ["ring"]),
    # ℕ subtraction: omega splits `a - b` into `b ≤ a ∧ x + b = a` or `a < b ∧ x = 0`
    ("theorem t (a b : ℕ) (h : b ≤ a) : a - b + b = a := by sorry", ["omega"]),
    ("theorem t (a b : ℕ) : a - b ≤ a := by sorry", ["omega"]),
    ("theorem t (a b : ℕ) (h : a < b) : a - b = 0 := by sorry", ["omega"]),
    ("theorem t (a b c : ℕ) : a - b - c = a - (b + c) := by sorry", ["omega"]),
    ("theorem t (a : ℕ) (h : 0 < a) : a - 1 < a := by sorry", ["omega"]),
]


@pytest.mark.parametrize("stmt,scripts", TRUE_FACTS)
def test_true_facts_are_proved(stmt, scripts):
    assert grid_holds(stmt)
    for script in scripts:
        assert check_proof(stmt, script), (stmt, script)


FALSE_STATEMENTS = [
    "theorem t (a : ℕ) : a + 1 = a := by sorry",
    "theorem t (a : ℕ) : a < a := by sorry",
    "theorem t (a : ℕ) : 2 * a = 1 := by sorry",
    "theorem t (a b : ℕ) : a - b + b = a := by sorry",
    "theorem t (a b : ℕ) : a * b = a := by sorry",
    "theorem t (a b : ℕ) (h : a ≤ b) : b ≤ a := by sorry",
    "theorem t (a : ℕ) : a ≤ 0 := by sorry",
    "theorem t (a b : ℕ) (h : a < b) : b < a + 1 := by sorry",
    "theorem t (a b : ℕ) : (a + b) ^ 2 = a ^ 2 + b ^ 2 := by sorry",
    "theorem t (a b : ℕ) : a + b = a := by sorry",
    "theorem t (a b : ℕ) (h : a ≠ b) : a < b := by sorry",
    "theorem t (a : ℕ) : a ≠ 0 := by sorry",
    "theorem t (a : ℕ) (h : a ≤ 2) : a = 2 := by sorry",
    "theorem t (a b : ℕ) : a - b = b - a := by sorry",
    "theorem t (a b : ℕ) : (a - b) + (b - a) = 0 := by sorry",
    "theorem t (a : ℕ) : a / 2 * 2 = a := by sorry",
    "theorem t (a : ℕ) : a % 2 = 0 := by sorry",
    "theorem t (a : ℕ) (h : a * a = 4) : a = 3 := by sorry",
    "theorem t (a b : ℕ) : a * b = b * a + 1 := by sorry",
    "theorem t (a b : ℕ) (h : a ≤ b) : a < b := by sorry",
    "theorem t (a b : ℕ) (h : a ≤ b) : False := by sorry",
    "theorem t (a b : ℕ) (h : a ≠ b) : a + 1 ≠ b := by sorry",
    "theorem t (a : ℕ) : 0 < a := by sorry",
    "theorem t (a b : ℕ) : a < b ∨ b < a := by sorry",
    "theorem t (a : ℕ) : a + 0 = a + 1 := by sorry",
    "theorem t (a b : ℕ) : a * 2 = b * 2 := by sorry",
    "theorem t (a b : ℕ) (h : a + b = 0) : a = 1 := by sorry",
    "theorem t (a : ℕ) : a - 1 < a := by sorry",
    "theorem t (a b : ℕ) : a - b + b = b := by sorry",
    "theorem t (a b c : ℕ) : a - (b - c) = a - b + c := by sorry",
    "theorem t (a b : ℕ) (h : b ≤ a) : a - b = b - a := by sorry",
]


@pytest.mark.parametrize("stmt", FALSE_STATEMENTS)
def test_false_statements_are_never_proved(stmt):
    assert not grid_holds(stmt)  # a counterexample exists
    for script in ATTACKS:
        assert not check_proof(stmt, script), (stmt, script)
    # the control: with its conclusion assumed, the same statement is proved by an attack, so the
    # kernel reads it and the attacks fail for want of truth (a kernel that proved nothing would pass)
    control = assuming_the_conclusion(stmt)
    assert any(check_proof(control, script) for script in ATTACKS), control


def assuming_the_conclusion(stmt: str) -> str:
    """``theorem t (xs) : C := by sorry`` -> ``theorem t (xs) (hc : C) : C := by sorry``."""
    head, conclusion = stmt.removesuffix(" := by sorry").rsplit(") : ", 1)
    return f"{head}) (hc : {conclusion}) : {conclusion} := by sorry"


def test_failure_messages():
    p = SimProcess()

    def err(stmt, tactic):
        p.reset()  # a start declares `t` on the process, as LeanTree's does
        root = p.proof_from_sorry(stmt)["value"]["proof_state_id"]
        reply = p.try_apply_tactic(root, tactic)
        assert "error" in reply, reply
        return json.loads(reply["error"].split(": ", 1)[1])[0]["data"]

    assert "omega could not prove the goal" in err("theorem t (a : ℕ) : a + 1 = a := by sorry", "omega")
    assert "omega could not prove" in err("theorem t (a b : ℕ) : a - b + b = a := by sorry", "omega")
    assert "division" in err("theorem t (a b : ℕ) : a / b * b ≤ a := by sorry", "omega")
    assert "subtraction" in err("theorem t (a b : ℕ) (h : b ≤ a) : a - b + b = a := by sorry", "linarith")
    assert "linarith failed to find a contradiction" in err("theorem t (a : ℕ) : a < a := by sorry", "linarith")
    assert "ring failed" in err("theorem t (a b : ℕ) : (a + b)^2 = a^2 + b^2 := by sorry", "ring")
    assert "ring failed" in err("theorem t (a b : ℕ) : a - b + b = a := by sorry", "ring")
    assert "not an equality" in err("theorem t (a b : ℕ) : a ≤ a + b := by sorry", "ring")
    assert err("theorem t (p : Prop) (hp : p) : False := by sorry", "omega") == \
        "omega could not prove the goal:\nNo usable constraints found for the hypotheses and goal."
    assert err("theorem t (p : Prop) (hp : p) : 1 = 2 ∨ p := by sorry", "omega").startswith(
        "omega could not prove the goal:\n(sim) the goal is not a linear arithmetic comparison")
    assert "(sim)" in err("theorem t (a : ℕ) : a = a := by sorry", "ring_nf at h")


def test_linarith_extra_terms():
    stmt = "theorem t (a b : ℕ) (h : a ≤ b) : a ≤ b + 1 := by sorry"
    assert check_proof(stmt, "linarith [h]")
    assert check_proof(stmt, "linarith [Nat.zero_le a]")


# ----------------------------------------------------------------------------- random soundness


VARS = ("a", "b", "c")
terms = st.recursive(
    st.one_of(st.sampled_from(VARS), st.integers(0, 3).map(str)),
    lambda sub: st.tuples(sub, st.sampled_from(["+", "*", "-", "+", "*"]), sub).map(lambda x: f"({x[0]} {x[1]} {x[2]})"),
    max_leaves=4,
)
rels = st.tuples(terms, st.sampled_from(["=", "≠", "<", "≤", ">", "≥"]), terms).map(lambda x: f"{x[0]} {x[1]} {x[2]}")
RANDOM_SCRIPTS = ["omega", "linarith", "ring", "by_contra h\nomega", "exact h0", "rfl", "simp", "assumption",
                  "exact Nat.add_comm _ _", "exact Nat.le_refl _", "linarith [h0]", "exfalso\nomega"]


# (hyps, target) true statements, with a script of RANDOM_SCRIPTS that proves each: the property
# below runs them first and must see them proved
PROVED_EXAMPLES = [
    ((), "(a + b) = (b + a)", "ring"),
    (("a ≤ b",), "a ≤ (b + 1)", "omega"),
    (("(a * 2) < b", "b ≤ 3"), "a ≤ 1", "linarith"),
    (("a = (b + 1)",), "a = (b + 1)", "exact h0"),
]


def check_proved_only_if_true(props, scripts, examples, variables: str, grid: int, min_drawn: int) -> None:
    """A random statement over ``variables`` is proved by one of ``scripts`` only if it holds on a grid
    of values. Not vacuous: each of ``examples`` (hypotheses, target, script) must be proved by its
    script, and at least ``min_drawn`` drawn statements too (a kernel that proved nothing would pass
    the property alone)."""
    proved = []

    def check(hyps, target):
        binders = "".join(f" (h{i} : {h})" for i, h in enumerate(hyps))
        stmt = f"theorem t ({variables} : ℕ){binders} : {target} := by sorry"
        for script in scripts:
            if check_proof(stmt, script):
                assert grid_holds(stmt, size=grid), (stmt, script)
                proved.append((tuple(hyps), target, script))

    for hyps, target, _ in examples:
        check = example(list(hyps), target)(check)
    check = given(st.lists(props, max_size=2), props)(check)
    settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])(check)()
    assert all(e in proved for e in examples), [e for e in examples if e not in proved]
    drawn = [p for p in proved if p[:2] not in [e[:2] for e in examples]]
    assert len(drawn) >= min_drawn, len(drawn)


def test_random_statements_proved_only_if_true():
    check_proved_only_if_true(rels, RANDOM_SCRIPTS, PROVED_EXAMPLES, "a b c", grid=6, min_drawn=50)  # 190 at writing


def test_fourier_motzkin_core():
    a, b = ("nvar", "a"), ("nvar", "b")
    one = ("num", 1)
    # a < b, b < a: infeasible; a < b alone: feasible
    assert arith.refute([("<", a, b), ("<", b, a)], tighten=False)
    assert not arith.refute([("<", a, b)], tighten=False)
    # 2a = 1: feasible over ℚ (linarith), infeasible over ℕ (omega's tightening)
    two_a = ("op", "*", ("num", 2), a)
    assert not arith.refute([("=", two_a, one)], tighten=False)
    assert arith.refute([("=", two_a, one)], tighten=True)
    with pytest.raises(arith.Unsupported):
        arith.linear(("op", "-", a, b))
    assert arith.linear(("op", "-", ("num", 5), ("num", 7))) == ({}, 0)  # closed: ℕ truncation
    assert arith.ring_equal(("op", "*", a, b), ("op", "*", b, a))
    assert not arith.ring_equal(("op", "^", ("op", "+", a, b), ("num", 2)),
                                ("op", "+", ("op", "^", a, ("num", 2)), ("op", "^", b, ("num", 2))))
    assert term_closed(("op", "+", one, one)) and not term_closed(("op", "+", a, one))
    assert show(("rel", "<", ("op", "*", a, ("op", "+", b, one)), one)) == "a * (b + 1) < 1"


# ----------------------------------------------------------------------------- the environment


def test_env_end_to_end(sim_server):
    srv = sim_server()
    env = gym.make("LeanProof-v0", theorem=DOC, server=srv.url)
    obs, info = env.reset()
    assert obs == "a b : ℕ\n⊢ a + b = b + a"
    obs, reward, terminated, truncated, info = env.step("omega")
    assert (obs, reward, terminated, truncated) == ("no goals", 1.0, True, False)
    assert info["proof"] == "theorem t (a b : ℕ) : a + b = b + a := by\n  (\n    omega\n  )\n"
    env.close()


def test_env_rejects_false_nat_statement(sim_server):
    srv = sim_server()
    env = gym.make("LeanProof-v0", theorem="theorem t (a : ℕ) : a + 1 = a := by sorry", server=srv.url)
    obs0, _ = env.reset()
    for tactic in ("omega", "linarith", "ring"):
        obs, reward, terminated, truncated, info = env.step(tactic)
        assert obs == obs0 and reward <= 0.0 and not terminated
    env.close()


def test_nat_lemma_schemas_are_true():
    """Every ℕ lemma the kernel trusts holds on a grid (premises true ⇒ conclusion true)."""
    from leangym.sim.unify import instantiate

    for name, binders, result in NAT_LEMMAS:
        idx = [b[3] for b in binders if b[0] == "N"]
        premises = [b[2] for b in binders if b[0] == "H"]
        for values in itertools.product(range(5), repeat=len(idx)):
            sub = {i: ("num", v) for i, v in zip(idx, values)}
            if all(evaluate(instantiate(p, sub), {}) for p in premises):
                assert evaluate(instantiate(result, sub), {}), (name, values)
