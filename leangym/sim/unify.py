"""Unification of the simulated kernel's lemma schemas with formulas (``?0``-style metavariables).

A built-in lemma (:mod:`leangym.sim.lemmas`) is a schema over metavariables; applying it
matches its conclusion against the goal up to Lean's default-transparency defeq
(:func:`leangym.sim.formula._canon`), binding each metavariable once (occurs-checked).
"""
from __future__ import annotations

from leangym.sim.formula import _canon, _canon_term, defeq, unfold_arrow



def has_mvar(f) -> bool:
    k = f[0]
    if k == "mvar":
        return True
    if k in ("var", "true", "false"):
        return False
    if k == "rel":
        return _term_has_mvar(f[2]) or _term_has_mvar(f[3])
    return any(has_mvar(x) for x in f[1:])


def _term_has_mvar(t) -> bool:
    k = t[0]
    if k == "op":
        return _term_has_mvar(t[2]) or _term_has_mvar(t[3])
    return k == "mvar"


def _inst_term(t, subst: dict):
    k = t[0]
    if k == "mvar":
        v = subst.get(t[1])
        return t if v is None else _inst_term(v, subst)
    if k == "op":
        return ("op", t[1], _inst_term(t[2], subst), _inst_term(t[3], subst))
    return t


def instantiate(f, subst: dict):
    """``f`` with assigned mvars replaced, following chains (assignments are acyclic: occurs check)."""
    k = f[0]
    if k == "mvar":
        v = subst.get(f[1])
        return f if v is None else instantiate(v, subst) if has_mvar(v) else v
    if k in ("var", "true", "false"):
        return f
    if k == "rel":
        if not (_term_has_mvar(f[2]) or _term_has_mvar(f[3])):
            return f
        return ("rel", f[1], _inst_term(f[2], subst), _inst_term(f[3], subst))
    return (k,) + tuple(instantiate(x, subst) for x in f[1:])


def _occurs(i: int, f) -> bool:
    k = f[0]
    if k == "mvar":
        return f[1] == i
    if k in ("var", "true", "false", "rel"):
        return False  # a formula mvar never occurs inside a ℕ term
    return any(_occurs(i, x) for x in f[1:])


def unify(pat, f, subst: dict) -> bool:
    """Match ``pat`` (with mvars) against ``f`` up to defeq; extends ``subst`` in place."""
    k = pat[0]
    if k == "mvar":
        v = subst.get(pat[1])
        if v is None:
            f = instantiate(f, subst)
            if f[0] == "mvar" and f[1] == pat[1]:
                return True
            if _occurs(pat[1], f):
                return False
            subst[pat[1]] = f
            return True
        return unify(v, f, subst) if has_mvar(v) else defeq(v, f) if not has_mvar(f) else unify(f, v, subst)
    if f[0] == "mvar":
        return unify(f, pat, subst)
    if not has_mvar(pat):
        if k == "rel" and f[0] == "rel" and has_mvar(f):  # ℕ-term mvars only on the right
            return _unify_rel(f, pat, subst)
        return defeq(pat, f)
    if k == f[0] and k in ("not", "and", "or", "imp", "iff"):
        return all(unify(a, b, subst) for a, b in zip(pat[1:], f[1:]))
    if k == "rel" and f[0] == "rel":
        return _unify_rel(pat, f, subst)
    # different heads: unfold one side (Lean's lazy delta) and retry
    up = unfold_arrow(pat)
    if up is not None and pat[0] != "imp":
        return unify(("imp",) + up, f, subst)
    uf = unfold_arrow(f)
    if uf is not None and f[0] != "imp":
        return unify(pat, ("imp",) + uf, subst)
    return False


def _unify_rel(pat, f, subst: dict) -> bool:
    """Relations with ℕ-term mvars (``Nat.add_comm _ _``): first-order matching of the
    canonical forms, committed only if the instantiated pattern is then :func:`defeq` to ``f``."""
    if has_mvar(f):
        return False  # both sides open: not needed by the fragment's lemmas
    trial = dict(subst)
    if not _match_canon(_canon(instantiate(pat, subst)), _canon(f), trial):
        return False
    done = instantiate(pat, trial)
    if has_mvar(done) or not defeq(done, f):
        return False
    subst.update(trial)
    return True


def _match_canon(p, f, subst: dict) -> bool:
    k = p[0]
    if k == "mvar":  # a ℕ-term mvar (formula mvars never reach here: canon of a rel is rel/imp/false)
        v = subst.get(p[1])
        if v is None:
            subst[p[1]] = f
            return True
        return _canon_term(_inst_term(v, subst)) == f
    if k != f[0]:
        return False
    if k in ("num", "nvar", "false"):
        return p == f
    if k in ("op", "rel"):
        return p[1] == f[1] and _match_canon(p[2], f[2], subst) and _match_canon(p[3], f[3], subst)
    if k == "imp":
        return _match_canon(p[1], f[1], subst) and _match_canon(p[2], f[2], subst)
    return False
