"""Where an env's Lean processes come from when it has a server URL, and ``open_session`` (a session without an env)."""
from __future__ import annotations

import contextlib
import os
from typing import Iterator

from leangym.backends.types import LeanProcess
from leangym.envs.theorem_spec import TheoremSpec, resolve_theorems
from leangym.session import Budget, ProofSession
from leangym.soundness import SoundnessPolicy

__all__ = ["DEFAULT_SERVER", "SERVER_ENV_VAR", "ServerLeaser", "default_server_url", "open_session"]

DEFAULT_SERVER = "http://127.0.0.1:8000"
SERVER_ENV_VAR = "LEANGYM_SERVER"


def default_server_url() -> str:
    return os.environ.get(SERVER_ENV_VAR) or DEFAULT_SERVER


class ServerLeaser:
    """``process_factory`` for a LeanTree server URL (a plain object: no reference back to the env)."""

    def __init__(self, url: str, lease_timeout_s: float = 60.0, read_timeout_s: float = 120.0) -> None:
        self.url, self.lease_timeout_s, self.read_timeout_s, self._client = url, lease_timeout_s, read_timeout_s, None

    def __call__(self) -> LeanProcess:
        from leangym.backends.leantree import LeanTreeClient

        if self._client is None:
            self._client = LeanTreeClient(self.url, read_timeout=self.read_timeout_s)
        # No server: ONE ServerUnavailable naming the URL and how to start a server (the client's text).
        return self._client.lease(blocking=True, timeout=self.lease_timeout_s)

    def close(self) -> None:
        """Close the client's pooled connections (a later lease reopens them)."""
        if self._client is not None:
            self._client.close()


@contextlib.contextmanager
def open_session(theorem: TheoremSpec, *, server: str | None = None, process: LeanProcess | None = None,
                 header: str = "", policy: SoundnessPolicy | None = None, timeout_ms: int = 1000,
                 budget: Budget | None = None, lease_timeout_s: float = 60.0) -> Iterator[ProofSession]:
    """A :class:`ProofSession` for one theorem, without an env.

    With ``process`` the caller keeps ownership; otherwise a process is leased
    from ``server`` (default: ``$LEANGYM_SERVER`` or ``http://127.0.0.1:8000``)
    and returned when the block ends::

        with leangym.open_session("theorem t : 1 + 1 = 2 := by sorry") as s:
            r = s.apply(s.root, "norm_num")
    """
    if theorem is None:
        raise ValueError("open_session needs a theorem: a 'theorem ... := by sorry' statement or a Theorem")
    theorems = resolve_theorems(theorem, header)
    if len(theorems) != 1:
        raise ValueError(f"open_session takes one theorem, got {len(theorems)}: open one session per theorem")
    (thm,) = theorems
    owned = process is None
    proc = ServerLeaser(server or default_server_url(), lease_timeout_s)() if owned else process
    try:
        yield ProofSession(proc, thm, policy=policy, timeout_ms=timeout_ms, budget=budget)
    finally:
        if owned:
            proc.close()
