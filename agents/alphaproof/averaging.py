"""The net a training run saves: a moving average of the learner's weights.

Self-play learns at a constant rate, so its weights wander from iteration to
iteration; their exponential moving average (one step per iteration, decay
``--average-decay``) proves more theorems than the last weights do
(benchmarks/results/learning_curve.md). It starts at the warm-started net (a
resumed run that saved none: at its learner). The searches act with the
learner's own weights; checkpoints, ``prove``, ``--init`` and in-process
held-out evaluations use the average. ``decay`` 0: the learner is the net.
"""
from __future__ import annotations

from typing import Mapping

import torch

from agents.alphaproof.policy import PolicyValueNet


class WeightAverage:
    def __init__(self, decay: float) -> None:
        self.decay = decay
        self.net: PolicyValueNet | None = None  # the average (the learner's net itself when decay is 0)

    def start(self, learner: PolicyValueNet, weights: Mapping[str, torch.Tensor] | None = None) -> None:
        """Average from ``learner``'s weights now, or from ``weights`` (a resumed run's saved average)."""
        if self.decay == 0:
            self.net = learner
            return
        with torch.random.fork_rng(devices=[]):  # (building a model draws its init: the run's RNG stays as it was)
            self.net = PolicyValueNet.from_payload(learner.to_payload(), learner.device)  # (its settings too)
        if weights is not None:
            self.net.model.load_state_dict(weights)
        self.net.model.eval()

    @torch.no_grad()
    def update(self, learner: PolicyValueNet) -> None:
        """One step toward ``learner``'s weights (after an iteration's learning)."""
        if self.net is learner:
            return
        mine = self.net.model.state_dict()
        for k, v in learner.model.state_dict().items():
            if v.is_floating_point():
                mine[k].lerp_(v, 1 - self.decay)
