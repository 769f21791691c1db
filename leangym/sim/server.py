"""A simulated LeanTree server: the LeanTree HTTP protocol over simulated Lean processes.

Serves every endpoint of the LeanTree protocol (see :mod:`leangym.backends.leantree`) with the same shapes,
status codes and error texts as LeanTree's ``leanserver``, over a pool of
:class:`leangym.sim.process.SimProcess` objects, so that the HTTP client, the
environments and the agents can be developed and tested without Lean.
The options are :mod:`leangym.sim.server_config`, the pool, leases and faults
:mod:`leangym.sim.server_pool`, the HTTP transport :mod:`leangym.sim.server_http`; this module runs them.

Command line (``python -m leangym.sim.server --help`` documents every flag)::

    python -m leangym.sim.server --port 8000 --max-processes 8          # generation 1
    python -m leangym.sim.server --port 8000 --generation 2 --latency-ms 20 --jitter-ms 5
    python -m leangym.sim.server --port 8000 --generation 3 --warmup-s 20 --lease-idle-timeout 600

Python (tests, benchmarks)::

    from leangym.sim.server import SimServerConfig, start_server
    handle = start_server(SimServerConfig(port=0, factorized=True))
    try:
        ...  # talk to handle.url
    finally:
        handle.stop()

Server generations (``--generation``; leantree-protocol.md)
----------------------------------------------------------
1. single-branch (default): ``/process/P/proof/S/...`` routes, one branch holding every goal;
   ``try_apply_tactic`` answers every failure, an unknown process included, as HTTP 200 ``{"error"}``.
2. factorized (``--factorized`` is the same): one branch per goal, ``{"value": []}`` when closed,
   ``/process/P/is_valid_source``.
3. the branch API: starts answer ``branch_id`` (counted server-wide), ``/process/P/branch/B/...``
   routes (``try_apply_tactic``, ``state``), no ``proof/...`` routes; an unknown process is HTTP 404;
   ``/process/get`` answers 503 while warming up (``--warmup-s``); leases idle for
   ``--lease-idle-timeout`` (600 s) are reclaimed; answers are HTTP/1.0 without Content-Length
   (the connection closes), non-ASCII text as ``\\uXXXX``. Test hooks:
   ``handle.server.reclaim(pid)`` (any generation: the lease is lost) and
   ``handle.server.expire_next(pid)`` (the next request passes its deadline: 503, recycled).

Behaviour worth knowing
-----------------------
* Generations 1-2: HTTP/1.1 with ``Content-Length`` on every answer: pooled clients keep
  their connections alive (the real server speaks HTTP/1.0 and closes them, as generation 3 does here).
* Lease ids are issued per lease (1, 2, 3, ...), as the real server does, so
  an id goes stale once returned: using it afterwards is ``Process N not found``
  (HTTP 404 on generation 3; HTTP 500 on 1-2, HTTP 200 ``{"error"}`` on their
  ``try_apply_tactic``); returning it again is ``already_returned``.
  Returning an id that was never issued is also an error (the real server says
  ``already_returned`` there; clients must not rely on either).
* ``/process/{pid}/return`` rolls the process back with ``SimProcess.reset()``.
* ``apply_tactic`` (the non-wrapping endpoint) answers the single resulting
  branch; on the factorized generation the branches' goals are merged into one
  state. It uses ``SimProcess.apply_tactic`` (which registers the merged state
  under a fresh id); for process objects without that method the server merges
  itself, giving the first branch's id (``-1`` when the tactic closed
  everything). A tactic that Lean rejects is an HTTP 500 whose ``error`` is
  Lean's text.
* Fault injection (latency, HTTP 500 errors, dropped connections) applies only
  to the Lean endpoints (``command``, ``proof_from_sorry``, ``try_apply_tactic``,
  ``apply_tactic``); ``/status`` and the lease endpoints stay reliable, so a
  client can always give its leases back. An injected HTTP 500 stays a 500 on every generation
  (it stands for a failure outside the endpoint's handler). ``crash_after`` counts *every*
  request, and once reached the server closes its listening socket and every
  open connection (clients then see "connection refused").
* Injected latency counts from a request's arrival. Each simulated process, like
  a REPL, serves one request at a time: requests to one process queue, requests
  to different processes overlap.
* Server-side failures answer HTTP 500 ``{"error", "traceback", "exception"}``
  where ``exception`` is a base64 pickle of the Python exception, exactly as the
  real server sends it. Clients must never unpickle it. There is no
  authentication: bind a non-loopback ``--host`` only on a trusted network.
* A connection on which nothing arrives for ``--idle-timeout`` seconds (300) is
  closed; beyond ``--max-connections`` (lowered to fit the open-file limit) a new
  connection is closed unread, which a client sees as a dropped connection.
* A ``/process/get`` whose client leaves before reading the answer (it closes
  while waiting, or closes with the answer unread, which resets the connection)
  does not keep the lease. A client that closes in the instant between the lease
  and its answer can still leak one; ``--lease-idle-timeout`` is the remedy.
  A get answered at once is answered even to a client that has shut its sending
  side (``nc -N``); one that had to wait takes such a client to have left.
* Request bodies need a ``Content-Length`` (``Transfer-Encoding``, e.g. chunked:
  HTTP 411) of at most 8 MiB (HTTP 413); both close the connection. Bodies over
  64 kB share a 16 MiB budget while they are read and parsed (HTTP 503 after
  10 s without). Only the protocol's fields of a body are kept.
* Every request that can be answered is: text that cannot be UTF-8 encoded (a
  lone surrogate) comes back JSON-escaped, and a failure outside the endpoints
  is an HTTP 500. Numerals over 4300 digits are a ``(sim)`` Lean error.
* ``/status`` adds a ``leangym`` object (clients ignore unknown keys): the
  generation, request counts and ``leases``, each ``{"process_id", "idle_seconds"}``.

Leases taken back
-----------------
``--lease-idle-timeout SECONDS`` returns (rolls back) a lease that has had no
request for that long, as if its client had returned it; its id goes stale.
Generation 3 does so (600 s by default: its ``lease_timeout``); servers of
generations 1-2 never take a lease back (a client that dies holding one leaks it
until the server restarts), so there it is off unless asked for (a divergence).
"""
from __future__ import annotations

import argparse
import ipaddress
import signal
import sys
import threading
from dataclasses import replace
from typing import Any

from leangym.cli import ArgumentParser, integer, number
from leangym.sim.server_http import HTTPServer
from leangym.sim.server_config import GENERATION_NAMES, INJECTED_ERROR_TEXT, VERSION, SimFault, SimServerConfig
from leangym.sim.server_pool import SimLeanServer

__all__ = ["SimServerConfig", "SimServerHandle", "SimLeanServer", "start_server", "main", "VERSION",
           "INJECTED_ERROR_TEXT", "SimFault"]


class SimServerHandle:
    """A simulated server running in background threads.

    ``url`` (``http://127.0.0.1:PORT``), ``port``, ``config``, ``server`` (the
    :class:`SimLeanServer` state: ``request_count``, ``peak_active``, ``crashed``),
    ``stop()`` (idempotent; closes every connection), ``restart()`` (a fresh
    server, fresh pool, on the same port), ``crashed`` and context manager use.
    """

    def __init__(self, config: SimServerConfig) -> None:
        self.config = config
        self._lock = threading.RLock()
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.server: SimLeanServer
        self.port = 0
        self._start(config.port)

    @property
    def url(self) -> str:
        host = self.config.host
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        elif host == "::":
            host = "[::1]"
        elif ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._httpd is not None and not self.server.crashed

    @property
    def crashed(self) -> bool:
        return self.server.crashed

    def _start(self, port: int) -> None:
        sim = SimLeanServer(self.config)
        httpd = HTTPServer((self.config.host, port), sim)
        sim.on_crash = lambda: self._close_transport(httpd)
        self.server = sim
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"sim-leantree-{self.port}", daemon=True)
        self._thread.start()

    def _close_transport(self, target: HTTPServer | None = None) -> None:
        with self._lock:
            if target is not None and target is not self._httpd:
                return  # a late crash of a server that was already stopped/restarted
            httpd, thread = self._httpd, self._thread
            self._httpd = None
            self._thread = None
        if httpd is None:
            return
        httpd.sim.close()
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def stop(self) -> None:
        """Stop serving and close every connection. Idempotent."""
        self._close_transport()

    def restart(self) -> None:
        """Stop (if running) and start a fresh server - new pool, no leases - on the same port."""
        with self._lock:
            self._close_transport()
            self._start(self.port)

    def __enter__(self) -> "SimServerHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"SimServerHandle({self.url}, running={self.running})"


def start_server(config: SimServerConfig | None = None, **overrides: Any) -> SimServerHandle:
    """Start a simulated server in background threads; ``handle.stop()`` ends it.

    ``start_server(SimServerConfig(factorized=True))`` or ``start_server(factorized=True)``.
    """
    if config is None:
        config = SimServerConfig(**overrides)
    elif overrides:
        config = replace(config, **overrides)
    return SimServerHandle(config)


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="python -m leangym.sim.server",
        description="Simulated LeanTree server: the LeanTree HTTP protocol over simulated Lean "
                    "processes (no Lean needed). Point leangym's LeanTree backend at it.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; 0.0.0.0 or :: for every interface, which exposes an "
                        "unauthenticated server whose errors carry tracebacks; IPv6 addresses such as ::1 work)")
    p.add_argument("--port", type=integer(0, 65535), default=8000,
                   help="port to listen on (default 8000; 0 = any free port)")
    p.add_argument("--max-processes", type=integer(1), default=8, help="size of the simulated process pool (default 8)")
    p.add_argument("--generation", type=int, choices=(1, 2, 3), default=None,
                   help="server generation to play: 1 single-branch (default), 2 factorized, 3 the branch API "
                        "(branch ids, 404 for a lost process, warm-up, leases reclaimed when idle)")
    p.add_argument("--factorized", action="store_true",
                   help="the same as --generation 2: one branch per independent goal and "
                        "{\"value\": []} when a tactic closes the goal")
    p.add_argument("--warmup-s", type=number(), default=0.0, metavar="SECONDS",
                   help="generation 3: answer /process/get with HTTP 503 'server is warming up' for this long "
                        "after the start (default 0)")
    p.add_argument("--latency-ms", type=number(), default=0.0,
                   help="fixed latency added to command/proof_from_sorry/apply_tactic endpoints (ms)")
    p.add_argument("--jitter-ms", type=number(), default=0.0,
                   help="extra uniform random latency in [0, JITTER] on the same endpoints (ms)")
    p.add_argument("--error-rate", type=number(0.0, 1.0), default=0.0,
                   help="probability that a Lean endpoint fails: HTTP 500 with an `exception` pickle field "
                        "(generations 1-2 answer try_apply_tactic's as HTTP 200 {\"error\": text}, as LeanTree does)")
    p.add_argument("--drop-rate", type=number(0.0, 1.0), default=0.0,
                   help="probability that a Lean endpoint closes the connection without answering")
    p.add_argument("--crash-after", type=integer(0), default=None, metavar="N",
                   help="answer N requests (any endpoint), then crash: close the listening socket and every "
                        "connection")
    p.add_argument("--seed", type=int, default=None, help="seed of the latency/fault RNG (reproducible faults)")
    p.add_argument("--idle-timeout", type=number(positive=True), default=300.0, metavar="SECONDS",
                   help="close a connection on which nothing arrives for this long (default 300)")
    p.add_argument("--max-connections", type=integer(1), default=1024, metavar="N",
                   help="serve at most N connections at once (default 1024, lowered to fit the open-file "
                        "limit); a connection beyond them is closed unanswered")
    p.add_argument("--lease-idle-timeout", type=number(positive=True), default=None, metavar="SECONDS",
                   help="take back a lease that has had no request for this long (default: 600 on generation 3, "
                        "as its lease_timeout; never on generations 1-2, as those servers)")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    return p


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name, or "" (every interface)
        return False


def announcement(host: str, handle: SimServerHandle, generation: bool | int, max_processes: int) -> tuple[str, str | None]:
    """The "listening on" line for a server bound to ``host``, and a warning when that is not loopback.
    ``generation``: 1, 2 or 3 (a bool: factorized or not, generation 2 or 1)."""
    where, warning = handle.url, None
    if not _is_loopback(host):
        bound = f"[{host}]" if ":" in host else host or "0.0.0.0"
        where = f"http://{bound}:{handle.port} (from this machine: {handle.url})"
        warning = (f"WARNING: bound to {bound}: any machine that can reach this one can use this server, without "
                   "authentication, and its HTTP 500 answers carry Python tracebacks")
    number = (2 if generation else 1) if isinstance(generation, bool) else int(generation)
    gen = f"generation {number}: {GENERATION_NAMES[number]}"
    processes = f"{max_processes} process{'es' if max_processes > 1 else ''}"
    return f"Simulated LeanTree server ({gen}, {processes}) listening on {where}", warning


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.factorized and args.generation not in (None, 2):
        parser.error(f"--factorized is --generation 2; it contradicts --generation {args.generation}")
    if args.warmup_s and args.generation != 3:
        parser.error("--warmup-s is generation 3's warm-up: add --generation 3")
    config = SimServerConfig(host=args.host, port=args.port, max_processes=args.max_processes,
                             factorized=args.factorized, generation=args.generation, warmup_s=args.warmup_s,
                             latency_ms=args.latency_ms, jitter_ms=args.jitter_ms,
                             error_rate=args.error_rate, drop_rate=args.drop_rate, crash_after=args.crash_after,
                             seed=args.seed, verbose=args.verbose, idle_timeout=args.idle_timeout,
                             max_connections=args.max_connections, lease_idle_timeout=args.lease_idle_timeout)
    stop = threading.Event()

    def _on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    try:
        handle = start_server(config)
    except OSError as e:
        raise OSError(f"cannot listen on {args.host}:{args.port}: {e}; is a server already running there? "
                      "Pick another --port (0: any free one)") from None
    listening, warning = announcement(args.host, handle, config.gen, args.max_processes)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    print(listening, flush=True)
    if config.lease_timeout is not None:
        print(f"Leases idle for {config.lease_timeout:g} s are taken back (--lease-idle-timeout)", flush=True)
    if config.warmup_s:
        print(f"Warming up for {config.warmup_s:g} s: /process/get answers HTTP 503 until then", flush=True)
    try:
        while not stop.wait(0.5):
            if handle.crashed:
                print("simulated crash: the server stopped answering (--crash-after); Ctrl+C to exit", flush=True)
                while not stop.wait(0.5):  # short waits: Ctrl+C is handled at once
                    pass
                break
    finally:
        handle.stop()
    print("Simulated LeanTree server stopped.", flush=True)
    return 0


def cli() -> None:
    """The ``leangym-sim-server`` console script."""
    from leangym.cli import run_cli

    run_cli(main)


if __name__ == "__main__":
    from leangym.cli import run_cli

    run_cli(main)
