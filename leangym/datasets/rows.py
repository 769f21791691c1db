"""Reading theorem rows from JSONL with errors that name the file, the line and the reason.

A benchmark run that silently skips or mangles a row reports a pass rate over
the wrong set, so every problem is an error, never a warning.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from leangym.theorem import Theorem, TheoremError


class DatasetError(ValueError):
    """A data set that cannot be loaded; the message names the file (and line) and the reason."""


def _where(path: Path | str, lineno: int | None) -> str:
    return f"{path}:{lineno}" if lineno is not None else str(path)


def row_to_theorem(row: Any, where: str, required: Iterable[str] = ("formal_statement",)) -> Theorem:
    """One decoded row -> :class:`Theorem`, or :class:`DatasetError` naming ``where``."""
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
    for key in required:
        if key not in row:
            raise DatasetError(f"{where}: missing field {key!r} (row has {sorted(row)})")
    for key in ("name", "header", "formal_statement", "split"):
        if key in row and row[key] is not None and not isinstance(row[key], str):
            raise DatasetError(f"{where}: field {key!r} must be a string, got {type(row[key]).__name__}")
    try:
        return Theorem.from_row(row)
    except TheoremError as e:
        name = row.get("name")
        raise DatasetError(f"{where}: {'theorem ' + repr(name) + ': ' if name else ''}{e}") from None


def _decoded_rows(text: str, path: Path) -> Iterator[tuple[str, str, Any]]:
    """``(where, label, row)`` for each row of ``text``: JSON Lines, or one top-level JSON array of rows.

    ``where`` names the row in errors (``file:3``, ``file: item 2``); ``label`` is the short form
    (``line 3``, ``item 2``) for pointing back at an earlier row.
    """
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as e:
            first = text.lstrip().split("\n", 1)[0]
            try:
                json.loads(first)
            except json.JSONDecodeError:  # not even its first line is a value: a JSON array with an error
                raise DatasetError(f"{_where(path, e.lineno)}: invalid JSON ({e.msg} at column {e.colno}) in what "
                                   "starts as a JSON array of rows") from None
            items = None  # a line holding an array: read as JSON Lines (where that line is then an error)
        if isinstance(items, list):
            for i, row in enumerate(items, start=1):
                yield f"{path}: item {i}", f"item {i}", row
            return
    # "\n" only (and a "\r" before it): a JSON string may hold U+2028 or \x85 unescaped,
    # which str.splitlines() would also split on
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = _where(path, lineno)
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DatasetError(f"{where}: invalid JSON ({e.msg} at column {e.colno}); "
                               "expected JSON Lines: one object per line (or one JSON array of objects)") from None
        yield where, f"line {lineno}", row


def read_jsonl(path: Path | str, required: Iterable[str] = ("formal_statement",),
               check: Callable[[Theorem], str | None] | None = None) -> list[Theorem]:
    """Every row of a JSONL file as a :class:`Theorem` (blank lines are skipped).

    A file whose whole text is one JSON array (a ``.json`` export) is read as those rows, in order.
    ``check`` may reject a theorem (returns why); the error then names its line (or array item).

    Names must be unique: results are keyed by theorem name (resuming, comparing runs).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # (an editor's byte-order mark is not JSON)
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: a directory; expected a JSONL file of theorems") from None
    except UnicodeDecodeError as e:
        raise DatasetError(f"{path}: not UTF-8 text ({e})") from None
    required = tuple(required)
    theorems: list[Theorem] = []
    first_seen: dict[str, str] = {}
    for where, label, row in _decoded_rows(text, path):
        theorem = row_to_theorem(row, where, required)
        why = check(theorem) if check else None
        if why:
            raise DatasetError(f"{where}: theorem {theorem.name!r}: {why}")
        if theorem.name in first_seen:
            raise DatasetError(f"{where}: duplicate theorem name {theorem.name!r} "
                               f"(first at {first_seen[theorem.name]})")
        first_seen[theorem.name] = label
        theorems.append(theorem)
    if not theorems:
        raise DatasetError(f"{path}: no theorems (empty file)")
    return theorems


def select_split(theorems: list[Theorem], split: str | None, source: str) -> list[Theorem]:
    """The theorems of ``split`` (all when None); an unknown split is an error listing the known ones."""
    if split is None:
        return theorems
    chosen = [t for t in theorems if t.split == split]
    if not chosen:
        known = sorted({str(t.split) for t in theorems})
        raise DatasetError(f"{source}: no theorems in split {split!r} (splits present: {known})")
    return chosen
