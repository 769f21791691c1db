"""What the envs accept as their theorem(s): a statement, a :class:`Theorem`, a row, a theorem set, a list."""
from __future__ import annotations

import numbers
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from leangym.theorem import Theorem

__all__ = ["TheoremSpec", "resolve_theorems", "theorem_index"]

TheoremSpec = Any  # a statement, Theorem, row mapping, theorem set (JSONL path, "minif2f", ...), or a list

_STATEMENT = re.compile(r"\s*(?:@\[|private\b|protected\b|theorem\b|lemma\b|example\b)")


def resolve_theorems(spec: TheoremSpec, header: str = "") -> list[Theorem]:
    """Theorems from a statement, a :class:`Theorem`, a ``{name, header, formal_statement}`` row,
    a theorem set (a JSONL path, ``"minif2f"``, ...: see :func:`leangym.datasets.load_theorems`),
    or a list of these. ``header`` (e.g. ``open Nat``) goes to statements and to rows without one.
    """
    if spec is None:
        return []
    if isinstance(spec, Theorem):
        return [spec]
    if isinstance(spec, Mapping):
        row = dict(spec)
        if header and not row.get("header"):
            row["header"] = header
        return [Theorem.from_row(row)]
    if isinstance(spec, str) and not spec.strip():
        raise ValueError("theorem is empty: give a Lean statement ending in ':= by sorry', a theorem set "
                         "('minif2f', 'proplogic-heldout:N'), or a JSONL file or directory of statements")
    if isinstance(spec, str) and (":=" in spec or _STATEMENT.match(spec)):
        return [Theorem(spec, header=header)]
    if isinstance(spec, (str, Path)):
        from leangym.datasets import load_theorems as load_set

        return load_set(spec)
    if not isinstance(spec, Iterable):
        raise TypeError(f"theorem must be a statement, a row, a theorem set or a list of these, "
                        f"not {type(spec).__name__}")
    out = [t for item in spec for t in resolve_theorems(item, header)]
    if not out:
        raise ValueError("the theorem list is empty")
    return out


def theorem_index(value: Any, size: int) -> int:
    """``reset(options={"index": i})``: a position in the theorem list (no negative counting from the end)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= int(value) < size:
        raise ValueError(f"options['index'] must be a whole number in 0..{size - 1}, got {value!r}")
    return int(value)
