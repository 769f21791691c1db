"""The simulated server's options and the errors its endpoints answer with.

:class:`SimServerConfig` holds every option (each a CLI flag of :mod:`leangym.sim.server`);
the exceptions map to HTTP answers in :mod:`leangym.sim.server_http`; :func:`string_field`
and :func:`seconds_field` read a request body's fields as the real server does (a 500 on a bad one).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

VERSION = "0.1.0"

INJECTED_ERROR_TEXT = "Simulated server failure (injected fault)"
WARMING_UP_TEXT = "server is warming up"
GEN3_LEASE_TIMEOUT = 600.0  # generation 3 reclaims leases idle this long (its lease_timeout default)
GENERATION_NAMES = {1: "single-branch", 2: "factorized", 3: "branch-api"}


@dataclass
class SimServerConfig:
    """Options of the simulated server (each has a matching CLI flag)."""

    host: str = "127.0.0.1"
    port: int = 0  # 0: pick a free port (the handle's .url / .port tell which)
    max_processes: int = 8
    factorized: bool = False  # generation 2 (when ``generation`` is None): one branch per independent goal
    # 1 single-branch, 2 factorized, 3 the branch API (leantree-protocol.md); None: 2 if factorized else 1
    generation: int | None = None
    # generation 3: /process/get answers HTTP 503 "server is warming up" for this long after the start
    warmup_s: float = 0.0
    latency_ms: float = 0.0  # added to every Lean endpoint (command, proof_from_sorry, *_apply_tactic)
    jitter_ms: float = 0.0  # uniform extra latency in [0, jitter_ms]
    error_rate: float = 0.0  # probability that a Lean endpoint fails: HTTP 500 with an `exception` pickle
    # (generations 1-2 answer try_apply_tactic's failures as HTTP 200 {"error": text}, as LeanTree does)
    drop_rate: float = 0.0  # probability that a Lean endpoint closes the connection without answering
    crash_after: int | None = None  # answer this many requests, then stop answering (close every socket)
    seed: int | None = None  # seed of the fault/latency RNG
    verbose: bool = False  # log every request to stderr
    # A connection on which nothing arrives for this long (an idle keep-alive connection, a
    # half-sent request) is closed, so that it does not hold a thread and a descriptor forever.
    # Long: a client whose request crosses the close on the wire gets no answer, and it does not
    # repeat /process/get or /command.
    idle_timeout: float = 300.0
    # At most this many connections at once (lowered to fit the descriptor limit); beyond it a new
    # connection is closed unread.
    max_connections: int = 1024
    # A lease that gets no request for this many seconds is taken back (rolled back; its id goes stale).
    # None: never on generations 1-2 (as those servers), 600 s on generation 3 (its lease_timeout).
    lease_idle_timeout: float | None = None
    # Builds one simulated process: ``factory(factorized) -> SimProcess-like``. None: SimProcess.
    process_factory: Callable[[bool], Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.generation not in (None, 1, 2, 3):
            raise ValueError(f"generation must be 1, 2 or 3, got {self.generation!r}")
        if self.warmup_s and self.gen != 3:
            raise ValueError("warmup_s (a /process/get that answers HTTP 503 while warming up) is generation 3's: "
                             "pass generation=3")

    @property
    def gen(self) -> int:
        """The generation served: ``generation``, else 2 if ``factorized`` else 1."""
        return self.generation or (2 if self.factorized else 1)

    @property
    def lease_timeout(self) -> float | None:
        """Seconds without a request after which a lease is taken back (None: never)."""
        if self.lease_idle_timeout is None and self.gen == 3:
            return GEN3_LEASE_TIMEOUT
        return self.lease_idle_timeout


class SimFault(RuntimeError):
    """The exception pickled into an injected HTTP 500 answer."""


class BadRequest(ValueError):
    """A request body the server refuses (a 500 with this text, as the real server answers bad fields)."""


def string_field(body: dict[str, Any], name: str, limit: int = 1_000_000) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        raise BadRequest(f"'{name}' must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise BadRequest(f"'{name}' is {len(value)} characters long; the limit is {limit}")
    return value


def seconds_field(value: Any, name: str, default: float | None) -> float | None:
    """A finite, non-negative number (``None``: the default)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise BadRequest(f"'{name}' must be a finite number >= 0, got {value!r}")
    return float(value)


class Drop(Exception):
    """Close the connection without answering (an injected dropped connection)."""


class ProcessNotFound(ValueError):
    """A request names a process the server does not have (returned, reclaimed, recycled, never issued):
    HTTP 404 on generation 3, 500 on the older ones (200 on their ``try_apply_tactic``)."""

    def __init__(self, pid: int) -> None:
        super().__init__(f"Process {pid} not found")


class Answer(Exception):
    """Answer HTTP ``code`` with ``payload`` (a 503 while warming up or past a deadline)."""

    def __init__(self, code: int, payload: dict[str, Any]) -> None:
        super().__init__(payload.get("error", ""))
        self.code, self.payload = code, payload
