"""``BestFirstProver``: GPT-f / ReProver-style best-first search guided by a policy.

A search node is the TUPLE of open branches (proof states) left after the
tactics on its path; its priority is the cumulative log-prior of those
tactics (higher first). Expanding a node asks the policy for ``k`` tactics
for its FIRST branch and applies them with one ``session.apply_many``; a
result's branches replace that first branch, the rest are kept. A node with
no branch left is a proof.

Why a tuple of branches rather than an AND/OR graph: a node is then solved
exactly when it is empty, so the queue needs no AND bookkeeping and the
proof is simply the path to the empty node. What it costs: sibling branches
are proved one after another along a path, never shared between paths (the
AND/OR search of ``agents.alphaproof`` does that). Duplicate nodes (same
goal texts) are pushed once.

The policy is any ``agents.alphaproof.interfaces.Evaluator``; by default the
network of an ``agents.alphaproof`` checkpoint, or, with no checkpoint, an
untrained seeded tiny ``PolicyValueNet`` (the "untrained-policy" baseline).
Evaluations are batched over ``batch`` queue heads at a time (a little less
strict than one-at-a-time best-first, several times fewer forward passes).

    python -m scripts.benchmark --agent baselines.best_first:BestFirstProver \\
        --agent-kwargs '{"checkpoint": "checkpoints/alphaproof/latest"}' --dataset proplogic-heldout --sim
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Any

from leangym.backends.types import ProofState
from leangym.proof import ProofTree
from leangym.session import Budget, BudgetExhausted, ProofSession
from leangym.theorem import Theorem


@dataclass(eq=False)
class _Node:
    branches: tuple[ProofState, ...]  # open branches; the policy works on the first
    logp: float  # sum of the log-priors of the tactics from the root
    parent: "_Node | None" = None
    tactic: str | None = None  # applied to parent.branches[0] ...
    produced: tuple[ProofState, ...] = ()  # ... which it replaced by these branches


def _key(branches: tuple[ProofState, ...]) -> str:
    return "\n\n".join(b.text for b in branches)


def proof_of(node: _Node) -> ProofTree:
    """The proof tree of an empty node: every step on its path closed or split one branch."""
    steps: dict[int, tuple[str, tuple[ProofState, ...]]] = {}
    root = node
    while root.parent is not None:
        steps[id(root.parent.branches[0])] = (root.tactic, root.produced)
        root = root.parent

    def tree(state: ProofState) -> ProofTree:
        tactic, kids = steps[id(state)]
        return ProofTree.join(tactic, kids, [tree(k) for k in kids])

    return tree(root.branches[0])


class BestFirstProver:
    """Best-first search over tuples of open branches (see the module docstring).

    Args:
        evaluator: an ``Evaluator`` (``evaluate(states, k)``); overrides ``checkpoint``.
        checkpoint: an ``agents.alphaproof`` training checkpoint or ``PolicyValueNet.save`` file.
        k: tactics asked of the policy per expansion.
        batch: queue heads evaluated in one ``evaluate`` call.
        max_expansions: a cap on expansions (what ends the search when the budget has no call cap).
        seed / size / device: the untrained net built when neither evaluator nor checkpoint is given.
    """

    def __init__(self, evaluator: Any = None, checkpoint: str | None = None, k: int = 8, batch: int = 4,
                 max_expansions: int = 512, seed: int = 0, size: str = "tiny", device: str = "cpu") -> None:
        if evaluator is None:
            from agents.alphaproof.policy import PolicyValueNet
            from agents.alphaproof.prove import checkpoint_file

            if checkpoint is not None:  # a file, or a run's directory (its latest.pt), as prove takes it
                evaluator = PolicyValueNet.load(checkpoint_file(checkpoint, "checkpoint"), device)
            else:
                evaluator = PolicyValueNet.create(size, seed=seed, device=device)
        self.evaluator = evaluator
        self.k, self.batch, self.max_expansions = k, max(1, batch), max_expansions
        self.expansions = 0  # of the last attempt (for tests and reports)

    def set_seed(self, seed: int) -> None:
        import torch

        torch.manual_seed(seed)  # the network samples its candidate tactics

    def prove(self, theorem: Theorem, session: ProofSession, budget: Budget) -> ProofTree | None:
        try:
            return self._search(session)
        except BudgetExhausted:  # the budget is spent mid-expansion: no proof
            return None

    def _search(self, session: ProofSession) -> ProofTree | None:
        root = _Node((session.root,), 0.0) if session.root.goals else None
        if root is None:
            return None
        order = itertools.count()  # ties: first pushed, first expanded
        queue: list[tuple[float, int, _Node]] = [(0.0, next(order), root)]
        seen = {_key(root.branches)}
        self.expansions = 0
        while queue and self.expansions < self.max_expansions:
            heads = [heapq.heappop(queue)[2] for _ in range(min(self.batch, len(queue)))]
            evals = self.evaluator.evaluate([n.branches[0].text for n in heads], self.k)
            for node, ev in zip(heads, evals):
                self.expansions += 1
                results = session.apply_many(node.branches[0], session.affordable(ev.tactics))
                for r, logp in zip(results, ev.log_priors):
                    if not r.ok:
                        continue
                    branches = r.states + node.branches[1:]
                    child = _Node(branches, node.logp + logp, node, r.tactic, r.states)
                    if not branches:
                        return proof_of(child)
                    key = _key(branches)
                    if key not in seen:
                        seen.add(key)
                        heapq.heappush(queue, (-child.logp, next(order), child))
        return None
