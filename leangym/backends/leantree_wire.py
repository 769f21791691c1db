"""The request layer of the LeanTree client: one HTTP exchange with a server, and what its answer means.

:class:`LeanTreeWire` is the base class of :class:`~leangym.backends.leantree.LeanTreeClient`: it sends a
request (with the retries listed in that module's docstring), maps a failed answer to its error (a lost
lease, an HTTP status, malformed JSON, nobody listening) and waits on ``/process/get`` while a server warms
up (HTTP 503). It keeps no state of its own: it reads what ``LeanTreeClient.__init__`` sets. Apart from
``leantree.py`` so that the client module holds the endpoints and the server generations, and each module
stays small; every name here is re-exported from :mod:`leangym.backends.leantree`.
"""
from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from typing import Any, Mapping
from urllib.parse import urlparse

from leangym.backends.transport import ConnectFailed, Dropped, ReadTimedOut
from leangym.backends.types import (LeaseLost, ServerError, ServerTimeout, ServerUnavailable, ServerWarmingUp,
                                   process_gone)

log = logging.getLogger("leangym.backends.leantree")  # the client's logger: the warm-up line is the client's
WARMUP_ENV_VAR = "LEANGYM_WARMUP_WAIT_S"  # the default bound on waiting for a server's warm-up
DEFAULT_WARMUP_WAIT_S = 600.0  # loading Mathlib takes ~10-60 s per process, and a pool starts in waves
_PROCESS_PATH = re.compile(r"/process/(\d+)/")


_WAITING: dict[str, int] = {}  # URL -> lease requests of this interpreter waiting for its warm-up
_WAITING_LOCK = threading.Lock()


def _start_waiting(url: str) -> bool:
    """Count a lease request waiting for ``url``'s warm-up; True for the first (which says so)."""
    with _WAITING_LOCK:
        _WAITING[url] = _WAITING.get(url, 0) + 1
        return _WAITING[url] == 1


def _stop_waiting(url: str) -> None:
    with _WAITING_LOCK:
        _WAITING[url] -= 1
        if not _WAITING[url]:
            del _WAITING[url]


def _warmup_default() -> float:
    raw = os.environ.get(WARMUP_ENV_VAR)
    if not raw:
        return DEFAULT_WARMUP_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"${WARMUP_ENV_VAR} must be a number of seconds, got {raw!r}") from None
    if not value >= 0:
        raise ValueError(f"${WARMUP_ENV_VAR} must be >= 0 seconds, got {raw!r}")
    return value

def start_hint(url: str) -> str:
    """How to start a server where ``url`` points (its port, 8000 if it names none)."""
    port = urlparse(url).port or 8000
    return (f"Start one with `python -m leangym.sim.server --port {port}` (simulated, no Lean needed) "
            f"or with LeanTree's `leanserver --project-path PROJECT --repl-exe REPL --imports Mathlib "
            f"--max-processes 8 --port {port}` (real Lean).")


class _Dropped(ServerError):
    """Internal: the connection failed after it was established (safe to retry if idempotent)."""


class _Malformed(ServerError):
    """Internal: the answer was not the JSON the protocol promises (a proxy's page, a broken body)."""


class HttpStatusError(ServerError):
    """The server answered with an HTTP error status. ``error`` is the body's ``error`` text."""

    def __init__(self, message: str, status: int, error: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error


def pool_size(status: Mapping) -> int | None:
    """``max_processes`` of a ``/status`` reply when it is a positive integer, else ``None``."""
    size = status.get("max_processes")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


class LeanTreeWire:
    """The requests of a :class:`~leangym.backends.leantree.LeanTreeClient` (its base class). Uses the client's
    ``url``, ``retries``, ``warmup_wait_s``, ``_timeout``, ``_transport`` and sets its ``last_refused`` and
    ``last_timed_out``."""

    # ------------------------------------------------------------------ transport

    def _request(self, method: str, path: str, payload: Any = None, *, retry: bool,
                 timeout: tuple[float, float] | None = None, idempotent: bool = False, resend: bool = True) -> Any:
        """One call; returns the decoded JSON of a 200 answer, raises ServerError otherwise.

        ``retry``: try again after a connection-level failure; with ``resend=False`` only when the
        request cannot have reached the server (no connection). ``idempotent`` (with ``retry``):
        also after an HTTP 5xx or a garbled answer, which repeating cannot make worse.
        """
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        attempts = 1 + (self.retries if retry else 0)
        for attempt in range(attempts):
            last = attempt + 1 >= attempts
            try:
                return self._once(method, path, data, timeout or self._timeout)
            except _Dropped as e:
                if last or not resend:
                    raise ServerError(str(e)) from None
            except ServerUnavailable:
                if last:
                    raise
            except HttpStatusError as e:
                if last or not idempotent or e.status < 500:
                    raise
            except _Malformed:
                if last or not idempotent:
                    raise
            time.sleep(0.05 * (2 ** attempt))
        raise AssertionError("unreachable")

    def _once(self, method: str, path: str, data: bytes | None, timeout: tuple[float, float]) -> Any:
        try:
            status, content = self._transport.exchange(method, path, data, timeout[0], timeout[1])
        except ReadTimedOut:
            self.last_timed_out = time.monotonic()
            raise ServerTimeout(f"LeanTree server at {self.url} did not answer {path} within {timeout[1]:g} s "
                                "(read timeout)") from None
        except ConnectFailed as e:
            if e.refused:  # down or restarting (a connect timeout may only be a busy server)
                self.last_refused = time.monotonic()
            raise ServerUnavailable(f"No LeanTree server answers at {self.url} ({e}). " + start_hint(self.url)) from None
        except Dropped as e:
            raise _Dropped(f"LeanTree server at {self.url} failed on {path}: connection closed or broken "
                           f"without an answer ({e})") from None
        if status != 200:
            err = self._error_text(content)
            lost = self._lease_lost(path, status, err)
            if lost is not None:
                raise LeaseLost(f"LeanTree server at {self.url} answered HTTP {status} on {path}: {lost}")
            raise HttpStatusError(f"LeanTree server at {self.url} answered HTTP {status} on {path}: {err}",
                                  status, err)
        try:
            return json.loads(content)
        except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's stack
            raise _Malformed(f"LeanTree server at {self.url} sent malformed JSON for {path}: "
                              f"{content[:200]!r}") from None

    def _lease_lost(self, path: str, status: int, err: str) -> str | None:
        """Why an error answer on ``path`` means the lease is gone (see the module docstring), or None."""
        m = _PROCESS_PATH.match(path)
        if m is None:
            return None  # /status, /process/get
        if status in (404, 500) and process_gone(err, int(m.group(1))):
            return f"{err}: the server no longer has this process (returned, reclaimed, recycled or restarted)"
        # a 503 recycles the process on generation 3 only; from generations 1-2 (or a proxy before them)
        # it is a failure of this call, and the lease is still to be returned
        if status == 503 and not path.endswith("/return") and self._api != "proof":
            return f"{err}: past its deadline, the server recycled the process; it no longer has this lease"
        return None

    @staticmethod
    def _error_text(content: bytes) -> str:
        # Only the `error` text is used. The body may carry `exception`, a base64 pickle from
        # the network: it is never decoded or unpickled (doing so could run arbitrary code).
        try:
            body = json.loads(content)
        except (ValueError, RecursionError):  # not JSON (a proxy's HTML page, ...): show its beginning
            return content[:200].decode("utf-8", "replace") or "(empty body)"
        if isinstance(body, Mapping) and body.get("error") is not None:
            return str(body["error"])
        return "(no 'error' text in the reply)"

    def _get_when_ready(self, payload: dict, timeout: tuple[float, float]) -> Any:
        """``/process/get``, waiting while the server answers HTTP 503 (warming up, or its event loop busy)
        for at most ``warmup_wait_s``; one log line says so (one for all the clients waiting on that URL)."""
        since, pause = None, 0.2
        try:
            while True:
                try:
                    return self._request("POST", "/process/get", payload, retry=False, timeout=timeout)
                except HttpStatusError as e:
                    if e.status != 503:
                        raise
                    now = time.monotonic()
                    if since is None:
                        since = now
                        if _start_waiting(self.url):
                            log.warning("LeanTree server at %s is not ready (%s): waiting up to %g s for it to warm "
                                        "up (warmup_wait_s / $%s)", self.url, e.error, self.warmup_wait_s,
                                        WARMUP_ENV_VAR)
                    left = since + self.warmup_wait_s - now
                    if left <= 0:
                        raise ServerWarmingUp(
                            f"LeanTree server at {self.url} still answers HTTP 503 on /process/get ({e.error}) after "
                            f"{now - since:.0f} s: it is warming up (loading Lean in its processes). Wait longer "
                            f"with warmup_wait_s=SECONDS or ${WARMUP_ENV_VAR}") from None
                    time.sleep(min(pause, left))
                    pause = min(2.0, pause * 2)
        finally:
            if since is not None:
                _stop_waiting(self.url)
