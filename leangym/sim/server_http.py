"""HTTP transport of the simulated server: LeanTree's routes, JSON bodies and its 500 answers.

Keep-alive connections are tracked so that stopping or crashing the server can
close every one of them.
"""
from __future__ import annotations

import base64
import email.utils
import json
import pickle
import socket
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from leangym.sim.server_pool import VERSION, Drop, SimLeanServer


def _error_body(message: str, exc: BaseException) -> dict[str, Any]:
    """The real server's 500 body: error text, traceback and a base64 pickle of the exception."""
    try:
        pickled = base64.b64encode(pickle.dumps(exc)).decode("ascii")
    except Exception:  # an unpicklable exception: pickle a plain one with the same text
        pickled = base64.b64encode(pickle.dumps(RuntimeError(message))).decode("ascii")
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"error": message, "traceback": tb, "exception": pickled}


_MAX_HEADERS, _MAX_LINE = 100, 65536  # the standard library's limits
MAX_REQUEST_BODY = 16 * 2**20  # a tactic or a whole proof is a few kB; refuse what cannot be one


class _Headers(dict):
    """Request headers by lower-cased name."""

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(name.lower(), default)


_date_cache: list = [0, ""]  # (second, its HTTP date): the text changes once a second


def _http_date() -> str:
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[:] = [now, email.utils.formatdate(now, usegmt=True)]
    return _date_cache[1]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "LeanGymSimServer/" + VERSION
    server: "HTTPServer"

    # -- connection tracking (so stop()/crash can close keep-alive connections) --
    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)
        self.server.sim.connection_opened()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.sim.config.verbose:
            super().log_message(format, *args)

    def parse_request(self) -> bool:
        # Called as soon as the request line has been read: the request's arrival.
        self.arrived = time.monotonic()
        words = self.raw_requestline.split()
        if len(words) != 3 or words[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
            return super().parse_request()  # anything unusual: the standard library's checks and errors
        # The usual request, parsed here: the standard library's email-based header parser was
        # half of this server's CPU per request, and the server's CPU under a burst of requests
        # delays every answer (one GIL).
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.command, path, self.request_version = (w.decode("iso-8859-1") for w in words)
        self.path = "/" + path.lstrip("/") if path.startswith("//") else path
        headers = _Headers()
        for _ in range(_MAX_HEADERS + 1):
            line = self.rfile.readline(_MAX_LINE + 1)
            if len(line) > _MAX_LINE:
                self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
                return False
            if line in (b"\r\n", b"\n", b""):
                break
            name, sep, value = line.decode("iso-8859-1").partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        else:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
            return False
        self.headers = headers  # type: ignore[assignment]
        connection = headers.get("connection", "").lower()
        self.close_connection = connection == "close" or (self.request_version == "HTTP/1.0"
                                                          and connection != "keep-alive")
        if headers.get("expect", "").lower() == "100-continue" and self.request_version == "HTTP/1.1":
            return self.handle_expect_100()
        return True

    # -- plumbing --
    def _send(self, code: int, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        if self.server.sim.config.verbose:
            self.log_request(code)
        # status line, headers and body in one write (no Nagle / delayed-ACK stalls, one syscall)
        head = (f"{self.protocol_version} {code} {HTTPStatus(code).phrase}\r\nServer: {self.server_version}\r\n"
                f"Date: {_http_date()}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                + ("Connection: close\r\n\r\n" if self.close_connection else "\r\n"))
        self.wfile.write(head.encode("latin-1") + body)

    def _drop(self) -> None:
        self.close_connection = True
        _shutdown(self.connection)

    def _read_body(self) -> bytes | None:
        """The request body; None (after a 400 answer, and the connection marked to close) if unusable."""
        length = self.headers.get("Content-Length")
        if not length:
            return b""
        if not length.strip().isdigit() or int(length) > MAX_REQUEST_BODY:
            self.close_connection = True  # the body's end is unknown, or not worth reading
            self._send(400, {"error": f"Content-Length must be a number of bytes up to {MAX_REQUEST_BODY}, "
                                      f"got {length[:40]!r}"})
            return None
        body = self.rfile.read(int(length))
        if len(body) < int(length):
            self.close_connection = True
            self._send(400, {"error": f"request body ended after {len(body)} of {int(length)} bytes"})
            return None
        return body

    def _dispatch(self, method: str) -> None:
        sim = self.server.sim
        path = self.path.split("?", 1)[0]
        body_raw = self._read_body() if method == "POST" else b""
        if body_raw is None:
            return
        rid = sim.begin_request(path, self.arrived)
        if rid is None:  # crashed: never answer
            self._drop()
            return
        try:
            self._route(sim, method, path, body_raw)
        except Drop:
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
                pid = sim.get_process(bool(b.get("blocking", True)), b.get("timeout", 60.0))
                if pid is not None and _peer_gone(self.connection):
                    # The client gave up waiting and left: nobody would ever return this lease.
                    sim.return_process(pid)
                    raise Drop()
                return {"process_id": pid}
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
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            self._send(400, {"error": f"Invalid JSON body: {e}"})
            return
        try:
            result = route(body)
        except Drop:
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


class HTTPServer(ThreadingHTTPServer):
    """Threaded HTTP server over a :class:`SimLeanServer` that tracks its open connections."""

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
            _shutdown(c)


def _peer_gone(conn: socket.socket) -> bool:
    """Whether the client closed its end (an orderly EOF is waiting), without consuming anything."""
    timeout = conn.gettimeout()
    try:
        conn.setblocking(False)
        return conn.recv(1, socket.MSG_PEEK) == b""
    except (BlockingIOError, InterruptedError):
        return False  # nothing to read: still connected
    except OSError:
        return True
    finally:
        try:
            conn.settimeout(timeout)
        except OSError:
            pass


def _shutdown(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by the peer
