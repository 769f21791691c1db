"""``omega``'s model of ℕ division, modulo and divisibility by numerals.

Used by :mod:`leangym.sim.arith` (``omega`` only; ``linarith`` and ``ring``
refuse ``/`` and ``%`` over variables). Everything here is exact, as in Lean 4's
``omega``:

* ``e / k`` and ``e % k`` with ``k`` a numeral ``> 0`` (after computing closed
  subterms) are the atoms ``q`` and ``r`` of the pair ``(e, k)``, with the facts
  ``e = k*q + r`` and ``r + 1 ≤ k`` (``q``, ``r`` natural numbers). These
  determine ``q = e / k`` and ``r = e % k`` uniquely (Euclidean division), so
  adding them never changes the solutions. Atoms are keyed by canonical syntax
  (:func:`leangym.sim.formula._canon_term`), so the same ``e / k`` written
  twice is one atom, and ``e / k`` and ``e % k`` share their pair.
* ``k = 0`` follows Lean's definitions: ``e / 0 = 0`` and ``e % 0 = e``.
* ``k ∣ e`` (``Dvd.dvd``, Lean's ``k ∣ e ↔ e % k = 0`` for ℕ, with ``0 ∣ e ↔ e = 0``)
  is the comparison ``e % k = 0`` (``e = 0`` when ``k = 0``), ``¬ k ∣ e`` is
  ``1 ≤ e % k`` (``1 ≤ e`` when ``k = 0``).

A divisor with variables is not modelled: the callers refuse the term (a goal
then fails, a hypothesis is forgotten, both sound).

The facts ``e = k*q + r`` are equalities whose integer solutions matter
(``11 ∣ 2007 + 10 * n`` has none for ``n ≤ 4``, but rational ones), so before
Fourier–Motzkin ``omega`` solves all equalities exactly over ℤ
(:func:`solve_equalities`, the equality step of Pugh's omega test, as Lean's
``omega`` does).
"""
from __future__ import annotations

from math import gcd

from leangym.sim.formula import FragmentError, _canon_term, eval_term, term_closed


def numeral(t) -> int | None:
    """The value of a closed divisor term, or None (variables, or too large to compute)."""
    if not term_closed(t):
        return None
    try:
        return eval_term(t)
    except FragmentError:
        return None


def pair_atoms(e, k: int) -> tuple:
    """The atoms ``(q, r)`` standing for ``e / k`` and ``e % k`` (``k > 0``)."""
    ce, ck = _canon_term(e), ("num", k)
    return ("op", "/", ce, ck), ("op", "%", ce, ck)


def pair_constraints(e_form: tuple[dict, int], k: int, q, r) -> list[tuple]:
    """``e = k*q + r`` and ``r + 1 ≤ k`` as ``Σ cᵢ·xᵢ + c ≤ 0`` constraints (``e_form`` = linear form of ``e``)."""
    coeffs, const = e_form
    d = dict(coeffs)  # e - k*q - r
    d[q] = d.get(q, 0) - k
    d[r] = d.get(r, 0) - 1
    d = {x: v for x, v in d.items() if v}
    neg = {x: -v for x, v in d.items()}
    return [(d, const), (neg, -const), ({r: 1}, 1 - k)]


def dvd_as_comparison(op: str, k, e):
    """``k ∣ e`` (``op == '∣'``) or ``¬ k ∣ e`` (``op == '∤'``) as an equivalent comparison
    ``(op', s, t)`` over ℕ terms; None when ``k`` is not a numeral."""
    kv = numeral(k)
    if kv is None:
        return None
    zero, one = ("num", 0), ("num", 1)
    lhs = e if kv == 0 else ("op", "%", e, ("num", kv))
    return ("=", lhs, zero) if op == "∣" else ("≤", one, lhs)


MAX_EQ_STEPS = 200  # solve_equalities stops (soundly: the system is still equivalent) after this many steps


def solve_equalities(cons: list, tick=lambda n=1: None) -> list | None:
    """Eliminate the equalities among ``Σ cᵢ·xᵢ + c ≤ 0`` constraints, exactly over ℤ.

    An equality is a constraint present together with its negation. With a
    coefficient ``u = ±1`` on ``x``, ``u·x + L + c = 0`` gives ``x = -u·(L + c)``, an
    integer: substituting it everywhere (``x ≥ 0``, if present among ``cons``,
    becomes a constraint on ``L``) gives a system with the same integer
    solutions up to the value of ``x``. Without such a coefficient (after
    dividing by the gcd ``g``; ``g ∤ c`` means no integer solution), Pugh's step
    adds ``m·σ = Σ (aᵢ mod̂ m)·xᵢ + (c mod̂ m)`` with ``m = min |aᵢ| + 1`` and a fresh
    integer ``σ`` of any sign (``mod̂`` is the symmetric residue): it holds for some
    integer ``σ`` exactly when the original does, its coefficient on the ``x`` with
    the smallest ``|aᵢ|`` is ``±1``, and the substitution shrinks the original's
    coefficients, so the process ends. Returns the remaining (inequality)
    constraints, or None when a contradiction appears.
    """
    keys: dict = {}
    for co, c in cons:
        co = {x: v for x, v in co.items() if v}
        keys.setdefault((frozenset(co.items()), c), co)
    eqs, ineqs, used = [], [], set()
    for key, co in keys.items():
        if key in used:
            continue
        neg = (frozenset((x, -v) for x, v in co.items()), -key[1])
        if co and neg in keys and neg not in used:
            used.update((key, neg))
            eqs.append((co, key[1]))
        else:
            ineqs.append((co, key[1]))
    fresh = 0
    for _ in range(MAX_EQ_STEPS):
        if not eqs:
            return ineqs
        tick()
        co, c = eqs.pop()
        if not co:
            if c:
                return None
            continue
        g = 0
        for v in co.values():
            g = gcd(g, v)
        if c % g:
            return None
        co, c = {x: v // g for x, v in co.items()}, c // g
        unit = sorted((x for x, v in co.items() if v in (1, -1)), key=repr)
        if not unit:
            m = min(abs(v) for v in co.values()) + 1
            sym = lambda a: a - m * ((2 * a + m) // (2 * m))  # noqa: E731  a mod̂ m, in [-m/2, m/2)
            sigma = ("σ", fresh)
            fresh += 1
            new = {x: sym(v) for x, v in co.items() if sym(v)}
            new[sigma] = -m
            eqs += [(co, c), (new, sym(c))]
            continue
        x = unit[0]
        u = co[x]
        rest, rc = {y: -u * v for y, v in co.items() if y != x}, -u * c  # x = Σ rest·y + rc
        eqs = [_substitute(e, x, rest, rc) for e in eqs]
        ineqs = [_substitute(i, x, rest, rc) for i in ineqs]
    return ineqs + [e for co, c in eqs for e in ((co, c), ({x: -v for x, v in co.items()}, -c))]


def _substitute(con, x, rest: dict, rc: int):
    co, c = con
    a = co.get(x, 0)
    if not a:
        return con
    new = {y: v for y, v in co.items() if y != x}
    for y, v in rest.items():
        new[y] = new.get(y, 0) + a * v
    return {y: v for y, v in new.items() if v}, c + a * rc
