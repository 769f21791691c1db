"""``HammerProver``: the classic automation sweep, the baseline that costs no learning.

Step 1 sends every sweep tactic (and a few ``<;>`` combinations) to the root
in one :meth:`ProofSession.apply_many` batch; any that closes the goal is the
proof. Step 2 takes the tactics that made progress (``intro``,
``constructor``, ``norm_num`` ...), and on each resulting branch runs the
sweep again, up to ``depth`` steps: a proof is found when every branch closes.

On the simulated backend most Mathlib tactics are unknown and simply
rejected; ``omega``, ``linarith``, ``ring``, ``decide``/``norm_num``/``trivial``/``assumption``-like
ones and the structural first steps work there (``omega`` closes most of the miniF2F statements
the simulator can state).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from leangym.backends.types import Outcome, ProofState, TacticResult
from leangym.proof import ProofTree
from leangym.prover import Proof
from leangym.session import Budget, ProofSession
from leangym.theorem import Theorem

SWEEP: tuple[str, ...] = (
    "norm_num", "linarith", "nlinarith", "omega", "simp", "positivity", "decide", "ring_nf", "field_simp",
    "aesop", "tauto", "trivial", "assumption", "rfl", "simp_all", "contradiction",
)
COMBOS: tuple[str, ...] = (
    "norm_num <;> linarith", "norm_num <;> nlinarith", "simp <;> linarith", "field_simp <;> ring_nf",
    "constructor <;> norm_num", "constructor <;> linarith", "constructor <;> assumption",
    "intro h <;> norm_num", "intro h <;> linarith", "intros <;> simp_all", "intro h <;> tauto",
)
# First steps worth continuing from when they make progress (the sweep's own progress is also kept).
OPENERS: tuple[str, ...] = ("intro h", "intros", "constructor", "exfalso", "by_contra h", "left", "right")


def _key(result: TacticResult) -> str:
    return "\n\n".join(s.text for s in result.states)


@dataclass
class HammerProver:
    depth: int = 2  # tactics per branch on the longest path (1: the root sweep only)
    max_expansions: int = 6  # progressing tactics continued from, per state
    sweep: Sequence[str] = SWEEP
    combos: Sequence[str] = COMBOS
    openers: Sequence[str] = OPENERS

    def prove(self, theorem: Theorem, session: ProofSession, budget: Budget) -> Proof | None:
        return self._close(session, session.root, self.depth, first=True)

    def _batch(self, session: ProofSession, state: ProofState, tactics: Sequence[str]) -> list[TacticResult]:
        return session.apply_many(state, session.affordable(list(dict.fromkeys(tactics))))

    def _close(self, session: ProofSession, state: ProofState, depth: int, first: bool = False) -> ProofTree | None:
        """A proof tree closing every goal of ``state`` in at most ``depth`` steps per branch, or None."""
        tactics = list(self.sweep) + (list(self.combos) if first else []) + (list(self.openers) if depth > 1 else [])
        results = self._batch(session, state, tactics)
        for r in results:
            if r.outcome is Outcome.PROVED:
                return ProofTree(r.tactic)
        if len(state.goals) > 1:  # one branch, several goals (older servers): close them one by one
            rest = [g.to_text() for g in state.goals[1:]]
            for r in results:
                if r.outcome is Outcome.PROGRESS and len(r.states) == 1 and \
                        [g.to_text() for g in r.states[0].goals] == rest:
                    sub = self._close(session, r.states[0], depth)
                    # another closer of the first goal would leave the same goals: no point trying it
                    return None if sub is None else ProofTree.join(r.tactic, r.states, [sub])
        if depth <= 1:
            return None
        seen = {state.text}
        progress = []
        for r in results:
            if r.outcome is Outcome.PROGRESS and _key(r) not in seen:
                seen.add(_key(r))
                progress.append(r)
        progress.sort(key=lambda r: sum(len(s.goals) for s in r.states))  # fewest goals left first
        for r in progress[: self.max_expansions]:
            children = []
            for child in r.states:
                sub = self._close(session, child, depth - 1)
                if sub is None:
                    break
                children.append(sub)
            else:
                return ProofTree.join(r.tactic, r.states, children)
        return None
