"""The client's HTTP exchange against servers that frame answers differently from ours.

Another LeanTree server (aiohttp, Flask, a proxy in between) may answer with a
chunked body, close the connection after each answer, speak HTTP/1.0, drop an
idle keep-alive connection, or drip an answer in small pieces. Each is served
here by a raw-socket server that answers every request with one scripted reply.
"""
from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import zlib
from typing import Callable

import pytest
import requests

from leangym.backends import transport
from leangym.backends.leantree import LeanTreeClient
from leangym.backends.transport import ConnectFailed, Dropped, ReadTimedOut, Transport
from leangym.backends.types import Outcome, ServerError, ServerTimeout, ServerUnavailable

STATUS = {"available_processes": 1, "used_processes": 0, "max_processes": 1}
BRANCHES = {"value": [{"proof_state_id": 3, "goals": [{"type": "q", "hypotheses": [{"user_name": "hq", "type": "q"}]}]}]}


def _read_request(conn: socket.socket, buf: bytearray) -> bytes | None:
    """One request (head and Content-Length body) from ``conn``; None when the client closed it."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:  # closed mid-body
            return None
        rest += chunk
    buf[:] = rest[length:]
    return head + b"\r\n\r\n" + rest[:length]


class RawServer:
    """Loopback TCP server: ``reply(request_bytes, connection_number) -> (bytes to send, close after?)``.

    ``closing`` is set by :meth:`close` (a reply that must hang waits on it); ``close`` also
    closes every accepted connection and joins every thread the server started.
    """

    def __init__(self, reply: Callable[[bytes, int], tuple[list[bytes], bool]]) -> None:
        self.reply, self.requests, self.connections, self.closed = reply, [], 0, 0
        self.closing = threading.Event()
        self._changed = threading.Condition()
        self._conns: list[socket.socket] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._changed:
                if self.closing.is_set():
                    conn.close()
                    return
                self.connections += 1
                self._conns.append(conn)
                t = threading.Thread(target=self._serve, args=(conn, self.connections), daemon=True)
                self._threads.append(t)
            t.start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        buf = bytearray()
        try:
            with conn:
                while (request := _read_request(conn, buf)) is not None:
                    self.requests.append(request)
                    pieces, close = self.reply(request, number)
                    for piece in pieces:
                        conn.sendall(piece)
                        if len(pieces) > 1:
                            time.sleep(0.002)  # separate TCP segments
                    if close:
                        break
        except OSError:  # the client went away mid-answer, or close() shut the connection
            pass
        with self._changed:
            self.closed += 1
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        with self._changed:
            return self._changed.wait_for(predicate, timeout)

    def close(self) -> None:
        self.closing.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        except OSError:
            pass
        self.sock.close()
        with self._changed:
            conns, threads = list(self._conns), list(self._threads)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv()
            except OSError:
                pass
        for t in threads:
            t.join(timeout=10)
            assert not t.is_alive(), f"{t.name} of the raw server did not stop"


@pytest.fixture
def raw_server():
    servers: list[RawServer] = []

    def make(reply):
        servers.append(RawServer(reply))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


@pytest.fixture
def closing():
    """``closing(x)`` returns ``x`` (a LeanTreeClient or Transport) and closes it at teardown."""
    opened: list = []

    def track(x):
        opened.append(x)
        return x

    yield track
    for x in opened:
        x.close()


def _answer(request: bytes) -> bytes:
    return json.dumps(STATUS if request.startswith(b"GET /status") else BRANCHES).encode()


def _fixed(head: str, body: bytes) -> list[bytes]:
    return [head.encode() + b"\r\n\r\n" + body]


def test_content_length_keep_alive_reuses_one_connection(raw_server, closing):
    srv = raw_server(lambda req, n: (_fixed(f"HTTP/1.1 200 OK\r\nContent-Length: {len(_answer(req))}",
                                            _answer(req)), False))
    client = closing(LeanTreeClient(srv.url))
    for _ in range(5):
        assert client.status()["max_processes"] == 1
    assert srv.connections == 1
    head = srv.requests[0].split(b"\r\n")
    assert head[0] == b"GET /status HTTP/1.1" and head[1].startswith(b"Host: 127.0.0.1:")


def test_chunked_answer(raw_server, closing):
    def reply(req, n):
        body = _answer(req)
        chunks = [body[:7], body[7:]]
        framed = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
        return [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", framed], False

    client = closing(LeanTreeClient(raw_server(reply).url))
    assert client.status()["available_processes"] == 1
    r = client.try_apply_tactic(1, 0, "intro hq")
    assert r.outcome is Outcome.PROGRESS and r.states[0].goals[0].target == "q"


def test_connection_close_after_each_answer(raw_server, closing):
    srv = raw_server(lambda req, n: (_fixed(f"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: "
                                            f"{len(_answer(req))}", _answer(req)), True))
    client = closing(LeanTreeClient(srv.url))
    for _ in range(3):
        assert client.try_apply_tactic(1, 0, "intro hq").outcome is Outcome.PROGRESS
    assert srv.connections == 3  # a new connection each time, no error


def test_http10_answer_delimited_by_close(raw_server, closing):
    srv = raw_server(lambda req, n: (_fixed("HTTP/1.0 200 OK\r\nContent-Type: application/json", _answer(req)), True))
    client = closing(LeanTreeClient(srv.url))
    assert client.status()["used_processes"] == 0
    assert client.status()["used_processes"] == 0
    assert srv.connections == 2


def test_answer_dripped_in_pieces(raw_server, closing):
    def reply(req, n):
        data = _fixed(f"HTTP/1.1 200 OK\r\nContent-Length: {len(_answer(req))}", _answer(req))[0]
        return [data[i:i + 5] for i in range(0, len(data), 5)], False

    assert closing(LeanTreeClient(raw_server(reply).url)).try_apply_tactic(1, 0, "x").outcome is Outcome.PROGRESS


def test_idle_connection_closed_by_server_is_replaced(raw_server, closing):
    """The server closes a keep-alive connection between calls (idle timeout, restart): the next call
    opens a new one instead of failing."""
    srv = raw_server(lambda req, n: (_fixed(f"HTTP/1.1 200 OK\r\nContent-Length: {len(_answer(req))}",
                                            _answer(req)), True))  # closes without saying so
    client = closing(LeanTreeClient(srv.url, retries=0))
    assert client.status()["max_processes"] == 1
    assert srv.wait_for(lambda: srv.closed)  # the server has closed it
    assert client.status()["max_processes"] == 1
    assert srv.connections == 2


def test_close_without_answer_is_dropped_then_retried(raw_server, closing):
    """A connection closed with no answer: retried where harmless, a server failure otherwise."""
    srv = raw_server(lambda req, n: ([], True) if n == 1 else
                     (_fixed(f"HTTP/1.1 200 OK\r\nContent-Length: {len(_answer(req))}", _answer(req)), False))
    assert closing(LeanTreeClient(srv.url)).status()["max_processes"] == 1  # retried on a new connection
    srv2 = raw_server(lambda req, n: ([], True))
    r = closing(LeanTreeClient(srv2.url)).try_apply_tactic(1, 0, "x")
    assert r.outcome is Outcome.SERVER_FAILURE and "without an answer" in r.error
    with pytest.raises(Dropped):
        closing(Transport(requests.Session(), srv2.url)).exchange("GET", "/status", None, 1.0, 1.0)


def test_a_start_that_got_no_answer_is_not_sent_again(raw_server, closing):
    """The server may have declared the theorem before the connection broke, and a second
    declaration fails ("has already been declared"): proof_from_sorry is not resent, while a
    tactic (states are immutable) is."""
    srv = raw_server(lambda req, n: ([], True))
    client = closing(LeanTreeClient(srv.url, retries=2))
    with pytest.raises(ServerError, match="without an answer"):
        client.proof_from_sorry(1, "theorem t : True := by sorry")
    assert [r.split(b" ")[1] for r in srv.requests] == [b"/process/1/proof_from_sorry"]
    client.try_apply_tactic(1, 0, "trivial")
    assert len(srv.requests) == 1 + 3


def test_a_proof_state_id_must_be_a_number_not_a_boolean():
    from leangym.backends.types import parse_proof_state

    assert parse_proof_state(1, {"proof_state_id": 0, "goals": []}).proof_state_id == 0
    with pytest.raises(ServerError, match="a proof state"):
        parse_proof_state(1, {"proof_state_id": True, "goals": []})


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_answer_is_decoded(raw_server, encoding, closing):
    """Never asked for, but a proxy in between may compress anyway."""
    def reply(req, n):
        body = _answer(req)
        packed = gzip.compress(body) if encoding == "gzip" else zlib.compress(body)
        return _fixed(f"HTTP/1.1 200 OK\r\nContent-Encoding: {encoding}\r\nContent-Length: {len(packed)}", packed), False

    assert closing(LeanTreeClient(raw_server(reply).url)).status()["max_processes"] == 1


def test_garbage_status_line_is_server_error(raw_server, closing):
    srv = raw_server(lambda req, n: ([b"SSH-2.0-OpenSSH_9.6\r\n"], True))
    with pytest.raises(ServerError, match="without an answer"):
        closing(LeanTreeClient(srv.url, retries=0)).status()


def test_read_timeout(raw_server, closing):
    srv = raw_server(lambda req, n: (srv.closing.wait(10), ([], True))[1])  # hangs until teardown
    client = closing(LeanTreeClient(srv.url, read_timeout=0.1))
    with pytest.raises(ServerTimeout, match="read timeout"):
        client.status()
    with pytest.raises(ReadTimedOut):
        closing(Transport(requests.Session(), srv.url)).exchange("GET", "/status", None, 1.0, 0.1)


def test_nothing_listening_is_connect_failure(closing):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # bound, not listening: refused
    with pytest.raises(ConnectFailed) as failed:
        closing(Transport(requests.Session(), url)).exchange("GET", "/status", None, 1.0, 1.0)
    assert failed.value.refused  # what a server that is down looks like (see lease._give_back)
    with pytest.raises(ServerUnavailable, match="No LeanTree server answers"):
        closing(LeanTreeClient(url, retries=0)).status()


def test_base_path_of_the_url_prefixes_every_request(raw_server, closing):
    """A server behind a reverse proxy at http://host/lean: paths go under /lean."""
    srv = raw_server(lambda req, n: (_fixed(f"HTTP/1.1 200 OK\r\nContent-Length: {len(_answer(req))}",
                                            _answer(req)), False))
    closing(LeanTreeClient(srv.url + "/lean/")).status()
    assert srv.requests[-1].startswith(b"GET /lean/status HTTP/1.1")


def test_close_from_another_thread_does_not_break_later_calls(raw_server, closing):
    srv = raw_server(lambda req, n: (_fixed(f"HTTP/1.1 200 OK\r\nContent-Length: {len(_answer(req))}",
                                            _answer(req)), False))
    transport = closing(Transport(requests.Session(), srv.url))
    pool = transport._connection_pool()
    transport.close()  # closes the pool a racing caller may still hold
    transport._pool = pool
    assert transport.exchange("GET", "/status", None, 1.0, 1.0)[0] == 200


def test_return_is_retried_after_a_5xx_or_garbled_answer(raw_server, closing):
    """Returning a lease is idempotent, so a 500 or a proxy's HTML page is worth another try:
    a lease that is not returned holds a Lean process until the server restarts."""
    answers = iter([(500, b'{"error": "REPL process died", "exception": "gASV"}'),
                    (200, b"<html>502 Bad Gateway</html>"), (200, b'{"status": "ok"}')])

    def reply(req, n):
        status, body = next(answers)
        return _fixed(f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}", body), False

    srv = raw_server(reply)
    assert closing(LeanTreeClient(srv.url)).return_process(3) == {"status": "ok"}
    assert [r.split(b" ")[1] for r in srv.requests] == [b"/process/3/return"] * 3
    srv404 = raw_server(lambda req, n: (_fixed("HTTP/1.1 404 Not Found\r\nContent-Length: 2", b"{}"), False))
    with pytest.raises(ServerError, match="HTTP 404"):
        closing(LeanTreeClient(srv404.url)).return_process(3)
    assert len(srv404.requests) == 1  # a 4xx is not retried


def test_answers_that_would_exhaust_memory_or_the_stack_are_server_errors(raw_server, closing, monkeypatch):
    """A claimed length, a compression bomb or deeply nested JSON: a ServerError, never MemoryError/RecursionError."""
    # The client's limit (transport.MAX_BODY, 256 MB), lowered to 1 MB: the same code, without
    # building and unpacking hundreds of megabytes here.
    assert 2**20 < transport.MAX_BODY < 300 * 2**20  # the real limit would stop a 300 MB bomb
    limit = 2**20
    monkeypatch.setattr(transport, "MAX_BODY", limit)
    huge = raw_server(lambda req, n: ([b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000\r\n\r\n{}"], True))
    with pytest.raises(ServerError, match=f"at most {limit}\\b"):
        closing(LeanTreeClient(huge.url, retries=0)).status()

    def gzipped(body: bytes):
        packed = gzip.compress(body)
        return raw_server(lambda req, n: (_fixed(f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
                                                 f"Content-Length: {len(packed)}", packed), True))

    bomb = gzipped(b" " * (10 * limit))  # 10 times the limit, 10 kB packed
    with pytest.raises(ServerError, match=f"at most {limit}\\b"):
        closing(LeanTreeClient(bomb.url, retries=0)).status()
    # the limit is the boundary: an answer that unpacks to exactly `limit` bytes is read whole
    fits = b'{"max_processes": 1}'
    assert closing(LeanTreeClient(gzipped(fits + b" " * (limit - len(fits))).url, retries=0)).status() == \
        {"max_processes": 1}
    with pytest.raises(ServerError, match=f"at most {limit}\\b"):
        closing(LeanTreeClient(gzipped(fits + b" " * (limit + 1 - len(fits))).url, retries=0)).status()
    nested = b"[" * 100_000 + b"]" * 100_000
    deep = raw_server(lambda req, n: (_fixed(f"HTTP/1.1 200 OK\r\nContent-Length: {len(nested)}", nested), False))
    with pytest.raises(ServerError, match="malformed JSON"):
        closing(LeanTreeClient(deep.url, retries=0)).status()
    err = raw_server(lambda req, n: (_fixed(f"HTTP/1.1 500 Oops\r\nContent-Length: {len(nested)}", nested), False))
    with pytest.raises(ServerError, match="HTTP 500"):
        closing(LeanTreeClient(err.url, retries=0)).status()
