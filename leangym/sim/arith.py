"""Arithmetic over ℕ with free variables: the decision procedures behind ``omega``,
``linarith`` and ``ring``.

Everything here is a pure function on the formulas and ℕ terms of
:mod:`leangym.sim.formula` (``('num', n)``, ``('nvar', x)``, ``('op', o, s, t)``);
:mod:`leangym.sim.closers` turns the answers into Lean-like tactic results.

Soundness, which is all that matters for a proof checker, rests on three facts:

* **Linear forms are exact.** :func:`linear` maps a term to ``Σ cᵢ·xᵢ + c`` with
  integer coefficients that has the same value as the term for every
  assignment of the variables. Closed subterms are computed with Lean's
  semantics (:func:`leangym.sim.formula.eval_term`, truncated ``-`` included).
  A product of two non-constant factors (``a * b``, ``a ^ 2``) becomes an
  *opaque atom*: a new unknown standing for that subterm (keyed by its
  canonical syntax, so ``a * b`` and ``b * a`` are different atoms, as in
  Lean's ``omega``). ``/`` and ``%`` applied to non-closed terms are refused
  (:class:`Unsupported`). So is ``-`` (ℕ subtraction truncates: ``a - b`` is
  *not* the integer ``a - b``), except for ``omega``, which models it exactly:
  ``a - b`` becomes an atom ``x`` and the problem is split into the two cases
  ``b ≤ a ∧ x + b = a`` and ``a < b ∧ x = 0`` (both must be refuted).
  ``omega`` also models ``e / k``, ``e % k`` and ``k ∣ e`` for a numeral ``k``
  exactly (:mod:`leangym.sim.divmod`: atoms ``q``, ``r`` with ``e = k*q + r``,
  ``r < k``); a divisor with variables is refused.
* **Every unknown is a natural number**, so ``x ≥ 0`` may be assumed for every
  atom, and every linear form takes integer values, so a strict ``s < t`` may be
  strengthened to ``s + 1 ≤ t``.
* **Fourier–Motzkin elimination is exact.** Constraints are kept as
  ``Σ cᵢ·xᵢ + c ≤ 0`` with integer coefficients; eliminating a variable adds
  positive integer multiples of two constraints, which is exact rational
  arithmetic without denominators (the same as FM over ``fractions.Fraction``
  after clearing them). A derived ``0 + c ≤ 0`` with ``c > 0`` proves the
  constraints have no rational, hence no natural, solution. ``omega``
  additionally divides a derived constraint by the gcd ``g`` of its
  coefficients and rounds the constant (``Σ (cᵢ/g)·xᵢ ≤ ⌊-c/g⌋``), which is
  valid for integer unknowns only (it lets ``omega`` refute ``2 * a = 1``).
  Before eliminating, ``omega`` solves the equalities exactly over ℤ
  (:func:`leangym.sim.divmod.solve_equalities`, the omega test's equality step),
  which keeps the integrality that rational elimination loses
  (``11 ∣ 2007 + 10 * n`` pins ``n``).

Incompleteness (giving up) is always sound: too many constraints, too many
case splits or unsupported terms make the tactic fail, never succeed.

``ring`` compares canonical polynomials (:func:`poly`): sums of monomials with
natural coefficients, each monomial a sorted tuple of ``(variable, exponent)``.
Two terms of the commutative semiring ℕ built from numerals, variables, ``+``,
``*`` and ``^ numeral`` are equal for all values iff their polynomials are
equal, so equal normal forms prove the goal and different ones refute it.
"""
from __future__ import annotations

from math import gcd

from leangym.sim import divmod
from leangym.sim.formula import FALSE, SORTS, FragmentError, _canon_term, eval_term, term_closed

MAX_CONSTRAINTS = 3000  # Fourier–Motzkin gives up beyond this many constraints (blow-up guard)
MAX_SPLITS = 6  # at most 2**6 branches for `≠` facts and `=` goals
MAX_DEGREE = 64  # `ring`: largest exponent expanded
MAX_MONOMIALS = 5000  # `ring`: largest polynomial built


class Unsupported(Exception):
    """A term or goal the arithmetic procedures do not model (the tactic fails)."""


# --------------------------------------------------------------------------- linear forms


def linear(t, subs: dict | None = None) -> tuple[dict, int]:
    """``(coefficients, constant)`` with ``t = Σ coefficients[atom]·atom + constant`` in ℕ.

    Atoms are ``('nvar', x)`` terms and opaque non-linear subterms (canonical syntax).
    Raises :class:`Unsupported` for ``-``, ``/``, ``%`` over variables unless ``subs``
    is given (``omega``): then ``s - t`` is an atom and ``subs[atom] = ('-', s, t)``
    records it (:func:`refute` adds its two cases); ``e / k`` and ``e % k`` (``k`` a
    numeral) are the atoms ``q``, ``r`` of :func:`leangym.sim.divmod.pair_atoms`,
    recorded as ``subs[q] = ('/', e, k, q, r)`` (:func:`refute` adds their facts).
    """
    k = t[0]
    if k == "num":
        return {}, t[1]
    if k == "nvar":
        return {t: 1}, 0
    if k != "op":
        raise Unsupported("(sim) unexpected term")
    if term_closed(t):
        try:
            return {}, eval_term(t)
        except FragmentError as e:  # a number too large for the simulated kernel
            raise Unsupported(str(e)) from None
    o = t[1]
    if o == "-" and subs is not None:
        key = _canon_term(t)
        subs[key] = ("-", t[2], t[3])
        return {key: 1}, 0
    if o in ("/", "%") and subs is not None:
        k = divmod.numeral(t[3])
        if k is None:
            raise Unsupported("(sim) division and modulo are only simulated by a numeral, not by a term with "
                              "variables")
        if k == 0:  # Lean: e / 0 = 0, e % 0 = e
            return ({}, 0) if o == "/" else linear(t[2], subs)
        q, r = divmod.pair_atoms(t[2], k)
        subs.setdefault(q, ("/", t[2], k, q, r))
        return {(q if o == "/" else r): 1}, 0
    if o in ("-", "/", "%"):
        raise Unsupported("(sim) ℕ subtraction, division and modulo with variables are not simulated")
    if o == "+":
        (ca, a), (cb, b) = linear(t[2], subs), linear(t[3], subs)
        out = dict(ca)
        for x, c in cb.items():
            out[x] = out.get(x, 0) + c
        return {x: c for x, c in out.items() if c}, a + b
    if o == "*":
        (ca, a), (cb, b) = linear(t[2], subs), linear(t[3], subs)
        if not ca:  # constant · linear
            return ({x: a * c for x, c in cb.items()} if a else {}), a * b
        if not cb:
            return ({x: b * c for x, c in ca.items()} if b else {}), a * b
        return _atom(t)
    # `^`: the exponent must be a numeral (closed); x ^ 0 = 1, x ^ 1 = x, else an atom
    if not term_closed(t[3]):
        raise Unsupported("(sim) exponents with variables are not simulated")
    e = eval_term(t[3])
    if e == 0:
        return {}, 1
    if e == 1:
        return linear(t[2], subs)
    linear(t[2])  # refuse `(a - b) ^ 2` as well
    return _atom(t)


def _atom(t) -> tuple[dict, int]:
    _check_no_truncating_ops(t)
    return {_canon_term(t): 1}, 0


def _check_no_truncating_ops(t) -> None:
    if t[0] == "op" and not term_closed(t):
        if t[1] in ("-", "/", "%"):
            raise Unsupported("(sim) ℕ subtraction, division and modulo with variables are not simulated")
        _check_no_truncating_ops(t[2])
        _check_no_truncating_ops(t[3])


# --------------------------------------------------------------------------- facts to constraints
# A constraint is (coeffs, const) meaning Σ coeffs[x]·x + const ≤ 0; coeffs is a dict atom -> int.


def _diff(s, t, subs=None):
    """Linear form of ``s - t`` over ℤ (the difference of two exact ℕ forms, not ℕ subtraction)."""
    (cs, a), (ct, b) = linear(s, subs), linear(t, subs)
    out = dict(cs)
    for x, c in ct.items():
        out[x] = out.get(x, 0) - c
    return {x: c for x, c in out.items() if c}, a - b


def relation_cases(op: str, s, t, subs=None) -> list[list[tuple]]:
    """``s op t`` as a disjunction (list) of conjunctions (lists) of ``≤ 0`` constraints.

    Strict inequalities are strengthened with ``+ 1`` (all values are integers);
    ``≠`` is the disjunction ``s < t ∨ s > t``.
    """
    if op in ("≥", ">"):
        op, s, t = {"≥": "≤", ">": "<"}[op], t, s
    d, c = _diff(s, t, subs)  # s - t
    neg = ({x: -v for x, v in d.items()}, -c)  # t - s
    if op == "≤":
        return [[(d, c)]]
    if op == "<":
        return [[(d, c + 1)]]
    if op == "=":
        return [[(d, c), neg]]
    # ≠
    return [[(d, c + 1)], [(neg[0], neg[1] + 1)]]


_NEGATE = {"=": "≠", "≠": "=", "≤": ">", "<": "≥", "≥": "<", ">": "≤", "∣": "∤", "∤": "∣"}  # ∤: internal only


def literal(f):
    """``(op, s, t)`` when ``f`` is a relation or the negation of one (``¬r``, ``r → False``), else None."""
    k = f[0]
    if k == "rel":
        return f[1], f[2], f[3]
    if (k == "not" and f[1][0] == "rel") or (k == "imp" and f[2] == FALSE and f[1][0] == "rel"):
        r = f[1]
        return _NEGATE[r[1]], r[2], r[3]
    return None


def collect(hyps, target, *, split_and: bool, use_ne: bool, negate_goal: bool, nat_sub: bool = False):
    """The literals a linear-arithmetic tactic works with, as ``(facts, has_false)``.

    ``facts``: ``(op, s, t)`` from the hypotheses (``∧`` split when ``split_and``;
    ``≠`` facts dropped unless ``use_ne``; facts with unsupported terms dropped,
    which is sound: it only forgets information) and from the negated goal.
    ``negate_goal=False`` ignores the goal (Lean's ``exfalso``). ``nat_sub``
    (``omega``): terms may contain ℕ subtraction, ``/`` and ``%`` by numerals, and
    ``k ∣ e`` with ``k`` a numeral becomes a comparison (:mod:`leangym.sim.divmod`;
    pass the same to :func:`refute`); without it, divisibility facts are dropped.
    Raises :class:`Unsupported` when the goal is not of a supported shape.
    """
    facts: list[tuple] = []
    has_false = False
    todo = [h.type for h in hyps if h.type not in SORTS]
    while todo:
        f = todo.pop()
        if f == FALSE:
            has_false = True
            continue
        if split_and and f[0] == "and":
            todo.extend(f[1:])
            continue
        lit = literal(f)
        if lit is not None and lit[0] in ("∣", "∤"):
            lit = divmod.dvd_as_comparison(*lit) if nat_sub else None  # None: forget the fact (sound)
        if lit is None or (lit[0] == "≠" and not use_ne):
            continue
        try:
            _diff(lit[1], lit[2], {} if nat_sub else None)
        except Unsupported:
            continue
        facts.append(lit)
    if negate_goal and target != FALSE:
        lit = literal(target)
        if lit is None:
            raise Unsupported("(sim) the goal is not a linear arithmetic comparison")
        # by contradiction: assume the goal's negation (for a goal ¬r that is r itself), prove False
        neg = (_NEGATE[lit[0]], lit[1], lit[2])
        if neg[0] in ("∣", "∤"):
            if not nat_sub:
                raise Unsupported("(sim) divisibility goals are only simulated for omega")
            neg = divmod.dvd_as_comparison(*neg)
            if neg is None:
                raise Unsupported("(sim) omega only supports divisibility by a numeral")
        _diff(neg[1], neg[2], {} if nat_sub else None)  # a goal with unsupported terms fails the tactic
        facts.append(neg)
    return facts, has_false


def refute(facts, tick=lambda n=1: None, *, tighten: bool, nat_sub: bool = False) -> bool:
    """True iff the conjunction of ``facts`` (``(op, s, t)``) has no solution in ℕ.

    Each fact contributes its cases (:func:`relation_cases`); disjunctive facts are
    split, and so is every ℕ subtraction atom when ``nat_sub`` (at most
    ``MAX_SPLITS`` splits, else :class:`Unsupported`); every ``/``/``%`` pair adds
    its facts to all branches. Every branch must be refuted by Fourier–Motzkin
    (:func:`fm_infeasible`).
    """
    base: list[tuple] = []
    splits: list[list[list[tuple]]] = []
    subs: dict | None = {} if nat_sub else None
    for op, s, t in facts:
        cases = relation_cases(op, s, t, subs)
        if len(cases) == 1:
            base.extend(cases[0])
        else:
            splits.append(cases)
    done: set = set()
    nsub = 0
    while subs is not None and len(done) < len(subs):  # operands may hold further atoms
        for x, rec in list(subs.items()):
            if x in done:
                continue
            done.add(x)
            if rec[0] == "/":  # x = e / k: e = k*x + r, r < k (no case split)
                _, e, k, q, r = rec
                base.extend(divmod.pair_constraints(linear(e, subs), k, q, r))
                continue
            nsub += 1
            if nsub > MAX_SPLITS:
                raise Unsupported(f"(sim) more than {MAX_SPLITS} case splits (≠ facts, ℕ subtraction)")
            _, s, t = rec
            d, c = _diff(s, t, subs)  # s - t over ℤ
            # x = s ∸ t:  (t ≤ s ∧ x = s - t)  ∨  (s < t ∧ x = 0)
            x_eq = dict(d)
            x_eq[x] = x_eq.get(x, 0) - 1  # s - t - x
            x_eq = {y: v for y, v in x_eq.items() if v}
            neg = {y: -v for y, v in x_eq.items()}
            splits.append([[({y: -v for y, v in d.items()}, -c), (x_eq, c), (neg, -c)],
                           [(d, c + 1), ({x: 1}, 0)]])
    if len(splits) > MAX_SPLITS:
        raise Unsupported(f"(sim) more than {MAX_SPLITS} case splits (≠ facts, ℕ subtraction)")
    branches: list[list[tuple]] = [base]
    for cases in splits:
        branches = [b + c for b in branches for c in cases]
    return all(fm_infeasible(b, tick, tighten=tighten) for b in branches)


# --------------------------------------------------------------------------- Fourier–Motzkin


def _normalize(coeffs: dict, const: int, tighten: bool):
    """Divide by the gcd of the coefficients (rounding the constant up when ``tighten``)."""
    g = 0
    for c in coeffs.values():
        g = gcd(g, c)
    if g > 1:
        if tighten:  # Σ cᵢxᵢ ≤ -const over integers  ⇒  Σ (cᵢ/g)xᵢ ≤ ⌊-const/g⌋
            return {x: c // g for x, c in coeffs.items()}, -((-const) // g)
        if const % g == 0:  # exact division: same rational solutions
            return {x: c // g for x, c in coeffs.items()}, const // g
    return coeffs, const


def fm_infeasible(constraints, tick=lambda n=1: None, *, tighten: bool) -> bool:
    """True iff ``Σ cᵢ·xᵢ + c ≤ 0`` (all given) and ``xᵢ ≥ 0`` have no rational solution
    (no integer one when ``tighten``). False also when the search gives up."""
    atoms = {x for coeffs, _ in constraints for x in coeffs}
    cons = list(constraints) + [({x: -1}, 0) for x in atoms]  # every atom is a natural number
    if tighten:  # omega: solve the equalities exactly over ℤ first (leangym.sim.divmod)
        cons = divmod.solve_equalities(cons, tick)
        if cons is None:
            return True
    store: dict = {}  # key (sorted coefficients) -> largest constant (the strongest constraint)

    def add(coeffs, const) -> bool:
        """Record a constraint; True if it is a contradiction ``0 + c ≤ 0`` with ``c > 0``."""
        if not coeffs:
            return const > 0
        coeffs, const = _normalize(coeffs, const, tighten)
        key = tuple(sorted(coeffs.items(), key=lambda kv: repr(kv[0])))
        old = store.get(key)
        if old is None or const > old:
            store[key] = const
        return False

    for coeffs, const in cons:
        if add({x: c for x, c in coeffs.items() if c}, const):
            return True
    while True:
        live = [(dict(k), c) for k, c in store.items()]
        remaining = {x for coeffs, _ in live for x in coeffs}
        if not remaining:
            return False  # every variable eliminated without a contradiction: satisfiable
        # eliminate the variable that creates the fewest new constraints
        best, best_cost = None, None
        for x in remaining:
            pos = sum(1 for coeffs, _ in live if coeffs.get(x, 0) > 0)
            neg = sum(1 for coeffs, _ in live if coeffs.get(x, 0) < 0)
            cost = pos * neg - pos - neg
            if best_cost is None or cost < best_cost or (cost == best_cost and repr(x) < repr(best)):
                best, best_cost = x, cost
        x = best
        pos = [(co, c) for co, c in live if co.get(x, 0) > 0]
        neg = [(co, c) for co, c in live if co.get(x, 0) < 0]
        store = {}
        for co, c in live:
            if co.get(x, 0) == 0 and add(co, c):
                return True
        for pco, pc in pos:
            for nco, nc in neg:
                tick()
                a, b = pco[x], -nco[x]  # b·(p) + a·(n) cancels x; both multipliers positive
                co = {}
                for y, v in pco.items():
                    co[y] = co.get(y, 0) + b * v
                for y, v in nco.items():
                    co[y] = co.get(y, 0) + a * v
                if add({y: v for y, v in co.items() if v}, b * pc + a * nc):
                    return True
                if len(store) > MAX_CONSTRAINTS:
                    return False  # give up (incomplete, never unsound)


# --------------------------------------------------------------------------- polynomials (ring)


def poly(t) -> dict:
    """Canonical polynomial of a commutative-semiring term: ``{monomial: coefficient}``.

    A monomial is a sorted tuple of ``(variable name, exponent)``; ``()`` is the
    constant monomial. Zero coefficients never appear. Closed subterms are
    computed first (so ``(5 - 7) * a`` is ``0``, as in ℕ). Raises
    :class:`Unsupported` for ``-``, ``/``, ``%`` over variables, variable
    exponents and polynomials beyond ``MAX_DEGREE``/``MAX_MONOMIALS``.
    """
    k = t[0]
    if k == "nvar":
        return {((t[1], 1),): 1}
    if k == "num" or term_closed(t):
        try:
            v = eval_term(t)
        except FragmentError as e:
            raise Unsupported(str(e)) from None
        return {(): v} if v else {}
    if k != "op":
        raise Unsupported("(sim) unexpected term")
    o = t[1]
    if o == "+":
        out = dict(poly(t[2]))
        for m, c in poly(t[3]).items():
            out[m] = out.get(m, 0) + c
        return {m: c for m, c in out.items() if c}
    if o == "*":
        return _pmul(poly(t[2]), poly(t[3]))
    if o == "^":
        if not term_closed(t[3]):
            raise Unsupported("(sim) exponents with variables are not simulated")
        e = eval_term(t[3])
        if e > MAX_DEGREE:
            raise Unsupported("(sim) exponent too large for the simulated ring")
        base, out = poly(t[2]), {(): 1}
        for _ in range(e):
            out = _pmul(out, base)
        return out
    raise Unsupported("(sim) ℕ subtraction, division and modulo with variables are not simulated")


def _pmul(p: dict, q: dict) -> dict:
    out: dict = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = _mmul(m1, m2)
            out[m] = out.get(m, 0) + c1 * c2
    if len(out) > MAX_MONOMIALS:
        raise Unsupported("(sim) polynomial too large for the simulated ring")
    return out  # coefficients are positive naturals: products and sums never cancel to 0


def _mmul(m1: tuple, m2: tuple) -> tuple:
    exps = dict(m1)
    for x, e in m2:
        exps[x] = exps.get(x, 0) + e
    return tuple(sorted(exps.items()))


def ring_equal(s, t) -> bool:
    """True iff ``s = t`` holds for all natural values of the variables (polynomial identity)."""
    return poly(s) == poly(t)
