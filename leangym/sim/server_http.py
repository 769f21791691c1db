"""HTTP transport of the simulated server: LeanTree's routes, JSON bodies and its 500 answers.

Keep-alive connections are tracked so that stopping or crashing the server can
close every one of them. A connection on which nothing arrives for
``idle_timeout`` is closed, and at most ``max_connections`` are served at once,
so that idle or abandoned connections cannot use up the threads and descriptors.
What a request carries (path ids, body framing and size, JSON fields) is checked
by :mod:`leangym.sim.server_request`; answers are encoded so that they cannot fail.
"""
from __future__ import annotations

import base64
import email.utils
import errno
import json
import pickle
import socket
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from leangym.sim.server_config import VERSION, Answer, Drop, ProcessNotFound
from leangym.sim.server_pool import SimLeanServer
from leangym.sim.server_request import MAX_REQUEST_BODY, BodyBudget, Refused, body_length, parse_fields, path_id


def _error_body(message: str, exc: BaseException) -> dict[str, Any]:
    """The real server's 500 body: error text, traceback and a base64 pickle of the exception."""
    try:
        pickled = base64.b64encode(pickle.dumps(exc)).decode("ascii")
    except Exception:  # an unpicklable exception: pickle a plain one with the same text
        pickled = base64.b64encode(pickle.dumps(RuntimeError(message))).decode("ascii")
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"error": message, "traceback": tb, "exception": pickled}


def _encode(code: int, payload: Any, ascii_only: bool = False) -> tuple[int, bytes]:
    """``(code, JSON body)``; never raises, so that every request gets an answer. ``ascii_only``: non-ASCII
    text as ``\\uXXXX`` escapes (as generation 3 sends it)."""
    try:
        return code, json.dumps(payload, ensure_ascii=ascii_only).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate ("\ud800" is valid JSON, and Lean's error echoes the text): escaped,
        # the answer is ASCII and carries the same string back.
        return code, json.dumps(payload).encode("ascii")
    except Exception as e:  # noqa: BLE001 - an answer that is not JSON-able: a server failure
        return 500, json.dumps(_error_body(f"answer not encodable as JSON: {type(e).__name__}: {e}", e)).encode("ascii")


_MAX_HEADERS, _MAX_LINE = 100, 65536  # the standard library's limits
ACCEPT_BACKOFF = 0.1  # seconds to wait before accepting again when out of descriptors
# After refusing a request whose body stays unread: how long (s) and how much (bytes) to discard
# before closing. Closing with unread input makes the kernel reset the connection, and a reset
# can destroy the answer before the client reads it.
LINGER_SECONDS, LINGER_BYTES = 2.0, MAX_REQUEST_BODY


class _BadField(ValueError):
    """A request field of the wrong type: an HTTP 400 with this text."""


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
        self.timeout = self.server.sim.config.idle_timeout  # applied to the socket by super().setup()
        # A lease answered on this connection that the client has not shown it read (by sending
        # another request); see handle().
        self.unread_lease: int | None = None
        super().setup()
        self.server.track(self.connection, True)
        self.server.sim.connection_opened()

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionResetError:
            # A client that closes its socket with an answer still unread makes its kernel reset
            # the connection (a client that read everything closes with an orderly FIN). After a
            # /process/get answer, that means nobody knows of the lease: return it.
            if self.unread_lease is None:
                raise
            self._give_back_unread_lease()

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
        self.unread_lease = None  # the client sent another request: it read the previous answer
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
        framing = None  # why the body's extent is ambiguous (read one way here, another way by a proxy)
        for _ in range(_MAX_HEADERS + 1):
            line = self.rfile.readline(_MAX_LINE + 1)
            if len(line) > _MAX_LINE:
                self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
                return False
            if line in (b"\r\n", b"\n", b""):
                break
            name, sep, value = line.decode("iso-8859-1").partition(":")
            if sep:
                key, value = name.strip().lower(), value.strip()
                if name != name.rstrip():
                    framing = f"whitespace between the header name {name.strip()!r} and its colon"
                elif key == "content-length" and headers.get(key, value) != value:
                    framing = "two different Content-Length headers"
                headers[key] = value
        else:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
            return False
        self.headers = headers  # type: ignore[assignment]
        if framing is not None:  # (RFC 9112: such a request must be refused)
            self._refuse(400, {"error": f"bad request: {framing}"})
            return False
        connection = headers.get("connection", "").lower()
        self.close_connection = connection == "close" or (self.request_version == "HTTP/1.0"
                                                          and connection != "keep-alive")
        if headers.get("expect", "").lower() == "100-continue" and self.request_version == "HTTP/1.1":
            return self.handle_expect_100()
        return True

    # -- plumbing --
    def _send(self, code: int, payload: Any) -> None:
        gen3 = self.server.sim.gen == 3
        code, body = _encode(code, payload, ascii_only=gen3)
        self.answered = True  # from here on, a failure is the connection's: no second answer
        if self.server.sim.config.verbose:
            self.log_request(code)
        if gen3:
            # Generation 3 answers HTTP/1.0 without Content-Length: the body ends where the connection closes.
            self.close_connection = True
            head = (f"HTTP/1.0 {code} {HTTPStatus(code).phrase}\r\nServer: {self.server_version}\r\n"
                    f"Date: {_http_date()}\r\nContent-Type: application/json\r\n\r\n")
            self.wfile.write(head.encode("latin-1") + body)
            return
        if self.close_connection:
            connection = "Connection: close\r\n"
        elif self.request_version == "HTTP/1.0":  # kept open only because it asked: say so
            connection = "Connection: keep-alive\r\n"
        else:
            connection = ""
        # status line, headers and body in one write (no Nagle / delayed-ACK stalls, one syscall)
        head = (f"{self.protocol_version} {code} {HTTPStatus(code).phrase}\r\nServer: {self.server_version}\r\n"
                f"Date: {_http_date()}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                f"{connection}\r\n")
        self.wfile.write(head.encode("latin-1") + body)

    def _refuse(self, code: int, payload: dict[str, Any]) -> None:
        """Answer a request whose body may be left unread, and close the connection (where the next
        request would begin is unknown) without the reset that would destroy the answer."""
        self.close_connection = True
        conn = self.connection
        try:
            self._send(code, payload)
            conn.shutdown(socket.SHUT_WR)  # the answer is out; the client reads it, then end-of-stream
            deadline, discarded = time.monotonic() + LINGER_SECONDS, 0
            while discarded < LINGER_BYTES and (left := deadline - time.monotonic()) > 0:
                conn.settimeout(left)
                chunk = conn.recv(65536)
                if not chunk:
                    break
                discarded += len(chunk)
        except OSError:
            pass  # the client left or reset first, or the time is up: nothing more to do

    def _drop(self) -> None:
        self.close_connection = True
        _shutdown(self.connection)

    def _give_back_unread_lease(self) -> None:
        pid, self.unread_lease = self.unread_lease, None
        if pid is not None:
            self.server.sim.return_process(pid)
            print(f"sim server: lease {pid} returned: its client left without reading the answer",
                  file=sys.stderr, flush=True)

    def _read_body(self, size: int) -> bytes | None:
        """``size`` bytes of request body; None (after a 400 answer, the connection closing) if it ends early."""
        body = self.rfile.read(size) if size else b""
        if len(body) < size:
            self.close_connection = True
            self._send(400, {"error": f"request body ended after {len(body)} of {size} bytes"})
            return None
        return body

    def _dispatch(self, method: str) -> None:
        self.answered = False
        try:
            self._serve(method)
        except Exception as e:
            # A failure outside the endpoints (a bug, memory running out): the client still gets an
            # answer where none was sent yet. OSError: the connection failed, so nobody can.
            self.close_connection = True
            if self.answered or isinstance(e, OSError):
                raise
            self._refuse(500, _error_body(f"(sim) server error: {type(e).__name__}: {e}", e))

    def _serve(self, method: str) -> None:
        sim = self.server.sim
        path = self.path.split("?", 1)[0]
        try:
            size = body_length(self.headers)  # every method's body is consumed: a GET's too
        except Refused as e:
            self._refuse(e.code, {"error": e.message})
            return
        route = self._resolve(sim, method, path)
        with self.server.bodies.hold(size) as granted:
            if not granted:
                self._refuse(503, {"error": "too many large request bodies at once; try again"})
                return
            raw = self._read_body(size)
            if raw is None:
                return
            # Parsed (the only step where a body takes many times its size) and dropped before the
            # request runs: a blocking /process/get or a busy process may keep it waiting long.
            body: dict[str, Any] = {}
            invalid = None  # why the body is not a JSON object (an HTTP 400)
            if route is not None and method == "POST":
                try:
                    body = parse_fields(raw)
                except ValueError as e:
                    invalid = str(e)
            del raw
        rid = sim.begin_request(path, self.arrived)
        if rid is None:  # crashed: never answer
            self._drop()
            return
        try:
            if route is None:
                self._send(404, {"error": "Not Found"})
            elif invalid is not None:
                self._send(400, {"error": invalid})
            else:
                self._answer(route, body)
        except Drop:
            self._drop()
        except OSError:  # the answer could not be sent (client gone, or not reading until the idle timeout)
            self.close_connection = True
            self._give_back_unread_lease()  # a lease whose answer could not even be sent
        finally:
            sim.end_request(rid)

    def _answer(self, route: Callable[[dict[str, Any]], dict[str, Any]], body: dict[str, Any]) -> None:
        gen = self.server.sim.gen
        try:
            result = route(body)
        except Drop:
            raise
        except Answer as e:
            code, payload = e.code, e.payload
        except ProcessNotFound as e:
            code, payload = (404, {"error": str(e)}) if gen == 3 else (500, _error_body(str(e), e))
            if gen < 3 and getattr(route, "wraps_errors", False):
                code, payload = 200, {"error": str(e)}
        except _BadField as e:
            code, payload = 400, {"error": str(e)}
        except KeyError as e:
            code, payload = 500, _error_body(f"Missing field {e.args[0]!r} in request body", e)
        except Exception as e:  # noqa: BLE001 - every failure becomes a 500, like the real server
            code, payload = 500, _error_body(str(e), e)
            if getattr(route, "wraps_errors", False):
                # generations 1-2 catch every exception of try_apply_tactic, a dead REPL's too (an injected
                # fault), and answer it as HTTP 200: only its text tells it from Lean's verdict
                code, payload = 200, {"error": str(e)}
        else:
            code, payload = 200, result
        self._send(code, payload)  # _encode cannot fail: only the connection can

    def _resolve(self, sim: SimLeanServer, method: str,
                 path: str) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
        """The endpoint that answers ``method path`` (called with the body's fields); None: 404."""
        if method == "GET":
            return (lambda b: sim.status()) if path == "/status" else None
        if path == "/process/get":
            def get(b: dict[str, Any]) -> dict[str, Any]:
                blocking = b.get("blocking", True)
                if not isinstance(blocking, bool):  # bool("false") is True
                    raise _BadField(f"'blocking' must be true or false, got {blocking!r}")
                leased, waited = sim.lease(blocking, b.get("timeout", 60.0),
                                           gone=lambda: _peer_gone(self.connection))
                # A client can only have given up on a get that made it wait, or that was answered late
                # (a server hung, then woke): one that half-closed (sent its request, then shut its
                # sending side) and gets an immediate answer still reads.
                late = time.monotonic() - self.arrived > _LATE_S
                if leased is not None and (waited or late) and _peer_gone(self.connection):
                    # The client gave up waiting and left: nobody would ever return this lease.
                    sim.return_process(leased)
                    raise Drop()
                self.unread_lease = leased
                return {"process_id": leased}
            return get
        parts = path.strip("/").split("/")
        pid = path_id(parts[1]) if len(parts) >= 3 and parts[0] == "process" else None
        if pid is None:
            return None
        action = tuple(parts[2:])
        if action == ("return",):
            return lambda b: sim.return_process(pid)
        if action == ("command",):
            return lambda b: sim.command(pid, b)
        if action == ("proof_from_sorry",):
            return lambda b: sim.proof_from_sorry(pid, b)
        if action == ("is_valid_source",):  # generations 2-3
            return (lambda b: sim.is_valid_source(pid, b)) if sim.gen >= 2 else None
        sid = path_id(action[1]) if len(action) == 3 else None
        if sid is None:
            return None
        if sim.gen == 3:  # the branch API: no proof/... routes
            if action[0] == "branch" and action[2] == "try_apply_tactic":
                return lambda b: sim.branch_try_apply_tactic(pid, sid, b)
            if action[0] == "branch" and action[2] == "state":
                return lambda b: sim.branch_state(pid, sid, b)
            return None
        if action[0] == "proof" and action[2] == "try_apply_tactic":
            def tactic(b: dict[str, Any]) -> dict[str, Any]:
                return sim.try_apply_tactic(pid, sid, b)
            tactic.wraps_errors = True  # type: ignore[attr-defined]
            return tactic
        if action[0] == "proof" and action[2] == "apply_tactic":
            return lambda b: sim.apply_tactic(pid, sid, b)
        return None

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
        self._closed = False  # close_connections() ran: new connections are shut at once
        self.max_connections = _fitting_descriptors(sim.config.max_connections)
        self.bodies = BodyBudget()
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self._stopping = threading.Event()
        self._warned_at = float("-inf")
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            # Over the cap: closed unread, so nothing was done. The client sees a dropped
            # connection, which leangym's client retries where repeating is harmless (an
            # HTTP 503 it would retry only on /return).
            self._warn(f"more than {self.max_connections} connections: closing new ones unanswered")
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            return super().get_request()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                # The connection stays queued and the listener readable: accepting again at
                # once would spin a core. Let some connections close first.
                self._warn(f"cannot accept connections ({e.strerror}); retrying")
                self._stopping.wait(ACCEPT_BACKOFF)
            raise

    def shutdown(self) -> None:
        self._stopping.set()  # end an accept back-off now
        super().shutdown()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError) and not self.sim.config.verbose:
            # A client that went away mid-request: routine, no traceback (--verbose shows it).
            print(f"sim server: connection from {client_address[0]}:{client_address[1]} broke: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        else:
            super().handle_error(request, client_address)

    def _warn(self, message: str) -> None:
        """Print a warning, at most one every 10 s (these come in bursts)."""
        now = time.monotonic()
        if now - self._warned_at >= 10.0:
            self._warned_at = now
            print(f"sim server: {message}", file=sys.stderr, flush=True)

    def track(self, conn: socket.socket, add: bool) -> None:
        with self._conns_lock:
            if add and self._closed:
                # accepted just before close_connections(), whose sweep it missed: a stopped
                # server must serve nobody (the client would talk to a pool that is gone)
                _shutdown(conn)
            elif add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def close_connections(self) -> None:
        """Shut every connection down, and any one a handler thread registers from now on."""
        with self._conns_lock:
            self._closed = True
            conns = list(self._conns)
        for c in conns:
            _shutdown(c)


def _fitting_descriptors(wanted: int) -> int:
    """``wanted`` connections, lowered to leave descriptors for the rest of the process."""
    try:
        import resource  # Unix only
    except ImportError:
        return wanted
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - min(64, soft // 2)))


_LATE_S = 1.0  # a /process/get answered this long after it came in may have no one left to read it


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
