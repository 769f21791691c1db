"""Random choices and random formulas for the proof-tree builder.

Only ``random.Random.random`` is drawn from: its stream is stable across
Python versions, unlike ``randint``/``choice``.
"""
from __future__ import annotations

import random
from typing import Any, Sequence

from leangym.datasets.propgen.formulas import FALSE, TRUE


class Draw:
    """Draws from ``rng``; formulas are over ``nvars`` Prop variables."""

    def __init__(self, rng: random.Random, nvars: int):
        self.r = rng.random
        self.nvars = nvars

    # -- randomness
    def randint(self, lo: int, hi: int) -> int:
        return lo + int(self.r() * (hi - lo + 1))

    def pick(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.r() * len(seq))]

    def weighted(self, options: Sequence[tuple[float, str]]) -> str:
        total = 0.0
        for w, _ in options:
            total += w
        x = self.r() * total
        for w, name in options:
            x -= w
            if x < 0:
                return name
        return options[-1][1]

    # -- formulas
    def atom(self) -> tuple:
        x = self.r()
        if x < 0.02:
            return TRUE
        if x < 0.035:
            return FALSE
        return ("var", int(self.r() * self.nvars))

    def formula(self, d: int) -> tuple:
        if d <= 0 or self.r() < 0.4:
            return ("var", int(self.r() * self.nvars)) if self.r() < 0.97 else self.atom()
        k = self.weighted(((3, "and"), (2.5, "or"), (2.5, "imp"), (1.5, "not"), (0.5, "iff")))
        if k == "not":
            return ("not", self.formula(d - 1))
        a = self.formula(d - 1)
        b = self.formula(d - 1)
        for _ in range(3):  # no `p ∧ p`, `p → p`, ...: they read as noise
            if b != a:
                break
            b = self.formula(d - 1)
        return (k, a, b) if b != a else a

    def small(self) -> tuple:
        return self.formula(0 if self.r() < 0.6 else 1)

    def other(self, a: tuple) -> tuple:
        """A small formula different from ``a`` (mostly)."""
        for _ in range(4):
            b = self.small()
            if b != a:
                return b
        return ("not", a)

    def arith(self) -> tuple:
        """A true closed ℕ fact: ``a + b = c``, ``a * b = c``, ``a < b`` or ``a ≤ b``."""
        x = self.r()
        if x < 0.5:
            a, b = self.randint(0, 12), self.randint(0, 12)
            if self.r() < 0.6:
                return ("arith", f"{a} + {b} = {a + b}")
            a, b = self.randint(0, 9), self.randint(0, 9)
            return ("arith", f"{a} * {b} = {a * b}")
        a = self.randint(0, 20)
        b = a + self.randint(0 if x >= 0.75 else 1, 9)
        return ("arith", f"{a} {'≤' if x >= 0.75 else '<'} {b}")

    def arith_tactic(self) -> str:
        return "norm_num" if self.r() < 0.5 else "decide"
