"""Which theorems to practise on: the ones that are sometimes, but not always, solved.

A theorem the agent always solves teaches nothing new, one it never solves
gives only "unsolved" value targets. So the curriculum keeps a solve rate per
difficulty level and per theorem and samples with weight ``p (1 - p) + floor``:
highest at ``p = 1/2``, and never zero, so that a level the agent has given
up on is retried now and then and its progress noticed.

Rates are smoothed with a Beta(1, 1) prior (an untried level counts as
``p = 1/2``: worth trying) and level counts decay, so a level's rate follows
the improving policy rather than its whole history.

A statement the server refuses to start (``reject``) is no verdict on the agent,
and no sample can change it: it is never drawn again (sources skip the keys in
``rejected``), and a level left without theorems is dropped (``drop_level``).
Both are part of the state, so they hold across ``--resume``.
"""
from __future__ import annotations

import random
from collections import OrderedDict
from typing import Any, Hashable, Mapping, Sequence


class Curriculum:
    def __init__(self, levels: Sequence[Hashable], decay: float = 0.97, floor: float = 0.02,
                 max_theorems: int = 20_000) -> None:
        self.levels = list(levels)
        self.decay = decay  # per attempt at a level: its rate covers roughly the last 1/(1-decay) attempts
        self.floor = floor
        self.max_theorems = max_theorems
        self.level_counts: dict[Hashable, list[float]] = {lv: [0.0, 0.0] for lv in self.levels}  # [attempts, solves]
        self.theorems: OrderedDict[str, list[int]] = OrderedDict()  # key -> [attempts, solves], newest last
        self.rejected: set[str] = set()  # statement keys the server refused to start: never drawn again

    # ------------------------------------------------------------------ rates
    @staticmethod
    def _smoothed(attempts: float, solves: float) -> float:
        return (solves + 1.0) / (attempts + 2.0)

    def level_rate(self, level: Hashable) -> float:
        return self._smoothed(*self.level_counts[level])

    def theorem_rate(self, key: str) -> float:
        return self._smoothed(*self.theorems.get(key, (0, 0)))

    def _weight(self, p: float) -> float:
        return p * (1.0 - p) + self.floor

    def level_weights(self) -> dict[Hashable, float]:
        return {lv: self._weight(self.level_rate(lv)) for lv in self.levels}

    # ------------------------------------------------------------------ sampling
    def sample_level(self, rng: random.Random) -> Hashable:
        weights = self.level_weights()
        return rng.choices(self.levels, weights=[weights[lv] for lv in self.levels])[0]

    def sample_theorem(self, keys: Sequence[str], rng: random.Random) -> int:
        """Index into ``keys`` (a finite pool), favouring theorems solved about half the time."""
        return rng.choices(range(len(keys)), weights=[self._weight(self.theorem_rate(k)) for k in keys])[0]

    # ------------------------------------------------------------------ updates
    def record(self, key: str, level: Hashable, solved: bool) -> None:
        counts = self.level_counts.setdefault(level, [0.0, 0.0])
        if level not in self.levels:
            self.levels.append(level)
        counts[0] = counts[0] * self.decay + 1.0
        counts[1] = counts[1] * self.decay + float(solved)
        stats = self.theorems.pop(key, [0, 0])
        stats[0] += 1
        stats[1] += int(solved)
        self.theorems[key] = stats  # re-inserted: most recently seen last
        while len(self.theorems) > self.max_theorems:
            self.theorems.popitem(last=False)

    def reject(self, key: str) -> None:
        """A statement the server refused to start: sources never draw it again."""
        self.rejected.add(key)

    def drop_level(self, level: Hashable) -> None:
        """A level with nothing left to draw: ``sample_level`` no longer picks it."""
        if level in self.levels:
            self.levels.remove(level)

    def summary(self) -> dict[str, float]:
        """Per-level smoothed solve rates, for logging (``level -> rate``)."""
        return {str(lv): self.level_rate(lv) for lv in self.levels}

    # ------------------------------------------------------------------ checkpointing
    def state_dict(self) -> dict[str, Any]:
        return {
            "levels": list(self.levels),
            "level_counts": [[lv, c[0], c[1]] for lv, c in self.level_counts.items()],
            "theorems": [[k, a, s] for k, (a, s) in self.theorems.items()],
            "decay": self.decay, "floor": self.floor, "max_theorems": self.max_theorems,
            "rejected": sorted(self.rejected),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.levels = list(state["levels"])
        self.level_counts = {lv: [float(a), float(s)] for lv, a, s in state["level_counts"]}
        self.theorems = OrderedDict((k, [int(a), int(s)]) for k, a, s in state["theorems"])
        self.decay, self.floor, self.max_theorems = state["decay"], state["floor"], state["max_theorems"]
        self.rejected = set(state.get("rejected", ()))  # (absent from checkpoints written before it existed)
