"""LeanTreeClient / HttpLease against the simulated server (and a few hand-made bad servers)."""
from __future__ import annotations

import base64
import json
import pickle
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import ScriptedProcess, scripted, used_processes as used
from leangym.backends.leantree import HttpStatusError, LeanTreeClient
from leangym.backends.types import (
    CommandResult,
    LeanError,
    Outcome,
    ProofState,
    ServerError,
    ServerUnavailable,
    parse_proof_state,
    parse_tactic_reply,
)

THM = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"


@pytest.fixture
def srv(scripted_srv):
    return scripted_srv


@pytest.fixture
def client(scripted_client):
    return scripted_client


@pytest.fixture
def refused_url():
    """The URL of a loopback port that refuses connections: bound for the whole test, never listening
    (so no other program can start listening there meanwhile)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


# ---------------------------------------------------------------------- endpoints


def test_status_and_process_lifecycle(client):
    s = client.status()
    assert s["max_processes"] == 2 and s["available_processes"] == 2
    pid = client.get_process()
    assert used(client) == 1
    assert client.return_process(pid) == {"status": "ok"}
    assert client.return_process(pid) == {"status": "ok", "already_returned": True}
    assert used(client) == 0


def test_command(client):
    pid = client.get_process()
    res = client.command(pid, "theorem x : 1 = 1 := by sorry")
    assert isinstance(res, CommandResult) and res.uses_sorry and not res.errors and res.env == 1
    res = client.command(pid, "#check bad")
    assert res.errors[0].text == "unknown identifier 'bad'" and res.errors[0].line == 1
    client.return_process(pid)


def test_proof_from_sorry(client):
    pid = client.get_process()
    root = client.proof_from_sorry(pid, THM)
    assert isinstance(root, ProofState) and root.process_id == pid and root.proof_state_id == 0
    assert root.text == "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q"
    with pytest.raises(LeanError, match="No sorries"):
        client.proof_from_sorry(pid, "theorem x : True := trivial")
    client.return_process(pid)


@pytest.mark.parametrize("gen", [1, 2, 3])
def test_try_apply_tactic_every_generation(sim_server, gen):
    factorized = gen >= 2
    srv = sim_server(process_factory=scripted, generation=gen)
    client = LeanTreeClient(srv.url)
    name = {1: "single-branch", 2: "factorized", 3: "branch-api"}[gen]
    with client.lease() as lease:
        assert lease.identity().generation == name  # (the simulator's claim in /status, before any start)
        root = lease.start_proof(THM)
        r = lease.apply_tactic(root, "split")
        assert r.outcome is Outcome.PROGRESS and r.ok and r.error is None
        assert [g.target for g in r.goals] == ["p", "q"]
        assert len(r.states) == (2 if factorized else 1)
        assert r.states[0].goals[0].tag == "left"
        done = lease.apply_tactic(r.states[0], "done")
        assert done.outcome is Outcome.PROVED and done.states == ()
        assert client.generation == name  # inferred
        rej = lease.apply_tactic(root, "nonsense")
        assert rej.outcome is Outcome.REJECTED and "unknown tactic" in rej.error
        assert lease.apply_tactic(root, "slow").outcome is Outcome.TIMEOUT
        # the root state is immutable: still usable
        assert lease.apply_tactic(root, "intro h").outcome is Outcome.PROGRESS


def test_generation_inference_starts_unknown(srv):
    client = LeanTreeClient(srv.url)
    assert client.generation == "unknown"
    with client.lease() as lease:
        root = lease.start_proof(THM)
        # the start said proof_state_id (generations 1-2), and is_valid_source answered 404: generation 1
        assert client.generation == "single-branch"
        # a client that did not see the start learns it from tactic replies
        other = LeanTreeClient(srv.url)
        other.try_apply_tactic(lease.process_id, root, "intro h")  # one branch with one goal: no information
        assert other.generation == "unknown"
        other.try_apply_tactic(lease.process_id, root, "split")  # one branch holding several goals: a factorizing
        assert other.generation == "unknown"  # server keeps goals that share metavariables together
        other.try_apply_tactic(lease.process_id, root, "done")  # a closed proof as one empty branch: decisive
        assert other.generation == "single-branch"
        ident = lease.identity()
        assert ident.url == srv.url and ident.info["max_processes"] == 2


def test_identity_when_server_down(srv):
    client = LeanTreeClient(srv.url, retries=0)
    srv.stop()
    ident = client.identity()
    assert ident.generation == "unknown" and ident.info == {} and ident.url == srv.url


@pytest.mark.parametrize("factorized", [False, True])
def test_apply_tactic_endpoint(sim_server, factorized):
    srv = sim_server(process_factory=scripted, factorized=factorized)
    client = LeanTreeClient(srv.url)
    pid = client.get_process()
    root = client.proof_from_sorry(pid, THM)
    r = client.apply_tactic(pid, root, "split")
    assert r.outcome is Outcome.PROGRESS and len(r.states) == 1 and [g.target for g in r.goals] == ["p", "q"]
    assert client.apply_tactic(pid, root, "done").outcome is Outcome.PROVED
    rej = client.apply_tactic(pid, root, "nonsense")
    assert rej.outcome is Outcome.REJECTED and rej.error.startswith("REPL returned error messages")
    assert client.apply_tactic(pid, root, "slow").outcome is Outcome.TIMEOUT
    bad = client.apply_tactic(pid, 77, "split")  # unknown proof state: a server failure
    assert bad.outcome is Outcome.SERVER_FAILURE and "Proof state 77 not found" in bad.error
    client.return_process(pid)


def test_unknown_process_is_server_error(client):
    with pytest.raises(ServerError, match="Process 12345 not found"):
        client.command(12345, "#check 1")
    r = client.try_apply_tactic(12345, 0, "split")
    assert r.outcome is Outcome.SERVER_FAILURE and "Process 12345 not found" in r.error


def test_404_is_server_error(srv):
    c = LeanTreeClient(srv.url + "/nowhere")
    with pytest.raises(ServerError, match="404.*Not Found") as e:
        c.status()
    assert not isinstance(e.value, ServerUnavailable)


# ---------------------------------------------------------------------- failures


def test_no_server_is_unavailable_with_hint(refused_url):
    url = refused_url
    client = LeanTreeClient(url, connect_timeout=1, retries=1)
    with pytest.raises(ServerUnavailable) as e:
        client.status()
    msg = str(e.value)
    port = url.rsplit(":", 1)[1].strip("/")
    assert url in msg and f"python -m leangym.sim.server --port {port}`" in msg and "leanserver" in msg  # its port
    with pytest.raises(ServerUnavailable):
        client.lease()
    r = client.try_apply_tactic(1, 0, "simp")
    assert r.outcome is Outcome.SERVER_FAILURE and url in r.error


def test_server_crash_mid_use_gives_server_failures(sim_server):
    # get, proof_from_sorry, the generation probe (is_valid_source), 2 tactics
    srv = sim_server(process_factory=scripted, crash_after=5)
    client = LeanTreeClient(srv.url, retries=1)
    lease = client.lease()
    root = lease.start_proof(THM)
    assert lease.apply_tactic(root, "split").outcome is Outcome.PROGRESS
    assert lease.apply_tactic(root, "split").outcome is Outcome.PROGRESS
    r = lease.apply_tactic(root, "split")  # the server crashes here
    assert r.outcome is Outcome.SERVER_FAILURE and r.error
    results = lease.apply_tactics(root, ["split", "done", "intro h"])
    assert [x.outcome for x in results] == [Outcome.SERVER_FAILURE] * 3
    with pytest.raises(ServerError):
        lease.start_proof(THM)
    lease.close()  # no exception
    srv.restart()
    assert client.status()["used_processes"] == 0  # a restarted server forgets every lease


def test_injected_500_and_drop(sim_server):
    srv = sim_server(process_factory=scripted, error_rate=1.0)
    client = LeanTreeClient(srv.url)
    with client.lease() as lease:
        with pytest.raises(ServerError, match="injected fault"):
            lease.start_proof(THM)
        r = lease.apply_tactic(ProofState(lease.process_id, 0, ()), "split")
        assert r.outcome is Outcome.SERVER_FAILURE and "injected fault" in r.error
        with pytest.raises(ServerError, match="injected fault"):
            lease.run_command("#check 1")
    srv = sim_server(process_factory=scripted, drop_rate=1.0)
    client = LeanTreeClient(srv.url, retries=1)
    with client.lease() as lease:
        with pytest.raises(ServerError) as e:
            lease.run_command("#check 1")  # not retried
        assert not isinstance(e.value, ServerUnavailable)
        assert srv.server.request_count == 2  # get + one command: /command is never repeated
        r = lease.apply_tactic(ProofState(lease.process_id, 0, ()), "split")
        assert r.outcome is Outcome.SERVER_FAILURE
        assert srv.server.request_count == 4  # the tactic call was retried once (harmless)


@pytest.fixture
def hung(sim_server):
    """``(server, release)``: a server whose tactic calls hang until ``release`` is set (at the latest
    at teardown, before the server stops: no server thread is left waiting)."""
    release = threading.Event()

    class Hanging(ScriptedProcess):
        def try_apply_tactic(self, proof_state_id, tactic, timeout_ms=1000):
            release.wait(60)
            return super().try_apply_tactic(proof_state_id, tactic, timeout_ms)

    yield sim_server(process_factory=Hanging, max_processes=2), release
    release.set()


def test_read_timeout_is_server_failure(hung):
    srv, release = hung
    with LeanTreeClient(srv.url, read_timeout=0.1) as client:
        pid = client.get_process()
        r = client.try_apply_tactic(pid, 0, "split")
        assert r.outcome is Outcome.SERVER_FAILURE and "timeout" in r.error
        release.set()  # the hung call ends, so the process can be rolled back
        client.return_process(pid)


class _Evil(Exception):
    """An exception whose pickle, when loaded, creates a marker file."""

    def __init__(self, marker: str) -> None:
        super().__init__("evil process failure")
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))  # loading this pickle creates the marker file


class _EvilProcess(ScriptedProcess):
    marker = ""

    def command(self, source):
        raise _Evil(self.marker)

    def try_apply_tactic(self, proof_state_id, tactic, timeout_ms=1000):
        raise _Evil(self.marker)


def test_exception_pickle_is_never_loaded(sim_server, tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    _EvilProcess.marker = str(marker)
    srv = sim_server(process_factory=lambda f: _EvilProcess(f))
    import requests

    pid = LeanTreeClient(srv.url).get_process()
    raw = requests.post(f"{srv.url}/process/{pid}/command", json={"command": "x"}, timeout=5).json()
    assert raw["error"] == "evil process failure" and raw["exception"]
    # sanity: loading that pickle WOULD run code (in a separate place)
    probe = tmp_path / "probe"  # same length as "pwned": the pickle stays valid
    pickle.loads(base64.b64decode(raw["exception"]).replace(str(marker).encode(), str(probe).encode())).close()
    assert probe.exists() and not marker.exists()

    def forbidden(*a, **k):
        raise AssertionError("the client must never unpickle or decode the exception field")

    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(base64, "b64decode", forbidden)
    client = LeanTreeClient(srv.url)
    with pytest.raises(ServerError) as e:
        client.command(pid, "x")
    assert "evil process failure" in str(e.value) and raw["exception"] not in str(e.value)
    assert "Traceback" not in str(e.value)
    r = client.apply_tactic(pid, 0, "split")
    assert r.outcome is Outcome.SERVER_FAILURE and "evil process failure" in r.error
    r = client.try_apply_tactic(pid, 0, "split")  # generation 1 answers it as HTTP 200, without a pickle
    assert r.outcome is Outcome.SERVER_FAILURE and r.error.endswith(": evil process failure")  # not Lean's text
    assert not marker.exists()


class _BadHandler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = b"<html>definitely not json"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET  # noqa: N815

    def log_message(self, *a):
        pass


def test_malformed_json_is_server_error():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _BadHandler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        client = LeanTreeClient(f"http://127.0.0.1:{httpd.server_address[1]}")
        with pytest.raises(ServerError, match="malformed JSON"):
            client.status()
        with pytest.raises(ServerError, match="malformed JSON"):
            client.get_process()
        r = client.try_apply_tactic(1, 0, "simp")
        assert r.outcome is Outcome.SERVER_FAILURE and "malformed" in r.error
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_real_sim_process_through_client(sim_server):
    """Smoke test against the real simulator, both server generations."""
    for factorized in (False, True):
        srv = sim_server(factorized=factorized, max_processes=1)
        client = LeanTreeClient(srv.url)
        with client.lease() as lease:
            root = lease.start_proof(THM)
            assert root.goals and "p ∧ q" in root.text
            results = lease.apply_tactics(root, ["constructor", "exact ⟨hp, hq⟩", "nonsense_tactic", "intro h"])
            assert all(r.outcome is not Outcome.SERVER_FAILURE for r in results), results
            assert results[0].outcome is Outcome.PROGRESS and results[1].outcome is Outcome.PROVED
            assert results[2].outcome is Outcome.REJECTED
            if factorized:
                assert len(results[0].states) == 2
            else:
                assert len(results[0].states) == 1 and len(results[0].goals) == 2
            assert client.generation == ("factorized" if factorized else "single-branch")
            with pytest.raises(LeanError):
                lease.start_proof("theorem x (p : Prop) (hp : p) : p := hp")
        assert json.dumps(client.status())


def test_each_request_is_one_write(client, monkeypatch):
    """Request line, headers and JSON body leave in one send (one syscall, one server wake-up)."""
    writes: list[bytes] = []
    real_sendall = socket.socket.sendall

    def counting_sendall(self, data, *args):
        if threading.current_thread() is threading.main_thread():  # the client's, not the in-process server's
            writes.append(bytes(data))
        return real_sendall(self, data, *args)

    with client.lease() as lease:
        root = lease.start_proof(THM)
        monkeypatch.setattr(socket.socket, "sendall", counting_sendall)
        lease.apply_tactic(root, "constructor")
        monkeypatch.undo()
        assert len(writes) == 1
    head, _, body = writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /process/") and b"Content-Length: %d" % len(body) in head
    assert json.loads(body) == {"tactic": "constructor", "timeout": 1000}


def test_first_call_on_a_new_connection_gets_the_read_timeout(sim_server):
    """A slow first answer on a fresh connection is waited for up to the read timeout
    (not the connect timeout): a blocking /process/get or a slow Lean call comes first."""
    srv = sim_server(process_factory=scripted, latency_ms=600)
    pid = LeanTreeClient(srv.url).get_process()
    fresh = LeanTreeClient(srv.url, connect_timeout=0.2, read_timeout=10)
    assert fresh.proof_from_sorry(pid, THM).proof_state_id == 0


def test_a_command_reply_of_the_wrong_shape_is_a_server_error():
    """The final check's reply: a wrong shape is the server's failure, never a crash of ``step``."""
    from leangym.backends.types import parse_command

    for bad in ({"messages": 7}, {"sorries": 3}, {"messages": [{"pos": [1, 2]}]}, {"messages": ["x"]}, []):
        with pytest.raises(ServerError, match="malformed server reply"):
            parse_command(bad)
    # a position that is not a number is no position (a message of the whole command), not a crash
    m = parse_command({"env": 2, "messages": [{"severity": "info", "pos": {"line": "3", "column": None},
                                                "data": "x"}]})
    assert m.messages[0].line is None and m.messages[0].column is None and m.env == 2


def test_a_command_reply_without_env_is_no_verdict():
    """Only a command the REPL ran (it answers with its ``env``) gives a verdict; an empty or
    failed reply must never read as a clean check."""
    from leangym.backends.types import parse_command

    for reply in ({}, {"sorries": []}, {"messages": []}, {"env": "1"}, {"env": True}):
        with pytest.raises(ServerError, match="malformed server reply"):
            parse_command(reply)
    for reply in ({"message": "Lean error: uncaught exception: out of memory"}, {"error": "no such env"}):
        with pytest.raises(ServerError, match="did not run the command"):
            parse_command(reply)
    # an error next to messages is kept, not dropped
    r = parse_command({"env": 1, "messages": [{"severity": "info", "data": "x"}], "error": "boom"})
    assert [m.text for m in r.errors] == ["boom"]
    assert parse_command({"env": 0}).errors == ()


def test_a_state_without_goals_is_malformed_not_proved():
    for reply in ({"value": [{"proof_state_id": 5}]}, {"value": [{"proof_state_id": 5, "goals": None}]}):
        r = parse_tactic_reply(1, "t", reply)
        assert r.outcome is Outcome.SERVER_FAILURE and "malformed server reply" in r.error
    with pytest.raises(ServerError, match="malformed server reply"):
        parse_proof_state(1, {"proof_state_id": 5})


def test_only_leans_timeout_text_is_a_timeout(scripted_client, monkeypatch):
    assert parse_tactic_reply(1, "t", {"error": "Tactic application timed out."}).outcome is Outcome.TIMEOUT
    assert parse_tactic_reply(1, "t", {"error": "REPL returned error messages: [timed out]"}).outcome \
        is Outcome.REJECTED

    def dead_repl(*a, **kw):  # a server failure whose text happens to say "timed out"
        err = "REPL process 3 died: read from REPL stdout timed out"
        raise HttpStatusError(f"answered HTTP 500: {err}", 500, err)

    monkeypatch.setattr(scripted_client, "_request", dead_repl)
    r = scripted_client.apply_tactic(1, 0, "simp")
    assert r.outcome is Outcome.SERVER_FAILURE and "died" in r.error

    def lean_timeout(*a, **kw):
        raise HttpStatusError("HTTP 500", 500, "Tactic application timed out.")

    monkeypatch.setattr(scripted_client, "_request", lean_timeout)
    assert scripted_client.apply_tactic(1, 0, "simp").outcome is Outcome.TIMEOUT


def test_a_server_failure_names_its_cause(hung):
    srv, _ = hung
    with LeanTreeClient(srv.url, read_timeout=0.3, retries=0) as client:
        pid = client.get_process()
        assert client.try_apply_tactic(pid, 0, "split").cause == "ServerTimeout"
        srv.stop()
        assert client.try_apply_tactic(pid, 0, "split").cause == "ServerUnavailable"


def test_lean_errors_a_server_reports_as_http_500_are_a_failed_command():
    from leangym.backends.types import reported_lean_errors

    errors = [{"severity": "error", "pos": {"line": 2, "column": 2}, "data": "unknown identifier 'foo'"}]
    r = reported_lean_errors("REPL returned error messages: " + json.dumps(errors))
    assert [(m.text, m.line) for m in r.errors] == [("unknown identifier 'foo'", 2)]
    for text in ("REPL process 3 died", "REPL returned error messages: not json",
                 "REPL returned error messages: " + json.dumps([{"severity": "warning", "data": "x"}]),
                 "REPL returned error messages: {}"):
        assert reported_lean_errors(text) is None  # no verdict: stays a server failure


def test_the_final_check_over_a_server_that_answers_lean_errors_with_http_500(sim_server, monkeypatch):
    """LeanTree's server answers a /command that Lean reported errors on with HTTP 500 "REPL returned error
    messages: [...]": a wrong proof is a failed check, not a server failure (which the benchmark counts as
    an infra error, retried on every resume, and the env as a truncation)."""
    from leangym.backends.leantree import HttpLease
    from leangym.session import Budget
    from leangym.soundness import SoundnessPolicy, verify
    from leangym.theorem import Theorem
    from leangym.harness.run import Task, run_attempt

    original = LeanTreeClient._request

    def leantree_like(self, method, path, payload=None, **kw):
        body = original(self, method, path, payload, **kw)
        if path.endswith("/command"):
            errors = [m for m in body.get("messages", []) if m.get("severity") == "error"]
            if errors:
                text = "REPL returned error messages: " + json.dumps(errors)
                raise HttpStatusError(f"answered HTTP 500: {text}", 500, text)
        return body

    monkeypatch.setattr(LeanTreeClient, "_request", leantree_like)
    srv = sim_server()
    thm = Theorem("theorem u (p : Prop) (hp : p) : p := by sorry")
    with LeanTreeClient(srv.url) as client:
        lease = HttpLease(client, client.get_process())
        r = lease.run_command("theorem v (p : Prop) : p := by exact nonsense")
        assert r.errors and "nonsense" in r.errors[0].text
        verdict = verify(lease, thm, "exact nonsense", SoundnessPolicy())
        assert not verdict.ok and not verdict.server_failure and "nonsense" in verdict.error
        assert verify(lease, thm, "exact hp", SoundnessPolicy()).ok  # (a good proof still passes)

        class Wrong:
            def prove(self, theorem, session, budget):
                return "exact nonsense"

        result = run_attempt(Wrong(), lease, Task(thm, 0), Budget(max_lean_calls=4))
        assert result.status == "failed" and "nonsense" in result.verify_error
        lease.close()

