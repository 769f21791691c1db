"""The seam between the network and the search: what a search asks of a model.

The search never sees tensors; the network never sees trees. Values live in
[0, 1] as ``gamma ** steps_to_proof`` (1 = solved now, 0 = not provable within
budget), where steps count every tactic the proof still needs, in every branch
(the Lean calls it costs): an AND node's value is the product of its children's
and each tactic costs one factor of ``gamma``.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Protocol, Sequence

GAMMA = 0.95  # value of a state one tactic away from a proof (see module doc)


@dataclass(frozen=True)
class Evaluation:
    tactics: tuple[str, ...]  # distinct candidate tactics, best first
    log_priors: tuple[float, ...]  # sequence log-probability of each tactic under the policy
    value: float  # in [0, 1]: expected GAMMA ** (tactic steps still needed), 0 if unprovable


class Evaluator(Protocol):
    def evaluate(self, states: Sequence[str], k: int | Sequence[int]) -> list[Evaluation]:
        """For each goal-state text, up to ``k`` distinct tactics with log-priors, and a value.

        ``states`` is a batch: one forward pass for all of them. ``k`` is one number
        for every state or one per state (a search widening one node asks more of
        it than of a fresh leaf; see :func:`per_state`).
        """
        ...


def per_state(k: int | Sequence[int], n: int) -> list[int]:
    """``k`` as one count per state of a batch of ``n``."""
    if isinstance(k, numbers.Integral):  # int, numpy integers ...
        return [int(k)] * n
    ks = [int(x) for x in k]
    if len(ks) != n:
        raise ValueError(f"k has {len(ks)} entries for {n} states")
    return ks


def value_from_steps(steps: float | None) -> float:
    """Search value of a state ``steps`` tactics from a proof (``None``: unprovable)."""
    return 0.0 if steps is None else GAMMA ** steps
