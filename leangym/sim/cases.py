"""Case analysis: ``cases``, ``rcases`` and ``obtain`` on ∧, ∨, ↔, True and False.

Lean 4 behaviour reproduced here: the analysed hypothesis is cleared and the
constructor fields are added at the end of the context; ``cases`` names them
inaccessibly after the constructor's fields (``left✝ right✝``, ``h✝``) and
tags the goals with the constructor (``intro``, ``inl``, ``inr``), appended to
the parent tag (``inl.intro``). ``rcases`` patterns name the fields instead.
"""
from __future__ import annotations

from leangym.sim.formula import FALSE, NAT, PROP, TRUE, show, unfold_arrow
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
                                  f"try 'by_cases {node[2]}'", node[1])
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
    ty, base, axioms = _subject(engine, node, g)
    default = node[2] if node[0] == "id" else "h"
    if pat is None:
        pat = ("p_any",)
    return _destruct(base, ty, pat, default, span), axioms, ()


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
        return _destruct(g, ty, pat, "this", span), tuple(el.axioms), ()
    ty, base, axioms = _subject(engine, val, g)
    default = val[2] if val[0] == "id" else "this"
    return _destruct(base, ty, pat, default, span), axioms, ()


def _destruct(g: Goal, ty, pat, default: str, span) -> list:
    """Goals after matching a value of type ``ty`` against rcases pattern ``pat``."""
    k = pat[0]
    if k == "p_name":
        return [g.add(Hyp(pat[1], ty))]
    if k == "p_any":
        return [g.add(Hyp(default, ty, True))]
    if k == "p_clear":
        return [g]
    if ty == FALSE:
        return []  # any destructuring pattern on False closes the goal
    if k == "p_tuple":
        items = list(pat[1])
        if ty[0] not in ("and", "iff"):
            if ty == TRUE and not items:
                return [g]
            if len(items) == 1:
                return _destruct(g, ty, items[0], default, span)
            if not items:
                return [g.add(Hyp(default, ty, True))]
            raise TacticError(f"(sim) rcases: pattern {_pat_text(pat)} does not match the type\n  {show(ty)}", span)
        (ctor, fields), = _fields(ty)
        if not items:
            items = [("p_any",), ("p_any",)]
        elif len(items) == 1:
            items.append(("p_any",))
        elif len(items) > 2:
            items = [items[0], ("p_tuple", tuple(items[1:]))]
        tag = f"{g.tag}.{ctor}" if g.tag else ctor
        goals = [Goal(g.hyps, g.target, tag)]
        for (fname, fty), fpat in zip(fields, items):
            goals = [out for cur in goals for out in _destruct(cur, fty, fpat, fname, span)]
        return goals
    if k == "p_alts":
        alts = list(pat[1])
        if ty[0] != "or":
            return _destruct(g, ty, alts[0], default, span)
        left = alts[0]
        right = alts[1] if len(alts) == 2 else ("p_alts", tuple(alts[1:]))
        out = []
        for ctor, fty, fpat in (("inl", ty[1], left), ("inr", ty[2], right)):
            tag = f"{g.tag}.{ctor}" if g.tag else ctor
            out.extend(_destruct(Goal(g.hyps, g.target, tag), fty, fpat, "h", span))
        return out
    raise TacticError("(sim) unsupported rcases pattern", span)


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
