"""The simulated server answers every request it can, whatever the request holds: lone surrogates,
over-long digit strings and numerals, chunked or oversized bodies, GET bodies, half-closed clients;
and its memory stays bounded (the tactic-parse cache, bodies in flight). Waits are bounds, not timings."""
from __future__ import annotations

import gc
import json
import socket
import threading
import time
import tracemalloc

import pytest
import requests

from conftest import ScriptedProcess, scripted
from raw_http import read_answer
from leangym.sim import server_http, server_request
from leangym.sim.process import SimProcess
from leangym.sim.server_config import SimServerConfig
from leangym.sim.server_pool import SimLeanServer
from leangym.sim.server_request import MAX_REQUEST_BODY, BodyBudget, parse_fields
from leangym.sim.tactic_syntax import parse_tactic_block
from leangym.sim.text_cache import text_cache

T = 5  # bound on every wait (s)
BIG = "1" * 5000  # a numeral past Python's int-conversion limit (4300 digits)
LONG_ID = "7" * 5000


def _connect(srv) -> socket.socket:
    return socket.create_connection(("127.0.0.1", srv.port), timeout=T)


def _request(method: str, path: str, body: bytes = b"", version: str = "HTTP/1.1", headers: str = "",
             length: bool = True) -> bytes:
    head = f"{method} {path} {version}\r\nHost: x\r\n{headers}"
    if length:
        head += f"Content-Length: {len(body)}\r\n"
    return (head + "\r\n").encode("latin-1") + body


def _exchange(srv, raw: bytes) -> tuple[int, dict]:
    with _connect(srv) as s:
        s.sendall(raw)
        return read_answer(s)[:2]


def _rest(s: socket.socket) -> bytes:
    """Everything ``s`` still receives until the server closes it (reset counts as closed)."""
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out


def _lease(url: str) -> int:
    return requests.post(url + "/process/get", json={"blocking": False}, timeout=T).json()["process_id"]


def _root(url: str, pid: int) -> int:
    r = requests.post(f"{url}/process/{pid}/proof_from_sorry",
                      json={"theorem_with_sorry": "theorem t (p : Prop) (hp : p) : p := by sorry"}, timeout=T)
    return r.json()["value"]["proof_state_id"]


# ---------------------------------------------------------------------- D1: answers always encode


@pytest.mark.parametrize("factorized", [False, True])
def test_a_lone_surrogate_in_any_lean_endpoint_gets_anread_answer(sim_server, factorized):
    srv = sim_server(factorized=factorized, max_processes=1)
    pid = _lease(srv.url)
    psid = _root(srv.url, pid)
    bad = "exact \ud800"  # valid JSON ("\ud800"), not encodable as UTF-8; Lean's error echoes it
    calls = [(f"/process/{pid}/proof/{psid}/try_apply_tactic", {"tactic": bad}, 200),
             (f"/process/{pid}/proof/{psid}/apply_tactic", {"tactic": bad}, 500),
             (f"/process/{pid}/command", {"command": bad}, 200),
             (f"/process/{pid}/proof_from_sorry", {"theorem_with_sorry": f"theorem t : {bad} := by sorry"}, 200)]
    for path, body, code in calls:
        r = requests.post(srv.url + path, json=body, timeout=T)
        assert r.status_code == code, (path, r.content[:300])
        assert "\ud800" in json.dumps(r.json(), ensure_ascii=False), path  # the text comes back, escaped
    assert requests.get(srv.url + "/status", timeout=T).json()["used_processes"] == 1


class _Unencodable(ScriptedProcess):
    def command(self, source):
        return {"env": object()} if source == "object" else {"env": 1, "messages": [{"data": "\udfff"}]}


def test_an_answer_that_cannot_be_encoded_is_still_answered(sim_server):
    srv = sim_server(process_factory=_Unencodable, max_processes=1)
    pid = _lease(srv.url)
    r = requests.post(f"{srv.url}/process/{pid}/command", json={"command": "object"}, timeout=T)
    assert r.status_code == 500 and "answer not encodable as JSON" in r.json()["error"]
    r = requests.post(f"{srv.url}/process/{pid}/command", json={"command": "surrogate"}, timeout=T)
    assert r.status_code == 200 and r.json()["messages"][0]["data"] == "\udfff"


def test_a_failure_outside_the_endpoints_is_answered_with_a_500(sim_server, monkeypatch):
    srv = sim_server(process_factory=scripted)

    def broken(raw):
        raise MemoryError("no memory for this body")
    monkeypatch.setattr(server_http, "parse_fields", broken)
    with _connect(srv) as s:
        s.sendall(_request("POST", "/process/get", b"{}"))
        code, body, head = read_answer(s)
        assert code == 500 and "MemoryError: no memory for this body" in body["error"]
        assert b"Connection: close" in head and _rest(s) == b""


# ---------------------------------------------------------------------- D2: long digit strings


def test_overlong_ids_are_unknown_ids_and_overlong_lengths_too_large(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=1)
    pid = _lease(srv.url)
    code, body = _exchange(srv, _request("POST", f"/process/{LONG_ID}/return", b"{}"))
    assert code == 500 and body["error"] == "Process 777777777777…(5000 digits) not found"
    code, body = _exchange(srv, _request("POST", f"/process/{pid}/proof/{LONG_ID}/try_apply_tactic",
                                         b'{"tactic": "done"}'))
    assert code == 200 and body["error"] == f"Proof state 777777777777…(5000 digits) not found in process {pid}"  # generations 1-2 answer every failure of try_apply_tactic as HTTP 200
    code, body = _exchange(srv, b"POST /process/get HTTP/1.1\r\nHost: x\r\nContent-Length: " + LONG_ID.encode()
                           + b"\r\n\r\n{}")
    assert code == 413 and "request body too large" in body["error"]
    assert _exchange(srv, _request("GET", "/status"))[0] == 200


# ---------------------------------------------------------------------- D3: chunked bodies


def test_chunked_bodies_are_refused_and_their_framing_is_never_run_as_requests(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=1)
    smuggled = _request("POST", "/process/get", b'{"blocking": false}')
    for path, te in [("/process/get", "Transfer-Encoding: chunked\r\n"), ("/nope", "Transfer-Encoding: chunked\r\n"),
                     ("/process/get", "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n")]:
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(smuggled), smuggled) + smuggled  # also one right after it
        with _connect(srv) as s:
            s.sendall(_request("POST", path, body, headers=te, length=False))
            code, answer, head = read_answer(s)
            assert code == 411 and "Content-Length" in answer["error"] and b"Connection: close" in head
            assert b"HTTP/1.1" not in _rest(s)  # one answer, then closed: nothing else was run
    assert srv.server.status()["used_processes"] == 0 and srv.server.request_count == 0


def test_ambiguous_body_lengths_are_refused(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=1)
    smuggled = _request("POST", "/process/get", b'{"blocking": false}')
    for headers, why in [("Content-Length: 0\r\nContent-Length: %d\r\n" % len(smuggled), "two different Content-Length"),
                         ("Content-Length : 0\r\n", "whitespace between the header name")]:
        with _connect(srv) as s:
            s.sendall(_request("POST", "/status", smuggled, headers=headers, length=False))
            code, answer, _ = read_answer(s)
            assert code == 400 and why in answer["error"]
            assert b"HTTP/1.1" not in _rest(s)
    assert srv.server.status()["used_processes"] == 0
    assert _exchange(srv, _request("POST", "/process/get", b"{}", headers="Content-Length: 2\r\n" * 2,
                                   length=False)) == (200, {"process_id": 1})  # the same length twice is fine


# ---------------------------------------------------------------------- D4: over-long numerals


@pytest.mark.parametrize("factorized", [False, True])
def test_overlong_numerals_are_lean_rejections_not_server_failures(sim_server, factorized):
    srv = sim_server(factorized=factorized, max_processes=1)
    pid = _lease(srv.url)
    r = requests.post(f"{srv.url}/process/{pid}/proof_from_sorry",
                      json={"theorem_with_sorry": f"theorem t : {BIG} = {BIG} := by sorry"}, timeout=T)
    assert r.status_code == 200 and "numeral of 5000 digits is too long for the simulator" in r.json()["error"]
    psid = _root(srv.url, pid)
    for tactic in (f"have h : {BIG} = {BIG} := rfl\nexact hp", f"set_option maxHeartbeats {BIG} in exact hp"):
        r = requests.post(f"{srv.url}/process/{pid}/proof/{psid}/try_apply_tactic", json={"tactic": tactic}, timeout=T)
        assert r.status_code == 200 and "(sim) numeral of 5000 digits is too long" in r.json()["error"], tactic
    r = requests.post(f"{srv.url}/process/{pid}/command",
                      json={"command": f"theorem u : {BIG} = {BIG} := by rfl"}, timeout=T)
    assert r.status_code == 200 and "too long for the simulator" in r.json()["messages"][0]["data"]
    # Leading zeros are not digits of the value, as in Lean: still a number the simulator takes.
    r = requests.post(f"{srv.url}/process/{pid}/proof/{psid}/try_apply_tactic",
                      json={"tactic": f"have h : {'0' * 5000}1 = 1 := rfl\nexact hp"}, timeout=T)
    assert r.status_code == 200 and "value" in r.json(), r.json()


def test_a_kernel_failure_rejects_the_theorem_or_tactic_instead_of_failing_the_server(monkeypatch):
    p = SimProcess()
    psid = p.proof_from_sorry("theorem t (p : Prop) (hp : p) : p := by sorry")["value"]["proof_state_id"]

    def broken(*args, **kwargs):
        raise ValueError("kernel bug")
    monkeypatch.setattr(p.kernel, "run_command", broken)
    failed = {"error": "(sim) internal error: ValueError: kernel bug"}
    assert p.proof_from_sorry("theorem u : True := by sorry") == failed
    monkeypatch.setattr("leangym.sim.process.parse_tactic_block", broken)
    assert "(sim) internal error: ValueError: kernel bug" in p.try_apply_tactic(psid, "exact hp")["error"]


# ---------------------------------------------------------------------- D5: the tactic-parse cache


def test_the_text_cache_is_bounded_in_characters_and_entries():
    calls = []

    @text_cache(max_text=10, max_chars=40, max_entries=3)
    def parse(text):
        calls.append(text)
        if text == "bad":
            raise ValueError(text)
        return (text,)

    assert parse("a") is parse("a") and calls == ["a"]  # cached: one object, one call
    parse("x" * 11)
    parse("x" * 11)
    assert calls.count("x" * 11) == 2  # too long to cache
    for _ in range(2):
        with pytest.raises(ValueError):
            parse("bad")
    assert calls.count("bad") == 2  # failures are not cached
    for t in ("b", "c", "d"):  # 3 entries at most: "a", the least recently used, goes
        parse(t)
    assert parse.cache_info().entries == 3
    parse("a")
    assert calls.count("a") == 2
    parse.cache_clear()
    for t in ("0123456789", "1123456789", "2123456789", "3123456789"):  # 14 counted characters each
        parse(t)
    info = parse.cache_info()
    assert info.entries == 2 and info.chars == 20  # (max_chars 40: two entries)


def test_long_tactics_do_not_fill_the_parse_cache():
    proof = "\n".join(f"have h{k} : a + {k} = {k} + a := by omega" for k in range(45))  # ~1.7 kB, valid
    parse_tactic_block("exact h0")  # (the module is loaded and its cache set up before measuring)
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(200):
            parse_tactic_block(proof + f"\nexact h0 -- {i}")
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 2_000_000, f"{kept} bytes kept after parsing 200 distinct 1.7 kB tactics"  # (was ~78 kB each)


def test_short_tactics_are_still_cached():
    parse_tactic_block.cache_clear()
    first = parse_tactic_block("intro h\nexact h")
    assert parse_tactic_block("intro h\nexact h") is first
    assert parse_tactic_block.cache_info().hits == 1


# ---------------------------------------------------------------------- D6, D7: half-close, GET bodies


def test_a_half_closed_client_gets_its_immediate_lease(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=2)
    for body, version in [(b'{"blocking": false}', "HTTP/1.1"), (b'{"blocking": true, "timeout": 5}', "HTTP/1.0")]:
        with _connect(srv) as s:
            s.sendall(_request("POST", "/process/get", body, version=version))
            s.shutdown(socket.SHUT_WR)  # sent everything; still reading ("nc -N", HTTP/1.0 tools)
            code, answer, _ = read_answer(s)
            assert code == 200 and isinstance(answer["process_id"], int)
    assert srv.server.status()["used_processes"] == 2


def test_a_get_with_a_body_keeps_the_connection_in_step(sim_server):
    srv = sim_server(process_factory=scripted)
    with _connect(srv) as s:
        s.sendall(_request("GET", "/status", b"hello") + _request("GET", "/status"))
        assert read_answer(s)[0] == 200
        assert read_answer(s)[0] == 200


# ---------------------------------------------------------------------- D8: bodies in memory


def test_an_oversized_body_gets_a_413_the_client_can_read(sim_server):
    srv = sim_server(process_factory=scripted)
    with _connect(srv) as s:
        s.sendall(_request("POST", "/process/get", length=False,
                           headers=f"Content-Length: {MAX_REQUEST_BODY + 1}\r\n"))
        sender = threading.Thread(target=lambda: _send_quietly(s, b"x" * 2**20), daemon=True)
        sender.start()  # the client goes on sending while the server refuses
        code, body, head = read_answer(s)
        assert code == 413 and "request body too large" in body["error"] and b"Connection: close" in head
        sender.join(T)


def _send_quietly(s: socket.socket, data: bytes) -> None:
    try:
        s.sendall(data)
    except OSError:
        pass


def test_only_the_protocols_fields_are_kept():
    raw = json.dumps({"blocking": False, "timeout": 3, "tactic": "rfl", "pad": [{}] * 1000}).encode()
    assert parse_fields(raw) == {"blocking": False, "timeout": 3, "tactic": "rfl"}
    assert parse_fields(b" ") == {}
    for bad in (b"[1]", b"{", b"\xff"):
        with pytest.raises(ValueError, match="Invalid JSON body"):
            parse_fields(bad)


def test_a_padded_body_is_not_kept_while_its_request_waits(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=1)
    _lease(srv.url)  # the pool is empty: the gets below wait
    padded = json.dumps({"blocking": True, "timeout": T, "pad": [{}] * 20_000}).encode()  # 60 kB -> ~1.5 MB parsed
    tracemalloc.start()
    waiters = []
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(8):
            s = _connect(srv)
            s.sendall(_request("POST", "/process/get", padded))
            waiters.append(s)
        deadline = time.monotonic() + T
        while len(srv.server.active_requests()) < 8:
            assert time.monotonic() < deadline, "the gets did not start waiting"
            time.sleep(0.01)
        time.sleep(0.1)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        for s in waiters:
            s.close()
    assert kept < 3_000_000, f"{kept} bytes held by 8 waiting requests with 60 kB padded bodies"


def test_large_bodies_in_flight_share_a_budget_and_small_ones_pass(sim_server):
    srv = sim_server(process_factory=scripted)
    srv._httpd.bodies = BodyBudget(capacity=200_000, wait=0.2)
    large = server_request.SMALL_BODY + 1
    with _connect(srv) as slow:  # announces a large body and sends it slowly: holds budget
        slow.sendall(_request("POST", "/process/get", length=False, headers=f"Content-Length: {150_000}\r\n"))
        deadline = time.monotonic() + T
        while srv._httpd.bodies.free == 200_000:
            assert time.monotonic() < deadline, "the slow body took no budget"
            time.sleep(0.01)
        with _connect(srv) as s:
            s.sendall(_request("POST", "/process/get", b" " * (large - 2) + b"{}"))
            code, body, head = read_answer(s)
            assert code == 503 and b"Connection: close" in head
        assert _exchange(srv, _request("POST", "/process/get", b'{"blocking": false}')) == (200, {"process_id": 1})
    deadline = time.monotonic() + T
    while srv._httpd.bodies.free != 200_000:  # given back once the slow request ended
        assert time.monotonic() < deadline, "the budget was not given back"
        time.sleep(0.01)
    assert _exchange(srv, _request("POST", "/process/get", b" " * (large - 2) + b"{}"))[0] == 200


# ---------------------------------------------------------------------- nitpicks fixed on the way


def test_a_get_with_a_huge_timeout_waits_instead_of_failing():
    sim = SimLeanServer(SimServerConfig(max_processes=1, process_factory=scripted))
    held = sim.get_process(False, None)
    got = []
    waiter = threading.Thread(target=lambda: got.append(sim.get_process(True, 1e12)))  # past threading.TIMEOUT_MAX
    waiter.start()
    time.sleep(0.1)
    sim.return_process(held)
    waiter.join(T)
    assert got == [2]


def test_an_http_1_0_keep_alive_answer_says_keep_alive(sim_server):
    srv = sim_server(process_factory=scripted)
    with _connect(srv) as s:
        s.sendall(_request("GET", "/status", version="HTTP/1.0", headers="Connection: keep-alive\r\n"))
        assert b"Connection: keep-alive" in read_answer(s)[2]
        s.sendall(_request("GET", "/status", version="HTTP/1.0"))
        assert b"Connection: close" in read_answer(s)[2]
