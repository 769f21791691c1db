"""The simulated LeanTree server, talked to with raw HTTP (shapes, codes, error texts, faults)."""
from __future__ import annotations

import base64
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests

from conftest import ScriptedProcess, scripted
from leangym.sim.server import INJECTED_ERROR_TEXT, SimServerConfig, main, start_server

THM = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
T = 5  # requests timeout (s)
REPO = pathlib.Path(__file__).resolve().parents[1]


def post(url: str, path: str, body=None, **kw):
    return requests.post(url + path, json={} if body is None else body, timeout=T, **kw)


def lease(url: str) -> int:
    r = post(url, "/process/get", {"blocking": True, "timeout": 1.0})
    assert r.status_code == 200
    pid = r.json()["process_id"]
    assert isinstance(pid, int)
    return pid


@pytest.fixture
def srv(sim_server):
    return sim_server(process_factory=scripted, max_processes=2)


def test_status_shape(srv):
    r = requests.get(srv.url + "/status", timeout=T)
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
    s = r.json()
    for key in ("available_processes", "used_processes", "starting_processes", "max_processes",
                "active_requests", "cpu_percent_per_core", "ram"):
        assert key in s
    assert s["available_processes"] == 2 and s["used_processes"] == 0 and s["max_processes"] == 2
    assert s["leangym"]["simulated"] is True and s["leangym"]["generation"] == "single-branch"
    assert "version" in s["leangym"]


def test_lease_return_and_double_return(srv):
    pid = lease(srv.url)
    assert requests.get(srv.url + "/status", timeout=T).json()["used_processes"] == 1
    assert post(srv.url, f"/process/{pid}/return").json() == {"status": "ok"}
    assert post(srv.url, f"/process/{pid}/return").json() == {"status": "ok", "already_returned": True}
    s = requests.get(srv.url + "/status", timeout=T).json()
    assert s["used_processes"] == 0 and s["available_processes"] == 2
    # a returned id is stale: using it is a server failure
    r = post(srv.url, f"/process/{pid}/command", {"command": "#check 1"})
    assert r.status_code == 500 and r.json()["error"] == f"Process {pid} not found"


def test_return_resets_process(sim_server):
    procs: list[ScriptedProcess] = []

    def factory(factorized):
        procs.append(ScriptedProcess(factorized))
        return procs[-1]

    srv = sim_server(process_factory=factory, max_processes=1)
    pid = lease(srv.url)
    post(srv.url, f"/process/{pid}/proof_from_sorry", {"theorem_with_sorry": THM})
    post(srv.url, f"/process/{pid}/return")
    assert procs[0].resets == 1
    pid2 = lease(srv.url)
    assert pid2 != pid  # ids are per lease, as on the real server
    r = post(srv.url, f"/process/{pid2}/proof/0/try_apply_tactic", {"tactic": "split", "timeout": 1000})
    # the old proof state died with the lease (generations 1-2 answer failures of try_apply_tactic as HTTP 200)
    assert r.status_code == 200 and r.json() == {"error": f"Proof state 0 not found in process {pid2}"}


def test_get_process_nonblocking_and_timeout(srv):
    lease(srv.url), lease(srv.url)
    assert post(srv.url, "/process/get", {"blocking": False}).json() == {"process_id": None}
    assert post(srv.url, "/process/get", {"blocking": True, "timeout": 0.1}).json() == {"process_id": None}


def status(url: str) -> dict:
    return requests.get(url + "/status", timeout=T).json()


def wait_for_status(url: str, predicate, what: str) -> dict:
    """Poll /status until ``predicate(status)`` holds (at most T s); the status that satisfied it."""
    deadline = time.monotonic() + T
    while not predicate(s := status(url)):
        assert time.monotonic() < deadline, f"no {what} within {T} s: {s}"
        time.sleep(0.01)
    return s


def waiting_gets(s: dict) -> int:
    """/process/get requests the server is serving (blocked waiting for a process, here)."""
    return sum(r["path"] == "/process/get" for r in s["active_requests"])


def test_blocking_get_wakes_on_return(srv):
    import threading

    a, _ = lease(srv.url), lease(srv.url)
    got = {}
    t = threading.Thread(target=lambda: got.update(post(srv.url, "/process/get", {"blocking": True,
                                                                                   "timeout": 10}).json()))
    t.start()
    wait_for_status(srv.url, lambda s: waiting_gets(s) == 1, "waiting /process/get")  # it waits now
    assert "process_id" not in got
    post(srv.url, f"/process/{a}/return")
    t.join(10)
    assert isinstance(got.get("process_id"), int)


@pytest.mark.parametrize("factorized", [False, True])
def test_proof_endpoints_both_generations(sim_server, factorized):
    srv = sim_server(process_factory=scripted, factorized=factorized)
    assert requests.get(srv.url + "/status", timeout=T).json()["leangym"]["generation"] == \
        ("factorized" if factorized else "single-branch")
    pid = lease(srv.url)
    root = post(srv.url, f"/process/{pid}/proof_from_sorry", {"theorem_with_sorry": THM}).json()["value"]
    assert root["proof_state_id"] == 0 and root["goals"][0]["type"] == "p ∧ q"
    assert root["goals"][0]["hypotheses"][0] == {"user_name": "p", "type": "Prop"}
    path = f"/process/{pid}/proof/0/try_apply_tactic"
    split = post(srv.url, path, {"tactic": "split", "timeout": 1000}).json()["value"]
    if factorized:
        assert [len(b["goals"]) for b in split] == [1, 1]
    else:
        assert [len(b["goals"]) for b in split] == [2]
    done = post(srv.url, path, {"tactic": "done", "timeout": 1000}).json()
    assert done == {"value": []} if factorized else (len(done["value"]) == 1 and done["value"][0]["goals"] == [])
    # the state is immutable: applying to it again still works
    assert "value" in post(srv.url, path, {"tactic": "intro h"}).json()
    # Lean rejections are HTTP 200 with an error text
    r = post(srv.url, path, {"tactic": "nonsense", "timeout": 1000})
    assert r.status_code == 200 and r.json()["error"].startswith("REPL returned error messages")
    assert post(srv.url, path, {"tactic": "slow"}).json() == {"error": "Tactic application timed out."}
    # no sorry -> 200 error
    r = post(srv.url, f"/process/{pid}/proof_from_sorry", {"theorem_with_sorry": "theorem x : True := trivial"})
    assert r.status_code == 200 and r.json() == {"error": "No sorries found in theorem"}


@pytest.mark.parametrize("factorized", [False, True])
def test_apply_tactic_endpoint(sim_server, factorized):
    srv = sim_server(process_factory=scripted, factorized=factorized)
    pid = lease(srv.url)
    post(srv.url, f"/process/{pid}/proof_from_sorry", {"theorem_with_sorry": THM})
    path = f"/process/{pid}/proof/0/apply_tactic"
    r = post(srv.url, path, {"tactic": "split", "timeout": 1000})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"proof_state_id", "goals"} and [g["type"] for g in body["goals"]] == ["p", "q"]
    body = post(srv.url, path, {"tactic": "done"}).json()
    assert body["goals"] == [] and isinstance(body["proof_state_id"], int)
    r = post(srv.url, path, {"tactic": "nonsense"})
    assert r.status_code == 500 and r.json()["error"].startswith("REPL returned error messages")
    assert "exception" in r.json() and "traceback" in r.json()


def test_server_failures_are_500_with_pickle(srv):
    # except on try_apply_tactic, where generations 1-2 answer every exception as HTTP 200
    r = post(srv.url, "/process/99/proof/0/try_apply_tactic", {"tactic": "split"})
    assert r.status_code == 200 and r.json() == {"error": "Process 99 not found"}
    for path, body in [("/process/99/command", {"command": "x"}),
                       ("/process/99/proof_from_sorry", {"theorem_with_sorry": THM}),
                       ("/process/99/proof/0/apply_tactic", {"tactic": "split"}),
                       ("/process/99/return", {})]:
        r = post(srv.url, path, body)
        assert r.status_code == 500, path
        j = r.json()
        assert j["error"] == "Process 99 not found"
        assert isinstance(j["traceback"], str)
        base64.b64decode(j["exception"], validate=True)  # a base64 blob (never unpickled here either)
    pid = lease(srv.url)
    r = post(srv.url, f"/process/{pid}/proof/42/apply_tactic", {"tactic": "split"})
    assert r.status_code == 500 and "Proof state 42 not found" in r.json()["error"]
    r = post(srv.url, f"/process/{pid}/command", {"wrong": 1})
    assert r.status_code == 500 and "command" in r.json()["error"]


def test_not_found_and_bad_json(srv):
    for method, path in [("GET", "/nope"), ("POST", "/nope"), ("POST", "/process/1/frobnicate"),
                         ("GET", "/process/get"), ("POST", "/process/x/return")]:
        r = requests.request(method, srv.url + path, timeout=T)
        assert r.status_code == 404 and r.json() == {"error": "Not Found"}, (method, path)
    r = requests.post(srv.url + "/process/get", data=b"{not json", timeout=T,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "Invalid JSON" in r.json()["error"]


def test_keep_alive(srv):
    with requests.Session() as s:
        for _ in range(5):
            assert s.get(srv.url + "/status", timeout=T).status_code == 200
        r = s.get(srv.url + "/status", timeout=T)
        assert r.headers.get("Connection", "").lower() != "close" and r.raw.version == 11
        assert srv.server.connections_opened == 1  # one connection, reused for all six requests


def test_injected_errors_and_drops(sim_server):
    srv = sim_server(process_factory=scripted, error_rate=1.0, seed=1)
    pid = lease(srv.url)  # lease endpoints are never faulted
    r = post(srv.url, f"/process/{pid}/proof_from_sorry", {"theorem_with_sorry": THM})
    assert r.status_code == 500 and r.json()["error"] == INJECTED_ERROR_TEXT and r.json()["exception"]
    assert post(srv.url, f"/process/{pid}/return").status_code == 200

    srv = sim_server(process_factory=scripted, drop_rate=1.0, seed=1)
    pid = lease(srv.url)
    with pytest.raises(requests.ConnectionError):
        post(srv.url, f"/process/{pid}/command", {"command": "#check 1"})
    assert requests.get(srv.url + "/status", timeout=T).status_code == 200  # still alive


def test_crash_after_and_restart(sim_server):
    srv = sim_server(process_factory=scripted, crash_after=2)
    assert requests.get(srv.url + "/status", timeout=T).status_code == 200
    assert requests.get(srv.url + "/status", timeout=T).status_code == 200
    with pytest.raises(requests.ConnectionError):
        requests.get(srv.url + "/status", timeout=T)
    for _ in range(100):  # the crash completes in a helper thread
        if not srv.running:
            break
        time.sleep(0.02)
    with pytest.raises(requests.ConnectionError):
        requests.get(srv.url + "/status", timeout=T)
    assert srv.crashed
    srv.restart()
    assert requests.get(srv.url + "/status", timeout=T).status_code == 200
    srv.stop()
    srv.stop()  # idempotent
    with pytest.raises(requests.ConnectionError):
        requests.get(srv.url + "/status", timeout=T)


def test_stop_closes_keep_alive_connections(sim_server):
    srv = sim_server(process_factory=scripted)
    with requests.Session() as s:
        assert s.get(srv.url + "/status", timeout=T).status_code == 200
        srv.stop()
        with pytest.raises(requests.ConnectionError):
            s.get(srv.url + "/status", timeout=T)


def test_start_server_api_and_context_manager():
    with start_server(SimServerConfig(process_factory=scripted, max_processes=1)) as h:
        assert h.url.startswith("http://127.0.0.1:") and h.port > 0
        assert requests.get(h.url + "/status", timeout=T).json()["max_processes"] == 1
    with start_server(process_factory=scripted, factorized=True) as h:
        assert requests.get(h.url + "/status", timeout=T).json()["leangym"]["generation"] == "factorized"


def test_cli_help_documents_flags(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--port", "--host", "--max-processes", "--factorized", "--latency-ms", "--jitter-ms",
                 "--error-rate", "--drop-rate", "--crash-after", "--seed", "--idle-timeout", "--max-connections",
                 "--lease-idle-timeout"):
        assert flag in out


def test_cli_serves_and_exits_cleanly_on_sigterm():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "leangym.sim.server", "--port", "0",
                             "--max-processes", "2", "--factorized"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        assert found, line + proc.stderr.read()
        s = requests.get(f"{found.group(1)}/status", timeout=T).json()
        assert s["max_processes"] == 2 and s["leangym"]["generation"] == "factorized"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=10)
        assert proc.returncode == 0 and "stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_real_sim_process_round_trip(sim_server):
    """Smoke test against the real simulator, both server generations."""
    for factorized in (False, True):
        srv = sim_server(factorized=factorized, max_processes=1)
        pid = lease(srv.url)
        r = post(srv.url, f"/process/{pid}/proof_from_sorry", {"theorem_with_sorry": THM})
        assert r.status_code == 200
        psid = r.json()["value"]["proof_state_id"]
        path = f"/process/{pid}/proof/{psid}/try_apply_tactic"
        branches = post(srv.url, path, {"tactic": "constructor", "timeout": 1000}).json()["value"]
        assert [len(b["goals"]) for b in branches] == ([1, 1] if factorized else [2])
        done = post(srv.url, path, {"tactic": "exact ⟨hp, hq⟩", "timeout": 1000}).json()["value"]
        assert done == [] if factorized else [b["goals"] for b in done] == [[]]
        r = post(srv.url, path, {"tactic": "nonsense_tactic", "timeout": 1000})
        assert r.status_code == 200 and "error" in r.json()
        r = post(srv.url, f"/process/{pid}/proof/{psid}/apply_tactic", {"tactic": "constructor"})
        assert r.status_code == 200 and len(r.json()["goals"]) == 2
        r = post(srv.url, f"/process/{pid}/proof/987654/try_apply_tactic", {"tactic": "constructor"})
        assert r.status_code == 200 and "987654" in r.json()["error"]  # generations 1-2 answer every failure of try_apply_tactic as HTTP 200
        assert post(srv.url, f"/process/{pid}/return").json() == {"status": "ok"}
        json.dumps(requests.get(srv.url + "/status", timeout=T).json())


def test_a_process_serves_one_request_at_a_time_with_injected_latency(monkeypatch):
    """Two requests that reach one process together: the second starts when the first is done,
    as with a REPL; a request to another process does not wait. (A fake clock: no timing.)"""
    from leangym.sim import server_pool
    from leangym.sim.server_config import SimServerConfig

    now, slept = [0.0], []

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return now[0]

        @staticmethod
        def sleep(seconds: float) -> None:
            slept.append(round(seconds, 6))

        time = staticmethod(lambda: 0.0)

    class Closed:  # the latency waits on the server's "closed" event (so that stop() ends them): record them
        @staticmethod
        def wait(seconds: float) -> bool:
            slept.append(round(seconds, 6))
            return False

    monkeypatch.setattr(server_pool, "time", Clock)
    sim = server_pool.SimLeanServer(SimServerConfig(max_processes=2, latency_ms=50, process_factory=scripted))
    sim._closed = Closed()
    a, b = sim._slots
    for slot in (a, a, b):  # all three arrive at t = 0
        sim.begin_request("/process/0/command", arrived=0.0)
        with sim.faults(slot):
            pass
    assert slept == [0.05, 0.1, 0.05]


def _raw(url: str, request: bytes) -> bytes:
    host, port = url.rsplit("/", 1)[-1].split(":")
    with socket.create_connection((host, int(port)), timeout=T) as s:
        s.sendall(request)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_malformed_requests_get_an_answer_and_the_server_goes_on(srv):
    for length in (b"abc", b"-1"):
        answer = _raw(srv.url, b"POST /process/get HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + b"\r\n\r\n{}")
        assert answer.startswith(b"HTTP/1.1 400") and b"Content-Length must be" in answer, answer[:200]
    answer = _raw(srv.url, b"POST /process/get HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n{}")
    assert answer.startswith(b"HTTP/1.1 413") and b"request body too large" in answer, answer[:200]
    short = _raw(srv.url, b"POST /process/get HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{}")
    assert short.startswith(b"HTTP/1.1 400") and b"ended after 2 of 50 bytes" in short
    r = requests.post(srv.url + "/process/get", data=b"[" * 100_000, timeout=T)
    assert r.status_code == 400 and "Invalid JSON" in r.json()["error"]
    pid = lease(srv.url)
    for body, text in [({"tactic": 5}, "'tactic' must be a string, got int"),
                       ({"tactic": None}, "'tactic' must be a string, got NoneType"),
                       ({"tactic": "skip", "timeout": "soon"}, "'timeout' must be a finite number")]:
        r = post(srv.url, f"/process/{pid}/proof/0/try_apply_tactic", body)
        assert r.status_code == 200 and text in r.json()["error"], r.json()["error"]  # generations 1-2 answer every failure of try_apply_tactic as HTTP 200
    r = requests.post(srv.url + "/process/get", data=b'{"timeout": Infinity}', timeout=T)
    assert r.status_code == 500 and "'timeout' must be a finite number" in r.json()["error"]
    assert requests.get(srv.url + "/status", timeout=T).status_code == 200


def test_a_waiter_that_left_does_not_take_a_process(srv):
    """A client that gave up on a blocking /process/get must not leave a lease nobody will return."""
    pids = [lease(srv.url), lease(srv.url)]  # the pool (2) is empty now
    host, port = srv.url.rsplit("/", 1)[-1].split(":")
    waiter = socket.create_connection((host, int(port)), timeout=T)
    body = b'{"blocking": true, "timeout": 30}'
    waiter.sendall(b"POST /process/get HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    wait_for_status(srv.url, lambda s: waiting_gets(s) == 1, "waiting /process/get")  # it waits now
    _leave(waiter)  # ... and gives up
    post(srv.url, f"/process/{pids[0]}/return")
    # The waiter's request ends (it took the process, saw its client gone, gave it back) ...
    s = wait_for_status(srv.url, lambda s: waiting_gets(s) == 0, "end of the waiter's /process/get")
    # ... and only the lease still held is out.
    assert s["used_processes"] == 1 and [x["process_id"] for x in s["leangym"]["leases"]] == [pids[1]]


def _leave(sock: socket.socket) -> None:
    """Close ``sock`` once the server's end has seen it go (its FIN acknowledged), where that can be told."""
    sock.shutdown(socket.SHUT_WR)
    tcp_info = getattr(socket, "TCP_INFO", None)  # Linux: the first byte of struct tcp_info is the TCP state
    if tcp_info is not None:
        fin_wait2 = 5  # our FIN was acknowledged: the server's recv() now reads end-of-stream
        deadline = time.monotonic() + T
        while sock.getsockopt(socket.IPPROTO_TCP, tcp_info, 8)[0] != fin_wait2:
            assert time.monotonic() < deadline, "the server never acknowledged the client's close"
            time.sleep(0.005)
    sock.close()
