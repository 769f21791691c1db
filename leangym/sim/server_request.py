"""What a request to the simulated server carries: ids in its path, its body's size, and its JSON fields.

Every check here answers a bad request with an error instead of an exception that
would end the connection unanswered. Bodies are bounded twice: each one by
:data:`MAX_REQUEST_BODY`, and the large ones together by a :class:`BodyBudget`, since
a parsed body can take ~25 times its size in memory (``[{},{},...]``) and up to
``max_connections`` requests are read at once.
"""
from __future__ import annotations

import contextlib
import json
import threading
from typing import Any, ContextManager, Iterator

# The largest legitimate body is a /command of 1,000,000 characters (server_config.string_field's
# limit), which leangym's client sends JSON-escaped: up to 6 bytes a character for the
# non-ASCII ones (\u2115). Lean sources are mostly ASCII, so 8 MiB is generous.
MAX_REQUEST_BODY = 8 * 2**20
SMALL_BODY = 64 * 2**10  # tactics and theorems are a few kB: bodies up to this size skip the budget
BODY_BUDGET = 2 * MAX_REQUEST_BODY  # bytes of large bodies being read and parsed at once
BUDGET_WAIT = 10.0  # seconds a large body waits for budget before a 503 (parsing one takes well under 1 s)

# The fields the protocol's bodies have: anything else is dropped as soon as the body is parsed,
# so that a padded body is not kept in memory while its request waits (a blocking /process/get).
FIELDS = ("blocking", "timeout", "command", "theorem_with_sorry", "tactic", "source")

# Ids are issued from 1 up, so one of more digits than this was never issued. Converting a longer
# digit string is refused past Python's int limit (4300 digits) and slow before it.
_MAX_ID_DIGITS = 18


class Refused(Exception):
    """A request refused before it is read whole: answer ``code`` with ``message``, then close."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _digits(text: str) -> str | None:
    """``text`` without surrounding blanks and leading zeros if it is ASCII digits only
    (``str.isdigit`` accepts '²', which ``int`` refuses); else None."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    return text.lstrip("0") or "0"


class UnknownId(int):
    """A path id too long to be any issued id: compares as an id that is never issued, and prints
    abbreviated, so that the server answers it as any unknown id (HTTP 500 "... not found")."""

    text: str

    def __new__(cls, digits: str) -> "UnknownId":
        self = super().__new__(cls, 10**_MAX_ID_DIGITS)  # one past the largest id that can be issued
        self.text = f"{digits[:12]}…({len(digits)} digits)"
        return self

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return self.text


def path_id(text: str) -> int | None:
    """A process or proof-state id from a path segment; None if the segment is not a number."""
    digits = _digits(text)
    if digits is None:
        return None
    return int(digits) if len(digits) <= _MAX_ID_DIGITS else UnknownId(digits)


def body_length(headers: Any) -> int:
    """The request body's length in bytes (0: none); :class:`Refused` for one that cannot be read."""
    if headers.get("Transfer-Encoding") is not None:
        # Not decoded: a chunked body read as none would leave its framing to be read as the next
        # requests. leangym's client always sends a Content-Length.
        raise Refused(411, "request bodies must be sent with a Content-Length "
                           "(Transfer-Encoding, e.g. chunked, is not supported)")
    length = headers.get("Content-Length")
    if not length:
        return 0
    digits = _digits(length)
    if digits is None:
        raise Refused(400, f"Content-Length must be a number of bytes up to {MAX_REQUEST_BODY}, "
                           f"got {length[:40]!r}")
    if len(digits) > _MAX_ID_DIGITS or int(digits) > MAX_REQUEST_BODY:
        raise Refused(413, f"request body too large: Content-Length {digits[:40]}"
                           f"{'…' if len(digits) > 40 else ''} bytes, the limit is {MAX_REQUEST_BODY}")
    return int(digits)


def parse_fields(raw: bytes) -> dict[str, Any]:
    """The protocol's fields of a JSON object body (``{}`` for an empty one); ValueError if not JSON."""
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"Invalid JSON body: {e}") from None
    if not isinstance(body, dict):
        raise ValueError("Invalid JSON body: Request body must be a JSON object")
    return {k: body[k] for k in FIELDS if k in body}


_GRANTED = contextlib.nullcontext(True)  # (reusable; cheaper than a generator per request)


class BodyBudget:
    """Bytes of large request bodies being read and parsed at once, up to ``capacity``."""

    def __init__(self, capacity: int = BODY_BUDGET, wait: float = BUDGET_WAIT) -> None:
        self.capacity = capacity
        self.wait = wait
        self.free = capacity
        self._cond = threading.Condition()

    def hold(self, size: int) -> ContextManager[bool]:
        """Reserve ``size`` bytes while the body is read and parsed; gives False if none became free
        within ``wait`` seconds (the caller refuses the request). Small bodies are always let through:
        a client that announces a large body and sends it slowly must not hold up ordinary requests."""
        return _GRANTED if size <= SMALL_BODY else self._reserve(size)

    @contextlib.contextmanager
    def _reserve(self, size: int) -> Iterator[bool]:
        size = min(size, self.capacity)
        with self._cond:
            if not self._cond.wait_for(lambda: self.free >= size, self.wait):
                granted = False
            else:
                self.free -= size
                granted = True
        try:
            yield granted
        finally:
            if granted:
                with self._cond:
                    self.free += size
                    self._cond.notify_all()
