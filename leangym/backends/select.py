"""Where Lean processes come from: a LeanTree server URL, or the in-process simulator. Decided here only.

``open_backend(server)`` gives a :class:`ProcessSource`: call it for a fresh
:class:`~leangym.backends.types.LeanProcess`, ``close()`` it when done.

* ``server`` a LeanTree URL (``http://host:8000``, ``host:8000``): leases of that server
  (:class:`ServerLeaser`; every server generation, see :mod:`leangym.backends.leantree`);
* ``server`` None or ``""``: the in-process simulated kernel (:class:`LocalFactory`): no server, no HTTP.

``check=True`` asks the server at once (a wrong URL stops a run before it starts:
:class:`ServerUnavailable` saying how to start a server), and with ``processes=N`` refuses a
pool smaller than N (ValueError; ``what`` names what asked for N, e.g. ``"--actors 8"``).
Commands whose default is a server take it from :func:`default_server_url`.
"""
from __future__ import annotations

import os
from typing import Any, Union
from urllib.parse import urlparse

from leangym.backends.types import LeanProcess, ServerError

__all__ = ["open_backend", "ProcessSource", "ServerLeaser", "LocalFactory", "default_server_url", "DEFAULT_SERVER",
           "SERVER_ENV_VAR", "check_pool"]

DEFAULT_SERVER = "http://127.0.0.1:8000"
SERVER_ENV_VAR = "LEANGYM_SERVER"


def default_server_url() -> str:
    """``$LEANGYM_SERVER``, else ``http://127.0.0.1:8000``."""
    return os.environ.get(SERVER_ENV_VAR) or DEFAULT_SERVER


def _checked_url(url: str) -> str:
    """``url`` as the client will use it; ValueError for one that cannot name a LeanTree server."""
    full = url.strip() if "://" in url else "http://" + url.strip()
    try:
        parsed = urlparse(full)
        parsed.port  # noqa: B018 -- raises for a port that is not a number in range
    except ValueError as e:
        raise ValueError(f"{url!r} is not a LeanTree server URL ({e}); give http://HOST:PORT") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{url!r} is not a LeanTree server URL; give http://HOST:PORT (e.g. {DEFAULT_SERVER})")
    return full


class ServerLeaser:
    """Leases of a LeanTree server: ``leaser()`` -> an :class:`HttpLease` (a plain object: an env that holds
    it holds no reference back to itself). ``timeout`` overrides the wait for a free process per call."""

    in_process = False

    def __init__(self, url: str, lease_timeout_s: float = 60.0, read_timeout_s: float = 120.0,
                 warmup_wait_s: float | None = None) -> None:
        if not read_timeout_s > 0:
            raise ValueError(f"the read timeout must be a number of seconds > 0, got {read_timeout_s}")
        self.url, self.lease_timeout_s, self.read_timeout_s = _checked_url(url), lease_timeout_s, read_timeout_s
        self.warmup_wait_s = warmup_wait_s
        self._client: Any = None

    @property
    def client(self) -> Any:
        """The one :class:`~leangym.backends.leantree.LeanTreeClient` of these leases (made on first use)."""
        if self._client is None:
            from leangym.backends.leantree import LeanTreeClient

            self._client = LeanTreeClient(self.url, read_timeout=self.read_timeout_s, warmup_wait_s=self.warmup_wait_s)
        return self._client

    def __call__(self, timeout: float | None = None) -> LeanProcess:
        # No server: ONE ServerUnavailable naming the URL and how to start a server (the client's text).
        return self.client.lease(blocking=True, timeout=self.lease_timeout_s if timeout is None else timeout)

    def close(self) -> None:
        """Close the client's pooled connections (a later lease reopens them)."""
        if self._client is not None:
            self._client.close()


class LocalFactory:
    """The in-process simulated kernel: ``factory()`` -> a fresh :class:`~leangym.sim.local.LocalProcess`."""

    in_process = True

    def __init__(self, factorized: bool = True) -> None:
        self.factorized = factorized

    def __call__(self, timeout: float | None = None) -> LeanProcess:
        from leangym.sim.local import LocalProcess  # (leangym.sim is the simulator, loaded only when used)

        return LocalProcess(factorized=self.factorized)

    def close(self) -> None:
        pass


ProcessSource = Union[ServerLeaser, LocalFactory]


def check_pool(client: Any, processes: int, what: str) -> None:
    """ValueError when the server's pool is smaller than ``processes`` (``what`` asked for them);
    :class:`ServerError` when it does not answer."""
    size = client.max_processes()
    if size is not None and processes > size:
        raise ValueError(f"{what} needs {processes} Lean processes at once, but the server at {client.url} runs at "
                         f"most {size}: restart it with --max-processes {processes} (or more), or ask for {size}")


def open_backend(server: str | None, *, factorized: bool = True, lease_timeout_s: float = 60.0,
                 read_timeout_s: float = 120.0, warmup_wait_s: float | None = None, check: bool = False,
                 processes: int | None = None, what: str = "this run") -> ProcessSource:
    """Lean processes from ``server`` (a URL), else the in-process simulator (see the module docstring).

    ``factorized`` only concerns the simulator (a server's generation is the server's own).
    """
    if not server:
        return LocalFactory(factorized)
    leaser = ServerLeaser(server, lease_timeout_s, read_timeout_s, warmup_wait_s)
    if check or processes is not None:
        try:
            if processes is not None:
                check_pool(leaser.client, processes, what)
            else:
                leaser.client.status()
        except (ServerError, ValueError):
            leaser.close()
            raise
    return leaser

