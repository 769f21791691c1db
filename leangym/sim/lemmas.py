"""The lemmas every simulated process knows: core Lean and Mathlib constants of the fragment.

Each is a :class:`Const` schema with Lean's own binder names and explicitness
(binder names become goal tags, e.g. ``left``/``right`` after ``apply
And.intro``). Soundness rests on every schema being a theorem of Lean's core
library or Mathlib; ``axioms`` is what ``#print axioms`` lists for it.
"""
from __future__ import annotations

from typing import NamedTuple

from leangym.sim.formula import FALSE, TRUE

CLASSICAL = ("propext", "Classical.choice", "Quot.sound")


class Const(NamedTuple):
    """A global constant ``name : ∀ binders, result``.

    ``binders``: ``('P', name, explicit, mvar_index)`` for ``Prop`` parameters,
    ``('N', name, explicit, mvar_index)`` for ``ℕ`` parameters (their mvars stand
    for ℕ terms inside relations) and ``('H', name, pattern)`` for explicit proof
    parameters; ``result`` is a pattern over ``('mvar', i)``. ``axioms``: what ``#print axioms`` lists for it.
    """

    name: str
    binders: tuple
    result: tuple
    axioms: tuple = ()
    kind: str = "theorem"  # 'theorem' | 'axiom'


_A, _B, _C = ("mvar", 0), ("mvar", 1), ("mvar", 2)
_a, _b, _c = ("P", "a", False, 0), ("P", "b", False, 1), ("P", "c", False, 2)


def _K(name, binders, result, axioms=()):
    return name, Const(name, tuple(binders), result, axioms)


# ℕ lemmas as (name, binders, result). ('N', name, explicit, i) binds the ℕ-term mvar ('mvar', i);
# ('H', name, pattern) is a proof argument. Core Lean's lemmas (Lean's binder names and
# explicitness), proved by induction without axioms; Mathlib's `add_comm`/`mul_comm` are stated
# for any commutative magma, here only at ℕ (the fragment's only type).
_n, _m, _k, _0, _1 = ("mvar", 0), ("mvar", 1), ("mvar", 2), ("num", 0), ("num", 1)


def _N(*names, explicit=True):
    return [("N", x, explicit, i) for i, x in enumerate(names)]


def _eq(s, t, o=None):
    return ("rel", "=", s, t) if o is None else ("rel", "=", ("op", o, *s), ("op", o, *t))


NAT_LEMMAS = [
    ("Nat.add_comm", _N("n", "m"), _eq((_n, _m), (_m, _n), "+")),
    ("Nat.mul_comm", _N("n", "m"), _eq((_n, _m), (_m, _n), "*")),
    ("Nat.add_assoc", _N("n", "m", "k"), _eq((("op", "+", _n, _m), _k), (_n, ("op", "+", _m, _k)), "+")),
    ("Nat.mul_assoc", _N("n", "m", "k"), _eq((("op", "*", _n, _m), _k), (_n, ("op", "*", _m, _k)), "*")),
    ("Nat.add_zero", _N("n"), _eq(("op", "+", _n, _0), _n)),
    ("Nat.zero_add", _N("n"), _eq(("op", "+", _0, _n), _n)),
    ("Nat.mul_one", _N("n"), _eq(("op", "*", _n, _1), _n)),
    ("Nat.one_mul", _N("n"), _eq(("op", "*", _1, _n), _n)),
    ("Nat.le_refl", _N("n"), ("rel", "≤", _n, _n)),
    ("Nat.zero_le", _N("n"), ("rel", "≤", _0, _n)),
    ("Nat.lt_irrefl", _N("n"), ("not", ("rel", "<", _n, _n))),
    ("Nat.le_trans", _N("n", "m", "k", explicit=False) + [("H", "a", ("rel", "≤", _n, _m)),
                                                         ("H", "a", ("rel", "≤", _m, _k))], ("rel", "≤", _n, _k)),
    ("Nat.le_of_lt", _N("n", "m", explicit=False) + [("H", "h", ("rel", "<", _n, _m))], ("rel", "≤", _n, _m)),
    ("add_comm", _N("a", "b"), _eq((_n, _m), (_m, _n), "+")),
    ("mul_comm", _N("a", "b"), _eq((_n, _m), (_m, _n), "*")),
]

# Core Lean / Mathlib lemmas of the fragment, with their real binder names (they become goal tags).
BUILTINS: dict[str, Const] = dict([
    _K("And.intro", [_a, _b, ("H", "left", _A), ("H", "right", _B)], ("and", _A, _B)),
    _K("And.left", [_a, _b, ("H", "self", ("and", _A, _B))], _A),
    _K("And.right", [_a, _b, ("H", "self", ("and", _A, _B))], _B),
    _K("And.symm", [_a, _b, ("H", "a", ("and", _A, _B))], ("and", _B, _A)),
    _K("Or.inl", [_a, _b, ("H", "h", _A)], ("or", _A, _B)),
    _K("Or.inr", [_a, _b, ("H", "h", _B)], ("or", _A, _B)),
    _K("Or.elim", [_a, _b, _c, ("H", "h", ("or", _A, _B)), ("H", "left", ("imp", _A, _C)),
                   ("H", "right", ("imp", _B, _C))], _C),
    _K("Or.symm", [_a, _b, ("H", "a", ("or", _A, _B))], ("or", _B, _A)),
    _K("Or.resolve_left", [_a, _b, ("H", "h", ("or", _A, _B)), ("H", "na", ("not", _A))], _B),
    _K("Or.resolve_right", [_a, _b, ("H", "h", ("or", _A, _B)), ("H", "nb", ("not", _B))], _A),
    _K("Iff.intro", [_a, _b, ("H", "mp", ("imp", _A, _B)), ("H", "mpr", ("imp", _B, _A))], ("iff", _A, _B)),
    _K("Iff.mp", [_a, _b, ("H", "self", ("iff", _A, _B))], ("imp", _A, _B)),
    _K("Iff.mpr", [_a, _b, ("H", "self", ("iff", _A, _B))], ("imp", _B, _A)),
    _K("Iff.symm", [_a, _b, ("H", "a", ("iff", _A, _B))], ("iff", _B, _A)),
    _K("Iff.refl", [("P", "a", True, 0)], ("iff", _A, _A)),
    _K("Iff.rfl", [_a], ("iff", _A, _A)),
    _K("absurd", [_a, _b, ("H", "h₁", _A), ("H", "h₂", ("not", _A))], _B),
    _K("False.elim", [_a, ("H", "h", FALSE)], _A),
    _K("Not.elim", [_a, _b, ("H", "H1", ("not", _A)), ("H", "H2", _A)], _B),
    _K("Not.intro", [_a, ("H", "h", ("imp", _A, FALSE))], ("not", _A)),
    _K("True.intro", [], TRUE),
    _K("trivial", [], TRUE),
    _K("id", [_a, ("H", "a", _A)], _A),
    _K("mt", [_a, _b, ("H", "h₁", ("imp", _A, _B)), ("H", "h₂", ("not", _B))], ("not", _A)),
    _K("Classical.em", [("P", "p", True, 0)], ("or", _A, ("not", _A)), CLASSICAL),
    _K("em", [("P", "p", True, 0)], ("or", _A, ("not", _A)), CLASSICAL),
    _K("Classical.byContradiction", [("P", "p", False, 0), ("H", "h", ("imp", ("not", _A), FALSE))], _A, CLASSICAL),
    _K("Classical.byCases", [("P", "p", False, 0), ("P", "q", False, 1), ("H", "hpq", ("imp", _A, _B)),
                             ("H", "hnpq", ("imp", ("not", _A), _B))], _B, CLASSICAL),
    _K("Classical.not_not", [_a], ("iff", ("not", ("not", _A)), _A), CLASSICAL),
    _K("not_not", [_a], ("iff", ("not", ("not", _A)), _A), CLASSICAL),
    *(_K(name, binders, result) for name, binders, result in NAT_LEMMAS),  # no axioms
])
