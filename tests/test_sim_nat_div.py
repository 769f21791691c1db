"""ℕ division, modulo and divisibility in the simulated kernel: ``e / k``, ``e % k``,
``k ∣ e`` (U+2223) for numerals ``k``, as Lean 4's ``omega`` models them, and
soundness above all (false statements are never proved, by any tactic).

Same style as ``test_sim_nat.py``: truth on a small grid of values is a
necessary condition for every statement a tactic proves, and every statement
listed as false has an explicit small counterexample.
"""
from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from leangym.sim import arith, divmod
from leangym.sim.formula import eval_rel, eval_term, evaluate, show
from leangym.sim.kernel import check_proof, statement_formula
from leangym.sim.local import LocalProcess
from leangym.sim.process import SimProcess
from leangym.session import ProofSession
from test_sim_nat import (ALLOWED, ATTACKS, _subst, assuming_the_conclusion, axioms_of, check_proved_only_if_true,
                          grid_holds)

n, a, b = ("nvar", "n"), ("nvar", "a"), ("nvar", "b")


def num(v):
    return ("num", v)


def holds_at(stmt: str, env: dict) -> bool:
    """The statement (hypotheses → conclusion) at one assignment of its ℕ variables."""
    return evaluate(_subst(statement_formula(stmt), env), {})


# ----------------------------------------------------------------------------- semantics and printing


def test_lean_semantics_of_closed_division_modulo_divisibility():
    assert eval_term(("op", "/", num(7), num(0))) == 0  # Lean: x / 0 = 0
    assert eval_term(("op", "%", num(7), num(0))) == 7  # Lean: x % 0 = x
    assert eval_rel("∣", 3, 12) and not eval_rel("∣", 5, 12)
    assert eval_rel("∣", 0, 0) and not eval_rel("∣", 0, 5)  # 0 ∣ x ↔ x = 0
    assert eval_rel("∣", 1, 7) and eval_rel("∣", 7, 0)


def test_divisibility_prints_like_lean():
    # `∣` is `infix:50`, like `=`: its operands need precedence 51, so sums and products go bare
    assert show(("rel", "∣", num(7), n)) == "7 ∣ n"
    cube = ("op", "+", ("op", "^", n, num(3)), ("op", "*", num(2), n))
    assert show(("rel", "∣", num(3), cube)) == "3 ∣ n ^ 3 + 2 * n"
    assert show(("not", ("rel", "∣", num(3), n))) == "¬3 ∣ n"
    assert show(("and", ("rel", "∣", num(2), n), ("rel", "<", n, num(5)))) == "2 ∣ n ∧ n < 5"
    assert show(("imp", ("rel", "∣", num(2), n), ("rel", "∣", num(4), ("op", "*", num(2), n)))) == "2 ∣ n → 4 ∣ 2 * n"


def test_goal_printing():
    s = ProofSession(LocalProcess(), "theorem t (n : ℕ) (h₁ : 3 ∣ n) : ((n + 4) + (n + 6) + (n + 8)) % 9 = 0 := by sorry")
    assert s.root.text == "n : ℕ\nh₁ : 3 ∣ n\n⊢ (n + 4 + (n + 6) + (n + 8)) % 9 = 0"
    s = ProofSession(LocalProcess(), "theorem t (n : ℕ) : 3 ∣ n ^ 3 + 2 * n := by sorry")
    assert s.root.text == "n : ℕ\n⊢ 3 ∣ n ^ 3 + 2 * n"
    s = ProofSession(LocalProcess(), "theorem t (n : ℕ) (h₀ : n ≤ 9) (h₁ : 18∣374 * 10 + n) : n = 4 := by sorry")
    assert s.root.text == "n : ℕ\nh₀ : n ≤ 9\nh₁ : 18 ∣ 374 * 10 + n\n⊢ n = 4"
    s = ProofSession(LocalProcess(), "theorem t (a : ℕ) : ¬ 2 ∣ a → a % 2 = 1 := by sorry")
    r = s.apply(s.root, "intro h")
    assert r.ok and r.states[0].text == "a : ℕ\nh : ¬2 ∣ a\n⊢ a % 2 = 1"
    assert s.apply(r.states[0], "omega").ok


def test_divisibility_outside_nat_is_refused():
    p = SimProcess()
    for stmt in ["theorem t (x : ℤ) : x ∣ x := by sorry",
                 "theorem t (n : ℕ) : (n : ℤ) ∣ 4 := by sorry",
                 "theorem t (p : Prop) : p ∣ p := by sorry"]:
        err = p.proof_from_sorry(stmt)["error"]
        assert "(sim)" in err, err


# ----------------------------------------------------------------------------- closed instances


@pytest.mark.parametrize("stmt", ["theorem t : 3 ∣ 12 := by sorry", "theorem t : ¬ 5 ∣ 12 := by sorry",
                                  "theorem t : 0 ∣ 0 := by sorry", "theorem t : 1 ∣ 7 := by sorry",
                                  "theorem t : 7 ∣ 0 := by sorry", "theorem t : ¬ 0 ∣ 3 := by sorry",
                                  "theorem t : 2 + 1 ∣ 4 * 3 := by sorry"])
def test_closed_divisibility_is_decided(stmt):
    for script in ("decide", "norm_num", "simp", "omega"):
        assert check_proof(stmt, script), (stmt, script)


@pytest.mark.parametrize("stmt", ["theorem t : 5 ∣ 12 := by sorry", "theorem t : ¬ 3 ∣ 12 := by sorry",
                                  "theorem t : 0 ∣ 5 := by sorry", "theorem t : ¬ 0 ∣ 0 := by sorry"])
def test_closed_false_divisibility_is_refuted(stmt):
    assert not evaluate(statement_formula(stmt), {})
    for script in ATTACKS:
        assert not check_proof(stmt, script), (stmt, script)
    p = SimProcess()
    root = p.proof_from_sorry(stmt)["value"]["proof_state_id"]
    assert "is false" in p.try_apply_tactic(root, "decide")["error"]


# ----------------------------------------------------------------------------- omega proves true facts


TRUE_FACTS = [
    "theorem t (n : ℕ) (h₀ : n ≤ 9) (h₁ : 18 ∣ 374 * 10 + n) : n = 4 := by sorry",
    "theorem t (n : ℕ) (h₀ : n < 101) (h₁ : 101 ∣ (123456 - n)) : n = 34 := by sorry",
    "theorem t (n : ℕ) (h₁ : 3 ∣ n) : ((n + 4) + (n + 6) + (n + 8)) % 9 = 0 := by sorry",
    "theorem t (a : ℕ) (h : a % 10 = 2) : (a + 8) % 10 = 0 := by sorry",
    "theorem t (n : ℕ) : n / 2 ≤ n := by sorry",
    "theorem t (n : ℕ) : n % 4 < 4 := by sorry",
    "theorem t (n : ℕ) : 2 * (n / 2) + n % 2 = n := by sorry",
    "theorem t (n : ℕ) : n / 2 * 2 ≤ n := by sorry",
    "theorem t (n : ℕ) : n / 0 = 0 := by sorry",  # Lean: x / 0 = 0
    "theorem t (n : ℕ) : n % 0 = n := by sorry",  # Lean: x % 0 = x
    "theorem t (n : ℕ) : n % 1 = 0 := by sorry",
    "theorem t (n : ℕ) : n / 1 = n := by sorry",
    "theorem t (n : ℕ) (h : 0 ∣ n) : n = 0 := by sorry",  # 0 ∣ x ↔ x = 0
    "theorem t (n : ℕ) : 1 ∣ n := by sorry",
    "theorem t (n : ℕ) (h : 6 ∣ n) : 3 ∣ n := by sorry",
    "theorem t (n : ℕ) (h : 2 ∣ n) (h' : 3 ∣ n) : 6 ∣ n := by sorry",
    "theorem t (n : ℕ) (h : n % 2 = 1) : ¬ 2 ∣ n := by sorry",
    "theorem t (n : ℕ) (h : ¬ 2 ∣ n) : n % 2 = 1 := by sorry",
    "theorem t (n : ℕ) (h : n % 4 = 3) : n % 2 = 1 := by sorry",
    "theorem t (a b : ℕ) : (a - b) % 3 < 3 := by sorry",
    "theorem t (a b : ℕ) (h : b ≤ a) (h' : 3 ∣ a - b) : a % 3 = b % 3 := by sorry",
    "theorem t (a b : ℕ) (h : a % 5 = 1) (h' : b % 5 = 3) : (a + b) % 5 = 4 := by sorry",
    "theorem t (n : ℕ) (h : n % 7 = 5) : 5 * n % 7 = 4 := by sorry",
    "theorem t (n : ℕ) (h₀ : n ≤ 9) (h₁ : 11 ∣ 20 * 100 + 10 * n + 7) : n = 5 := by sorry",
    "theorem t (x : ℕ) (h₀ : x < 100) (h₁ : x * 9 % 100 = 1) : x = 89 := by sorry",
    "theorem t (n : ℕ) (h : 2 * n % 47 = 15) : n % 47 = 31 := by sorry",
    "theorem t (a : ℕ) : a % 6 / 2 ≤ 2 := by sorry",
    "theorem t (a : ℕ) : (a / 3) / 2 = a / 6 := by sorry",
    "theorem t (a : ℕ) : a / (1 + 1) = a / 2 := by sorry",  # closed divisor computed; one atom
    "theorem t (a b : ℕ) (h : a ∣ b) (h' : b < 1) : b = 0 := by sorry",  # a non-numeral `∣` fact is ignored
]


@pytest.mark.parametrize("stmt", TRUE_FACTS)
def test_true_facts_are_proved_by_omega(stmt):
    assert grid_holds(stmt, size=7)
    assert check_proof(stmt, "omega"), stmt
    errors, axioms = axioms_of(stmt, "omega")
    assert errors == [] and set(axioms) <= ALLOWED


def test_prop_machinery_on_divisibility_atoms():
    cases = [
        ("theorem t (n : ℕ) (h : 3 ∣ n) : 3 ∣ n := by sorry", "exact h"),
        ("theorem t (n : ℕ) (h : 3 ∣ n) : 3 ∣ n := by sorry", "assumption"),
        ("theorem t (n : ℕ) : 3 ∣ n → 3 ∣ n := by sorry", "intro h\nexact h"),
        ("theorem t (n : ℕ) (h : 3 ∣ n) (h' : ¬ 3 ∣ n) : False := by sorry", "exact h' h"),
        ("theorem t (n : ℕ) (h : 3 ∣ n) (h' : ¬ 3 ∣ n) : 1 = 2 := by sorry", "contradiction"),
        ("theorem t (n : ℕ) (h : 2 ∣ n ∧ 3 ∣ n) : 3 ∣ n := by sorry", "exact h.2"),
        ("theorem t (n : ℕ) (h : 2 ∣ n) : 2 ∣ n ∨ 3 ∣ n := by sorry", "left\nexact h"),
        ("theorem t (n : ℕ) : 2 ∣ n ∨ ¬ 2 ∣ n := by sorry", "by_cases h : 2 ∣ n\n· left; exact h\n· right; exact h"),
        ("theorem t (n : ℕ) (h : 4 ∣ n) : 2 ∣ n := by sorry", "by_contra h'\nomega"),
        ("theorem t (n : ℕ) (h : 4 ∣ n) (h' : n % 2 = 1) : 7 ∣ n + 1 := by sorry", "exfalso\nomega"),
        ("theorem t (n : ℕ) : n % 2 = 0 ∨ n % 2 = 1 := by sorry",
         "by_cases h : 2 ∣ n\n· left; omega\n· right; omega"),
    ]
    for stmt, script in cases:
        assert grid_holds(stmt)
        assert check_proof(stmt, script), (stmt, script)


# ----------------------------------------------------------------------------- what stays refused


def _err(stmt, tactic):
    p = SimProcess()
    root = p.proof_from_sorry(stmt)["value"]["proof_state_id"]
    reply = p.try_apply_tactic(root, tactic)
    assert "error" in reply, (stmt, tactic, reply)
    return json.loads(reply["error"].split(": ", 1)[1])[0]["data"]


def test_linarith_and_ring_refuse_division_modulo_divisibility():
    for stmt in ["theorem t (n : ℕ) : n / 2 ≤ n := by sorry", "theorem t (n : ℕ) : n % 4 < 4 := by sorry",
                 "theorem t (n : ℕ) (h : 3 ∣ n) : 3 ∣ n := by sorry", "theorem t (n : ℕ) (h : 6 ∣ n) : 3 ∣ n := by sorry",
                 "theorem t (n : ℕ) (h : 3 ∣ n) (h' : n < 3) (h'' : 0 < n) : False := by sorry"]:
        assert grid_holds(stmt)
        assert not check_proof(stmt, "linarith"), stmt
    assert "division" in _err("theorem t (n : ℕ) : n / 2 ≤ n := by sorry", "linarith")
    assert "divisibility" in _err("theorem t (n : ℕ) : 3 ∣ 3 * n := by sorry", "linarith")
    for stmt in ["theorem t (n : ℕ) : 2 * (n / 2) + n % 2 = n := by sorry", "theorem t (n : ℕ) : n / 1 = n := by sorry"]:
        assert "ring failed" in _err(stmt, "ring")
    with pytest.raises(arith.Unsupported):
        arith.linear(("op", "/", n, num(2)))  # without omega's atom table
    with pytest.raises(arith.Unsupported):
        arith.poly(("op", "%", n, num(2)))


def test_divisor_with_variables_is_refused_by_omega():
    # true in Lean, but omega only knows division by numerals
    assert "numeral" in _err("theorem t (a b : ℕ) : a % (b + 1) < b + 1 := by sorry", "omega")
    assert "numeral" in _err("theorem t (a b : ℕ) (h : b ∣ a) (h' : 0 < b) : a % b = 0 := by sorry", "omega")
    assert "divisibility by a numeral" in _err("theorem t (a b : ℕ) (h : 0 < b) : b ∣ a * b := by sorry", "omega")
    assert not check_proof("theorem t (a b : ℕ) (h : b ∣ a) (h' : a ≠ 0) : b ≤ a := by sorry", "omega")


def test_divisibility_witnesses_are_not_modelled():
    # Lean unfolds `k ∣ e` to `∃ c, e = k * c`; the simulator refuses instead of guessing
    assert "(sim)" in _err("theorem t : 3 ∣ 12 := by sorry", "exact ⟨4, rfl⟩")
    assert "(sim)" in _err("theorem t (n : ℕ) (h : 3 ∣ n) : n % 3 = 0 := by sorry", "cases h")
    assert "(sim)" in _err("theorem t (n : ℕ) (h : 3 ∣ n) : n % 3 = 0 := by sorry", "obtain ⟨k, hk⟩ := h")
    assert "(sim)" in _err("theorem t (n : ℕ) : 3 ∣ 3 * n := by sorry", "constructor")


def test_same_atom_for_same_syntax():
    subs: dict = {}
    assert arith.linear(("op", "/", n, ("op", "+", num(1), num(1))), subs) == arith.linear(("op", "/", n, num(2)), subs)
    q, r = divmod.pair_atoms(n, 2)
    assert arith.linear(("op", "%", n, num(2)), subs) == ({r: 1}, 0)
    assert list(subs) == [q]  # one pair for `n / 2`, `n / (1 + 1)` and `n % 2`
    assert arith.linear(("op", "/", n, num(0)), subs) == ({}, 0)
    assert arith.linear(("op", "%", n, num(0)), subs) == ({n: 1}, 0)


# ----------------------------------------------------------------------------- false statements


FALSE_STATEMENTS = [
    ("theorem t (n : ℕ) : n / 2 * 2 = n := by sorry", {"n": 1}),
    ("theorem t (n : ℕ) : n % 3 = n := by sorry", {"n": 3}),
    ("theorem t (n : ℕ) (h : 2 ∣ n) : 4 ∣ n := by sorry", {"n": 2}),
    ("theorem t (n : ℕ) : 3 ∣ n := by sorry", {"n": 1}),
    ("theorem t (n : ℕ) : ¬ 3 ∣ n := by sorry", {"n": 0}),
    ("theorem t (n : ℕ) (h : n % 2 = 1) : n % 4 = 1 := by sorry", {"n": 3}),
    ("theorem t (a b : ℕ) : (a + b) % 2 = a % 2 := by sorry", {"a": 0, "b": 1}),
    ("theorem t (n : ℕ) : n / 0 = n := by sorry", {"n": 1}),
    ("theorem t (n : ℕ) : n % 0 = 0 := by sorry", {"n": 1}),
    ("theorem t (n : ℕ) (h : 0 ∣ n) : n = 1 := by sorry", {"n": 0}),
    ("theorem t (n : ℕ) : 0 ∣ n := by sorry", {"n": 1}),
    ("theorem t (n : ℕ) : n / 3 = n / 2 := by sorry", {"n": 2}),
    ("theorem t (n : ℕ) : (n - 1) % 2 = (n + 1) % 2 := by sorry", {"n": 0}),
    ("theorem t (a b : ℕ) (h : a % 3 = b % 3) : a = b := by sorry", {"a": 0, "b": 3}),
    ("theorem t (n : ℕ) : 2 ∣ n * n := by sorry", {"n": 1}),
    ("theorem t (n : ℕ) (h : 2 ∣ n + 1) : 2 ∣ n := by sorry", {"n": 1}),
    ("theorem t (n : ℕ) (h₁ : 3 ∣ n) : (n + 1) % 9 = 0 := by sorry", {"n": 0}),
    ("theorem t (n : ℕ) (h₀ : n ≤ 9) (h₁ : 18 ∣ 374 * 10 + n) : n = 5 := by sorry", {"n": 4}),
    ("theorem t (n : ℕ) (h₀ : n < 101) (h₁ : 101 ∣ (123456 - n)) : n = 33 := by sorry", {"n": 34}),
    ("theorem t (n : ℕ) (h₀ : n ≤ 9) (h₁ : 11 ∣ 20 * 100 + 10 * n + 7) : n = 4 := by sorry", {"n": 5}),
    ("theorem t (x : ℕ) (h₀ : x < 100) (h₁ : x * 9 % 100 = 1) : x = 88 := by sorry", {"x": 89}),
    ("theorem t (n : ℕ) : n % 4 < 3 := by sorry", {"n": 3}),
    ("theorem t (n : ℕ) : n / 2 < n := by sorry", {"n": 0}),
    ("theorem t (n : ℕ) : n / 2 + n / 2 = n := by sorry", {"n": 1}),
    ("theorem t (a b : ℕ) : (a - b) % 3 = (a % 3 - b % 3) := by sorry", {"a": 3, "b": 1}),
    ("theorem t (a b : ℕ) (h : 3 ∣ a + b) : 3 ∣ a := by sorry", {"a": 1, "b": 2}),
    ("theorem t (n : ℕ) (h : n % 6 = 4) : n % 4 = 0 := by sorry", {"n": 10}),
    ("theorem t (n : ℕ) (h : 5 ∣ n) (h' : 0 < n) : 10 ≤ n := by sorry", {"n": 5}),
]
DIV_ATTACKS = ATTACKS + ["by_contra h'\nomega", "exfalso\nlinarith", "exact h.symm", "left", "right",
                         "norm_num at h", "simp at h", "intro h'\nexact h'", "constructor <;> assumption"]


@pytest.mark.parametrize("stmt,counterexample", FALSE_STATEMENTS)
def test_false_statements_are_never_proved(stmt, counterexample):
    assert not holds_at(stmt, counterexample)
    assert not grid_holds(stmt, size=max(counterexample.values()) + 1)
    for script in DIV_ATTACKS:
        assert not check_proof(stmt, script), (stmt, script)
    # the control: with its conclusion assumed, the same statement is proved by an attack, so the
    # kernel reads it and the attacks fail for want of truth (a kernel that proved nothing would pass)
    control = assuming_the_conclusion(stmt)
    assert any(check_proof(control, script) for script in DIV_ATTACKS), control


# ----------------------------------------------------------------------------- random soundness


VARS = ("a", "b")
atoms = st.one_of(st.sampled_from(VARS), st.integers(0, 4).map(str))
terms = st.recursive(
    atoms,
    lambda sub: st.one_of(
        st.tuples(sub, st.sampled_from(["+", "*", "-", "+"]), sub).map(lambda x: f"({x[0]} {x[1]} {x[2]})"),
        st.tuples(sub, st.sampled_from(["/", "%", "%"]), st.integers(0, 4)).map(lambda x: f"({x[0]} {x[1]} {x[2]})"),
    ),
    max_leaves=4,
)
comparisons = st.tuples(terms, st.sampled_from(["=", "≠", "<", "≤"]), terms).map(lambda x: f"{x[0]} {x[1]} {x[2]}")
divides = st.tuples(st.integers(0, 4), terms).map(lambda x: f"{x[0]} ∣ {x[1]}")
props = st.one_of(comparisons, comparisons, divides, divides.map(lambda s: f"¬{s}"))
RANDOM_SCRIPTS = ["omega", "by_contra h\nomega", "exfalso\nomega", "linarith", "ring", "decide", "simp", "norm_num",
                  "exact h0", "assumption", "rfl"]


# (hyps, target) true statements, with a script of RANDOM_SCRIPTS that proves each: the property
# below runs them first and must see them proved
PROVED_EXAMPLES = [
    ((), "(a % 2) < 2", "omega"),
    (("2 ∣ a",), "¬2 ∣ (a + 1)", "omega"),
    (("(a / 3) = 2",), "6 ≤ a", "omega"),
    ((), "3 ∣ 12", "decide"),
]


def test_random_statements_proved_only_if_true():
    check_proved_only_if_true(props, RANDOM_SCRIPTS, PROVED_EXAMPLES, "a b", grid=7, min_drawn=75)  # 303 at writing


# the arithmetic core directly: omega's refutation (equality solving, div/mod pairs, ℕ subtraction)
# against brute force on a box that the facts themselves impose
def _lin(coeffs, const):
    t = ("num", const)
    for x, c in zip(("a", "b", "c"), coeffs):
        if c:
            t = ("op", "+", ("op", "*", ("num", c), ("nvar", x)), t)
    return t


small_terms = st.one_of(
    st.tuples(st.lists(st.integers(0, 12), min_size=3, max_size=3), st.integers(0, 30)).map(lambda x: _lin(*x)),
    st.tuples(st.sampled_from(VARS + ("c",)), st.sampled_from(["/", "%"]), st.integers(0, 7)).map(
        lambda x: ("op", x[1], ("nvar", x[0]), ("num", x[2]))),
    st.tuples(st.sampled_from(VARS + ("c",)), st.sampled_from(VARS + ("c",))).map(
        lambda x: ("op", "-", ("nvar", x[0]), ("nvar", x[1]))),
)
facts = st.tuples(st.sampled_from(["=", "=", "≤", "<", "≠"]), small_terms, small_terms)
BOX = 9


a_, b_, c_ = ("nvar", "a"), ("nvar", "b"), ("nvar", "c")
# unsatisfiable facts omega's core refutes (the property below runs them first and must refute them):
# a < a; 2a = 2b + 1 (parity); a % 3 = 5; a - b = 3 with a ≤ 2 (ℕ subtraction); a / 2 = 3 with a < 6
REFUTED_EXAMPLES = [
    [("<", a_, a_)],
    [("=", ("op", "*", num(2), a_), ("op", "+", ("op", "*", num(2), b_), num(1)))],
    [("=", ("op", "%", a_, num(3)), num(5))],
    [("=", ("op", "-", a_, b_), num(3)), ("≤", a_, num(2))],
    [("=", ("op", "/", a_, num(2)), num(3)), ("<", a_, num(6))],
]


def test_omega_core_refutes_only_unsatisfiable_facts():
    refutations = []

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(facts, min_size=1, max_size=4))
    @example(REFUTED_EXAMPLES[0])
    @example(REFUTED_EXAMPLES[1])
    @example(REFUTED_EXAMPLES[2])
    @example(REFUTED_EXAMPLES[3])
    @example(REFUTED_EXAMPLES[4])
    def check(fs):
        bounded = list(fs) + [("≤", ("nvar", x), ("num", BOX - 1)) for x in ("a", "b", "c")]
        try:
            refuted = arith.refute(bounded, tighten=True, nat_sub=True)
        except arith.Unsupported:
            assert fs not in REFUTED_EXAMPLES, fs
            return
        if refuted:
            for values in itertools.product(range(BOX), repeat=3):
                env = dict(zip(("a", "b", "c"), values))
                sat = all(eval_rel(op, eval_term(_subst_t(s, env)), eval_term(_subst_t(t, env)))
                          for op, s, t in bounded)
                assert not sat, (fs, env)
            refutations.append(fs)
        else:
            assert fs not in REFUTED_EXAMPLES, fs

    check()
    # not vacuous: the examples are refuted, and so are many drawn fact sets (an arith.refute that
    # refuted nothing would pass the property alone)
    drawn = [fs for fs in refutations if fs not in REFUTED_EXAMPLES]
    assert len(drawn) >= 45, len(drawn)  # 178 when this was written


def _subst_t(t, env):
    if t[0] == "nvar":
        return ("num", env[t[1]])
    if t[0] == "op":
        return ("op", t[1], _subst_t(t[2], env), _subst_t(t[3], env))
    return t


def test_equality_solver_needs_integers():
    x, y = ("nvar", "x"), ("nvar", "y")
    # 3x + 5y = 7 has no solution in ℕ (but rational ones); 3x + 5y = 8 has x = y = 1
    s37 = ("op", "+", ("op", "*", num(3), x), ("op", "*", num(5), y))
    assert arith.refute([("=", s37, num(7))], tighten=True, nat_sub=True)
    assert not arith.refute([("=", s37, num(8))], tighten=True, nat_sub=True)
    # 6x + 10y = 7: the gcd 2 does not divide 7
    s610 = ("op", "+", ("op", "*", num(6), x), ("op", "*", num(10), y))
    assert arith.refute([("=", s610, num(7))], tighten=True, nat_sub=True)
    assert not arith.refute([("=", s610, num(7))], tighten=False)  # linarith: rational solutions exist
    # the solver itself: None only for contradictions, and never drops a non-equality
    assert divmod.solve_equalities([({x: 3, y: 5}, -7), ({x: -3, y: -5}, 7), ({x: -1}, 0), ({y: -1}, 0)]) is not None
    assert divmod.solve_equalities([({x: 2}, -1), ({x: -2}, 1)]) is None
