"""The tactic interpreter: Lean 4 tactics over immutable goal lists.

Soundness discipline (LCF style): every rule replaces the main goal by
subgoals that jointly imply it (classically), and only :func:`defeq`,
:func:`leangym.sim.unify.unify` and the lemma schemas of :mod:`leangym.sim.lemmas` decide that
a proof fits. States are immutable ``State(goals, axioms, log)`` values, so
backtracking (``first``, ``try``, ``repeat``, ``any_goals``) simply keeps an
older state; ``log`` holds what a ``/command`` run reports (recovered errors,
``sorry`` goals) and is rolled back together with the goals.

Every step ticks a budget; running out raises :class:`Timeout` (the REPL's
``Tactic application timed out.``).
"""
from __future__ import annotations

import time

from leangym.sim import cases as _cases
from leangym.sim.closers import ClosingTactics
from leangym.sim.formula import (FALSE, PROP, SORTS, FragmentError, defeq, is_closed, mentions_nat, show, unfold_arrow,
                                 variables)
from leangym.sim.goals import ElabError, Goal, Hyp, elab_prop, goals_text
from leangym.sim.state import (SYNTHETIC_SORRY, State, TacticError, Timeout, append_tag, merge_axioms,  # noqa: F401
                               tactic_failed)
from leangym.sim.lemmas import CLASSICAL
from leangym.sim.terms import Elaborator
from leangym.sim.unify import has_mvar, instantiate, unify


class Engine(ClosingTactics):
    """Runs tactic syntax trees. ``recover``: Lean's error recovery for ``/command`` runs."""

    def __init__(self, env: dict, src: str, max_steps: int = 100_000, deadline: float | None = None,
                 recover: bool = False):
        self.env = env
        self.src = src
        self.max_steps = max_steps
        self.deadline = deadline
        self.recover = recover
        self.steps = 0

    def tick(self, n: int = 1) -> None:
        self.steps += n
        if self.steps > self.max_steps:
            raise Timeout()
        if self.deadline is not None and (self.steps & 255) == 0 and time.monotonic() > self.deadline:
            raise Timeout()

    def elaborator(self, holes=False, mvars=False) -> Elaborator:
        return Elaborator(self.env, self.src, self.run_by, self.tick, holes=holes, mvars=mvars)

    def run_by(self, seq, hyps, target) -> tuple:
        """A nested ``by`` block: must close its goal; returns the axioms it used.

        An error the block recovered from (``recover``: a failed bullet admitted, as Lean
        goes on after an error) fails the enclosing term: only the axioms leave this
        block, so an error left in its log would never be reported.
        """
        st = self.run(seq, State((Goal(hyps, target),)))
        for entry in st.log:
            if entry[0] == "error":
                raise ElabError(entry[1], entry[2])
        if st.goals:
            raise ElabError("unsolved goals\n" + goals_text(st.goals), seq[1])
        return st.axioms

    # ----------------------------------------------------------------- dispatch
    def run(self, tac, st: State) -> State:
        self.tick()
        k = tac[0]
        if k == "seq":
            for item in tac[2]:
                st = self.run(item, st)
            return st
        if k == "paren":
            return self.run(tac[2], st)
        if k == "bullet":
            return self._focus_close(tac[2], st, tac[3])
        if k == "case":
            return self._case(tac, st)
        if k == "then_all":
            main, rest = self._main(st, tac)
            st1 = self.run(tac[2], st._replace(goals=(main,)))
            out, cur = [], st1
            for g in st1.goals:
                cur = self.run(tac[3], cur._replace(goals=(g,)))
                out.extend(cur.goals)
            return cur._replace(goals=tuple(out) + rest)
        if k == "first":
            # like Lean, alternatives that may be backtracked run without error recovery
            for alt in tac[2][:-1]:
                try:
                    return self._strict(alt, st)
                except TacticError:
                    pass
            return self.run(tac[2][-1], st)
        if k == "comb":
            return self._combinator(tac[2], tac[3], st)
        if k == "scoped":
            return self._scoped(tac, st)
        if k == "unsupported":
            raise TacticError(f"(sim) tactic '{tac[2]}' is not supported by the simulated kernel", tac[1])
        main, rest = self._main(st, tac)
        try:
            new, axioms, log = getattr(self, "t_" + k)(tac, main, st)
        except _Reorder as r:  # `show` matched a later goal: it becomes the main goal
            goals = list(st.goals)
            goals.pop(r.index)
            return st._replace(goals=(r.goal, *goals))
        except ElabError as e:
            raise TacticError(e.msg, e.span or tac[1]) from None
        except FragmentError as e:
            raise TacticError(str(e), tac[1]) from None
        return State(tuple(new) + rest, merge_axioms(st.axioms, axioms), st.log + log if log else st.log)

    def _strict(self, tac, st: State) -> State:
        """Run without error recovery (inside ``first``/``try``/``repeat``, failures must surface)."""
        saved, self.recover = self.recover, False
        try:
            return self.run(tac, st)
        finally:
            self.recover = saved

    def _main(self, st: State, tac):
        if not st.goals:
            raise TacticError("no goals to be proved", tac[1])
        return st.goals[0], st.goals[1:]

    def _focus_close(self, seq, st: State, span) -> State:
        """``· tac`` / ``case``: run on the main goal alone; it must be closed."""
        main, rest = self._main(st, ("", span))
        try:
            inner = self.run(seq, st._replace(goals=(main,)))
            if inner.goals:
                raise TacticError("unsolved goals\n" + goals_text(inner.goals), span)
        except TacticError as e:
            if not self.recover:
                raise
            # Lean logs the error, admits the goal and carries on with the next tactic.
            return st._replace(goals=rest, axioms=merge_axioms(st.axioms, (SYNTHETIC_SORRY,)),
                               log=st.log + (("error", e.msg, e.span),))
        return inner._replace(goals=rest)

    def _case(self, tac, st: State) -> State:
        _, span, tag, names, seq, kw_span = tac
        goals = list(st.goals)
        if not goals:
            raise TacticError("no goals to be proved", span)
        idx = 0
        if tag is not None:
            found = [i for i, g in enumerate(goals) if g.tag and (g.tag == tag or g.tag.endswith("." + tag))]
            if not found:
                raise TacticError(f"Case tag '{tag}' not found.\n\nAvailable tags: "
                                  + ", ".join(f"'{g.tag}'" for g in goals if g.tag), span)
            idx = found[0]
        g = _rename_inaccessible(goals[idx], names, span)
        g = Goal(g.hyps, g.target, None)
        rest = goals[:idx] + goals[idx + 1:]
        return self._focus_close(seq, st._replace(goals=(g, *rest)), kw_span)

    def _scoped(self, tac, st: State) -> State:
        """``set_option LIMIT N in tacs`` runs ``tacs`` (Lean's resource limits mean nothing to this kernel,
        which keeps its own budget); ``open NS in tacs`` runs ``tacs`` when the ``open`` changes nothing.

        Which names ``open`` brings into scope depends on what Lean knows (Mathlib's namespaces,
        ``protected`` declarations, overloading), and that is outside the fragment: a namespace this
        kernel does not know, or a name of ``tacs`` that could mean ``NS.name``, is a ``(sim)`` error.
        """
        _, span, kind, args, body = tac
        if kind != "set_option":
            spaces = {name.rsplit(".", i)[0] for name in self.env for i in range(1, name.count(".") + 1)}
            for ns in args:
                if ns not in spaces:
                    raise TacticError(f"(sim) unknown namespace '{ns}': not in the simulated fragment (or not Lean)",
                                      span)
            if kind == "open":
                for name, where in _identifiers(body):
                    parts = name.split(".")
                    for ns in args:
                        for i in range(1, len(parts) + 1):
                            full = f"{ns}.{'.'.join(parts[:i])}"
                            if full in self.env or full in spaces:
                                raise TacticError(f"(sim) under 'open {ns}', '{name}' could mean '{ns}.{name}': which "
                                                  "one Lean takes is outside the simulated fragment (write the full name, "
                                                  "or leave out the 'open')", where)
        return self.run(body, st)

    def _combinator(self, name, seq, st: State) -> State:
        if name == "try":
            try:
                return self._strict(seq, st)
            except TacticError:
                return st
        if name == "repeat":
            while True:
                try:
                    st = self._strict(seq, st)
                except TacticError:
                    return st
        if name == "focus":
            main, rest = self._main(st, seq)
            inner = self.run(seq, st._replace(goals=(main,)))
            return inner._replace(goals=inner.goals + rest)
        if name == "all_goals":
            out, cur = [], st
            for g in st.goals:
                cur = self.run(seq, cur._replace(goals=(g,)))
                out.extend(cur.goals)
            return cur._replace(goals=tuple(out))
        # any_goals
        out, cur, ok, err = [], st, False, None
        for g in st.goals:
            try:
                cur = self._strict(seq, cur._replace(goals=(g,)))
                out.extend(cur.goals)
                ok = True
            except TacticError as e:
                err = err or e
                out.append(g)
        if not ok:
            raise err or TacticError("no goals to be proved", seq[1])
        return cur._replace(goals=tuple(out))

    # ----------------------------------------------------------------- basic tactics
    # Each t_* returns (new goals replacing the main goal, axioms used, log entries).

    def t_intro(self, tac, g: Goal, st):
        names = tac[2] or ("_",)
        hyps, target = g.hyps, g.target
        for n in names:
            arrow = unfold_arrow(target)
            if arrow is None:
                raise TacticError(tactic_failed("introN", Goal(hyps, target, g.tag), "insufficient number of binders"), tac[1])
            hyps = hyps + ((Hyp("a", arrow[0], True),) if n == "_" else (Hyp(n, arrow[0]),))
            target = arrow[1]
        return [Goal(hyps, target, g.tag)], (), ()

    def t_intros(self, tac, g: Goal, st):
        if tac[2]:
            return self.t_intro(tac, g, st)
        hyps, target = g.hyps, g.target
        while target[0] == "imp":  # `intros` only sees syntactic binders (not `¬p`)
            self.tick()
            hyps, target = hyps + (Hyp("a", target[1], True),), target[2]
        return [Goal(hyps, target, g.tag)], (), ()

    def t_exact(self, tac, g: Goal, st):
        el = self.elaborator()
        el.check(tac[2], g.target, g.hyps)
        return [], tuple(el.axioms), ()

    def t_refine(self, tac, g: Goal, st):
        el = self.elaborator(holes=True)
        el.check(tac[2], g.target, g.hyps)
        holes = sorted(el.new_goals, key=lambda x: x[0])
        anon = sum(1 for h in holes if h[3] is None)
        new, idx = [], 1
        for _, hyps, target, tag in holes:
            if tag is None:
                tag = g.tag if anon == 1 else append_tag(g.tag, f"refine_{idx}")
                idx += 1
            new.append(Goal(hyps, target, tag))
        return new, tuple(el.axioms), ()

    def t_apply(self, tac, g: Goal, st):
        el = self.elaborator(holes=True, mvars=True)
        node = tac[2]
        ty = el.inst(el.infer(node, g.hyps))
        names, nprops = _apply_binder_info(el, node, g)
        premises, cur = [], ty
        while True:
            arrow = unfold_arrow(cur)
            if arrow is None:
                break
            premises.append(arrow[0])
            cur = arrow[1]
        n = len(premises)
        target_n, t = 0, g.target
        while (a := unfold_arrow(t)) is not None:
            target_n, t = target_n + 1, a[1]
        for i in range(max(0, n - target_n), n + 1):
            subst = dict(el.subst)
            concl = _rebuild(premises[i:], cur)
            if unify(instantiate(concl, subst), g.target, subst):
                new_premises = [instantiate(p, subst) for p in premises[:i]]
                if any(has_mvar(p) for p in new_premises):
                    raise TacticError("(sim) 'apply' would leave propositions to be determined later "
                                      "(metavariables); give them explicitly", tac[1])
                holes = [(Goal(h, instantiate(t_, subst), tag or "")) for _, h, t_, tag in sorted(el.new_goals, key=lambda x: x[0])]
                total = i + nprops
                new = []
                for j, p in enumerate(new_premises):
                    bname = names[j] if j < len(names) else "a"
                    tag = g.tag if total == 1 else append_tag(g.tag, bname)
                    new.append(Goal(g.hyps, p, tag))
                return holes + new, tuple(el.axioms), ()
        raise TacticError(tactic_failed("apply", g, f"could not unify the conclusion of `{el.text(node)}`\n  "
                                        f"{show(el.inst(cur))}\nwith the goal\n  {show(g.target)}"), tac[1])

    def t_specialize(self, tac, g: Goal, st):
        node = tac[2]
        head = node
        while head[0] == "app":
            head = head[2]
        if head[0] != "id" or g.lookup(head[2]) is None:
            raise TacticError("'specialize' requires a term of the form `h x_1 .. x_n` where `h` appears in the "
                              "local context", tac[1])
        el = self.elaborator()
        ty = el.infer_closed(node, g.hyps)
        h = g.lookup(head[2])
        hyps = tuple(x for x in g.hyps if x is not h) + (Hyp(h.name, ty),)
        return [Goal(hyps, g.target, g.tag)], tuple(el.axioms), ()

    # ----------------------------------------------------------------- structural tactics
    def t_have(self, tac, g: Goal, st):
        _, span, name, ty_node, val = tac
        name = name or "this"
        el = self.elaborator()
        if ty_node is not None:
            ty = elab_prop(ty_node, g.hyps)
            if val is None:
                return [Goal(g.hyps, ty, name), g.add(Hyp(name, ty))], (), ()
            el.check(val, ty, g.hyps)
        else:
            ty = el.infer_closed(val, g.hyps)
        return [g.add(Hyp(name, ty))], tuple(el.axioms), ()

    def t_show(self, tac, g: Goal, st):
        node, kw = tac[2], tac[3]
        candidates = [g] if kw == "change" else list(st.goals)
        first_err = None
        for i, cand in enumerate(candidates):
            try:
                p = elab_prop(node, cand.hyps)
            except ElabError as e:
                first_err = first_err or e
                continue
            if defeq(p, cand.target):
                if i == 0:
                    return [cand.with_target(p)], (), ()
                raise _Reorder(i, cand.with_target(p))
            first_err = first_err or ElabError(f"type mismatch\n  this\nhas type\n  {show(p)} : Prop\nbut is "
                                               f"expected to have type\n  {show(cand.target)} : Prop", node[1])
        raise first_err

    def t_by_contra(self, tac, g: Goal, st):
        name = tac[2]
        t = g.target
        if t[0] == "not":
            return [g.add(Hyp("a", t[1], True) if name is None else Hyp(name, t[1]), target=FALSE)], (), ()
        hyp = Hyp("x", ("not", t), True) if name is None else Hyp(name, ("not", t))
        axioms = () if is_closed(t) else CLASSICAL
        return [g.add(hyp, target=FALSE)], axioms, ()

    def t_by_cases(self, tac, g: Goal, st):
        # `by_cases p` names it `h` through a hygienic macro: `h✝`, which a later tactic cannot cite
        name, hidden = tac[2] or "h", tac[2] is None
        p = elab_prop(tac[3], g.hyps)
        axioms = () if is_closed(p) else CLASSICAL
        return [g.add(Hyp(name, p, hidden), tag="pos"), g.add(Hyp(name, ("not", p), hidden), tag="neg")], axioms, ()

    def t_cases(self, tac, g: Goal, st):
        return _cases.cases(self, tac, g, st)

    def t_rcases(self, tac, g: Goal, st):
        return _cases.rcases(self, tac, g, st)

    def t_rintro(self, tac, g: Goal, st):
        return _cases.rintro(self, tac, g, st)

    def t_obtain(self, tac, g: Goal, st):
        return _cases.obtain(self, tac, g, st)

    def t_clear(self, tac, g: Goal, st):
        hyps = list(g.hyps)
        for n in tac[2]:
            h = g.lookup(n)
            if h is None:
                raise TacticError(f"unknown hypothesis '{n}'", tac[1])
            hyps.remove(h)
            if h.type in SORTS:
                uses = (lambda f: n in variables(f)) if h.type == PROP else (lambda f: mentions_nat(f, n))
                users = [o for o in hyps if o.type not in SORTS and uses(o.type)]
                if users or uses(g.target):
                    raise TacticError(tactic_failed("clear", g, f"variable '{n}' depends on "
                                                    f"'{users[0].name if users else 'the goal'}'"), tac[1])
        return [Goal(tuple(hyps), g.target, g.tag)], (), ()

    def t_rename_i(self, tac, g: Goal, st):
        return [_rename_inaccessible(g, tac[2], tac[1])], (), ()


def _identifiers(node):
    """``(name, span)`` of every identifier a syntax tree refers to (terms inside tactics included)."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        if isinstance(n, tuple):
            if len(n) == 3 and n[0] == "id" and isinstance(n[1], tuple) and isinstance(n[2], str):
                out.append((n[2], n[1]))
            else:
                todo.extend(reversed(n))  # (in reading order)
    return out


class _Reorder(Exception):
    """``show`` matched a later goal: it becomes the main goal."""

    def __init__(self, index: int, goal: Goal):
        self.index, self.goal = index, goal



def _rebuild(premises, concl):
    for p in reversed(premises):
        concl = ("imp", p, concl)
    return concl


def _apply_binder_info(el: Elaborator, node, g: Goal):
    """Binder names of the premises ``apply node`` creates, and how many Prop mvars apply itself makes."""
    base = node[2] if node[0] == "paren" else node
    if base[0] == "id" and g.lookup(base[2]) is None and base[2] in el.env:
        c = el.env[base[2]]
        names = [b[1] for b in c.binders if b[0] == "H"]
        return names, sum(1 for b in c.binders if b[0] in ("P", "N"))
    if base[0] == "app" and base[2][0] == "id" and g.lookup(base[2][2]) is None and base[2][2] in el.env:
        c = el.env[base[2][2]]
        hs = [b[1] for b in c.binders if b[0] == "H"]
        return hs[len(base[3]):], 0
    return [], 0


def _rename_inaccessible(g: Goal, names, span) -> Goal:
    if not names:
        return g
    idxs = [i for i, h in enumerate(g.hyps) if h.inacc]
    if len(idxs) < len(names):
        raise TacticError("too many variable names provided", span)
    hyps = list(g.hyps)
    for i, n in zip(idxs[len(idxs) - len(names):], names):
        if n != "_":
            hyps[i] = Hyp(n, hyps[i].type)
    return Goal(tuple(hyps), g.target, g.tag)
