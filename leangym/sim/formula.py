"""Propositions of the simulated fragment: representation, printing, defeq, truth.

A formula is a nested tuple (immutable, hashable, cheap to share):

* ``('var', name)`` a ``Prop`` variable; ``TRUE = ('true',)``, ``FALSE = ('false',)``
* ``('not', a)``, ``('and', a, b)``, ``('or', a, b)``, ``('imp', a, b)``, ``('iff', a, b)``
* ``('rel', op, s, t)`` with ``op`` in ``= ≠ ≤ < ≥ > ∣`` between ℕ terms (``∣``: ``s`` divides ``t``)
* ``('mvar', i)`` only inside lemma schemas, for unification (:mod:`leangym.sim.unify`)

A ℕ term is ``('num', n)``, ``('op', o, s, t)`` with ``o`` in ``+ - * / % ^``,
``('nvar', name)`` a variable ``n : ℕ`` of the local context, or (in lemma
schemas only) ``('mvar', i)``. A relation whose terms are closed is decided by
computation; one with variables is an opaque atom for the Prop machinery and
only the arithmetic tactics (:mod:`leangym.sim.arith`) look inside it.

Formulas keep the user's spelling (``¬p`` stays ``¬p``) so goals print exactly
as Lean prints them; definitional unfolding (``¬p`` is ``p → False``, ``a ≠ b``
is ``a = b → False``, ``a > b`` is ``b < a``, closed arithmetic computes) only
happens inside :func:`_canon`, which decides Lean's ``isDefEq`` on the fragment.
"""
from __future__ import annotations

import itertools
from functools import lru_cache

TRUE = ("true",)
FALSE = ("false",)
PROP = ("Prop",)  # the sort, as the "type" of a Prop-variable hypothesis
NAT = ("ℕ",)  # the "type" of a hypothesis ``n : ℕ`` (a ℕ variable, not a proof)
SORTS = (PROP, NAT)  # hypothesis types that are not propositions
CONNECTIVES = {"∧": "and", "∨": "or", "→": "imp", "↔": "iff"}
RELATIONS = ("=", "≠", "≤", "<", "≥", ">", "∣")  # ∣ is Dvd.dvd (U+2223), ℕ only
ARITH = ("+", "-", "*", "/", "%", "^")
_SYM = {"and": "∧", "or": "∨", "imp": "→", "iff": "↔"}
# (precedence, left operand needs, right operand needs) as in Lean's notation declarations
_PREC = {"iff": (20, 21, 21), "imp": (25, 26, 25), "or": (30, 31, 30), "and": (35, 36, 35)}
_TPREC = {"+": (65, 65, 66), "-": (65, 65, 66), "*": (70, 70, 71), "/": (70, 70, 71), "%": (70, 70, 71), "^": (75, 76, 75)}
MAX = 1024
MAX_BITS = 1 << 16  # numbers beyond this are refused rather than computed


class FragmentError(Exception):
    """Something Lean would accept or reject that the simulated kernel cannot decide."""


# --------------------------------------------------------------------------- printing


def show(f, rename: tuple = ()) -> str:
    """``f`` as Lean's pretty printer writes it (minimal parentheses, Lean precedences).

    ``rename`` maps Prop variables to their displayed names (``p`` -> ``p✝`` when shadowed).
    """
    return _show_cached(f, rename)


@lru_cache(maxsize=200_000)
def _show_cached(f, rename) -> str:
    return _show(f, 0, dict(rename) if rename else None)


def _show(f, need: int, ren) -> str:
    k = f[0]
    if k == "var":
        return ren.get(f[1], f[1]) if ren else f[1]
    if k == "true":
        return "True"
    if k == "false":
        return "False"
    if k == "not":
        return "¬" + _show(f[1], 40, ren)
    if k == "mvar":
        return f"?m.{f[1]}"
    if k == "rel":
        s = f"{show_term(f[2], 51, ren)} {f[1]} {show_term(f[3], 51, ren)}"
        return f"({s})" if need > 50 else s
    prec, lneed, rneed = _PREC[k]
    s = f"{_show(f[1], lneed, ren)} {_SYM[k]} {_show(f[2], rneed, ren)}"
    return f"({s})" if need > prec else s


def show_term(t, need: int = 0, ren=None) -> str:
    k = t[0]
    if k == "num":
        return str(t[1])
    if k == "nvar":
        return ren.get(t[1], t[1]) if ren else t[1]
    if k == "mvar":
        return f"?m.{t[1]}"
    prec, lneed, rneed = _TPREC[t[1]]
    s = f"{show_term(t[2], lneed, ren)} {t[1]} {show_term(t[3], rneed, ren)}"
    return f"({s})" if need > prec else s


# --------------------------------------------------------------------------- arithmetic


def eval_term(t) -> int:
    """Value of a closed ℕ term with Lean's semantics (truncated `-`, `/ 0 = 0`, `% 0 = id`).

    Raises :class:`FragmentError` for a term with variables (callers that may
    meet one test :func:`term_closed` first).
    """
    if not term_closed(t):
        raise FragmentError("(sim) this ℕ term has variables and cannot be computed")
    return _eval_term(t)


@lru_cache(maxsize=100_000)
def term_closed(t) -> bool:
    """No ℕ variables (nor schema mvars): the term computes to a numeral."""
    k = t[0]
    if k == "num":
        return True
    if k == "op":
        return term_closed(t[2]) and term_closed(t[3])
    return False


def term_mentions(t, name: str) -> bool:
    """Does the ℕ variable ``name`` occur in term ``t``?"""
    k = t[0]
    if k == "nvar":
        return t[1] == name
    if k == "op":
        return term_mentions(t[2], name) or term_mentions(t[3], name)
    return False


def mentions_nat(f, name: str) -> bool:
    """Does the ℕ variable ``name`` occur in formula ``f`` (``clear`` must refuse then)?"""
    k = f[0]
    if k == "rel":
        return term_mentions(f[2], name) or term_mentions(f[3], name)
    if k in ("not", "and", "or", "imp", "iff"):
        return any(mentions_nat(x, name) for x in f[1:])
    return False


@lru_cache(maxsize=100_000)
def _eval_term(t) -> int:
    if t[0] == "num":
        return t[1]
    o, a, b = t[1], _eval_term(t[2]), _eval_term(t[3])
    if o == "+":
        r = a + b
    elif o == "-":
        r = max(a - b, 0)
    elif o == "*":
        if a.bit_length() + b.bit_length() > MAX_BITS:
            raise FragmentError("(sim) number too large for the simulated kernel")
        r = a * b
    elif o == "/":
        r = a // b if b else 0
    elif o == "%":
        r = a % b if b else a
    else:  # ^
        if a > 1 and b * a.bit_length() > MAX_BITS:
            raise FragmentError("(sim) number too large for the simulated kernel")
        r = a**b
    return r


def eval_rel(op: str, a: int, b: int) -> bool:
    if op == "∣":  # Nat: a ∣ b ↔ ∃ c, b = a * c; so 0 ∣ b ↔ b = 0
        return b % a == 0 if a else b == 0
    return {"=": a == b, "≠": a != b, "≤": a <= b, "<": a < b, "≥": a >= b, ">": a > b}[op]


def is_closed(f) -> bool:
    """No Prop variables (only arithmetic atoms, True, False): Lean can decide it."""
    return _is_closed(f)


@lru_cache(maxsize=100_000)
def _is_closed(f) -> bool:
    k = f[0]
    if k == "var" or k == "mvar":
        return False
    if k in ("true", "false"):
        return True
    if k == "rel":
        return term_closed(f[2]) and term_closed(f[3])
    return all(_is_closed(x) for x in f[1:])


def variables(f, acc: list | None = None) -> list[str]:
    """Prop variables of ``f`` in order of first occurrence."""
    acc = [] if acc is None else acc
    k = f[0]
    if k == "var":
        if f[1] not in acc:
            acc.append(f[1])
    elif k in ("not", "and", "or", "imp", "iff"):
        for x in f[1:]:
            variables(x, acc)
    return acc


# --------------------------------------------------------------------------- semantics


def evaluate(f, env: dict) -> bool:
    """Classical truth value of ``f`` under ``env`` (Prop variable -> bool)."""
    k = f[0]
    if k == "var":
        return env[f[1]]
    if k == "true":
        return True
    if k == "false":
        return False
    if k == "not":
        return not evaluate(f[1], env)
    if k == "and":
        return evaluate(f[1], env) and evaluate(f[2], env)
    if k == "or":
        return evaluate(f[1], env) or evaluate(f[2], env)
    if k == "imp":
        return (not evaluate(f[1], env)) or evaluate(f[2], env)
    if k == "iff":
        return evaluate(f[1], env) == evaluate(f[2], env)
    if k == "rel":
        return eval_rel(f[1], eval_term(f[2]), eval_term(f[3]))
    raise ValueError(f"cannot evaluate {f!r}")


def is_tautology(f, hypotheses=()) -> bool:
    """True iff ``hypotheses → f`` holds under every assignment of its Prop variables (truth tables)."""
    names: list[str] = []
    for h in (*hypotheses, f):
        variables(h, names)
    for bits in itertools.product((False, True), repeat=len(names)):
        env = dict(zip(names, bits))
        if all(evaluate(h, env) for h in hypotheses) and not evaluate(f, env):
            return False
    return True


# --------------------------------------------------------------------------- definitional equality


@lru_cache(maxsize=200_000)
def _canon(f):
    """Normal form for Lean's default-transparency ``isDefEq`` on the fragment.

    Unfolds ``Not``, ``Ne``, ``GT.gt``, ``GE.ge``, ``Nat.lt`` (``a < b`` is
    ``a + 1 ≤ b``) and computes closed ℕ terms; connectives stay distinct
    (``p ∧ q`` is not defeq to ``q ∧ p``).
    """
    k = f[0]
    if k in ("var", "true", "false", "mvar"):
        return f
    if k == "not":
        return ("imp", _canon(f[1]), FALSE)
    if k == "rel":
        op, s, t = f[1], _canon_term(f[2]), _canon_term(f[3])
        if op == "≠":
            return ("imp", ("rel", "=", s, t), FALSE)
        if op == ">":
            op, s, t = "<", t, s
        elif op == "≥":
            op, s, t = "≤", t, s
        if op == "<":
            s = ("num", s[1] + 1) if s[0] == "num" else ("op", "+", s, ("num", 1))
            op = "≤"
        return ("rel", op, s, t)
    return (k,) + tuple(_canon(x) for x in f[1:])


@lru_cache(maxsize=100_000)
def _canon_term(t):
    """Closed subterms computed to numerals; the rest kept as written.

    Deliberately no more: ``a + 0`` and ``a`` stay different (Lean would unfold
    ``Nat.add``, but ``0 + a`` and ``a`` are not defeq and telling them apart
    needs Lean's whnf; being conservative only makes ``rfl``/``exact`` fail).
    """
    k = t[0]
    if k == "num":
        return t
    if k != "op":  # a variable or schema mvar
        return t
    if term_closed(t):
        try:
            return ("num", _eval_term(t))
        except FragmentError:  # too large to compute: keep it as written
            return t
    return ("op", t[1], _canon_term(t[2]), _canon_term(t[3]))


# What a refused equation is where Lean may unfold further than the conservative defeq below: not Lean's verdict.
DEFEQ_LIMIT = ("(sim) 'rfl': the sides are not equal as far as the simulated kernel unfolds ℕ operations on "
               "variables (it does not unfold `x + 0` to `x`, as Lean does)")


def defeq_beyond_sim(s, t) -> bool:
    """Whether Lean's ``isDefEq`` may say yes where :func:`terms_defeq` says no: a term with variables and a
    numeral (``Nat.add x 1`` unfolds, by recursion on the literal). Without numerals every ℕ operation on a
    variable is stuck in Lean too, and without variables both sides compute: there the verdicts agree."""
    return not (term_closed(s) and term_closed(t)) and (_has_numeral(s) or _has_numeral(t))


def _has_numeral(t) -> bool:
    return t[0] == "num" or (t[0] == "op" and (_has_numeral(t[2]) or _has_numeral(t[3])))


def terms_defeq(s, t) -> bool:
    """``isDefEq`` on two ℕ terms, conservatively (closed ones compute, see :func:`_canon_term`)."""
    if term_closed(s) and term_closed(t):
        return eval_term(s) == eval_term(t)  # may raise FragmentError (too large), as before
    return _canon_term(s) == _canon_term(t)


def defeq(a, b) -> bool:
    return a == b or _canon(a) == _canon(b)


def unfold_arrow(f):
    """``(a, b)`` when ``f`` is (definitionally, by whnf) ``a → b``; else None."""
    k = f[0]
    if k == "imp":
        return f[1], f[2]
    if k == "not":
        return f[1], FALSE
    if k == "rel" and f[1] == "≠":
        return ("rel", "=", f[2], f[3]), FALSE
    return None


# --------------------------------------------------------------------------- simp-like evaluation


def simp_closed(f):
    """What ``norm_num``/``simp`` make of ``f`` using only arithmetic and True/False laws.

    Returns TRUE, FALSE, or None when Prop variables survive (the simulated
    kernel then refuses rather than guess which residual goal Mathlib leaves).
    """
    k = f[0]
    if k == "var":
        return None
    if k in ("true", "false"):
        return f
    if k == "rel":
        if not (term_closed(f[2]) and term_closed(f[3])):
            # with variables, only `t = t`, `t ≤ t`, `t ≥ t` (sides equal after computing
            # closed subterms) are decided; anything else is left to the arithmetic tactics
            return TRUE if f[1] in ("=", "≤", "≥") and _canon_term(f[2]) == _canon_term(f[3]) else None
        return TRUE if eval_rel(f[1], eval_term(f[2]), eval_term(f[3])) else FALSE
    if k == "not":
        a = simp_closed(f[1])
        return None if a is None else (FALSE if a == TRUE else TRUE)
    a, b = simp_closed(f[1]), simp_closed(f[2])
    if k == "and":
        if a == FALSE or b == FALSE:
            return FALSE
        if a == TRUE and b == TRUE:
            return TRUE
    elif k == "or":
        if a == TRUE or b == TRUE:
            return TRUE
        if a == FALSE and b == FALSE:
            return FALSE
    elif k == "imp":
        if a == FALSE or b == TRUE:
            return TRUE
        if a == TRUE and b == FALSE:
            return FALSE
    elif k == "iff":
        if a is not None and b is not None:
            return TRUE if a == b else FALSE
    return None
