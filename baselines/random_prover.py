"""``RandomProver``: the floor every learned prover must beat.

Tactics are drawn uniformly from a fixed vocabulary of Lean tactics plus
templates filled with the hypothesis names of the current goal (``exact h₁``,
``apply h₂``, ``rcases h₁ with ⟨a, b⟩`` ...). Two modes:

* ``"linear"``: one tactic at a time on the first open goal, as a
  ``LeanProof-v0`` episode; a rejected tactic leaves the state unchanged;
  after ``max_steps`` successful steps or ``max_walk_tries`` tactics (a
  dead end) the episode restarts from the root.
* ``"tree"``: random depth-first search with backtracking: at each state try
  up to ``tries_per_node`` random tactics; a tactic that splits the goal must
  have every branch proved recursively.

Both repeat until the budget is spent (``BudgetExhausted`` ends the attempt)
or ``max_tactics`` tactics were tried when the budget is unlimited.
Seeded: ``set_seed`` (called by the harness per attempt) fixes the draws.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Sequence

from baselines.tactic_menu import fresh_names, hypothesis_slots
from leangym.backends.types import Outcome, ProofState
from leangym.proof import ProofTree
from leangym.proof import LinearWalk
from leangym.prover import Proof
from leangym.session import Budget, ProofSession
from leangym.theorem import Theorem

VOCABULARY: tuple[str, ...] = (
    "intro", "intros", "constructor", "assumption", "trivial", "rfl", "left", "right", "exfalso",
    "contradiction", "simp", "norm_num", "decide", "omega", "linarith", "tauto", "by_contra hc",
)
ONE_HYP = ("exact {h}", "apply {h}", "exact {h}.1", "exact {h}.2", "rcases {h} with ⟨ha, hb⟩",
           "rcases {h} with ha | hb", "cases {h}")
TWO_HYPS = ("exact {h} {g}", "exact absurd {h} {g}", "exact ⟨{h}, {g}⟩")


@dataclass
class RandomProver:
    seed: int = 0
    mode: str = "linear"  # "linear" | "tree"
    vocabulary: Sequence[str] = VOCABULARY
    max_steps: int = 16  # linear: successful steps per episode before a restart
    max_walk_tries: int = 64  # linear: tactics per episode before a restart (a dead end, `False` after
    # `exfalso` say, fails every tactic: without this the walk would spend the whole budget there)
    max_depth: int = 8  # tree: depth of the search
    tries_per_node: int = 4  # tree: random tactics tried at one state
    max_tactics: int = 1000  # only when the budget has no Lean-call cap
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in ("linear", "tree"):
            raise ValueError(f"mode must be 'linear' or 'tree', not {self.mode!r}")
        self.rng = random.Random(self.seed)

    def set_seed(self, seed: int) -> None:
        self.rng = random.Random(self.seed * 1_000_003 + seed)  # the prover's seed and the attempt's

    def sample(self, state: ProofState) -> str:
        """One random tactic for the first goal of ``state``."""
        hyps = [name for name, _ in hypothesis_slots(state.goals[0], len(state.goals[0].hypotheses))] \
            if state.goals else []
        kinds = ["vocab"] + (["one"] if hyps else []) + (["two"] if len(hyps) > 1 else [])
        kind = self.rng.choice(kinds)
        if kind == "one":
            return self.rng.choice(ONE_HYP).format(h=self.rng.choice(hyps))
        if kind == "two":
            h, g = self.rng.sample(hyps, 2)
            return self.rng.choice(TWO_HYPS).format(h=h, g=g)
        tactic = self.rng.choice(list(self.vocabulary))
        return f"intro {fresh_names(state.goals, 1)[0]}" if tactic == "intro" else tactic

    def prove(self, theorem: Theorem, session: ProofSession, budget: Budget) -> Proof | None:
        # With a Lean-call cap the session's BudgetExhausted ends the attempt; without one, max_tactics does.
        cap = math.inf if budget.max_lean_calls is not None else self.max_tactics
        tried = [0]
        while tried[0] < cap:
            proof = (self._linear(session, tried, cap) if self.mode == "linear"
                     else self._tree(session, session.root, 0, tried, cap))
            if proof is not None:
                return proof
        return None

    def _linear(self, session: ProofSession, tried: list[int], cap: float) -> Proof | None:
        walk = LinearWalk(session.root)
        steps = tries = 0
        while not walk.done and steps < self.max_steps and tries < self.max_walk_tries and tried[0] < cap:
            tried[0] += 1
            tries += 1
            steps += session.step_walk(walk, self.sample(walk.current)).ok
        return walk.tree()

    def _tree(self, session: ProofSession, state: ProofState, depth: int, tried: list[int],
              cap: float) -> ProofTree | None:
        if depth >= self.max_depth:
            return None
        for _ in range(self.tries_per_node):
            if tried[0] >= cap:  # checked at every tactic: a whole tree search can try hundreds
                return None
            tried[0] += 1
            tactic = self.sample(state)
            r = session.apply(state, tactic)
            if r.outcome is Outcome.PROVED:
                return ProofTree(r.tactic)
            if r.outcome is not Outcome.PROGRESS:
                continue
            children = []
            for child in r.states:
                sub = self._tree(session, child, depth + 1, tried, cap)
                if sub is None:
                    break
                children.append(sub)
            else:
                return ProofTree.join(r.tactic, r.states, children)
        return None
