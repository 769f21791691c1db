"""A FIFO replay buffer of training rows, saved as plain Python values.

A row is whatever the network's ``losses(batch)`` takes: a flat ``dict`` of
``str``/``int``/``float``/``None`` (:class:`agents.alphaproof.data.Row`: ``state``,
``tactic``, ``steps_to_go``).
Rows are kept as plain values, never objects, so a checkpoint of the buffer
loads with ``torch.load(..., weights_only=True)``: nothing is unpickled.
"""
from __future__ import annotations

import random
from collections import deque
from typing import TYPE_CHECKING, Any, Iterable, Mapping

if TYPE_CHECKING:
    from agents.alphaproof.data import Row
_PLAIN = (str, int, float, bool, type(None))


def _plain_row(row: Mapping[str, Any]) -> Row:
    out: Row = {}
    for key, value in row.items():
        if isinstance(value, tuple):  # tuples survive weights_only loading, but lists round-trip exactly
            value = list(value)
        if isinstance(value, list):
            if not all(isinstance(v, _PLAIN) for v in value):
                raise TypeError(f"replay row field {key!r}: list items must be plain values")
        elif not isinstance(value, _PLAIN):
            raise TypeError(f"replay row field {key!r} has type {type(value).__name__}; rows hold plain values only")
        out[str(key)] = value
    return out


class ReplayBuffer:
    """Keeps the newest ``capacity`` rows; samples uniformly with the caller's RNG."""

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self.rows: deque[Row] = deque(maxlen=capacity)
        self.added = 0  # rows ever added (for logging: how much the buffer has turned over)

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, rows: Iterable[Mapping[str, Any]]) -> int:
        n = 0
        for row in rows:
            self.rows.append(_plain_row(row))
            n += 1
        self.added += n
        return n

    def sample(self, n: int, rng: random.Random) -> list[Row]:
        """``n`` rows drawn uniformly with replacement (empty buffer: ``[]``)."""
        if not self.rows:
            return []
        size = len(self.rows)
        return [self.rows[rng.randrange(size)] for _ in range(n)]

    # ------------------------------------------------------------------ checkpointing
    def state_dict(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "added": self.added, "rows": [dict(r) for r in self.rows]}

    def load_state_dict(self, state: Mapping[str, Any], capacity: int | None = None) -> None:
        """Restore a saved buffer; ``capacity`` (default: the saved one) resizes it, keeping the newest rows."""
        self.capacity = int(state["capacity"]) if capacity is None else int(capacity)
        self.rows = deque((_plain_row(r) for r in state["rows"]), maxlen=self.capacity)  # drops the oldest
        self.added = int(state["added"])
