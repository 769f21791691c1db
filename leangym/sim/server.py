"""A simulated LeanTree server: the LeanTree HTTP protocol over simulated Lean processes.

Serves every endpoint of ``docs/leantree-protocol.md`` with the same shapes,
status codes and error texts as LeanTree's ``leanserver``, over a pool of
:class:`leangym.sim.process.SimProcess` objects, so that the HTTP client, the
environments and the agents can be developed and tested without Lean.

Command line (``python -m leangym.sim.server --help`` documents every flag)::

    python -m leangym.sim.server --port 8000 --max-processes 8
    python -m leangym.sim.server --port 8000 --factorized --latency-ms 20 --jitter-ms 5

Python (tests, benchmarks)::

    from leangym.sim.server import SimServerConfig, start_server
    handle = start_server(SimServerConfig(port=0, factorized=True))
    try:
        ...  # talk to handle.url
    finally:
        handle.stop()

Behaviour worth knowing
-----------------------
* HTTP/1.1 with ``Content-Length`` on every answer: pooled clients keep their
  connections alive (the real server speaks HTTP/1.0 and closes them).
* Lease ids are issued per lease (1, 2, 3, ...), as the real server does, so
  an id goes stale once returned: using it afterwards is an HTTP 500
  ``Process N not found``; returning it again is ``already_returned``.
  Returning an id that was never issued is also a 500 (the real server says
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
  client can always give its leases back. ``crash_after`` counts *every*
  request, and once reached the server closes its listening socket and every
  open connection (clients then see "connection refused").
* Server-side failures answer HTTP 500 ``{"error", "traceback", "exception"}``
  where ``exception`` is a base64 pickle of the Python exception, exactly as the
  real server sends it. Clients must never unpickle it.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import pickle
import random
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["SimServerConfig", "SimServerHandle", "SimLeanServer", "start_server", "main", "VERSION"]

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


class _Drop(Exception):
    """Internal: close the connection without answering."""


def _default_factory(factorized: bool) -> Any:
    from leangym.sim.process import SimProcess  # imported lazily: another module, maybe absent in tools

    return SimProcess(factorized=factorized)


class _Slot:
    """One simulated Lean process of the pool."""

    __slots__ = ("process", "lock", "lease_id")

    def __init__(self, process: Any) -> None:
        self.process = process
        self.lock = threading.Lock()  # a REPL handles one request at a time
        self.lease_id: int | None = None


class SimLeanServer:
    """Server state: the process pool, leases, fault RNG and request bookkeeping."""

    def __init__(self, config: SimServerConfig) -> None:
        self.config = config
        factory = config.process_factory or _default_factory
        self._slots = [_Slot(factory(config.factorized)) for _ in range(max(0, int(config.max_processes)))]
        self._free: list[_Slot] = list(self._slots)
        self._leases: dict[int, _Slot] = {}
        self._returned: set[int] = set()
        self._next_lease = 0
        self._cond = threading.Condition()
        self._rng = random.Random(config.seed)
        self._rng_lock = threading.Lock()
        self._req_lock = threading.Lock()
        self._active: dict[int, dict[str, Any]] = {}
        self._next_req = 0
        self.request_count = 0
        self.peak_active = 0  # highest number of requests in flight at once
        self.connections_opened = 0  # TCP connections accepted (keep-alive reuse keeps this low)
        self.crashed = False
        self.started_at = time.time()
        self._on_crash: Callable[[], None] | None = None

    # ------------------------------------------------------------------ requests bookkeeping

    def begin_request(self, path: str) -> int | None:
        """Register a request; None when the server has crashed (do not answer)."""
        with self._req_lock:
            if self.crashed:
                return None
            limit = self.config.crash_after
            if limit is not None and self.request_count >= limit:
                self.crashed = True
                crash = self._on_crash
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

    def inject_faults(self) -> None:
        """Latency, then maybe a dropped connection or an HTTP 500 (raises)."""
        cfg = self.config
        if not (cfg.latency_ms or cfg.jitter_ms or cfg.error_rate or cfg.drop_rate):
            return
        with self._rng_lock:
            delay = cfg.latency_ms + (self._rng.uniform(0.0, cfg.jitter_ms) if cfg.jitter_ms else 0.0)
            u_drop = self._rng.random()
            u_err = self._rng.random()
        if delay > 0:
            time.sleep(delay / 1000.0)
        if u_drop < cfg.drop_rate:
            raise _Drop()
        if u_err < cfg.error_rate:
            raise SimFault(INJECTED_ERROR_TEXT)

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
        deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
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

    def slot(self, pid: int) -> _Slot:
        with self._cond:
            slot = self._leases.get(pid)
        if slot is None:
            raise ValueError(f"Process {pid} not found")
        return slot

    # ------------------------------------------------------------------ Lean endpoints

    def command(self, pid: int, body: dict[str, Any]) -> dict[str, Any]:
        slot = self.slot(pid)
        source = body["command"]
        self.inject_faults()
        with slot.lock:
            return slot.process.command(source)

    def proof_from_sorry(self, pid: int, body: dict[str, Any]) -> dict[str, Any]:
        slot = self.slot(pid)
        theorem = body["theorem_with_sorry"]
        self.inject_faults()
        with slot.lock:
            return slot.process.proof_from_sorry(theorem)

    def _tactic(self, pid: int, psid: int, body: dict[str, Any]) -> dict[str, Any]:
        slot = self.slot(pid)
        tactic = body["tactic"]
        timeout = body.get("timeout")
        timeout_ms = 1000 if timeout is None else int(timeout)
        self.inject_faults()
        with slot.lock:
            try:
                return slot.process.try_apply_tactic(psid, tactic, timeout_ms)
            except KeyError:
                raise ValueError(f"Proof state {psid} not found in process {pid}") from None

    def try_apply_tactic(self, pid: int, psid: int, body: dict[str, Any]) -> dict[str, Any]:
        return self._tactic(pid, psid, body)

    def apply_tactic(self, pid: int, psid: int, body: dict[str, Any]) -> dict[str, Any]:
        slot = self.slot(pid)
        native = getattr(slot.process, "apply_tactic", None)
        if native is not None:  # SimProcess registers a real merged state (a consistent proof_state_id)
            tactic = body["tactic"]
            timeout = body.get("timeout")
            self.inject_faults()
            with slot.lock:
                try:
                    return native(psid, tactic, 1000 if timeout is None else int(timeout))
                except KeyError:
                    raise ValueError(f"Proof state {psid} not found in process {pid}") from None
        reply = self._tactic(pid, psid, body)
        if "error" in reply:
            raise RuntimeError(str(reply["error"]))
        branches = reply.get("value") or []
        if len(branches) == 1:
            return {"proof_state_id": branches[0]["proof_state_id"], "goals": branches[0].get("goals") or []}
        goals = [g for b in branches for g in (b.get("goals") or [])]
        return {"proof_state_id": branches[0]["proof_state_id"] if branches else -1, "goals": goals}


def _error_body(message: str, exc: BaseException) -> dict[str, Any]:
    """The real server's 500 body: error text, traceback and a base64 pickle of the exception."""
    try:
        pickled = base64.b64encode(pickle.dumps(exc)).decode("ascii")
    except Exception:  # an unpicklable exception: pickle a plain one with the same text
        pickled = base64.b64encode(pickle.dumps(RuntimeError(message))).decode("ascii")
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"error": message, "traceback": tb, "exception": pickled}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "LeanGymSimServer/" + VERSION
    server: "_HTTPServer"

    # -- connection tracking (so stop()/crash can close keep-alive connections) --
    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)
        with self.server.sim._req_lock:
            self.server.sim.connections_opened += 1

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.sim.config.verbose:
            super().log_message(format, *args)

    # -- plumbing --
    def _send(self, code: int, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        # headers and body in one write (no Nagle / delayed-ACK stalls, one syscall)
        self._headers_buffer.append(b"\r\n")
        self._headers_buffer.append(body)
        self.flush_headers()

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if not length:
            return b""
        return self.rfile.read(int(length))

    def _dispatch(self, method: str) -> None:
        sim = self.server.sim
        path = self.path.split("?", 1)[0]
        body_raw = self._read_body() if method == "POST" else b""
        rid = sim.begin_request(path)
        if rid is None:  # crashed: never answer
            self._drop()
            return
        try:
            self._route(sim, method, path, body_raw)
        except _Drop:
            self._drop()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            sim.end_request(rid)

    def _route(self, sim: SimLeanServer, method: str, path: str, body_raw: bytes) -> None:
        parts = path.strip("/").split("/")
        if method == "GET":
            if path == "/status":
                self._send(200, sim.status())
            else:
                self._send(404, {"error": "Not Found"})
            return
        # POST
        route: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        if path == "/process/get":
            def route(b: dict[str, Any]) -> dict[str, Any]:
                return {"process_id": sim.get_process(bool(b.get("blocking", True)), b.get("timeout", 60.0))}
        elif len(parts) >= 3 and parts[0] == "process" and parts[1].isdigit():
            pid = int(parts[1])
            action = tuple(parts[2:])
            if action == ("return",):
                def route(b: dict[str, Any]) -> dict[str, Any]:
                    return sim.return_process(pid)
            elif action == ("command",):
                def route(b: dict[str, Any]) -> dict[str, Any]:
                    return sim.command(pid, b)
            elif action == ("proof_from_sorry",):
                def route(b: dict[str, Any]) -> dict[str, Any]:
                    return sim.proof_from_sorry(pid, b)
            elif len(action) == 3 and action[0] == "proof" and action[1].isdigit() and \
                    action[2] in ("try_apply_tactic", "apply_tactic"):
                psid = int(action[1])
                fn = sim.try_apply_tactic if action[2] == "try_apply_tactic" else sim.apply_tactic

                def route(b: dict[str, Any]) -> dict[str, Any]:
                    return fn(pid, psid, b)
        if route is None:
            self._send(404, {"error": "Not Found"})
            return
        try:
            body = json.loads(body_raw.decode("utf-8")) if body_raw.strip() else {}
            if not isinstance(body, dict):
                raise ValueError("Request body must be a JSON object")
        except (ValueError, UnicodeDecodeError) as e:
            self._send(400, {"error": f"Invalid JSON body: {e}"})
            return
        try:
            result = route(body)
        except _Drop:
            raise
        except KeyError as e:
            self._send(500, _error_body(f"Missing field {e.args[0]!r} in request body", e))
        except Exception as e:  # noqa: BLE001 - every failure becomes a 500, like the real server
            self._send(500, _error_body(str(e), e))
        else:
            self._send(200, result)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        self._dispatch("POST")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], sim: SimLeanServer) -> None:
        self.sim = sim
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(addr, _Handler)

    def track(self, conn: socket.socket, add: bool) -> None:
        with self._conns_lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def close_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


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
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.server: SimLeanServer
        self.port = 0
        self._start(config.port)

    @property
    def url(self) -> str:
        host = self.config.host
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
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
        httpd = _HTTPServer((self.config.host, port), sim)
        sim._on_crash = lambda: self._close_transport(httpd)
        self.server = sim
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"sim-leantree-{self.port}", daemon=True)
        self._thread.start()

    def _close_transport(self, target: "_HTTPServer | None" = None) -> None:
        with self._lock:
            if target is not None and target is not self._httpd:
                return  # a late crash of a server that was already stopped/restarted
            httpd, thread = self._httpd, self._thread
            self._httpd = None
            self._thread = None
        if httpd is None:
            return
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
        from dataclasses import replace

        config = replace(config, **overrides)
    return SimServerHandle(config)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m leangym.sim.server",
        description="Simulated LeanTree server: the LeanTree HTTP protocol over simulated Lean "
                    "processes (no Lean needed). Point leangym's LeanTree backend at it.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 for all)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000; 0 = any free port)")
    p.add_argument("--max-processes", type=int, default=8, help="size of the simulated process pool (default 8)")
    p.add_argument("--factorized", action="store_true",
                   help="behave like the newer server generation: one branch per independent goal and "
                        "{\"value\": []} when a tactic closes the goal (default: older single-branch servers)")
    p.add_argument("--latency-ms", type=float, default=0.0,
                   help="fixed latency added to command/proof_from_sorry/apply_tactic endpoints (ms)")
    p.add_argument("--jitter-ms", type=float, default=0.0,
                   help="extra uniform random latency in [0, JITTER] on the same endpoints (ms)")
    p.add_argument("--error-rate", type=float, default=0.0,
                   help="probability that a Lean endpoint answers HTTP 500 with an `exception` pickle field")
    p.add_argument("--drop-rate", type=float, default=0.0,
                   help="probability that a Lean endpoint closes the connection without answering")
    p.add_argument("--crash-after", type=int, default=None, metavar="N",
                   help="answer N requests (any endpoint), then crash: close the listening socket and every "
                        "connection")
    p.add_argument("--seed", type=int, default=None, help="seed of the latency/fault RNG (reproducible faults)")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for name in ("error_rate", "drop_rate"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            print(f"--{name.replace('_', '-')} must be in [0, 1]", file=sys.stderr)
            return 2
    config = SimServerConfig(host=args.host, port=args.port, max_processes=args.max_processes,
                             factorized=args.factorized, latency_ms=args.latency_ms, jitter_ms=args.jitter_ms,
                             error_rate=args.error_rate, drop_rate=args.drop_rate, crash_after=args.crash_after,
                             seed=args.seed, verbose=args.verbose)
    stop = threading.Event()

    def _on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    try:
        handle = start_server(config)
    except OSError as e:
        print(f"cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    gen = "factorized" if args.factorized else "single-branch"
    print(f"Simulated LeanTree server ({gen}, {args.max_processes} processes) listening on {handle.url}",
          flush=True)
    try:
        while not stop.wait(0.5):
            if handle.crashed:
                print("simulated crash: the server stopped answering (--crash-after); Ctrl+C to exit", flush=True)
                stop.wait()
                break
    finally:
        handle.stop()
    print("Simulated LeanTree server stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
