"""Tactics without arguments that close or reshape the main goal.

``constructor``/``left``/``right`` (with Lean's goal tags), ``exfalso``,
``assumption``, ``contradiction``, ``trivial``, ``rfl``, ``decide``, ``sorry``,
the simp family (``norm_num``, ``simp``) and the ℕ arithmetic tactics (``omega``,
``linarith``, ``ring``; decided by :mod:`leangym.sim.arith`), as a mixin of
:class:`leangym.sim.tactics.Engine`. Each returns ``(new goals, axioms, log)``.
Outside the arithmetic tactics, arithmetic is only decided on closed terms (and
``rfl``/``simp`` accept sides equal after computing closed subterms); goals with
Prop variables are never "simplified" by guesswork (an explicit ``(sim)`` error instead).
"""
from __future__ import annotations

from leangym.sim import arith
from leangym.sim.formula import (DEFEQ_LIMIT, FALSE, SORTS, TRUE, FragmentError, defeq, defeq_beyond_sim, is_closed,
                                 show, show_term, simp_closed, terms_defeq, unfold_arrow, variables)
from leangym.sim.goals import Goal, Hyp, goals_text
from leangym.sim.state import TacticError, append_tag, merge_axioms, tactic_failed
from leangym.sim.lemmas import CLASSICAL


class ClosingTactics:
    """Mixin: needs ``self.tick()`` from the engine."""

    def t_atomic(self, tac, g: Goal, st):
        name = tac[2]
        if name in ("sorry", "admit"):
            return [], ("sorryAx",), (("sorry", g, tac[1]),)
        if name == "skip":
            return [g], (), ()
        if name == "done":
            raise TacticError("unsolved goals\n" + goals_text(st.goals), tac[1])
        return getattr(self, "a_" + name)(tac, g)

    def a_constructor(self, tac, g: Goal):
        t = g.target
        if t[0] == "and":
            return self._ctor(g, [("left", t[1]), ("right", t[2])], 2), (), ()
        if t[0] == "iff":
            return self._ctor(g, [("mp", ("imp", t[1], t[2])), ("mpr", ("imp", t[2], t[1]))], 2), (), ()
        if t[0] == "or":
            return self._ctor(g, [("h", t[1])], 2), (), ()
        if t[0] == "true":
            return [], (), ()
        if t[0] == "rel" and t[1] == "=":
            if terms_defeq(t[2], t[3]):
                return [], (), ()
            raise TacticError(tactic_failed("constructor", g, "no applicable constructor found"), tac[1])
        if t[0] == "false":
            raise TacticError(tactic_failed("constructor", g, "no applicable constructor found"), tac[1])
        if t[0] == "rel":
            raise TacticError("(sim) 'constructor' on an order or divisibility relation is outside the simulated "
                              "fragment", tac[1])
        raise TacticError(tactic_failed("constructor", g, "target is not an inductive datatype"), tac[1])

    def _ctor(self, g: Goal, fields, nimplicit: int):
        """``apply C`` for a constructor ``C {a b : Prop} (fields...)``: Lean's appendParentTag."""
        total = nimplicit + len(fields)
        return [Goal(g.hyps, ty, g.tag if total == 1 else append_tag(g.tag, name)) for name, ty in fields]

    def a_left(self, tac, g: Goal):
        return self._left_right(tac, g, 1)

    def a_right(self, tac, g: Goal):
        return self._left_right(tac, g, 2)

    def _left_right(self, tac, g: Goal, side: int):
        t = g.target
        name = "left" if side == 1 else "right"
        if t[0] != "or":
            if t[0] in ("and", "iff", "true", "false", "rel"):
                raise TacticError(tactic_failed(name, g, f"{name} tactic works for inductive types with exactly 2 constructors"), tac[1])
            raise TacticError(tactic_failed(name, g, "target is not an inductive datatype"), tac[1])
        return self._ctor(g, [("h", t[side])], 2), (), ()

    def a_exfalso(self, tac, g: Goal):
        return [g.with_target(FALSE)], (), ()

    def a_assumption(self, tac, g: Goal):
        for h in reversed(g.hyps):
            self.tick()
            if h.type not in SORTS and defeq(h.type, g.target):
                return [], (), ()
        raise TacticError(tactic_failed("assumption", g), tac[1])

    def a_contradiction(self, tac, g: Goal):
        hyps = [h for h in g.hyps if h.type not in SORTS]
        for h in hyps:
            self.tick()
            t = h.type
            if t == FALSE:
                return [], (), ()
            if is_closed(t):
                try:
                    if simp_closed(t) == FALSE:  # decidable and false
                        return [], (), ()
                except FragmentError:
                    pass
            arrow = unfold_arrow(t)  # (h : ¬p) (h' : p), also for `p → False` and `a ≠ b`
            if arrow is not None and arrow[1] == FALSE and any(defeq(o.type, arrow[0]) for o in hyps):
                return [], (), ()
        raise TacticError(tactic_failed("contradiction", g), tac[1])

    def a_trivial(self, tac, g: Goal):
        # Lean's macro alternatives, latest declared first
        for alt in (self._trivial_and, self.a_constructor_true, self.a_decide, self.a_contradiction, self.a_rfl,
                    self.a_assumption):
            try:
                return alt(tac, g)
            except (TacticError, FragmentError):
                continue
        raise TacticError(tactic_failed("assumption", g), tac[1])

    def _trivial_and(self, tac, g: Goal):
        if g.target[0] != "and":
            raise TacticError("", tac[1])
        out = []
        for sub in self._ctor(g, [("left", g.target[1]), ("right", g.target[2])], 2):
            out.extend(self.a_trivial(tac, sub)[0])
        return out, (), ()

    def a_constructor_true(self, tac, g: Goal):
        if g.target != TRUE:
            raise TacticError("", tac[1])
        return [], (), ()

    def a_rfl(self, tac, g: Goal):
        t = g.target
        if t[0] == "rel" and t[1] in ("=", "≤", "≥"):  # Eq.refl, and Mathlib's @[refl] le_refl (`≥` is `≤`)
            if terms_defeq(t[2], t[3]):
                return [], (), ()
            if defeq_beyond_sim(t[2], t[3]):  # Lean may unfold further (`x + 0` is `x`)
                raise TacticError(DEFEQ_LIMIT, tac[1])
        if t[0] == "rel" and t[1] == "=":
            raise TacticError(f"tactic 'rfl' failed, the left-hand side\n  {show_term(t[2])}\nis not definitionally equal "
                              f"to the right-hand side\n  {show_term(t[3])}\n{g.text()}", tac[1])
        if t[0] == "iff" and defeq(t[1], t[2]):
            return [], (), ()
        raise TacticError("The rfl tactic failed. Possible reasons:\n- The goal is not a reflexive relation (neither "
                          "`=` nor a relation with a @[refl] lemma).\n- The arguments of the relation are not equal.\n"
                          "Try using the reflexivity lemma for your relation explicitly, e.g. `exact Eq.refl _` or\n"
                          f"`exact HEq.rfl` etc.\n{g.text()}", tac[1])

    def a_decide(self, tac, g: Goal):
        t = g.target
        if not is_closed(t):
            # Lean's `decide` refuses a goal with free variables (ℕ or Prop) before looking for an instance
            raise TacticError(f"expected type must not contain free variables\n  {show(t)}\nUse the '+revert' option "
                              "to automatically cleanup and revert free variables.", tac[1])
        if simp_closed(t) == TRUE:
            return [], (), ()
        raise TacticError(f"tactic 'decide' proved that the proposition\n  {show(t)}\nis false", tac[1])

    def t_simp(self, tac, g: Goal, st):
        _, span, name, lemmas, locs, only = tac
        label = "simp" if name == "simp" else "norm_num"
        if lemmas:
            raise TacticError(f"(sim) '{name} [...]' with extra lemmas is not supported by the simulated kernel", span)
        no_progress = "simp made no progress" if label == "simp" else f"{label} failed to simplify"
        targets = ("⊢",) if locs is None else locs
        hyps = g.hyps
        for loc in targets:
            if loc == "⊢":
                continue
            h = g.lookup(loc)
            if h is None:
                raise TacticError(f"unknown identifier '{loc}'", span)
            if h.type in SORTS or not is_closed(h.type):
                raise TacticError(f"(sim) '{name}' on hypotheses with proposition variables is not simulated", span)
            r = simp_closed(h.type)
            if r == FALSE:
                return [], ("propext",), ()
            raise TacticError(f"(sim) '{name} at {loc}' only simulates hypotheses that simplify to False", span)
        t = g.target
        r = simp_closed(t)
        if r is None:
            raise TacticError(f"(sim) '{name}' on goals with proposition variables is not simulated "
                              "(only closed arithmetic and True/False)" if variables(t) else
                              f"(sim) '{name}' on goals with ℕ variables is not simulated (only sides that are "
                              "equal after computing closed subterms); try omega, linarith or ring", span)
        if r == TRUE:
            return [], ("propext",), ()
        if t == FALSE:
            raise TacticError(no_progress, span)
        return [Goal(hyps, FALSE, g.tag)], ("propext",), ()

    # ----------------------------------------------------------------- ℕ arithmetic (leangym.sim.arith)
    def t_arith(self, tac, g: Goal, st):
        """``omega``, ``linarith [t, ...]``, ``ring``/``ring1``/``ring_nf`` (closing only)."""
        _, span, name, extra = tac
        if name in ("ring", "ring1", "ring_nf"):
            return self._ring(name, span, g)
        hyps, axioms = g.hyps, ()
        if extra:  # linarith [h₁, e₂]: extra facts, elaborated like `have := e`
            el = self.elaborator()
            hyps = hyps + tuple(Hyp("this", el.infer_closed(t, g.hyps), True) for t in extra)
            axioms = tuple(el.axioms)
        omega = name == "omega"
        t = g.target
        # linarith negates comparison goals (and introduces `r` for a goal `¬r`), otherwise it calls
        # `exfalso`; omega needs a comparison, its negation or False (else it fails)
        negate = omega or (t[0] == "rel" and t[1] != "≠") or (t[0] == "not" and t[1][0] == "rel")
        try:
            facts, has_false = arith.collect(hyps, t, split_and=omega, use_ne=omega, negate_goal=negate, nat_sub=omega)
            proved = has_false or arith.refute(facts, self.tick, tighten=omega, nat_sub=omega)
            why = None if facts or has_false else "No usable constraints found for the hypotheses and goal."
        except arith.Unsupported as e:
            proved, why = False, str(e)
        if proved:
            return [], merge_axioms(axioms, ("propext",) if omega else CLASSICAL), ()
        if omega:
            raise TacticError("omega could not prove the goal:\n" + (why or "(sim) no contradiction found among the "
                              "linear facts (the simulated omega does not print counterexamples)"), span)
        raise TacticError(f"linarith failed to find a contradiction\n{g.text()}" + (f"\n{why}" if why else ""), span)

    def _ring(self, name, span, g: Goal):
        t = g.target
        if t[0] != "rel" or t[1] != "=":
            if name == "ring_nf":
                raise TacticError("(sim) 'ring_nf' is only simulated when it closes an equality goal", span)
            raise TacticError(f"ring failed: not an equality\n{g.text()}", span)
        try:
            equal = arith.ring_equal(t[2], t[3])
        except arith.Unsupported as e:
            raise TacticError(f"ring failed, {e}\n{g.text()}", span) from None
        if not equal:
            if name == "ring_nf":
                raise TacticError("(sim) 'ring_nf' is only simulated when it closes the goal (the two sides have "
                                  f"different normal forms)\n{g.text()}", span)
            raise TacticError(f"ring failed, ring expressions not equal\n{g.text()}", span)
        return [], CLASSICAL, ()
