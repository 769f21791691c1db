"""Case analysis: ``cases``, ``rcases`` and ``obtain`` on ∧, ∨, ↔, True and False.

Lean 4 behaviour reproduced here: the analysed hypothesis is cleared and the
constructor fields are added at the end of the context; ``cases`` names them
inaccessibly after the constructor's fields (``left✝ right✝``, ``h✝``) and
tags the goals with the constructor (``intro``, ``inl``, ``inr``), appended to
the parent tag (``inl.intro``). ``rcases`` patterns name the fields instead.
"""
from __future__ import annotations

from leangym.sim.formula import NAT, PROP, show, unfold_arrow
from leangym.sim.goals import Goal, Hyp, elab_prop
from leangym.sim.state import State, TacticError, merge_axioms, tactic_failed

def _fields(ty):
    """[(ctor, [(field name, field type)])] for the analysed type ``ty``."""
    k = ty[0]
    if k == "and":
        return [("intro", [("left", ty[1]), ("right", ty[2])])]
    if k == "iff":
        return [("intro", [("mp", ("imp", ty[1], ty[2])), ("mpr", ("imp", ty[2], ty[1]))])]
    if k == "or":
        return [("inl", [("h", ty[1])]), ("inr", [("h", ty[2])])]
    if k == "true":
        return [("intro", [])]
    if k == "false":
        return []
    return None


def _subject(engine, node, g: Goal):
    """(type, goal with the hypothesis cleared, axioms) for the term being analysed."""
    if node[0] == "id":
        h = g.lookup(node[2])
        if h is not None:
            if h.type == PROP:
                raise TacticError(f"(sim) cannot do case analysis on the proposition '{node[2]}' itself; "
                                  f"try 'by_cases h : {node[2]}'", node[1])
            if h.type == NAT:
                raise TacticError("(sim) case analysis on a natural number is outside the simulated fragment", node[1])
            return h.type, Goal(tuple(x for x in g.hyps if x is not h), g.target, g.tag), ()
    el = engine.elaborator()
    ty = el.infer_closed(node, g.hyps)
    return ty, g, tuple(el.axioms)


def cases(engine, tac, g: Goal, st):
    _, span, node, alts = tac
    ty, base, axioms = _subject(engine, node, g)
    fields = _fields(ty)
    if fields is None:
        if ty[0] == "rel":
            raise TacticError("(sim) 'cases' on an arithmetic relation is outside the simulated fragment", span)
        raise TacticError(f"tactic 'induction' failed, major premise type is not an inductive type \n  {show(ty)}\n"
                          f"{g.text()}", span)
    goals = []
    for ctor, fs in fields:
        tag = f"{g.tag}.{ctor}" if g.tag else ctor
        goals.append((ctor, base.add(*(Hyp(n, t, True) for n, t in fs), tag=tag), len(fs)))
    if alts is None:
        return [x[1] for x in goals], axioms, ()
    # structured `cases h with | inl x => tac | inr y => tac`: each alternative must close its goal
    by_name = {a[0]: a for a in alts}
    for a in alts:
        if a[0] not in {c for c, _, _ in goals}:
            raise TacticError(f"invalid alternative name '{a[0]}'", a[3])
    cur = State((), merge_axioms(st.axioms, axioms), st.log)
    for ctor, goal, nfields in goals:
        alt = by_name.get(ctor)
        if alt is None:
            raise TacticError(f"alternative '{ctor}' has not been provided", span)
        names = alt[1]
        if len(names) > nfields:
            raise TacticError("too many variable names provided", alt[3])
        hyps = list(goal.hyps)
        for i, n in enumerate(names):
            j = len(hyps) - nfields + i
            hyps[j] = Hyp(n, hyps[j].type, n == "_")
        goal = Goal(tuple(hyps), goal.target, goal.tag)
        cur = engine._focus_close(alt[2], cur._replace(goals=(goal,)), alt[3])
    return [], cur.axioms, cur.log[len(st.log):]


def rcases(engine, tac, g: Goal, st):
    _, span, terms, pat = tac
    if len(terms) != 1:
        raise TacticError("(sim) 'rcases' on several terms at once is not supported", span)
    node = terms[0]
    if pat is None:  # Lean's default pattern: one `cases` (the fields unnamed)
        pat = ("p_tuple", ())
    return _destructure_term(engine, node, pat, g, "h", span)


def rintro(engine, tac, g: Goal, st):
    """``rintro pat*``: introduce one binder per pattern and destructure it (on every resulting goal)."""
    _, span, pats = tac
    goals = [g]
    for pat in pats:
        out = []
        for cur in goals:
            arrow = unfold_arrow(cur.target)
            if arrow is None:
                raise TacticError(tactic_failed("introN", cur, "insufficient number of binders"), span)
            nxt = Goal(cur.hyps, arrow[1], cur.tag)
            out.extend(_destruct(nxt, arrow[0], pat, "a", span))
        goals = out
    return goals, (), ()


def obtain(engine, tac, g: Goal, st):
    _, span, pat, ty_node, val = tac
    if val is None:
        raise TacticError("(sim) 'obtain' without ':= term' is not supported", span)
    if ty_node is not None:
        ty = elab_prop(ty_node, g.hyps)
        el = engine.elaborator()
        el.check(val, ty, g.hyps)
        h = g.lookup(val[2]) if val[0] == "id" else None
        if h is not None and h.type not in (PROP, NAT):
            # Lean's RCases: `h` is already local, so it is not generalized; its type is replaced by the
            # (defeq) ascription, then the pattern applies to `h` itself, which `cases` clears.
            g = Goal(tuple(Hyp(x.name, ty, x.inacc) if x is h else x for x in g.hyps), g.target, g.tag)
            return _destructure_term(engine, val, pat, g, "this", span)
        return _destruct(g, ty, pat, "this", span), tuple(el.axioms), ()
    return _destructure_term(engine, val, pat, g, "this", span)


def _destructure_term(engine, node, pat, g: Goal, default: str, span):
    """``rcases node with pat`` / ``obtain pat := node``. A local hypothesis under a plain name or ``_``
    stays as it is (Lean generalizes only terms that are not already local: the name binds nothing)."""
    ty, base, axioms = _subject(engine, node, g)
    if node[0] == "id" and base is not g and pat[0] in ("p_name", "p_any"):
        return [g], axioms, ()
    return _destruct(base, ty, pat, node[2] if node[0] == "id" else default, span), axioms, ()


def _destruct(g: Goal, ty, pat, default: str, span) -> list:
    """Goals after matching a value of type ``ty`` against rcases pattern ``pat``.

    As Lean's ``RCases``: a name (or ``_``, ``-``) binds the value whole; any other
    pattern does one ``cases`` on it, so its type must be an inductive one (∧, ↔, ∨,
    True, False): the alternatives ``a | b`` go to the constructors in order and a
    tuple ``⟨a, b⟩`` to one constructor's fields (missing fields are ``_``, extra
    patterns go to the last field as a tuple). On a single-constructor type several
    alternatives all go to its first field.
    """
    k = pat[0]
    if k == "p_name":
        return [g.add(Hyp(pat[1], ty))]
    if k == "p_any":
        return [g.add(Hyp(default, ty, True))]
    if k == "p_clear":
        return [g]
    if k not in ("p_tuple", "p_alts"):
        raise TacticError("(sim) unsupported rcases pattern", span)
    if ty[0] == "rel":
        raise TacticError("(sim) 'rcases' on an arithmetic relation is outside the simulated fragment", span)
    ctors = _fields(ty)
    if ctors is None:
        raise TacticError(f"rcases tactic failed: {default} : {show(ty)} is not an inductive datatype", span)
    alts = list(pat[1]) if k == "p_alts" else [pat]
    out = []
    for i, (ctor, fields) in enumerate(ctors):
        if i < len(ctors) - 1:  # one alternative each, `_` once they run out
            mine = alts[i:i + 1]
        else:  # the last constructor takes all that is left
            mine = alts[i:]
        pats = _as_tuple(mine[0]) if len(mine) == 1 else [("p_alts", tuple(mine))] if mine else []
        tag = f"{g.tag}.{ctor}" if g.tag else ctor
        # One `cases`: every field joins the context at once (named by its pattern, else inaccessibly);
        # then each field with a pattern of its own is taken apart in turn, its parts added at the end.
        added, nested = [], []
        for (fname, fty), fpat in zip(fields, _fit(pats, len(fields))):
            if fpat[0] == "p_clear":
                continue
            hyp = Hyp(fpat[1], fty) if fpat[0] == "p_name" else Hyp(fname, fty, True)
            added.append(hyp)
            if fpat[0] in ("p_tuple", "p_alts"):
                nested.append((hyp, fty, fpat, fname))
        goals = [Goal(g.hyps + tuple(added), g.target, tag)]
        for hyp, fty, fpat, fname in nested:
            goals = [done for cur in goals
                     for done in _destruct(Goal(tuple(x for x in cur.hyps if x is not hyp), cur.target, cur.tag),
                                           fty, fpat, fname, span)]
        out.extend(goals)
    return out


def _as_tuple(pat) -> list:
    """A constructor's field patterns from one alternative: a tuple's items, else the pattern alone."""
    return list(pat[1]) if pat[0] == "p_tuple" else [pat]


def _fit(pats: list, n: int) -> list:
    """``pats`` for ``n`` fields: padded with ``_``; extra patterns go to the last field as one tuple."""
    if len(pats) <= n:
        return pats + [("p_any",)] * (n - len(pats))
    return pats[:n - 1] + [("p_tuple", tuple(pats[n - 1:]))]


def _pat_text(pat) -> str:
    k = pat[0]
    if k == "p_name":
        return pat[1]
    if k == "p_any":
        return "_"
    if k == "p_clear":
        return "-"
    if k == "p_tuple":
        return "⟨" + ", ".join(_pat_text(p) for p in pat[1]) + "⟩"
    return " | ".join(_pat_text(p) for p in pat[1])
