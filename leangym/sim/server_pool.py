"""The simulated server's state: options, the pool of simulated Lean processes, leases, faults.

:class:`SimLeanServer` implements every endpoint of the LeanTree protocol as a
method; :mod:`leangym.sim.server_http` routes HTTP requests to them and
:mod:`leangym.sim.server` runs them (see its docstring for the behaviour).
"""
from __future__ import annotations

import contextlib
import math

import os
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

VERSION = "0.1.0"

INJECTED_ERROR_TEXT = "Simulated server failure (injected fault)"


@dataclass
class SimServerConfig:
    """Options of the simulated server (each has a matching CLI flag)."""

    host: str = "127.0.0.1"
    port: int = 0  # 0: pick a free port (the handle's .url / .port tell which)
    max_processes: int = 8
    factorized: bool = False  # newer server generation: one branch per independent goal
    latency_ms: float = 0.0  # added to every Lean endpoint (command, proof_from_sorry, *_apply_tactic)
    jitter_ms: float = 0.0  # uniform extra latency in [0, jitter_ms]
    error_rate: float = 0.0  # probability that a Lean endpoint answers HTTP 500 (with an `exception` pickle)
    drop_rate: float = 0.0  # probability that a Lean endpoint closes the connection without answering
    crash_after: int | None = None  # answer this many requests, then stop answering (close every socket)
    seed: int | None = None  # seed of the fault/latency RNG
    verbose: bool = False  # log every request to stderr
    # Builds one simulated process: ``factory(factorized) -> SimProcess-like``. None: SimProcess.
    process_factory: Callable[[bool], Any] | None = field(default=None, repr=False)


class SimFault(RuntimeError):
    """The exception pickled into an injected HTTP 500 answer."""


class BadRequest(ValueError):
    """A request body the server refuses (a 500 with this text, as the real server answers bad fields)."""


def _string(body: dict[str, Any], name: str, limit: int = 1_000_000) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        raise BadRequest(f"'{name}' must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise BadRequest(f"'{name}' is {len(value)} characters long; the limit is {limit}")
    return value


def _seconds(value: Any, name: str, default: float | None) -> float | None:
    """A finite, non-negative number (``None``: the default)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise BadRequest(f"'{name}' must be a finite number >= 0, got {value!r}")
    return float(value)


class Drop(Exception):
    """Close the connection without answering (an injected dropped connection)."""


def _default_factory(factorized: bool) -> Any:
    from leangym.sim.process import SimProcess  # imported lazily: another module, maybe absent in tools

    return SimProcess(factorized=factorized)


class Slot:
    """One simulated Lean process of the pool."""

    __slots__ = ("process", "lock", "lease_id", "busy_until")

    def __init__(self, process: Any) -> None:
        self.process = process
        self.lock = threading.Lock()  # a REPL handles one request at a time
        self.lease_id: int | None = None
        self.busy_until = 0.0  # with injected latency: when this process finishes its queued requests


class SimLeanServer:
    """Server state: the process pool, leases, fault RNG and request bookkeeping."""

    def __init__(self, config: SimServerConfig) -> None:
        self.config = config
        factory = config.process_factory or _default_factory
        self._slots = [Slot(factory(config.factorized)) for _ in range(max(0, int(config.max_processes)))]
        self._free: list[Slot] = list(self._slots)
        self._leases: dict[int, Slot] = {}
        self._returned: set[int] = set()
        self._next_lease = 0
        self._cond = threading.Condition()
        self._rng = random.Random(config.seed)
        self._rng_lock = threading.Lock()
        self._req_lock = threading.Lock()
        self._request_local = threading.local()  # .arrived: when this thread's request came in
        self._active: dict[int, dict[str, Any]] = {}
        self._next_req = 0
        self.request_count = 0
        self.peak_active = 0  # highest number of requests in flight at once
        self.connections_opened = 0  # TCP connections accepted (keep-alive reuse keeps this low)
        self.crashed = False
        self.started_at = time.time()
        self.on_crash: Callable[[], None] | None = None  # set by the handle: close the transport

    # ------------------------------------------------------------------ requests bookkeeping

    def begin_request(self, path: str, arrived: float | None = None) -> int | None:
        """Register a request; None when the server has crashed (do not answer).

        ``arrived`` is the ``time.monotonic()`` at which the request's first line
        was read (default: now); injected latency counts from it.
        """
        self._request_local.arrived = time.monotonic() if arrived is None else arrived
        with self._req_lock:
            if self.crashed:
                return None
            limit = self.config.crash_after
            if limit is not None and self.request_count >= limit:
                self.crashed = True
                crash = self.on_crash
            else:
                crash = None
                self.request_count += 1
                self._next_req += 1
                rid = self._next_req
                self._active[rid] = {"request_id": rid, "path": path, "start_time": time.time(),
                                     "thread": threading.current_thread().name}
                self.peak_active = max(self.peak_active, len(self._active))
                return rid
        if crash is not None:
            threading.Thread(target=crash, name="sim-server-crash", daemon=True).start()
        return None

    def connection_opened(self) -> None:
        with self._req_lock:
            self.connections_opened += 1

    def end_request(self, rid: int) -> None:
        with self._req_lock:
            self._active.pop(rid, None)

    def active_requests(self) -> list[dict[str, Any]]:
        now = time.time()
        with self._req_lock:
            return [{"request_id": r["request_id"], "path": r["path"],
                     "duration_seconds": round(now - r["start_time"], 2), "thread": r["thread"]}
                    for r in self._active.values() if r["path"] != "/status"]

    # ------------------------------------------------------------------ faults

    @contextlib.contextmanager
    def faults(self, slot: Slot) -> Iterator[None]:
        """Injected latency and failures around one Lean call to ``slot``'s process.

        The answer leaves ``latency`` after the request came in, with the simulated
        work done inside that time (as a real Lean process works while the client
        waits), so requests to different processes do not queue behind each other's
        sleep. A process, like a REPL, serves one request at a time: a request that
        comes while it is busy starts when it is free. A dropped connection or an
        HTTP 500 (raised) comes after the same delay.
        """
        cfg = self.config
        if not (cfg.latency_ms or cfg.jitter_ms or cfg.error_rate or cfg.drop_rate):
            yield
            return
        with self._rng_lock:
            delay = cfg.latency_ms + (self._rng.uniform(0.0, cfg.jitter_ms) if cfg.jitter_ms else 0.0)
            u_drop = self._rng.random()
            u_err = self._rng.random()
            # Count from the request's arrival, so the server's own HTTP parsing (serialised
            # by its GIL under a burst of requests) is inside the latency, not added to it.
            arrived = getattr(self._request_local, "arrived", None)
            start = max(time.monotonic() if arrived is None else arrived, slot.busy_until)
            deadline = slot.busy_until = start + delay / 1000.0
        if u_drop < cfg.drop_rate or u_err < cfg.error_rate:
            time.sleep(max(0.0, deadline - time.monotonic()))
            raise Drop() if u_drop < cfg.drop_rate else SimFault(INJECTED_ERROR_TEXT)
        try:
            yield
        finally:  # errors (unknown state, ...) leave after the delay too
            remaining = deadline - time.monotonic()
            if remaining > 0:
                time.sleep(remaining)

    # ------------------------------------------------------------------ pool

    def status(self) -> dict[str, Any]:
        with self._cond:
            available, used = len(self._free), len(self._leases)
        try:
            load = list(os.getloadavg())
        except (AttributeError, OSError):
            load = []
        return {
            "available_processes": available,
            "used_processes": used,
            "starting_processes": 0,
            "max_processes": len(self._slots),
            "active_requests": self.active_requests(),
            "cpu_percent_per_core": [],
            "ram": {},
            "leangym": {
                "simulated": True,
                "generation": "factorized" if self.config.factorized else "single-branch",
                "version": VERSION,
                "load_average": load,
                "requests": self.request_count,
                "peak_active_requests": self.peak_active,
            },
        }

    def get_process(self, blocking: bool, timeout: float | None) -> int | None:
        timeout = _seconds(timeout, "timeout", None)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._free:
                if not blocking:
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            slot = self._free.pop()
            self._next_lease += 1
            slot.lease_id = self._next_lease
            self._leases[slot.lease_id] = slot
            return slot.lease_id

    def return_process(self, pid: int) -> dict[str, Any]:
        with self._cond:
            slot = self._leases.pop(pid, None)
            if slot is None:
                if pid in self._returned:
                    return {"status": "ok", "already_returned": True}
                raise ValueError(f"Process {pid} not found")
            self._returned.add(pid)
        try:
            with slot.lock:
                slot.process.reset()
        finally:
            with self._cond:
                slot.lease_id = None
                self._free.append(slot)
                self._cond.notify()
        return {"status": "ok"}

    def slot(self, pid: int) -> Slot:
        with self._cond:
            slot = self._leases.get(pid)
        if slot is None:
            raise ValueError(f"Process {pid} not found")
        return slot

    # ------------------------------------------------------------------ Lean endpoints

    def command(self, pid: int, body: dict[str, Any]) -> dict[str, Any]:
        slot = self.slot(pid)
        source = _string(body, "command")
        with self.faults(slot), slot.lock:
            return slot.process.command(source)

    def proof_from_sorry(self, pid: int, body: dict[str, Any]) -> dict[str, Any]:
        slot = self.slot(pid)
        theorem = _string(body, "theorem_with_sorry")
        with self.faults(slot), slot.lock:
            return slot.process.proof_from_sorry(theorem)

    def _tactic(self, slot: Slot, pid: int, psid: int, body: dict[str, Any],
                apply: Callable[[int, str, int], dict[str, Any]]) -> dict[str, Any]:
        """``apply(psid, tactic, timeout_ms)`` on ``slot``'s process, after the injected faults."""
        tactic = _string(body, "tactic", limit=100_000)  # the kernel's parse is not bounded by the timeout
        timeout_ms = int(min(_seconds(body.get("timeout"), "timeout", 1000.0), 3_600_000.0))
        with self.faults(slot), slot.lock:
            try:
                return apply(psid, tactic, timeout_ms)
            except KeyError:
                raise ValueError(f"Proof state {psid} not found in process {pid}") from None

    def try_apply_tactic(self, pid: int, psid: int, body: dict[str, Any]) -> dict[str, Any]:
        slot = self.slot(pid)
        return self._tactic(slot, pid, psid, body, slot.process.try_apply_tactic)

    def apply_tactic(self, pid: int, psid: int, body: dict[str, Any]) -> dict[str, Any]:
        slot = self.slot(pid)
        native = getattr(slot.process, "apply_tactic", None)
        if native is not None:  # SimProcess registers a real merged state (a consistent proof_state_id)
            return self._tactic(slot, pid, psid, body, native)
        reply = self._tactic(slot, pid, psid, body, slot.process.try_apply_tactic)
        if "error" in reply:
            raise RuntimeError(str(reply["error"]))
        branches = reply.get("value") or []
        if len(branches) == 1:
            return {"proof_state_id": branches[0]["proof_state_id"], "goals": branches[0].get("goals") or []}
        goals = [g for b in branches for g in (b.get("goals") or [])]
        return {"proof_state_id": branches[0]["proof_state_id"] if branches else -1, "goals": goals}
