"""HTTP client for a LeanTree server (``leanserver``) or leangym's simulated one.

Protocol: LeanTree's HTTP server as its source implements it (PyPI ``leantree``, its
``leanserver`` command; this project's write-up of it is ``leantree-protocol.md`` in the
workspace's shared docs, not shipped; ``docs/leantree-servers.md`` for users). All three server
generations are accepted, told apart by what the server answers, never by a setting:

* a proof start answers ``branch_id`` (generation 3, the branch API: tactics go to
  ``/process/P/branch/B/...``) or ``proof_state_id`` (generations 1-2: ``/process/P/proof/S/...``);
* on the ``proof`` routes, ``/process/P/is_valid_source`` answering 404 means generation 1
  (single-branch), any other answer generation 2 (factorized); tactic replies confirm it.
  A tactic route answering 404 ``Not Found`` switches to the other API (a server replaced by
  another generation at the same URL).

Every reply is converted into the typed values of :mod:`leangym.backends.types` right here.

Usage::

    client = LeanTreeClient("http://127.0.0.1:8000")
    with client.lease() as lease:                 # an HttpLease (a LeanProcess)
        root = lease.start_proof("theorem t (a b : ℕ) : a + b = b + a := by sorry")
        results = lease.apply_tactics(root, ["omega", "simp", "ring"])

Design notes
------------
* A lease that is gone (:class:`LeaseLost`): HTTP 404 ``Process N not found`` (generation 3), the
  same text as HTTP 500, or as HTTP 200 ``{"error": ...}`` on ``try_apply_tactic`` (generations
  1-2), or HTTP 503 on a Lean route (generation 3: past its deadline, the process was recycled).
  Tactics then come back ``SERVER_FAILURE`` with ``cause="LeaseLost"``; nothing more is sent on that
  lease, and it is not returned (see :mod:`leangym.backends.lease`, also for leases idle near the
  server's ``lease_timeout``).
* Warm-up: ``/process/get`` answering HTTP 503 (generation 3 until its processes have loaded
  Lean) is waited for, with one log line saying so, at most ``warmup_wait_s`` seconds
  (default ``$LEANGYM_WARMUP_WAIT_S``, else 600), then :class:`ServerWarmingUp`.
* One ``requests.Session`` per client: keep-alive, a connection pool sized for
  concurrent use from threads (``pool_maxsize``). Each call borrows one of that
  Session's pooled connections and does one request/response on it
  (:mod:`leangym.backends.transport`: a third of the client CPU of
  ``session.post``; many envs share one interpreter and its GIL), so
  environment proxies are not consulted: connect to the server directly.
* Every call has explicit ``(connect, read)`` timeouts. A blocking
  ``/process/get`` gets ``timeout + read_timeout`` so the server's wait never
  trips the client's.
* Retries (``retries`` extra attempts, short backoff) only where repeating is
  harmless - ``GET /status``, ``try_apply_tactic`` (proof states are immutable),
  ``apply_tactic`` and ``/return`` (idempotent) - and only after a connection-level
  failure (refused, reset, closed without answer). ``proof_from_sorry`` is retried
  only when the request never left (refused, connect timeout): the server may have
  declared the theorem before the connection broke, and a second declaration fails;
  ``/return`` also after an HTTP 5xx or a garbled answer, since a lease that is
  not returned holds a Lean process until the server restarts.
  Never for ``/process/get`` or ``/command``, never after a read timeout.
* Errors: nobody listening -> :class:`ServerUnavailable` (the message names the
  URL and how to start a server); HTTP 4xx/5xx -> :class:`ServerError` built
  from the body's ``error`` text only - the ``exception`` field (a base64
  pickle) is never decoded, let alone unpickled; malformed JSON and timeouts
  -> :class:`ServerError`.
* ``try_apply_tactic`` never raises: a failure is ``Outcome.SERVER_FAILURE``.
* One request at a time per leased process (:class:`HttpLease` holds a lock): the
  protocol does not say that a server queues concurrent requests to one REPL.
  Parallel work uses several leases (a vector env, a batched search).
* ``apply_tactic`` (the non-wrapping endpoint of generations 1-2; failures are HTTP 500) maps an
  HTTP error whose text is one of Lean's documented rejection texts
  (``REPL returned error``, ``Step verification error``, ``Could not
  apply tactic in REPL``, ``... timed out``) to ``REJECTED``/``TIMEOUT``, and
  every other failure (unknown process, dead REPL, unreachable, malformed) to
  ``SERVER_FAILURE``. It never raises either. Generation 3 has no such endpoint.
* ``is_valid_source`` (generations 2-3) is only used to tell generations apart, never as a proof
  check: it ignores ``sorry`` and runs no ``#print axioms`` (:mod:`leangym.soundness` checks proofs).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Mapping

import requests
from requests.adapters import HTTPAdapter

from leangym.backends.lease import PENDING_RETURNS, HttpLease, exit_through_atexit, live_leases
# The request layer (sending, retrying, what an error answer means, the warm-up wait), split out of this
# module: its names are re-exported here, private ones included
from leangym.backends.leantree_wire import (DEFAULT_WARMUP_WAIT_S, WARMUP_ENV_VAR, HttpStatusError, LeanTreeWire,
                                            _Dropped, _Malformed, _PROCESS_PATH, _WAITING, _WAITING_LOCK,
                                            _start_waiting, _stop_waiting, _warmup_default, pool_size, start_hint)
from leangym.backends.transport import ConnectFailed, Dropped, ReadTimedOut, Transport
from leangym.backends.types import (
    CommandResult,
    LeanError,
    LeaseLost,
    NoProcessAvailable,
    Outcome,
    ProofState,
    GENERATIONS,
    ServerError,
    ServerIdentity,
    ServerTimeout,
    ServerUnavailable,
    ServerWarmingUp,
    TacticResult,
    parse_command,
    parse_proof_state,
    parse_start,
    lean_verdict,
    parse_tactic_reply,
    process_gone,
    reported_lean_errors,
)

__all__ = [
    "LeanTreeClient", "HttpLease", "HttpStatusError", "live_leases", "pool_size", "start_hint",
    # re-exported so callers can catch everything from one module
    "ServerError", "ServerUnavailable", "ServerTimeout", "NoProcessAvailable", "LeanError", "LeaseLost",
    "ServerWarmingUp", "WARMUP_ENV_VAR",
]

log = logging.getLogger(__name__)
_HUNG_RECENTLY_S = 600.0  # after a read timeout, a lease request first checks the server answers at all
# A generation-3 server reclaims a lease after lease_timeout (600 s by default) without a request: a lease
# idle this long is taken as reclaimed and nothing more is sent on it (its id might be reused meanwhile).
DEFAULT_LEASE_IDLE_LIMIT_S = 570.0


class LeanTreeClient(LeanTreeWire):
    """A thread-safe client for one LeanTree server (real or simulated)."""

    def __init__(self, url: str, connect_timeout: float = 3.0, read_timeout: float = 120.0, retries: int = 2,
                 *, pool_maxsize: int = 256, warmup_wait_s: float | None = None,
                 lease_idle_limit_s: float = DEFAULT_LEASE_IDLE_LIMIT_S) -> None:
        """``warmup_wait_s``: how long a lease request waits for a server that is warming up (default
        ``$LEANGYM_WARMUP_WAIT_S``, else 600). ``lease_idle_limit_s``: on a generation-3 server, a lease
        without a request for this long is taken as reclaimed (the server's ``lease_timeout`` is 600 s
        by default; set it below yours)."""
        url = url.strip()
        if "://" not in url:
            url = "http://" + url
        self.url = url.rstrip("/")
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.retries = max(0, int(retries))
        self._timeout = (self.connect_timeout, self.read_timeout)
        s = requests.Session()
        s.trust_env = False  # no proxy/netrc lookups: calls go to the server directly (see transport.py)
        for scheme in ("http://", "https://"):
            s.mount(scheme, HTTPAdapter(pool_connections=4, pool_maxsize=pool_maxsize, max_retries=0))
        self._transport = Transport(s, self.url)
        self.warmup_wait_s = _warmup_default() if warmup_wait_s is None else max(0.0, float(warmup_wait_s))
        self.lease_idle_limit_s = float(lease_idle_limit_s)
        self._generation = "unknown"
        self._generation_sure = False
        self._api: str | None = None  # the tactic routes: "proof" (generations 1-2) or "branch" (3)
        self._probed = False  # is_valid_source answered 404 (generation 1, unless a tactic reply says 2)
        self._status_snapshot: dict | None = None
        # When nothing last listened at the URL (connection refused). A lease older than
        # that may belong to a server that has restarted since; see _give_back.
        self.last_refused = float("-inf")
        # When a request last went unanswered within its read timeout (the server hung); and when the
        # server last answered a /status probe after that (see get_process).
        self.last_timed_out = float("-inf")
        self._probed_at = float("-inf")

    # ------------------------------------------------------------------ endpoints

    def status(self) -> dict:
        """``GET /status`` (unknown keys kept)."""
        body = self._request("GET", "/status", retry=True)
        if not isinstance(body, dict):
            raise ServerError(f"malformed server reply: expected a status object, got {str(body)[:200]!r}")
        return body

    @property
    def seems_hung(self) -> bool:
        """A request went unanswered within its read timeout, and the server has not answered a probe since."""
        return self.last_timed_out > self._probed_at

    def max_processes(self) -> int | None:
        """The server's pool size from ``/status`` (``None`` when it does not say)."""
        return pool_size(self.status())

    def get_process(self, blocking: bool = True, timeout: float = 60.0) -> int:
        """Lease a process; :class:`NoProcessAvailable` when none became free in time.

        After a request of this client went unanswered (the server hung), the server is asked for its
        ``/status`` first, with a short timeout: a server still hung then gives :class:`ServerTimeout`
        at once, and is not sent a lease request that it might grant after the client gave up on it.
        """
        if self.seems_hung and time.monotonic() - self.last_timed_out < _HUNG_RECENTLY_S:
            self._request("GET", "/status", retry=False, timeout=(self.connect_timeout, min(5.0, self.read_timeout)))
            self._probed_at = time.monotonic()  # it answers again
        read = self.read_timeout + (max(0.0, float(timeout)) if blocking else 0.0)
        body = self._get_when_ready({"blocking": bool(blocking), "timeout": float(timeout)}, (self.connect_timeout, read))
        if not isinstance(body, Mapping) or "process_id" not in body:
            raise ServerError(f"malformed server reply: expected {{'process_id': ...}}, got {str(body)[:200]!r}")
        pid = body["process_id"]
        if pid is None:
            waited = f"became free within {timeout:g} s" if blocking else "was free (non-blocking request)"
            raise NoProcessAvailable(f"no Lean process of {self.url} {waited}; return leases or raise --max-processes")
        if not isinstance(pid, int) or isinstance(pid, bool):
            raise ServerError(f"malformed server reply: process_id {pid!r}")
        return pid

    def return_process(self, pid: int, *, timeout: tuple[float, float] | None = None, retry: bool = True) -> dict:
        """Give a lease back (idempotent on the server side, so retried even after an HTTP 5xx or a
        garbled answer: a lease not returned holds a Lean process until the server restarts)."""
        try:
            body = self._request("POST", f"/process/{int(pid)}/return", {}, retry=retry, timeout=timeout,
                                 idempotent=True)
        except LeaseLost:
            return {"status": "ok", "already_gone": True}  # nothing left to give back
        return body if isinstance(body, dict) else {"status": body}

    def command(self, pid: int, source: str) -> CommandResult:
        """Run a whole Lean command in the process (``/command``); not retried."""
        try:
            payload = self._request("POST", f"/process/{int(pid)}/command", {"command": source}, retry=False)
            self._raise_if_gone(int(pid), payload)
        except HttpStatusError as e:
            # LeanTree's server answers a command Lean reported errors on with HTTP 500 (see
            # reported_lean_errors): a failed command, so a wrong proof is "check failed", not a failure
            reported = reported_lean_errors(e.error) if e.status >= 500 else None
            if reported is None:
                raise
            return reported
        return parse_command(payload)

    def proof_from_sorry(self, pid: int, theorem: str) -> ProofState:
        """Root proof state of ``theorem ... := by sorry``; :class:`LeanError` if Lean rejects it."""
        body = self._request("POST", f"/process/{int(pid)}/proof_from_sorry", {"theorem_with_sorry": theorem},
                             retry=True, resend=False)
        self._raise_if_gone(int(pid), body)
        root = parse_start(int(pid), body)
        if not self._generation_sure:
            self._observe_start(int(pid), body["value"])
        return root

    def _raise_if_gone(self, pid: int, body: Any) -> None:
        """An HTTP 200 ``{"error": "Process N not found"}`` (a server that wraps its failures) is a lost lease,
        not Lean's verdict on the statement or command."""
        err = body.get("error") if isinstance(body, Mapping) else None
        if isinstance(err, str) and process_gone(err, pid):
            raise LeaseLost(f"LeanTree server at {self.url}: {err}: the server no longer has this process")

    def _observe_start(self, pid: int, value: Mapping) -> None:
        """The generation from a start's reply: ``branch_id`` is generation 3; with ``proof_state_id``, a 404
        on ``is_valid_source`` (a route generation 1 lacks) tells 1 from 2. The probe sends no source: it
        runs nothing on the process."""
        if "branch_id" in value:
            self._api, self._generation, self._generation_sure = "branch", "branch-api", True
            return
        self._api = "proof"
        if self._probed:
            return
        try:
            self._request("POST", f"/process/{pid}/is_valid_source", {}, retry=False)
        except HttpStatusError as e:
            if e.status == 404:  # (not sure: a factorizing tactic reply would still say generation 2)
                self._generation, self._probed = "single-branch", True
                return
        except ServerError:
            return  # no answer: the tactic replies will tell
        self._generation, self._generation_sure = "factorized", True

    def try_apply_tactic(self, pid: int, state: ProofState | int, tactic: str,
                         timeout_ms: int = 1000) -> TacticResult:
        """Apply ``tactic`` to an (immutable) state. Never raises."""
        t0 = time.perf_counter()
        psid = state.proof_state_id if isinstance(state, ProofState) else state
        try:
            body = self._tactic_request(int(pid), int(psid), {"tactic": tactic, "timeout": int(timeout_ms)})
        except ServerError as e:
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), str(e), time.perf_counter() - t0,
                                type(e).__name__)
        except Exception as e:  # noqa: BLE001 - the contract is "never raises"
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), f"{type(e).__name__}: {e}",
                                time.perf_counter() - t0)
        if not self._generation_sure:
            self._observe_generation(body)
        # (generations 1-2, on the proof routes, answer every exception of this call as HTTP 200 text)
        return parse_tactic_reply(int(pid), tactic, body, time.perf_counter() - t0,
                                  wraps_failures=self._api != "branch")

    def _tactic_request(self, pid: int, sid: int, payload: dict) -> Any:
        """``try_apply_tactic`` on the routes of this server's generation (``proof`` or ``branch``). A route
        that answers 404 ``Not Found`` is the other generation's: the other one is tried once."""
        for attempt in range(2):
            api = self._api or "proof"
            try:
                return self._request("POST", f"/process/{pid}/{api}/{sid}/try_apply_tactic", payload, retry=True)
            except HttpStatusError as e:
                if e.status != 404 or attempt:
                    raise
                self._api = "branch" if api == "proof" else "proof"
                self._generation, self._generation_sure, self._probed = "unknown", False, False
        raise AssertionError("unreachable")

    def apply_tactic(self, pid: int, state: ProofState | int, tactic: str, timeout_ms: int = 1000) -> TacticResult:
        """The non-wrapping ``apply_tactic`` endpoint. Never raises.

        200 -> ``PROGRESS`` (one state) or ``PROVED``. An HTTP error whose text is one of
        Lean's rejection texts -> ``REJECTED`` (``TIMEOUT`` for time-outs); any other failure
        -> ``SERVER_FAILURE``.
        """
        t0 = time.perf_counter()
        psid = state.proof_state_id if isinstance(state, ProofState) else state
        if self._api == "branch":
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), f"the LeanTree server at {self.url} is of generation "
                                "3 (the branch API), which has no apply_tactic endpoint: use try_apply_tactic")
        path = f"/process/{int(pid)}/proof/{int(psid)}/apply_tactic"
        try:
            body = self._request("POST", path, {"tactic": tactic, "timeout": int(timeout_ms)}, retry=True)
            new_state = parse_proof_state(int(pid), body)
        except HttpStatusError as e:
            outcome = (lean_verdict(e.error) if e.status >= 500 else None) or Outcome.SERVER_FAILURE
            err = str(e) if outcome is Outcome.SERVER_FAILURE else e.error
            return TacticResult(tactic, outcome, (), err, time.perf_counter() - t0)
        except ServerError as e:
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), str(e), time.perf_counter() - t0,
                                type(e).__name__)
        except Exception as e:  # noqa: BLE001
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), f"{type(e).__name__}: {e}",
                                time.perf_counter() - t0)
        states = (new_state,) if new_state.goals else ()
        return TacticResult(tactic, Outcome.PROGRESS if states else Outcome.PROVED, states, None,
                            time.perf_counter() - t0)

    def lease(self, blocking: bool = True, timeout: float = 60.0) -> "HttpLease":
        """Lease a process as an :class:`HttpLease` (context manager; returned on close/GC/exit).

        The request runs on a helper thread while the caller waits in short slices: a Ctrl-C (or
        SIGTERM) that lands while it is out would otherwise drop the answer, and with it the only
        record of a process the server has just leased. The helper then gives that process back.
        """
        exit_through_atexit()  # before the request: a SIGTERM while it is out must reach the exit hook too
        got: dict[str, Any] = {}
        done = threading.Event()  # (not Thread.join: a join that Ctrl-C interrupts can return early later)

        def request() -> None:
            try:
                got["pid"] = self.get_process(blocking=blocking, timeout=timeout)
            except BaseException as e:  # noqa: BLE001 -- handed to the caller below
                got["error"] = e
            finally:
                done.set()

        threading.Thread(target=request, name="leangym-lease", daemon=True).start()
        answered = False
        try:
            while not done.wait(0.1):
                pass
            answered = True
        finally:
            if not answered:  # interrupted: whatever the server leases now goes straight back
                returner = threading.Thread(target=self._give_back_when_leased, args=(done, got), daemon=True,
                                            name="leangym-lease-return")
                PENDING_RETURNS.add(returner)  # (the exit hook waits for it a little)
                returner.start()
        if "error" in got:
            raise got.pop("error")
        return HttpLease(self, got["pid"])

    def _give_back_when_leased(self, done: threading.Event, got: dict[str, Any]) -> None:
        try:
            done.wait()
            if "pid" in got:
                self.return_process(got["pid"], timeout=(1.0, 5.0), retry=False)
        except Exception as e:  # noqa: BLE001 -- a daemon thread: log, never raise
            log.warning("could not return LeanTree process %s to %s: %r", got.get("pid"), self.url, e)
        finally:
            PENDING_RETURNS.discard(threading.current_thread())

    # ------------------------------------------------------------------ identity

    @property
    def generation(self) -> str:
        """``"single-branch"`` (1), ``"factorized"`` (2), ``"branch-api"`` (3) or ``"unknown"`` (learnt from the
        first proof start, see the module docstring, and from tactic replies)."""
        return self._generation

    def _observe_generation(self, body: Any) -> None:
        if self._api == "branch":  # the branch routes answered: generation 3
            self._generation, self._generation_sure = "branch-api", True
            return
        value = body.get("value") if isinstance(body, Mapping) else None
        if not isinstance(value, list):
            return
        if len(value) != 1:  # no branch for a closed goal, or several branches: factorized
            self._generation, self._generation_sure = "factorized", True
            return
        branch = value[0]
        goals = branch.get("goals") if isinstance(branch, Mapping) else None
        # A closed proof as one empty branch: single-branch. (One branch with several goals
        # says nothing: a factorizing server keeps goals that share metavariables together.)
        if isinstance(goals, list) and not goals:
            self._generation, self._generation_sure = "single-branch", True

    def identity(self, refresh: bool = False) -> ServerIdentity:
        """URL, generation (the server's own claim if it makes one, else inferred) and /status keys.

        ``info`` is a snapshot of ``GET /status`` taken on the first call (or when ``refresh``);
        later calls cost no request. When the server could not be reached then, ``info`` is ``{}``.
        The generation is read anew on every call: it is learnt from tactic replies.
        """
        info = self._status_snapshot
        if info is None or refresh:
            try:
                info = self.status()
            except ServerError:
                info = {}
            self._status_snapshot = info
        gen = self._generation
        claim = info.get("leangym") if isinstance(info, dict) else None
        if not self._generation_sure and isinstance(claim, Mapping) and claim.get("generation") in GENERATIONS:
            gen = str(claim["generation"])
        return ServerIdentity(self.url, gen, info)

    def close(self) -> None:
        """Close pooled connections (leases stay valid; they reopen connections when used)."""
        self._transport.close()

    def __enter__(self) -> "LeanTreeClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LeanTreeClient({self.url!r})"
