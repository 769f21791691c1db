"""Statement forms real data sets use: names (universes, guillemets), modifiers, tails, header, sorry.

Each case is real Lean 4 syntax; where the simulator reads the form, the final check
(leangym.soundness.verify) is run on it too.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from leangym.datasets import minif2f as minif2f_mod
from leangym.datasets.rows import DatasetError
from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy, verify
from leangym.lexer import strip_comments
from leangym.theorem import Theorem, TheoremError

SUFFIX = "_leangym_ab12"
BODY = "(p : Prop) (hp : p) : p := by sorry"  # proved by `exact hp`, on the simulator too


def checked(t: Theorem) -> Theorem:
    """The theorem as the final check declares it."""
    return t.renamed(t.check_name(SUFFIX))


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("stmt, decl, check, renamed", [
    ("theorem foo.{u} (α : Sort u) : True := by sorry", "foo", "foo_leangym_ab12",
     "theorem foo_leangym_ab12.{u} (α : Sort u) : True := by sorry"),
    ("theorem Nat.foo.{u, v} {α : Type u} {β : Type v} : True := by sorry", "Nat.foo", "Nat.foo_leangym_ab12",
     "theorem Nat.foo_leangym_ab12.{u, v} {α : Type u} {β : Type v} : True := by sorry"),
])
def test_universe_parameters_stay_after_the_name(stmt, decl, check, renamed):
    t = Theorem(stmt)
    assert t.name == t.decl_name == decl
    assert t.check_name(SUFFIX) == check
    assert checked(t).formal_statement == renamed


@pytest.mark.parametrize("stmt, decl, check", [
    ("theorem «my thm» : True := by sorry", "«my thm»", "«my thm_leangym_ab12»"),
    # Lean prints a name without guillemets when it needs none: that is what `#print axioms` shows
    ("theorem «foo» : True := by sorry", "«foo»", "foo_leangym_ab12"),
    ("theorem Foo.«my thm» : True := by sorry", "Foo.«my thm»", "Foo.«my thm_leangym_ab12»"),
    ("theorem «Foo».bar.{u} : True := by sorry", "«Foo».bar", "Foo.bar_leangym_ab12"),
    ("theorem «a -- b» : True := by sorry", "«a -- b»", "«a -- b_leangym_ab12»"),  # not a comment
])
def test_guillemet_names_are_renamed_inside_the_guillemets(stmt, decl, check):
    t = Theorem(stmt)
    assert t.decl_name == decl
    assert t.check_name(SUFFIX) == check
    r = checked(t)
    assert r.decl_name == check and r.formal_statement.startswith(f"theorem {check}")
    assert r.formal_statement.endswith(": True := by sorry")


def test_renamed_refuses_what_is_not_an_identifier():
    t = Theorem("theorem «foo» : True := by sorry")
    with pytest.raises(TheoremError, match=r"not a Lean identifier.*check_name"):
        t.renamed("«foo»_leangym_ab12")  # Lean reads the name `foo`, then a binder
    with pytest.raises(TheoremError, match="suffix"):
        t.check_name("_x.y")


@pytest.mark.parametrize("stmt, prefix", [
    ("/-- doc -/ theorem foo : True := by sorry", "/-- doc -/ theorem "),
    ("noncomputable theorem foo : True := by sorry", "noncomputable theorem "),
    ("nonrec theorem foo : True := by sorry", "nonrec theorem "),
    ('@[to_additive "text [x]"] theorem foo : True := by sorry', '@[to_additive "text [x]"] theorem '),
    ("@[aesop safe (rule_sets := [Foo])] protected theorem foo : True := by sorry",
     "@[aesop safe (rule_sets := [Foo])] protected theorem "),
    ("open Real in theorem foo : True := by sorry", "open Real in theorem "),
    ("set_option maxHeartbeats 400000 in\ntheorem foo : True := by sorry",
     "set_option maxHeartbeats 400000 in\ntheorem "),
    ("/-- A long\ntheorem about things -/\ntheorem foo : True := by sorry",
     "/-- A long\ntheorem about things -/\ntheorem "),
])
def test_modifiers_attributes_and_open_in_stay_in_front(stmt, prefix):
    t = Theorem(stmt)
    assert t.name == t.decl_name == "foo" and t.formal_statement == stmt
    r = checked(t)
    assert r.formal_statement == f"{prefix}foo_leangym_ab12 : True := by sorry"
    assert r.formal_statement.count("leangym") == 1


@pytest.mark.parametrize("stmt", [
    f"/-- doc -/ theorem t {BODY}",
    f"noncomputable theorem t {BODY}",
    f"open Real in theorem t {BODY}",
    f"theorem t {BODY[:-len(' := by sorry')]} := sorry",
])
def test_the_final_check_passes_on_these_forms(stmt):
    check = verify(LocalProcess(), Theorem(stmt), "exact hp", SoundnessPolicy())
    assert check.ok, check.error


# --------------------------------------------------------------------------- tails


@pytest.mark.parametrize("tail", [":= sorry", ":=\nsorry", ":=  sorry  \n", ":= by\n  sorry", ":= by"])
def test_term_mode_sorry_is_normalised(tail):
    t = Theorem(f"theorem putnam_x (n : ℕ) : n = n {tail}")
    assert t.formal_statement == "theorem putnam_x (n : ℕ) : n = n := by sorry"


def test_a_comment_after_sorry_does_not_swallow_the_proof():
    t = Theorem(f"theorem t {BODY} -- := by sorry")
    assert t.formal_statement == f"theorem t {BODY}"
    assert t.source_with_proof("exact hp").endswith(":= by\n  (\n    exact hp\n  )\n")
    assert verify(LocalProcess(), t, "exact hp", SoundnessPolicy()).ok


# --------------------------------------------------------------------------- header


def test_a_header_without_a_final_newline_is_not_glued_to_the_statement():
    t = Theorem(f"theorem t {BODY}", header="import Mathlib\nopen Real")
    assert t.preamble == "open Real\n"
    assert t.source_with_sorry == f"open Real\ntheorem t {BODY}"
    assert verify(LocalProcess(), t, "exact hp", SoundnessPolicy()).ok
    assert Theorem(f"theorem t {BODY}", header="import Mathlib").preamble == ""


# --------------------------------------------------------------------------- sorry


@pytest.mark.parametrize("stmt", [
    "theorem foo (h : sorry) : True := by sorry",
    "theorem foo : (sorry : Prop) := sorry",
    "theorem foo (h : (by admit : Prop)) : True := by sorry",
    "theorem foo (h : sorryAx Prop) : True := by sorry",
])
def test_sorry_in_the_statement_is_refused(stmt):
    with pytest.raises(TheoremError, match=r"statement contains '(sorry|admit|sorryAx)'.*final check"):
        Theorem(stmt)


def test_sorry_in_the_header_is_refused_with_a_hint():
    with pytest.raises(TheoremError, match=r"header contains 'sorry'.*fill in the solution first"):
        Theorem("theorem putnam_x : sol = 2 := by sorry", header="import Mathlib\nabbrev sol : ℕ := sorry\n")


@pytest.mark.parametrize("stmt, header", [
    ("theorem foo (sorry_free : True) (h : mysorry) : True := by sorry", ""),
    ('theorem foo (s : String) (h : s = "sorry") : True := by sorry', ""),
    ("theorem foo : True := by sorry", "-- the solution was `sorry` before\n/- sorry -/\nopen Real\n"),
])
def test_sorry_as_part_of_a_name_a_string_or_a_comment_is_fine(stmt, header):
    assert Theorem(stmt, header=header).decl_name == "foo"


# --------------------------------------------------------------------------- comments and strings


def test_strip_comments_knows_strings():
    src = 'theorem t (h : s = "a -- b /- c") : True := by sorry -- note\n/- x "-/ def'
    code = strip_comments(src)
    assert len(code) == len(src)
    assert code.startswith('theorem t (h : s = "a -- b /- c") : True := by sorry') and "note" not in code
    assert code.endswith("def") and "x" not in code[code.index("sorry"):]
    assert strip_comments(src, strings=True).startswith('theorem t (h : s = "           ") ')
    assert strip_comments(r'"a\"--b" -- c') == r'"a\"--b"     '
    assert strip_comments("f '\"' -- c") == "f '\"'     "  # a char literal does not open a string


# --------------------------------------------------------------------------- miniF2F


MINIF2F_HEADER = "import Mathlib\n\nset_option maxHeartbeats 0\n\nopen BigOperators Real Nat Topology Rat\n\n"
# Written for this test in miniF2F's shapes (not rows of the data set): its name families
# (mathd_*, amc12a_*, imo_*, aimeI_*, induction_*, long algebra_* names), one-line and
# multi-line statements, (h₀ : …) binders, Mathlib notation, and a line comment inside the
# binders that repeats the theorem's name (only the declaration may be renamed).
MINIF2F_SHAPED = [
    ("mathd_algebra_12", "theorem mathd_algebra_12 (x : ℝ) (h₀ : 2 * x + 3 = 7) : x = 2 := by sorry"),
    ("mathd_numbertheory_7", "theorem mathd_numbertheory_7 : 17 * 23 % 5 = 1 := by sorry"),
    ("amc12a_2003_p5", "theorem amc12a_2003_p5 (a b c : ℕ) (h₀ : a ≤ 9 ∧ b ≤ 9 ∧ c ≤ 9)\n"
                       "  (h₁ : 100 * a + 10 * b + c = 2 * (100 * c + 10 * b + a) + 1) :\n"
                       "  a + b + c = 10 := by sorry"),
    ("imo_1962_p2", "theorem imo_1962_p2 (x : ℝ) (h₀ : 0 ≤ 3 - x) (h₁ : 0 ≤ x + 1)\n"
                    "  (h₂ : 1 / 2 < Real.sqrt (3 - x) - Real.sqrt (x + 1)) :\n"
                    "  -1 ≤ x ∧ x < 1 - Real.sqrt 31 / 8 := by sorry"),
    ("aimeI_2001_p4", "theorem aimeI_2001_p4 (n : ℕ) (h₀ : 0 < n) (h₁ : n % 7 = 3) :\n  2 * n % 7 = 6 := by sorry"),
    ("induction_12dvd4expnp1p20", "theorem induction_12dvd4expnp1p20 (n : ℕ) : 12 ∣ 4 ^ (n + 1) + 20 := by sorry"),
    ("algebra_2varlineareq_xpyeq3_xmyeq1_xeq2",
     "theorem algebra_2varlineareq_xpyeq3_xmyeq1_xeq2 (x y : ℂ) (h₀ : x + y = 3)\n"
     "  (h₁ : x - y = 1) : x = 2 ∧ y = 1 := by sorry"),
    ("amc12b_2004_p9", "theorem amc12b_2004_p9 (S : Finset ℕ)\n"
                       "  -- amc12b_2004_p9 counts the n with n ^ 2 < 50\n"
                       "  (h₀ : ∀ n : ℕ, n ∈ S ↔ 0 < n ∧ n ^ 2 < 50) :\n"
                       "  S.card = 7 := by sorry"),
    ("numbertheory_sumkeq0to9_k", "theorem numbertheory_sumkeq0to9_k (s : ℕ) (h₀ : s = ∑ k in Finset.range 10, k) :\n"
                                  "  s = 45 := by sorry"),
]


def _minif2f_file(source: str, tmp_path: Path) -> Path:
    """The miniF2F-shaped fixture (written to ``tmp_path``), or the local miniF2F copy (skip if none)."""
    if source == "fixture":
        path = tmp_path / minif2f_mod.FILE_NAME
        rows = [{"name": name, "split": ("valid", "test")[i % 2], "header": MINIF2F_HEADER,
                 "formal_statement": stmt, "source_file": f"MiniF2F/{('Valid', 'Test')[i % 2]}/{name}.lean"}
                for i, (name, stmt) in enumerate(MINIF2F_SHAPED)]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return path
    try:
        path = minif2f_mod.local_copy()  # $LEANGYM_MINIF2F, else ../shared
    except DatasetError as e:  # a LEANGYM_MINIF2F naming nothing: skip, not fail (as in test_datasets.py)
        pytest.skip(str(e))
    if path is None:
        pytest.skip("no local miniF2F copy ($LEANGYM_MINIF2F unset, and no ../shared/data/minif2f)")
    if not path.is_file():
        pytest.skip(f"the local miniF2F copy {path} is a directory of .lean files, not JSONL rows")
    return path


@pytest.mark.parametrize("source", ["fixture", "local copy"])
def test_every_minif2f_statement_keeps_its_name_and_is_renamed_once(source, tmp_path):
    path = _minif2f_file(source, tmp_path)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    assert rows
    # the loader keeps every row, under its own name
    assert [t.name for t in minif2f_mod.load_minif2f(path)] == [row["name"] for row in rows]
    for row in rows:
        t = Theorem.from_row(row)
        assert t.name == t.decl_name == row["name"]
        assert t.formal_statement == row["formal_statement"].strip()  # already in normal form
        head = f"theorem {t.name}"
        assert t.formal_statement.startswith(head)
        assert checked(t).formal_statement == head + SUFFIX + t.formal_statement[len(head):]
