"""The Gymnasium spaces of the Lean envs: goal text and tactic text (``gymnasium.spaces.Text``)."""
from __future__ import annotations

import unicodedata
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import create_shared_memory

__all__ = ["LeanText", "LEAN_CHARSET", "TACTIC_SAMPLE_CHARSET", "UNKNOWN_CHAR", "TRUNCATION_MARKER", "clip_text"]

TRUNCATION_MARKER = "\n… [truncated]"


def _lean_charset() -> str:
    """Printable characters of the Unicode blocks Lean and Mathlib print (ASCII, Latin-1, Greek,
    sub/superscripts, letterlike, arrows, math operators and symbols, math alphanumerics)."""
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x1D00, 0x1DBF), (0x2000, 0x2BFF),
              (0x1D400, 0x1D7FF)]
    chars = ["\n"] + [chr(c) for lo, hi in blocks for c in range(lo, hi + 1)
                      if unicodedata.category(chr(c)) not in ("Cn", "Cc", "Cs", "Co", "Zl", "Zp")]
    return "".join(chars)


LEAN_CHARSET = _lean_charset()
TACTIC_SAMPLE_CHARSET = "".join(chr(c) for c in range(0x20, 0x7F)) + "⟨⟩←→↑ℕℝ∀∃∧∨¬≤≥≠·"
UNKNOWN_CHAR = "\ufffd"  # what flatten() makes of a character outside a LeanText's charset


class LeanText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` that contains ANY Unicode string of allowed length.

    ``charset`` (default :data:`LEAN_CHARSET`, every character of real Lean goal
    text) is what :meth:`sample` draws from and what ``character_index`` knows;
    ``contains`` does not restrict characters, so an unusual identifier (CJK,
    emoji) never makes a real observation "outside" the space. ``flatten`` (and
    ``FlattenObservation``) maps a character outside the charset to
    :data:`UNKNOWN_CHAR`, so every string in the space flattens (lossily).

    ``AsyncVectorEnv`` needs ``shared_memory=False`` with these spaces: Gymnasium
    reads a ``Text`` space's shared memory once, as immutable strings, so its
    observations would never change. Asking for shared memory raises instead.
    """

    def __init__(self, max_length: int, *, min_length: int = 1, charset: str = LEAN_CHARSET, seed: Any = None):
        if UNKNOWN_CHAR not in charset:
            charset = charset + UNKNOWN_CHAR
        super().__init__(max_length, min_length=min_length, charset=charset, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def character_index(self, char: str) -> np.int32:
        index = self._char_index.get(char)
        return self._char_index[UNKNOWN_CHAR] if index is None else index

    def __repr__(self) -> str:
        return f"LeanText({self.min_length}, {self.max_length}, {len(self.character_set)} sample chars)"


@create_shared_memory.register(LeanText)
def _no_shared_memory(space: LeanText, n: int = 1, ctx: Any = None) -> Any:
    raise CustomSpaceError("LeanText observations cannot go through AsyncVectorEnv's shared memory (Gymnasium "
                           "would read them once and never again): pass vector_kwargs={'shared_memory': False}")


def clip_text(text: str, max_length: int) -> str:
    """``text``, or its head plus :data:`TRUNCATION_MARKER` when longer than ``max_length``."""
    if len(text) <= max_length:
        return text
    return text[: max(0, max_length - len(TRUNCATION_MARKER))] + TRUNCATION_MARKER[: max_length]
