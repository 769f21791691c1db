"""Where an env's Lean processes come from when it has a server URL (:mod:`leangym.backends.select`, which
decides it for every caller), and ``open_session`` (a session without an env)."""
from __future__ import annotations

import contextlib
from typing import Iterator

from leangym.backends.select import DEFAULT_SERVER, SERVER_ENV_VAR, ServerLeaser, default_server_url, open_backend
from leangym.backends.types import LeanProcess
from leangym.envs.theorem_spec import TheoremSpec, resolve_theorems
from leangym.session import Budget, ProofSession
from leangym.soundness import SoundnessPolicy

__all__ = ["DEFAULT_SERVER", "SERVER_ENV_VAR", "ServerLeaser", "default_server_url", "open_session"]


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
    proc = open_backend(server or default_server_url(), lease_timeout_s=lease_timeout_s)() if owned else process
    try:
        yield ProofSession(proc, thm, policy=policy, timeout_ms=timeout_ms, budget=budget)
    finally:
        if owned:
            proc.close()
