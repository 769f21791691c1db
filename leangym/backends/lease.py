"""A leased process of a LeanTree server, and the guarantee that every lease goes back.

:class:`HttpLease` is what :meth:`LeanTreeClient.lease` returns: a
:class:`~leangym.backends.types.LeanProcess` bound to one server process id.
A lease is returned when closed, when its ``with`` block exits, when it is
garbage collected, and at interpreter exit (SIGTERM included): a lease that
is never returned holds a Lean process until the server restarts.

A lease the server no longer has (:class:`~leangym.backends.types.LeaseLost`:
its answers said so, or on a generation-3 server it went ``lease_idle_limit_s``
without a request, past which the server reclaims it) is *lost*: nothing more is
sent on it, not even its return, since its id might name another client's
process by then. Its tactics come back ``SERVER_FAILURE`` with ``cause="LeaseLost"``;
lease a new one.
"""
from __future__ import annotations

import atexit
import logging
import signal
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Sequence

from leangym.backends.types import (CommandResult, LeaseLost, Outcome, ProofState, ServerError, ServerIdentity,
                                   TacticResult)

if TYPE_CHECKING:
    from leangym.backends.leantree import LeanTreeClient

__all__ = ["HttpLease", "live_leases"]

log = logging.getLogger("leangym.backends.leantree")  # the client's logger: where users look for lease messages

_LIVE_LEASES: "weakref.WeakSet[HttpLease]" = weakref.WeakSet()
# Threads giving back a process whose lease request an interrupt cut short (LeanTreeClient.lease): the
# exit hook waits for them as for the leases, a few seconds at most.
PENDING_RETURNS: set[threading.Thread] = set()
_EXIT_TIMEOUT = (1.0, 5.0)


def _may_be_reassigned(client: LeanTreeClient, state: dict) -> bool:
    """Whether the server refused connections while this lease was held: it was down, and if it restarted,
    its pool is fresh and may have given this very id to another client. (The protocol has no way to tell a
    restart apart from a server that stayed up; a restart this client never noticed goes unseen.)"""
    return client.last_refused > state["since"]


def _give_back(client: LeanTreeClient, pid: int, state: dict) -> None:
    """Return a lease; quiet (logs) on failure. Called at most once per lease (weakref.finalize)."""
    state["closed"] = True
    if state.get("lost"):
        log.info("not returning LeanTree process %s to %s: the server no longer has it (%s)", pid, client.url,
                 state["lost"])
        return
    if _may_be_reassigned(client, state):
        # returning it would take that client's process; a restart frees every lease anyway
        log.info("not returning LeanTree process %s: %s refused connections since it was leased", pid, client.url)
        return
    if client.last_timed_out > state["since"] and client.seems_hung and state.get("timeout") is None:
        # The server hung while we held this lease, and has not answered since: one short try, not a
        # whole read timeout (a reset after a hang would otherwise wait that long before it even asks
        # for a new process). Once it answers again, leases go back as usual, retries and all.
        state["timeout"], state["retry"] = _EXIT_TIMEOUT, False
    try:
        client.return_process(pid, timeout=state.get("timeout"), retry=state.get("retry", True))
    except ServerError as e:
        log.warning("could not return LeanTree process %s to %s: %s", pid, client.url, e)
    except Exception as e:  # noqa: BLE001 - runs from GC/atexit: never propagate
        log.warning("could not return LeanTree process %s to %s: %r", pid, client.url, e)


def live_leases() -> list["HttpLease"]:
    """Leases not yet closed (diagnostics)."""
    return [x for x in list(_LIVE_LEASES) if not x.closed]


def exit_through_atexit() -> None:
    """Make SIGTERM (``kill``, ``timeout``, batch schedulers) and SIGHUP (a closed terminal or ssh
    session) exit through the atexit hook below.

    Python's default handling of both ends the process without running ``atexit``, so every lease it
    held would stay taken until the server restarts. Only a default handler is replaced, and only
    from the main thread; a program that handles these signals itself keeps its handlers.
    """
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)  # (no SIGHUP on Windows)
        try:
            if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
        except ValueError:  # not the main thread
            return


@atexit.register
def _return_all_leases() -> None:
    """At exit, give back every lease still held: all at once, so that a hung server costs one
    short timeout, not one per lease."""
    threads = []
    for lease in live_leases():
        t = threading.Thread(target=lease.close, kwargs={"quick": True}, daemon=True)
        try:
            t.start()
        except RuntimeError:  # no new threads this late in shutdown (newer Pythons): one by one
            lease.close(quick=True)
            continue
        threads.append(t)
    deadline = time.monotonic() + sum(_EXIT_TIMEOUT) + 1.0
    for t in threads + list(PENDING_RETURNS):
        t.join(max(0.0, deadline - time.monotonic()))


class HttpLease:
    """One leased process of a LeanTree server; implements :class:`~leangym.backends.types.LeanProcess`.

    ``close()`` returns it (idempotent, never raises). It is also returned when the
    ``with`` block exits (normally or on error), when the object is garbage collected
    without ``close()``, and at interpreter exit.
    """

    in_process = False  # calls wait on the server: callers overlap them in threads

    def __init__(self, client: LeanTreeClient, process_id: int) -> None:
        self.client = client
        self.process_id = int(process_id)
        # One request at a time on this process: a REPL is one stream, and the protocol does not
        # say that the server queues concurrent requests to one process. Parallelism comes from
        # several leases (a vector env, a batched search), never from one.
        self._busy = threading.Lock()
        now = time.monotonic()
        # "lost": why the server no longer has this process (then nothing is sent on it, see the module doc);
        # "used": when its last request was sent (a generation-3 server reclaims leases idle for lease_timeout;
        # counting from the send, not the answer, errs on the side of never using a reclaimed id)
        self._state: dict[str, Any] = {"closed": False, "timeout": None, "since": now, "used": now, "lost": None}
        # The finalizer must not reference self: it holds the client, the pid and a shared dict.
        self._finalizer = weakref.finalize(self, _give_back, client, self.process_id, self._state)
        _LIVE_LEASES.add(self)
        exit_through_atexit()

    @property
    def closed(self) -> bool:
        return self._state["closed"]

    @property
    def lost(self) -> str | None:
        """Why the server no longer has this lease's process (see the module docstring), or None."""
        return self._state["lost"]

    def _lose(self, why: str) -> str:
        self._state["lost"] = self._state["lost"] or why
        return self._state["lost"]

    def _unusable(self) -> str | None:
        """Why nothing may be sent on this lease any more, or None: its id may name another client's process
        (after the return, as a server may reuse ids, after a refusal: :func:`_may_be_reassigned`, or once the
        server reclaimed it)."""
        if self._state["lost"]:
            return f"the server no longer has process {self.process_id}: {self._state['lost']}; lease a new one"
        if self.closed:
            return f"the lease of process {self.process_id} was returned (closed); lease a new one"
        idle, limit = time.monotonic() - self._state["used"], self.client.lease_idle_limit_s
        if self.client.generation == "branch-api" and idle >= limit:
            self._lose(f"no request for {idle:.0f} s (a generation-3 server reclaims leases idle for its "
                       f"lease_timeout, 600 s by default; this client stops at lease_idle_limit_s={limit:g})")
            return self._unusable()
        if _may_be_reassigned(self.client, self._state):
            return (f"the LeanTree server at {self.client.url} refused connections while process {self.process_id} "
                    "was leased: it was down, and if it restarted that id may now be another client's process; "
                    "lease a new one")
        return None

    def _check_state(self, state: ProofState) -> None:
        # proof-state ids mean something only to the process that made them (the protocol)
        if isinstance(state, ProofState) and state.process_id != self.process_id:
            raise ValueError(f"this proof state was made by Lean process {state.process_id}, not by this lease's "
                             f"process {self.process_id}; a state is only valid on the lease that made it")

    def _tactic(self, state: ProofState, tactic: str, timeout_ms: int) -> TacticResult:
        """One tactic request (``_busy`` held): the lease is used from its sending (a server's idle clock
        starts when a request arrives), and lost if the server says it no longer has it."""
        self._state["used"] = time.monotonic()
        result = self.client.try_apply_tactic(self.process_id, state, tactic, timeout_ms)
        if result.cause == "LeaseLost":
            self._lose(result.error or "lost")
        return result

    def _call(self, fn: Any, *args: Any) -> Any:
        """A call that raises (start, command): a :class:`LeaseLost` marks the lease lost."""
        if why := self._unusable():
            raise (LeaseLost if self.lost else ServerError)(why)
        with self._busy:
            self._state["used"] = time.monotonic()  # (from its sending, as for a tactic)
            try:
                return fn(self.process_id, *args)
            except LeaseLost as e:
                self._lose(str(e))
                raise

    def start_proof(self, theorem_with_sorry: str) -> ProofState:
        return self._call(self.client.proof_from_sorry, theorem_with_sorry)

    def apply_tactic(self, state: ProofState, tactic: str, timeout_ms: int = 1000) -> TacticResult:
        self._check_state(state)
        if why := self._unusable():
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), why, cause="LeaseLost" if self.lost else None)
        with self._busy:
            return self._tactic(state, tactic, timeout_ms)

    def apply_tactics(self, state: ProofState, tactics: Sequence[str], timeout_ms: int = 1000) -> list[TacticResult]:
        """Apply each tactic to ``state`` (states are immutable), one request after another; results in input order.

        Once a tactic gets no answer within the read timeout (the server hangs), the rest are not
        sent: each would wait as long. They come back as ``SERVER_FAILURE`` too, as do the rest after
        the server said that it no longer has the lease.
        """
        tactics, results = list(tactics), []
        self._check_state(state)
        if why := self._unusable():
            cause = "LeaseLost" if self.lost else None
            return [TacticResult(t, Outcome.SERVER_FAILURE, (), why, cause=cause) for t in tactics]
        with self._busy:
            for tactic in tactics:
                r = self._tactic(state, tactic, timeout_ms)
                results.append(r)
                if r.cause in ("ServerTimeout", "LeaseLost"):
                    break
        why = {"ServerTimeout": "the server did not answer the previous tactic (read timeout)",
               "LeaseLost": f"the server no longer has this lease ({self.lost})"}.get(results[-1].cause if results else "")
        for tactic in tactics[len(results):]:
            results.append(TacticResult(tactic, Outcome.SERVER_FAILURE, (), f"not sent: {why}",
                                        cause=results[-1].cause))
        return results

    def run_command(self, source: str) -> CommandResult:
        return self._call(self.client.command, source)

    def identity(self) -> ServerIdentity:
        return self.client.identity()

    def close(self, *, quick: bool = False) -> None:
        """Return the process to the pool. Idempotent; never raises.

        ``quick``: a short timeout and no retry, for a caller that is unwinding (Ctrl-C, SIGTERM)
        and must not wait a whole read timeout on a hung server.
        """
        if quick:
            self._state["timeout"], self._state["retry"] = _EXIT_TIMEOUT, False
        self._finalizer()

    def __enter__(self) -> "HttpLease":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        lost = ", lost" if self.lost else ""
        return f"HttpLease(pid={self.process_id}, url={self.client.url!r}, closed={self.closed}{lost})"
