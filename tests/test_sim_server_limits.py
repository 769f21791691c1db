"""The simulated server's limits: idle connections, the connection cap, descriptors running out,
abandoned and idle leases, CLI validation and odd requests. Waits here are bounds, never timings."""
from __future__ import annotations

import errno
import socket
import socketserver
import struct
import threading
import time
import tracemalloc

import pytest
import requests

from conftest import ScriptedProcess, scripted
from raw_http import read_answer
from leangym.sim import server, server_http, server_pool
from leangym.sim.server_config import SimServerConfig
from leangym.sim.server_pool import SimLeanServer

T = 5  # bound on every wait (s)


def _connect(srv) -> socket.socket:
    return socket.create_connection(("127.0.0.1", srv.port), timeout=T)


def _request(method: str, path: str, body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode("latin-1")
    return head + body


def _answer(s: socket.socket) -> tuple[int, dict]:
    """Read one answer (Content-Length body) from ``s``: (status, JSON body)."""
    return read_answer(s)[:2]


def _exchange(srv, raw: bytes) -> tuple[int, dict]:
    with _connect(srv) as s:
        s.sendall(raw)
        return _answer(s)


def _closed_by_server(s: socket.socket) -> bool:
    """Whether the server closes ``s`` (EOF or reset) before the bound T (then: False)."""
    try:
        return s.recv(65536) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + T
    while not condition():
        assert time.monotonic() < deadline, f"not within {T} s: {what}"
        time.sleep(0.02)


def _reset(s: socket.socket) -> None:
    """Close ``s`` with a reset (SO_LINGER 0), as a killed or aborting client may."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


# ---------------------------------------------------------------------- connections


def test_idle_and_half_sent_connections_are_closed_after_the_idle_timeout(sim_server):
    srv = sim_server(process_factory=scripted, idle_timeout=0.2)
    idle, half, kept_alive = _connect(srv), _connect(srv), _connect(srv)
    half.sendall(b"GET /sta")  # a request that never ends
    kept_alive.sendall(_request("GET", "/status"))
    assert _answer(kept_alive)[0] == 200
    for s in (idle, half, kept_alive):
        assert _closed_by_server(s)
        s.close()


def test_the_idle_timeout_does_not_cut_a_blocking_get_that_waits_longer(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=1, idle_timeout=0.1)
    with _connect(srv) as s:
        s.sendall(_request("POST", "/process/get", b'{"blocking": false}'))
        assert _answer(s)[1]["process_id"] == 1  # the pool is empty now
        s.sendall(_request("POST", "/process/get", b'{"blocking": true, "timeout": 0.5}'))
        assert _answer(s) == (200, {"process_id": None})  # waited 0.5 s, past the idle timeout


def test_connections_beyond_the_cap_are_closed_unanswered_until_one_frees(sim_server):
    srv = sim_server(process_factory=scripted, max_connections=2)
    held = [_connect(srv), _connect(srv)]
    for s in held:  # both served, and kept open
        s.sendall(_request("GET", "/status"))
        assert _answer(s)[0] == 200
    with _connect(srv) as extra:
        extra.sendall(_request("GET", "/status"))
        assert _closed_by_server(extra)
    held.pop().close()

    def served() -> bool:
        try:
            return _exchange(srv, _request("GET", "/status"))[0] == 200
        except (ConnectionError, OSError):
            return False  # the closed connection's slot is not free yet
    _until(served, "a connection is served once one of the held ones closed")
    held[0].close()


def test_accept_backs_off_when_descriptors_run_out(sim_server, monkeypatch):
    srv = sim_server(process_factory=scripted)
    calls, first = [], threading.Event()

    def accept_fails(self):
        calls.append(1)
        first.set()
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(server_http, "ACCEPT_BACKOFF", 60.0, raising=False)
    monkeypatch.setattr(socketserver.TCPServer, "get_request", accept_fails)
    pending = _connect(srv)  # the listener is readable from now on
    assert first.wait(T)
    time.sleep(0.3)  # time for a spinning accept loop to try again many times
    assert len(calls) == 1, f"accept retried {len(calls)} times instead of backing off"
    stopper = threading.Thread(target=srv.stop)
    stopper.start()
    stopper.join(T)
    assert not stopper.is_alive(), "stop() waited for the accept back-off"
    pending.close()


def test_a_reset_connection_logs_one_line_not_a_traceback(sim_server, capsys):
    srv = sim_server(process_factory=scripted)
    s = _connect(srv)
    s.sendall(b"GET /sta")
    time.sleep(0.1)  # let the server start reading it (either way it must not print a traceback)
    _reset(s)
    err = []
    _until(lambda: err.append(capsys.readouterr().err) or "ConnectionResetError" in "".join(err),
           "the reset is logged")
    text = "".join(err)
    assert "Traceback" not in text and len([ln for ln in text.splitlines() if "Reset" in ln]) == 1, text


# ---------------------------------------------------------------------- leases


def test_a_client_that_leaves_without_reading_its_lease_does_not_keep_it(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=2)
    s = _connect(srv)
    s.sendall(_request("POST", "/process/get", b'{"blocking": true, "timeout": 5}'))
    s.recv(1, socket.MSG_PEEK)  # the answer (a lease) has arrived; the client leaves without reading it
    s.close()  # unread data: the kernel resets the connection
    _until(lambda: srv.server.status()["used_processes"] == 0, "the unread lease is returned")


def test_a_client_that_read_its_lease_keeps_it_after_closing(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=2)
    with _connect(srv) as s:
        s.sendall(_request("POST", "/process/get", b'{"blocking": true, "timeout": 5}'))
        assert _answer(s)[1]["process_id"] == 1
    _until(lambda: not srv._httpd._conns, "the server sees the connection closed")
    assert srv.server.status()["used_processes"] == 1


def test_idle_leases_are_returned_only_with_lease_idle_timeout(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=2, lease_idle_timeout=1.0)
    keep = sim_server(process_factory=scripted, max_processes=2)  # the default: the real server's behaviour
    r = requests.post(srv.url + "/process/get", json={"blocking": False}, timeout=T)
    assert r.json()["process_id"] == 1
    leases = requests.get(srv.url + "/status", timeout=T).json()["leangym"]["leases"]  # read before it is reaped
    assert [x["process_id"] for x in leases] == [1] and isinstance(leases[0]["idle_seconds"], float)
    r = requests.post(keep.url + "/process/get", json={"blocking": False}, timeout=T)
    assert r.json()["process_id"] == 1
    _until(lambda: requests.get(srv.url + "/status", timeout=T).json()["used_processes"] == 0,
           "the idle lease is returned")
    r = requests.post(srv.url + "/process/1/return", json={}, timeout=T)
    assert r.json() == {"status": "ok", "already_returned": True}
    assert requests.get(keep.url + "/status", timeout=T).json()["used_processes"] == 1


def test_a_lease_with_a_request_in_progress_is_not_idle():
    entered, release = threading.Event(), threading.Event()

    class Slow(ScriptedProcess):
        def command(self, source):
            entered.set()
            release.wait(T)
            return super().command(source)

    sim = SimLeanServer(SimServerConfig(max_processes=2, lease_idle_timeout=60.0, process_factory=Slow))
    try:
        a, b = sim.get_process(False, None), sim.get_process(False, None)
        worker = threading.Thread(target=sim.command, args=(b, {"command": "#check 1"}))
        worker.start()
        assert entered.wait(T)
        later = time.monotonic() + 61
        assert sim.reclaim_idle_leases(now=later) == [a]  # b is busy, not idle
        release.set()
        worker.join(T)
        assert sim.reclaim_idle_leases(now=time.monotonic() + 59) == []  # b's request just ended
        assert sim.return_process(a) == {"status": "ok", "already_returned": True}
        assert sim.status()["used_processes"] == 1
    finally:
        release.set()
        sim.close()


def test_returned_lease_ids_cost_no_memory_and_still_read_as_returned():
    sim = SimLeanServer(SimServerConfig(max_processes=1, process_factory=scripted))
    for _ in range(300):
        sim.return_process(sim.get_process(True, 1.0))
    # Only memory allocated by the server's own code counts: other threads of the test process
    # (servers of earlier tests winding down, ...) allocate meanwhile too.
    only_the_server = [tracemalloc.Filter(True, server_pool.__file__)]

    def server_memory() -> int:
        return sum(stat.size for stat in tracemalloc.take_snapshot().filter_traces(only_the_server).statistics("filename"))

    tracemalloc.start()
    try:
        before = server_memory()
        for _ in range(20_000):
            sim.return_process(sim.get_process(True, 1.0))
        grown = server_memory() - before
    finally:
        tracemalloc.stop()
    assert grown < 100_000, f"{grown} bytes kept for 20000 returned leases"
    last = sim.get_process(True, 1.0)
    assert last == 20_301
    for pid in (1, 777, 20_300):
        assert sim.return_process(pid) == {"status": "ok", "already_returned": True}
    for pid in (0, -1, 20_302):
        with pytest.raises(ValueError, match=f"Process {pid} not found"):
            sim.return_process(pid)
    assert sim.return_process(last) == {"status": "ok"}


# ---------------------------------------------------------------------- odd requests


def test_non_ascii_digits_in_paths_and_lengths_are_refused_with_an_answer(sim_server):
    srv = sim_server(process_factory=scripted)
    for path in ("/process/\xb2/return", "/process/\u0663/command", "/process/1/proof/\xb9/try_apply_tactic"):
        raw = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{{}}".encode("utf-8")
        assert _exchange(srv, raw) == (404, {"error": "Not Found"}), path
    status, body = _exchange(srv, b"POST /process/get HTTP/1.1\r\nHost: x\r\nContent-Length: \xb2\r\n\r\n{}")
    assert status == 400 and "Content-Length must be" in body["error"]


@pytest.mark.parametrize("blocking", ["false", "true", 0, 1, None, []])
def test_blocking_must_be_a_json_boolean(sim_server, blocking):
    srv = sim_server(process_factory=scripted, max_processes=1)
    r = requests.post(srv.url + "/process/get", json={"blocking": blocking}, timeout=T)
    assert r.status_code == 400 and "'blocking' must be true or false" in r.json()["error"]
    assert srv.server.status()["used_processes"] == 0
    assert requests.post(srv.url + "/process/get", json={"blocking": False}, timeout=T).json() == {"process_id": 1}


# ---------------------------------------------------------------------- command line


@pytest.mark.parametrize("argv, message", [
    (["--port", "70000"], "--port: must be in [0, 65535]"),
    (["--port", "-1"], "--port: must be in [0, 65535]"),
    (["--max-processes", "0"], "--max-processes: must be >= 1"),
    (["--max-processes", "-5"], "--max-processes: must be >= 1"),
    (["--latency-ms", "-10"], "--latency-ms: must be a finite number >= 0"),
    (["--jitter-ms", "-5"], "--jitter-ms: must be a finite number >= 0"),
    (["--jitter-ms", "nan"], "--jitter-ms: must be a finite number >= 0"),
    (["--latency-ms", "inf"], "--latency-ms: must be a finite number >= 0"),
    (["--error-rate", "nan"], "--error-rate: must be a finite number in [0, 1]"),
    (["--crash-after", "-1"], "--crash-after: must be >= 0"),
    (["--idle-timeout", "0"], "--idle-timeout: must be a finite number > 0"),
    (["--lease-idle-timeout", "-3"], "--lease-idle-timeout: must be a finite number > 0"),
    (["--max-connections", "0"], "--max-connections: must be >= 1"),
])
def test_cli_refuses_bad_values(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        server._parser().parse_args(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_cli_help_says_lease_idle_timeout_is_not_the_real_servers_behaviour(capsys):
    with pytest.raises(SystemExit):
        server.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--lease-idle-timeout" in out and "never on generations 1-2, as those servers" in out
    assert "a divergence" in server.__doc__ and "--lease-idle-timeout" in server.__doc__


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::"])
def test_every_interface_is_announced_with_a_warning(sim_server, host):
    """What the CLI prints for a bind on every interface, checked on a loopback server (a test never
    opens a server to the network)."""
    from leangym.sim.server import announcement

    srv = sim_server(process_factory=scripted, max_processes=1)
    line, warning = announcement(host, srv, generation=1, max_processes=1)
    bound = "[::]" if host == "::" else "0.0.0.0"
    assert line.startswith("Simulated LeanTree server (generation 1: single-branch, 1 process) listening on ")
    assert f"http://{bound}:{srv.port} (from this machine: {srv.url})" in line
    assert warning.startswith(f"WARNING: bound to {bound}:") and "authentication" in warning and "traceback" in warning
    assert announcement("127.0.0.1", srv, generation=True, max_processes=1) == (
        f"Simulated LeanTree server (generation 2: factorized, 1 process) listening on {srv.url}", None)
    assert announcement("127.0.0.1", srv, generation=3, max_processes=1)[0].startswith(
        "Simulated LeanTree server (generation 3: branch-api, 1 process)")


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_ipv6_hosts_are_served(sim_server):
    srv = sim_server(process_factory=scripted, host="::1")
    assert srv.url.startswith("http://[::1]:")
    assert requests.get(srv.url + "/status", timeout=T).json()["max_processes"] == 8


def test_a_request_racing_a_return_never_runs_on_the_next_owners_process():
    # The request got its slot, then the lease was returned and leased again before it took the
    # process's lock: it must fail as "not found", not run on the new owner's (rolled back) process.
    sim = SimLeanServer(SimServerConfig(max_processes=1, process_factory=scripted))
    first = sim.get_process(blocking=False, timeout=None)
    with sim._leased(first) as slot:
        sim.return_process(first)
        second = sim.get_process(blocking=False, timeout=None)
        assert second != first and slot.lease_id == second  # the same process, someone else's now
        with pytest.raises(ValueError, match=f"Process {first} not found"):
            with sim._locked(slot, first):
                pass
    assert sim.command(second, {"command": "theorem x : True := trivial"})["env"] is not None
    sim.close()


def test_stopping_the_server_ends_requests_waiting_out_their_injected_latency():
    """A request inside a 30 s injected latency does not keep its thread once the server stops."""
    handle = server.start_server(latency_ms=30_000)
    pid = requests.post(f"{handle.url}/process/get", json={"blocking": False}, timeout=60).json()["process_id"]

    def call():
        try:
            requests.post(f"{handle.url}/process/{pid}/proof_from_sorry",
                          json={"theorem_with_sorry": "theorem t (p : Prop) (hp : p) : p := by sorry"},
                          timeout=60)
        except requests.RequestException:
            pass  # the server went away: what a client of a stopped server sees

    client = threading.Thread(target=call, daemon=True)
    client.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # until the request is inside the server (its latency wait)
        if requests.get(f"{handle.url}/status", timeout=60).json().get("active_requests"):
            break
        time.sleep(0.01)
    handlers = [t for t in threading.enumerate() if "process_request" in t.name]
    assert handlers
    handle.stop()
    for t in [client, *handlers]:
        t.join(20)
    assert not client.is_alive() and not any(t.is_alive() for t in handlers)


def test_a_connection_registered_after_the_sweep_of_a_stopping_server_is_shut():
    """A handler thread registers its connection a moment after accept(): if stop()'s sweep of
    the open connections came in between, the connection is shut when it registers, so a stopped
    server serves nobody."""
    handle = server.start_server()
    httpd = handle._httpd
    ours, peer = socket.socketpair()
    try:
        httpd.close_connections()  # the sweep of stop(), before this connection was registered
        httpd.track(ours, True)
        peer.settimeout(10)
        assert peer.recv(1) == b""  # shut: the other end reads end-of-stream at once
    finally:
        handle.stop()
        ours.close()
        peer.close()


def test_a_lease_answered_late_to_a_client_that_left_is_returned(sim_server):
    """A server that woke from a hang (or was slow) leases for a request whose client has gone: nobody
    knows that lease's id, so the server gives it back instead of keeping it taken for good."""
    srv = sim_server(process_factory=scripted, max_processes=1)
    real_lease = srv.server.lease

    def slow_lease(*args, **kw):
        time.sleep(1.3)  # past the server's "late" mark
        return real_lease(*args, **kw)

    srv.server.lease = slow_lease
    s = _connect(srv)
    s.sendall(_request("POST", "/process/get", b'{"blocking": false}'))
    s.close()  # nothing unread yet: an orderly close, no reset
    time.sleep(1.6)
    _until(lambda: srv.server.status()["used_processes"] == 0, "the lease nobody read is returned")


def test_a_waiting_lease_request_whose_client_left_ends_its_wait(sim_server):
    """An abandoned blocking /process/get (the client gave up: a Ctrl-C, a timeout) stops waiting once
    the server sees its client gone, instead of holding a thread and a connection for its whole timeout."""
    srv = sim_server(process_factory=scripted, max_processes=1)
    r = requests.post(srv.url + "/process/get", json={"blocking": False}, timeout=T)  # the pool is empty now
    assert r.json()["process_id"] is not None
    s = _connect(srv)
    s.sendall(_request("POST", "/process/get", b'{"blocking": true, "timeout": 60}'))
    _until(lambda: srv.server.status()["active_requests"], "the request waits")
    s.close()
    _until(lambda: not srv.server.status()["active_requests"], "the abandoned request stops waiting")
    assert srv.server.status()["used_processes"] == 1
