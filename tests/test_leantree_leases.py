"""HttpLease: a leased Lean process is given back however its holder ends (close, error, GC, exit, SIGTERM)."""
from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import scripted, used_processes as used
from leangym.backends import lease as lease_module
from leangym.backends.leantree import HttpLease, LeanTreeClient, live_leases
from leangym.backends.transport import ConnectFailed
from leangym.backends.types import (CommandResult, LeanProcess, NoProcessAvailable, Outcome, ProofState, ServerError,
                                    ServerUnavailable)

THM = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
REPO = Path(__file__).resolve().parents[1]


def child_env() -> dict[str, str]:
    """The environment for a child interpreter that imports this checkout's leangym (PYTHONPATH
    first), not whichever one is installed."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))


def test_lease_is_a_lean_process(scripted_client):
    lease = scripted_client.lease()
    try:
        import inspect

        assert isinstance(lease, HttpLease)
        # LeanProcess is a (not runtime-checkable) Protocol: check its members structurally
        methods = sorted(name for name, member in vars(LeanProcess).items()
                         if callable(member) and not name.startswith("_"))
        assert methods == sorted(["start_proof", "apply_tactic", "apply_tactics", "run_command", "identity",
                                  "close"])
        for name in methods:
            assert callable(getattr(lease, name)), name
            wanted = inspect.signature(getattr(LeanProcess, name))
            got = inspect.signature(getattr(HttpLease, name))
            # callable as the Protocol says: its parameters first, same defaults; any extra one optional
            params = list(got.parameters.values())
            shared, extra = params[:len(wanted.parameters)], params[len(wanted.parameters):]
            assert [(p.name, p.default) for p in shared] == [(p.name, p.default)
                                                             for p in wanted.parameters.values()], name
            assert all(p.default is not inspect.Parameter.empty or p.kind is p.VAR_KEYWORD for p in extra), name
        assert set(LeanProcess.__annotations__) == {"process_id", "in_process"}
        assert isinstance(lease.process_id, int)
        assert lease.in_process is False  # its calls wait on a server
        assert isinstance(lease.run_command("#check 1"), CommandResult)
    finally:
        lease.close()


def test_blocking_get_timeout_raises_no_process(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=1)
    client = LeanTreeClient(srv.url)
    with client.lease():
        with pytest.raises(NoProcessAvailable, match="became free within 0.2 s"):
            client.get_process(blocking=True, timeout=0.2)
        with pytest.raises(NoProcessAvailable, match=r"was free \(non-blocking request\)"):  # nothing waited
            client.lease(blocking=False)
    with client.lease() as again:  # the first lease was returned by the with block
        assert again.process_id > 0


def test_lease_close_idempotent_and_on_error(scripted_client):
    lease = scripted_client.lease()
    assert used(scripted_client) == 1 and lease in live_leases()
    lease.close()
    lease.close()
    assert lease.closed and used(scripted_client) == 0 and lease not in live_leases()
    with pytest.raises(ZeroDivisionError):
        with scripted_client.lease():
            assert used(scripted_client) == 1
            1 / 0
    assert used(scripted_client) == 0


def test_a_returned_lease_sends_nothing(scripted_client):
    """Round five: after the return its process id may be another client's (a server may reuse ids)."""
    lease = scripted_client.lease()
    root = lease.start_proof(THM)
    lease.close()
    with pytest.raises(ServerError, match="was returned"):
        lease.start_proof(THM)
    with pytest.raises(ServerError, match="was returned"):
        lease.run_command("#check bad")
    r = lease.apply_tactic(root, "split")
    assert r.outcome is Outcome.SERVER_FAILURE and "was returned" in r.error
    assert [x.outcome for x in lease.apply_tactics(root, ["split", "exact hp"])] == [Outcome.SERVER_FAILURE] * 2


def test_lease_returned_on_gc(scripted_client):
    lease = scripted_client.lease()
    assert used(scripted_client) == 1
    del lease
    gc.collect()
    assert used(scripted_client) == 0


def test_leases_returned_at_exit(scripted_client):
    a, b = scripted_client.lease(), scripted_client.lease()
    assert used(scripted_client) == 2
    lease_module._return_all_leases()  # the atexit hook
    assert a.closed and b.closed and used(scripted_client) == 0


def test_close_never_raises_when_server_gone(scripted_srv):
    client = LeanTreeClient(scripted_srv.url, retries=0)
    lease = client.lease()
    scripted_srv.stop()
    lease.close()  # logged, not raised
    assert lease.closed


def test_stale_lease_after_restart_never_takes_another_clients_process(scripted_srv):
    # A restarted server hands out process ids afresh. Returning a lease from before the
    # restart could return the process another client holds now: the client must not.
    stale_client, other = LeanTreeClient(scripted_srv.url, retries=0), LeanTreeClient(scripted_srv.url)
    stale = stale_client.lease()
    scripted_srv.stop()
    assert stale.apply_tactic(ProofState(stale.process_id, 0, ()), "split").outcome is Outcome.SERVER_FAILURE
    scripted_srv.restart()
    fresh = other.lease()
    assert fresh.process_id == stale.process_id  # the same id, now someone else's
    stale.close()
    assert stale.closed and used(other) == 1
    fresh.start_proof(THM)  # still ours
    fresh.close()
    assert used(other) == 0


def test_a_lease_held_while_the_server_refused_connections_sends_nothing_more(sim_server):
    # Its return is skipped after a refusal (above), for the server may have restarted and given its id
    # to another client; for the same reason it must not go on running tactics and commands there.
    srv = sim_server()
    stale_client, other = LeanTreeClient(srv.url, retries=0), LeanTreeClient(srv.url)
    stale = stale_client.lease()
    root = stale.start_proof("theorem a (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry")
    srv.stop()
    with pytest.raises(ServerUnavailable):
        stale_client.status()
    srv.restart()
    fresh = other.lease()
    assert fresh.process_id == stale.process_id  # the same id, now someone else's
    r = stale.apply_tactic(root, "constructor")
    assert r.outcome is Outcome.SERVER_FAILURE and "refused connections while process" in r.error, r
    assert all(x.outcome is Outcome.SERVER_FAILURE for x in stale.apply_tactics(root, ["constructor", "omega"]))
    theorem = "theorem b (x : Nat) : x + 0 = x := by sorry"
    for call in (lambda: stale.start_proof(theorem), lambda: stale.run_command("theorem planted : True := trivial")):
        with pytest.raises(ServerError, match="lease a new one"):
            call()
    fresh.start_proof(theorem)  # the stale lease declared nothing in this process
    assert fresh.run_command("example : True := planted").errors
    fresh.close()
    stale.close()


def test_a_lease_refuses_a_state_of_another_process(sim_server):
    # Below the session's own check: a state id sent to another process names some unrelated state there.
    srv = sim_server()
    client = LeanTreeClient(srv.url)
    with client.lease() as first, client.lease() as second:
        hard = first.start_proof("theorem a (n : Nat) (h : n + 1 = 0) : False := by sorry")
        second.start_proof("theorem b : 2 + 2 = 4 := by sorry")
        for call in (lambda: second.apply_tactic(hard, "rfl"), lambda: second.apply_tactics(hard, ["rfl"])):
            with pytest.raises(ValueError, match="made by Lean process .* not by this lease's process"):
                call()
        assert first.apply_tactic(hard, "rfl").outcome is Outcome.REJECTED


def test_apply_tactics_in_order_one_request_at_a_time(sim_server):
    # The protocol does not say that a server queues concurrent requests to one REPL: a lease
    # sends one at a time, also when several threads share it.
    srv = sim_server(process_factory=scripted, latency_ms=20)
    client = LeanTreeClient(srv.url)
    with client.lease() as lease:
        root = lease.start_proof(THM)
        tactics = ["split", "nonsense", "done", "intro h", "slow", "split", "done", "bogus"]
        results = lease.apply_tactics(root, tactics)
        assert [r.tactic for r in results] == tactics
        assert [r.outcome for r in results] == [
            Outcome.PROGRESS, Outcome.REJECTED, Outcome.PROVED, Outcome.PROGRESS,
            Outcome.TIMEOUT, Outcome.PROGRESS, Outcome.PROVED, Outcome.REJECTED]
        assert lease.apply_tactics(root, []) == []
        threads = [threading.Thread(target=lease.apply_tactics, args=(root, ["split", "done"])) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert srv.server.peak_active == 1


def test_a_connect_timeout_does_not_keep_a_lease_from_returning(scripted_client, monkeypatch):
    # Only a refused connection looks like a server that went down (and may restart with fresh
    # ids); a connect timeout may be a busy server's full backlog, and the lease must go back.
    lease = scripted_client.lease()
    real = scripted_client._transport.exchange
    calls = []

    def flaky(*a, **kw):
        calls.append(a[1])
        if len(calls) == 1:
            raise ConnectFailed("ConnectTimeoutError", refused=False)
        return real(*a, **kw)

    monkeypatch.setattr(scripted_client._transport, "exchange", flaky)
    r = lease.apply_tactic(ProofState(lease.process_id, 0, ()), "split")  # retried after the connect timeout
    assert len(calls) == 2 and r.error.endswith(f"Proof state 0 not found in process {lease.process_id}")
    lease.close()
    assert calls[-1].endswith("/return") and used(scripted_client) == 0


def test_concurrent_clients_from_threads(scripted_srv):
    client = LeanTreeClient(scripted_srv.url)
    errors: list[BaseException] = []

    def work():
        try:
            with client.lease(timeout=10) as lease:
                root = lease.start_proof(THM)
                for _ in range(5):
                    assert lease.apply_tactic(root, "split").outcome is Outcome.PROGRESS
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(6)]  # 6 workers, 2 processes
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and used(client) == 0


def test_lease_returned_when_interpreter_exits(scripted_srv, scripted_client):
    code = ("from leangym.backends.leantree import LeanTreeClient\n"
            f"lease = LeanTreeClient({scripted_srv.url!r}).lease()\n"
            "import leangym.backends.leantree as m\n"
            "m._KEEP = lease  # keep it alive until exit: only the atexit hook can return it\n"
            "print(lease.process_id)\n"
            "print(m.__file__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                         env=child_env(), cwd=REPO)
    assert out.returncode == 0, out.stderr
    pid, module = out.stdout.splitlines()
    assert int(pid) > 0 and module == str(REPO / "leangym" / "backends" / "leantree.py")  # this checkout's
    assert used(scripted_client) == 0


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_sigterm_gives_the_leases_back(sim_server, sig):
    """``kill`` / ``timeout`` / a batch scheduler stop a client with SIGTERM, a closed terminal or ssh
    session with SIGHUP: its leases still go back."""
    sig = getattr(signal, sig)
    srv = sim_server(max_processes=2)
    script = ("import sys, time\nfrom leangym.backends.leantree import LeanTreeClient\n"
              "lease = LeanTreeClient(sys.argv[1]).lease()\nprint('leased', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, srv.url], stdout=subprocess.PIPE, text=True,
                            env=child_env(), cwd=REPO)
    try:
        assert proc.stdout.readline().strip() == "leased"
        assert LeanTreeClient(srv.url).status()["used_processes"] == 1
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 128 + sig
    finally:
        proc.kill()
    assert LeanTreeClient(srv.url).status()["used_processes"] == 0


def test_after_a_read_timeout_the_rest_of_a_batch_is_not_sent(sim_server):
    # Against a hung server each tactic would wait a whole read timeout: one is enough to know.
    srv = sim_server(process_factory=scripted, latency_ms=1500)
    client = LeanTreeClient(srv.url, read_timeout=0.3, retries=0)
    pid = client.get_process()
    lease = HttpLease(client, pid)
    before = srv.server.request_count
    results = lease.apply_tactics(ProofState(pid, 0, ()), ["split", "done", "intro h"])
    assert [r.outcome for r in results] == [Outcome.SERVER_FAILURE] * 3
    assert "read timeout" in results[0].error and results[1].error.startswith("not sent")
    assert srv.server.request_count - before == 1
    lease.close(quick=True)


def test_leases_left_at_exit_are_given_back_all_at_once(monkeypatch):
    # A hung server costs each return a short timeout: one after another, 64 leases would hold
    # the exit up for minutes. The returns must overlap (three that wait for each other finish).
    barrier, calls = threading.Barrier(3, timeout=10), []

    class Lease:
        def close(self, *, quick=False):
            calls.append(quick)
            barrier.wait()

    monkeypatch.setattr(lease_module, "live_leases", lambda: [Lease(), Lease(), Lease()])
    lease_module._return_all_leases()
    assert calls == [True] * 3 and not barrier.broken


def test_a_state_of_another_process_is_refused_not_sent(sim_server):
    """Proof-state ids mean something only to the process that made them (the protocol): a session
    refuses a state of another lease (say, of an episode before a reset) instead of sending its id,
    which would name some unrelated state of its own process."""
    from leangym.session import ProofSession

    srv = sim_server()
    client = LeanTreeClient(srv.url)
    with client.lease() as first, client.lease() as second:
        old = ProofSession(first, "theorem a (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry")
        new = ProofSession(second, "theorem b (x : Nat) : x + 0 = x := by sorry")
        assert old.root.process_id != new.root.process_id
        with pytest.raises(ValueError, match="made by Lean process .* not by this session's process"):
            new.apply(old.root, "constructor")
        assert new.stats.lean_calls == 0  # nothing was sent or charged
        assert new.apply(new.root, "omega").outcome is Outcome.PROVED  # the session goes on


def test_ctrl_c_while_a_lease_request_is_out_leaks_no_process(sim_server):
    """The server leases a process while the client is interrupted: the answer must not be dropped with
    the interrupt (nobody else knows the id), so the client gives that process back."""
    srv = sim_server(max_processes=1)
    client = LeanTreeClient(srv.url)
    holder = client.lease()  # the pool is empty: the next request waits for this one
    main = threading.get_ident()
    threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
    threading.Timer(0.8, holder.close).start()  # frees the process, which the waiting request then gets
    with pytest.raises(KeyboardInterrupt):
        client.lease(timeout=10)
    _until_settled(srv, client)
    assert used(client) == 0
    # a slow server (no wait for a free process): it leases, then answers a client that left
    real_lease = srv.server.lease

    def slow_lease(*args, **kw):
        time.sleep(0.6)
        return real_lease(*args, **kw)

    srv.server.lease = slow_lease
    threading.Timer(0.2, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        client.lease(timeout=10)
    _until_settled(srv, client)
    assert used(client) == 0


def _until_settled(srv, client) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (used(client) or srv.server.status()["active_requests"]):
        time.sleep(0.05)


def test_a_program_that_exits_on_ctrl_c_during_a_lease_request_gives_the_process_back(sim_server):
    """The give-back of an interrupted lease request runs on a daemon thread: the exit hook waits for it."""
    srv = sim_server(max_processes=1)
    real_lease = srv.server.lease

    def slow_lease(*args, **kw):  # answered after the client's Ctrl-C, and not late enough for the server
        time.sleep(0.5)           # to take it back by itself
        return real_lease(*args, **kw)

    srv.server.lease = slow_lease
    script = ("import os, signal, sys, threading\nfrom leangym.backends.leantree import LeanTreeClient\n"
              "client = LeanTreeClient(sys.argv[1])\n"
              "threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
              "client.lease(timeout=10)\n")
    proc = subprocess.run([sys.executable, "-c", script, srv.url], capture_output=True, text=True, timeout=60,
                          env=child_env(), cwd=REPO)
    assert "KeyboardInterrupt" in proc.stderr
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (used(LeanTreeClient(srv.url)) or srv.server.status()["active_requests"]):
        time.sleep(0.05)
    assert used(LeanTreeClient(srv.url)) == 0


def test_pool_size_reads_only_a_positive_integer() -> None:
    """The benchmark compares its worker count with it: a string or a bool there must read as unknown."""
    from leangym.backends.leantree import pool_size

    assert pool_size({"max_processes": 8}) == 8
    for odd in ("8", True, 0, -1, 2.5, None, [8]):
        assert pool_size({"max_processes": odd}) is None
    assert pool_size({}) is None


def test_a_rejected_tactic_carries_leans_own_message() -> None:
    """LeanTree wraps Lean's messages as `REPL returned error messages: [...]` (JSON); info["error"] is
    Lean's text, as the README says, which a policy reading its errors can use. Other texts stay whole."""
    from leangym.backends.types import Outcome, parse_tactic_reply

    wrapped = ('REPL returned error messages: [{"severity": "error", "pos": {"line": 1, "column": 6}, '
               '"data": "unknown identifier \'hz\'"}]')
    r = parse_tactic_reply(1, "exact hz", {"error": wrapped})
    assert r.outcome is Outcome.REJECTED and r.error == "unknown identifier 'hz'"
    r = parse_tactic_reply(1, "exact hz", {"error": "Step verification error: goals changed"})
    assert r.outcome is Outcome.REJECTED and r.error == "Step verification error: goals changed"
