"""The simulated server's state: the pool of simulated Lean processes, leases, faults.

:class:`SimLeanServer` implements every endpoint of the LeanTree protocol as a
method, in the server generation of ``config.generation`` (1 single-branch, 2 factorized,
3 the branch API: branch ids counted server-wide, warm-up, leases reclaimed after
``lease_idle_timeout``); :mod:`leangym.sim.server_http` routes HTTP requests to them and
:mod:`leangym.sim.server` runs them (see its docstring for the behaviour).
"""
from __future__ import annotations

import contextlib
import os
import random
import sys
import threading
import time
from typing import Any, Callable, Iterator

from leangym.sim.server_config import (GENERATION_NAMES, INJECTED_ERROR_TEXT, VERSION, WARMING_UP_TEXT, Answer, Drop,
                                       ProcessNotFound, SimFault, SimServerConfig, seconds_field, string_field)

_WAIT_SLICE_S = 0.5  # a /process/get waiting for a free process checks this often whether its client left


def _default_factory(factorized: bool) -> Any:
    from leangym.sim.process import SimProcess  # imported lazily: another module, maybe absent in tools

    return SimProcess(factorized=factorized)


class Slot:
    """One simulated Lean process of the pool."""

    __slots__ = ("process", "lock", "lease_id", "busy_until", "in_flight", "last_used", "branches", "doomed")

    def __init__(self, process: Any) -> None:
        self.process = process
        self.lock = threading.Lock()  # a REPL handles one request at a time
        self.lease_id: int | None = None
        self.busy_until = 0.0  # with injected latency: when this process finishes its queued requests
        self.in_flight = 0  # requests to the lease being served (guarded by the server's _cond)
        self.last_used = 0.0  # monotonic time of the lease's last request (or of the lease itself)
        self.branches: dict[int, tuple[int, list]] = {}  # generation 3: branch id -> (proof state id, goals)
        self.doomed = False  # its next Lean request passes its deadline (expire_next): 503, recycled


class SimLeanServer:
    """Server state: the process pool, leases, fault RNG and request bookkeeping."""

    def __init__(self, config: SimServerConfig) -> None:
        self.config = config
        factory = config.process_factory or _default_factory
        self.gen = config.gen
        self._slots = [Slot(factory(self.gen >= 2)) for _ in range(max(0, int(config.max_processes)))]
        self._started = time.monotonic()
        self._next_branch = 0  # generation 3: branch ids are counted server-wide from 1
        self._free: list[Slot] = list(self._slots)
        self._leases: dict[int, Slot] = {}
        self._next_lease = 0  # lease ids are sequential: an id up to this one not in _leases was returned
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
        self.on_crash: Callable[[], None] | None = None  # set by the handle: close the transport
        self._closed = threading.Event()
        if config.lease_timeout is not None:
            threading.Thread(target=self._reclaim_idle_leases, name="sim-lease-reaper", daemon=True).start()

    def close(self) -> None:
        """Stop the background work (the idle-lease reaper) and end injected-latency waits at once."""
        self._closed.set()

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
            self._closed.wait(max(0.0, deadline - time.monotonic()))
            raise Drop() if u_drop < cfg.drop_rate else SimFault(INJECTED_ERROR_TEXT)
        try:
            yield
        finally:  # errors (unknown state, ...) leave after the delay too
            remaining = deadline - time.monotonic()
            if remaining > 0:
                self._closed.wait(remaining)  # a stopped server ends its requests' waits at once

    # ------------------------------------------------------------------ pool

    def warming_up(self) -> bool:
        return self.gen == 3 and time.monotonic() - self._started < self.config.warmup_s

    def status(self) -> dict[str, Any]:
        now = time.monotonic()
        with self._cond:
            available, used = len(self._free), len(self._leases)
            leases = [{"process_id": pid, "idle_seconds": 0.0 if s.in_flight else round(now - s.last_used, 1)}
                      for pid, s in sorted(self._leases.items())]
            idle_60 = sum(1 for s in self._leases.values() if not s.in_flight and now - s.last_used >= 60)
            branches = sum(len(s.branches) for s in self._slots)
        try:
            load = list(os.getloadavg())
        except (AttributeError, OSError):
            load = []
        gen3 = {} if self.gen != 3 else {
            "status": "warming_up" if self.warming_up() else "ready", "total_processes": len(self._slots),
            "stopping_processes": 0, "idle_too_long_60s": idle_60, "total_branches": branches,
            "inactive_branches_60s": 0, "leanserver_rss_bytes": 0}
        return {
            **gen3,
            "available_processes": available,
            "used_processes": used,
            "starting_processes": 0,
            "max_processes": len(self._slots),
            "active_requests": self.active_requests(),
            "cpu_percent_per_core": [],
            "ram": {},
            "leangym": {
                "simulated": True,
                "generation": GENERATION_NAMES[self.gen],
                "version": VERSION,
                "load_average": load,
                "requests": self.request_count,
                "peak_active_requests": self.peak_active,
                "leases": leases,
                "lease_idle_timeout": self.config.lease_timeout,
            },
        }

    def get_process(self, blocking: bool, timeout: float | None) -> int | None:
        return self.lease(blocking, timeout)[0]

    def lease(self, blocking: bool, timeout: float | None,
              gone: Callable[[], bool] | None = None) -> tuple[int | None, bool]:
        """``/process/get``: (the lease id or None, whether it had to wait for a process).

        ``gone``: asked every half second while waiting; when it says the client has left, the wait
        ends with None (an abandoned request would otherwise hold a thread and a connection to the end).
        """
        timeout = seconds_field(timeout, "timeout", None)
        if self.warming_up():
            raise Answer(503, {"error": WARMING_UP_TEXT})
        deadline = None if timeout is None else time.monotonic() + timeout
        waited = False
        with self._cond:
            while not self._free:
                if not blocking:
                    return None, waited
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None, waited
                if waited and gone is not None and gone():
                    return None, waited
                waited = True
                # In slices: the client may leave (see ``gone``); longer waits overflow (OverflowError).
                self._cond.wait(_WAIT_SLICE_S if remaining is None else min(remaining, _WAIT_SLICE_S))
            slot = self._free.pop()
            self._next_lease += 1
            slot.lease_id = self._next_lease
            slot.last_used = time.monotonic()
            self._leases[slot.lease_id] = slot
            return slot.lease_id, waited

    def return_process(self, pid: int) -> dict[str, Any]:
        with self._cond:
            slot = self._leases.pop(pid, None)
            if slot is None:
                if 0 < pid <= self._next_lease:  # issued, so returned already
                    return {"status": "ok", "already_returned": True}
                raise ProcessNotFound(pid)
        self._release(slot)
        return {"status": "ok"}

    def _release(self, slot: Slot) -> None:
        """Roll back a process taken out of ``_leases`` and put it back in the pool."""
        try:
            with slot.lock:
                slot.lease_id = None  # under the slot's lock: see _locked
                slot.branches, slot.doomed = {}, False
                slot.process.reset()
        finally:
            with self._cond:
                self._free.append(slot)
                self._cond.notify()

    def _reclaim_idle_leases(self) -> None:
        """The reaper thread (``lease_idle_timeout`` set): reclaim idle leases until close()."""
        while not self._closed.wait(min(float(self.config.lease_timeout) / 4, 1.0)):  # type: ignore[arg-type]
            self.reclaim_idle_leases()

    def reclaim_idle_leases(self, now: float | None = None) -> list[int]:
        """Return every lease that has had no request for ``lease_idle_timeout`` s (its client is
        presumably dead); the ids returned. A lease with a request in progress is never idle."""
        limit = self.config.lease_timeout
        if limit is None:
            return []
        now = time.monotonic() if now is None else now
        with self._cond:  # chosen and taken at once: a request that comes meanwhile keeps its lease
            idle = {pid: s for pid, s in self._leases.items() if not s.in_flight and now - s.last_used >= limit}
            for pid in idle:
                del self._leases[pid]
        for pid, slot in idle.items():
            print(f"sim server: lease {pid} had no request for {now - slot.last_used:.0f} s: returned "
                  "(--lease-idle-timeout)", file=sys.stderr, flush=True)
            self._release(slot)
        return list(idle)

    # ------------------------------------------------------------------ test hooks: a lease the server loses

    def reclaim(self, pid: int) -> bool:
        """Take lease ``pid`` back now, as a restart of its process, a crash or a recycling would (its id goes
        stale: the next request on it is "Process N not found"). False if it is not leased."""
        with self._cond:
            slot = self._leases.pop(pid, None)
        if slot is not None:
            self._release(slot)
        return slot is not None

    def expire_next(self, pid: int) -> None:
        """Generation 3: the next Lean request on lease ``pid`` passes its deadline: HTTP 503, and the
        process is recycled (the lease is gone)."""
        with self._cond:
            slot = self._leases.get(pid)
            if slot is None:
                raise ProcessNotFound(pid)
            slot.doomed = True

    @contextlib.contextmanager
    def _leased(self, pid: int) -> Iterator[Slot]:
        """The slot of lease ``pid`` for one request; the lease counts as in use until it ends."""
        with self._cond:
            slot = self._leases.get(pid)
            if slot is None:
                raise ProcessNotFound(pid)
            if slot.doomed:  # past its deadline (expire_next): the server recycles the process
                del self._leases[pid]
            else:
                slot.in_flight += 1
        if slot.doomed:
            self._release(slot)
            raise Answer(503, {"error": f"Request to process {pid} exceeded its deadline; the process was recycled"})
        try:
            yield slot
        finally:
            with self._cond:
                slot.in_flight -= 1
                slot.last_used = time.monotonic()

    @staticmethod
    @contextlib.contextmanager
    def _locked(slot: Slot, pid: int) -> Iterator[None]:
        """The slot's process for lease ``pid`` alone. A request that got the slot just before a
        ``/return`` of the same lease must not run on it once it is rolled back (and maybe leased
        to another client): the lease id is checked again under the lock the return takes."""
        with slot.lock:
            if slot.lease_id != pid:
                raise ProcessNotFound(pid)
            yield

    # ------------------------------------------------------------------ Lean endpoints

    def command(self, pid: int, body: dict[str, Any]) -> dict[str, Any]:
        with self._leased(pid) as slot:
            source = string_field(body, "command")
            with self.faults(slot), self._locked(slot, pid):
                return slot.process.command(source)

    def proof_from_sorry(self, pid: int, body: dict[str, Any]) -> dict[str, Any]:
        with self._leased(pid) as slot:
            theorem = string_field(body, "theorem_with_sorry")
            with self.faults(slot), self._locked(slot, pid):
                reply = slot.process.proof_from_sorry(theorem)
                if self.gen == 3 and "value" in reply:
                    return {"value": self._branch(slot, reply["value"])}
                return reply

    # ------------------------------------------------------------------ generation 3: branches

    def _branch(self, slot: Slot, state: dict[str, Any]) -> dict[str, Any]:
        """A process's ``{"proof_state_id", "goals"}`` as a new branch ``{"branch_id", "goals"}`` (the caller
        holds the slot's lock)."""
        with self._cond:
            self._next_branch += 1
            bid = self._next_branch
        slot.branches[bid] = (state["proof_state_id"], state["goals"])
        return {"branch_id": bid, "goals": state["goals"]}

    def _branch_of(self, slot: Slot, pid: int, bid: int) -> tuple[int, list]:
        found = slot.branches.get(bid)
        if found is None:  # HTTP 500; the process stays usable
            raise RuntimeError(f"Branch {bid} not found for process {pid}")
        return found

    def branch_try_apply_tactic(self, pid: int, bid: int, body: dict[str, Any]) -> dict[str, Any]:
        with self._leased(pid) as slot:
            tactic = string_field(body, "tactic", limit=100_000)
            timeout_ms = int(min(seconds_field(body.get("timeout"), "timeout", 1000.0), 3_600_000.0))
            with self.faults(slot), self._locked(slot, pid):
                psid, _ = self._branch_of(slot, pid, bid)
                reply = slot.process.try_apply_tactic(psid, tactic, timeout_ms)
                if "value" in reply:  # (factorized: [] when the tactic closed the goal)
                    return {"value": [self._branch(slot, b) for b in reply["value"]]}
                return reply

    def branch_state(self, pid: int, bid: int, body: dict[str, Any]) -> dict[str, Any]:
        with self._leased(pid) as slot, self._locked(slot, pid):
            _, goals = self._branch_of(slot, pid, bid)
            return {"branch_id": bid, "goals": goals, "is_solved": not goals}

    def is_valid_source(self, pid: int, body: dict[str, Any]) -> dict[str, Any]:
        """Generations 2-3: no error-severity message (a ``sorry`` warning passes: never a proof check)."""
        with self._leased(pid) as slot:
            source = string_field(body, "source")
            with self.faults(slot), self._locked(slot, pid):
                reply = slot.process.command(source)
        return {"is_valid": not any(m.get("severity") == "error" for m in reply.get("messages") or [])}

    def try_apply_tactic(self, pid: int, psid: int, body: dict[str, Any]) -> dict[str, Any]:
        return self._tactic(pid, psid, body, "try_apply_tactic")

    def apply_tactic(self, pid: int, psid: int, body: dict[str, Any]) -> dict[str, Any]:
        return self._tactic(pid, psid, body, "apply_tactic")

    def _tactic(self, pid: int, psid: int, body: dict[str, Any], method: str) -> dict[str, Any]:
        """The process's ``method(psid, tactic, timeout_ms)``, after the injected faults."""
        with self._leased(pid) as slot:
            tactic = string_field(body, "tactic", limit=100_000)  # the kernel's parse is not bounded by the timeout
            timeout_ms = int(min(seconds_field(body.get("timeout"), "timeout", 1000.0), 3_600_000.0))
            apply = getattr(slot.process, method, None) or _merging(slot.process.try_apply_tactic)
            with self.faults(slot), self._locked(slot, pid):
                try:
                    return apply(psid, tactic, timeout_ms)
                except KeyError:
                    raise ValueError(f"Proof state {psid} not found in process {pid}") from None


def _merging(try_apply: Callable[[int, str, int], dict[str, Any]]) -> Callable[[int, str, int], dict[str, Any]]:
    """``apply_tactic`` for a process that has only ``try_apply_tactic`` (SimProcess registers a real
    merged state; others get the branches' goals in one state under the first branch's id, -1 if none)."""
    def apply(psid: int, tactic: str, timeout_ms: int) -> dict[str, Any]:
        reply = try_apply(psid, tactic, timeout_ms)
        if "error" in reply:
            raise RuntimeError(str(reply["error"]))
        branches = reply.get("value") or []
        goals = [g for b in branches for g in (b.get("goals") or [])]
        return {"proof_state_id": branches[0]["proof_state_id"] if branches else -1, "goals": goals}
    return apply
