"""Goals as a fixed-length array of character ids, laid out to line up with the tactic menu.

A plain MLP cannot search a long string for "the hypothesis that matches the
target", so the text is cut into fixed windows instead of one stream: the
first goal's target, then one window per hypothesis slot of
:mod:`baselines.tactic_menu` (slot ``i`` of the observation is the hypothesis
that action slot ``i`` names), then the number of open goals. Each character
is its index in :data:`ALPHABET` (0 = padding, 1 = any other character):
a char-level code needs no trained tokenizer and every propositional formula
fits a few dozen characters.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from gymnasium import spaces

from baselines.tactic_menu import hypothesis_slots
from leangym.backends.types import Goal

ALPHABET = ("()⟨⟩⊢∧∨¬→↔∀∃ ,.:=≠<>≤≥+-*0123456789" "TrueFals" "pqrstxyzabcdhnm" "₀₁₂₃₄₅₆₇₈₉")
_IDS = {ch: i + 2 for i, ch in enumerate(dict.fromkeys(ALPHABET))}
VOCAB = len(_IDS) + 2
MAX_GOALS = 16


class GoalCodec:
    """``encode(goals)`` -> int64 array of ``size`` ids (see the module docstring for the layout)."""

    def __init__(self, n_slots: int = 8, target_len: int = 64, hyp_len: int = 48) -> None:
        self.n_slots, self.target_len, self.hyp_len = n_slots, target_len, hyp_len
        self.size = target_len + n_slots * hyp_len + 1

    def space(self) -> spaces.Box:
        return spaces.Box(0, max(VOCAB, MAX_GOALS + 1) - 1, (self.size,), np.int64)

    @staticmethod
    def chars(text: str, length: int) -> list[int]:
        ids = [_IDS.get(ch, 1) for ch in text[:length]]
        return ids + [0] * (length - len(ids))

    def encode(self, goals: Sequence[Goal]) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.int64)
        if not goals:
            return out
        out[: self.target_len] = self.chars(goals[0].target, self.target_len)
        for i, (_, htype) in enumerate(hypothesis_slots(goals[0], self.n_slots)):
            at = self.target_len + i * self.hyp_len
            out[at: at + self.hyp_len] = self.chars(htype, self.hyp_len)
        out[-1] = min(len(goals), MAX_GOALS)
        return out
