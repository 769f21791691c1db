"""Reading JSONL input files so that every mistake is reported as ``path:line: what is wrong``.

Training data and theorem files are long and hand-edited or machine-written; an
error that names no line (or crashes an hour into training) sends the user on a
search. So each line is decoded (strict UTF-8) and parsed here, with its line
number, and the callers check every row's fields when the file is loaded.
"""
from __future__ import annotations

import json
from typing import Any, Iterator


def iter_json_lines(path: str) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` per non-blank line; ValueError ``path:line: ...`` otherwise."""
    with open(path, "rb") as f:  # bytes: a decoding error can then name its line
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not UTF-8 text (byte 0x{raw[e.start]:02x}, byte {e.start + 1} "
                                 "of the line); save the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not JSON ({e.msg} at column {e.colno}); "
                                 "expected one JSON object per line") from None
            except RecursionError:
                raise ValueError(f"{path}:{lineno}: JSON nested too deeply to read") from None
            yield lineno, value

