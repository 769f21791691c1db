"""The AlphaProof trainer and search under server faults: a server that is down, hung or gone (the
outage does not count, the search stops), a deadline, a read timeout, Ctrl-C against a hung server.
(Files under faults: test_alphaproof_file_faults.py.)"""
from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from agents.alphaproof import actors as actors_mod
from agents.alphaproof import checkpoint
from agents.alphaproof import search as search_mod
from agents.alphaproof import train as train_mod
from agents.alphaproof.interfaces import Evaluation, per_state
from agents.alphaproof.search import CUT_SHORT, SearchConfig, run_batched_search, run_search
from agents.alphaproof.theorem_source import Task
from leangym.backends.types import Outcome, ServerTimeout, ServerUnavailable, TacticResult
from leangym.session import ProofSession
from leangym.sim.local import LocalProcess
from leangym.theorem import Theorem

TRIVIAL = "theorem triv (p : Prop) (hp : p) : p := by sorry"


def tiny_args(tmp_path, name, **kw):
    base = dict(model_size="tiny", actors=2, iterations=2, sims=2, lean_calls=8, num_tactics=2, batch_size=4, learn_steps=2,
                warmup_steps=0, warmup_theorems=8, eval_lean_calls=8, eval_every=0, eval_size=2, replay_size=1000, sft_mix=0.0,
                logdir=str(tmp_path / name / "tb"), checkpoint_dir=str(tmp_path / name / "ck"),
                seed=3, progress=False, max_tactic_tokens=8)
    base.update(kw)
    return train_mod.Args(**base)


class Proposes:
    """A stand-in for the network: the same tactics everywhere."""

    def __init__(self, *tactics, device="cpu"):
        self.tactics, self.device = tactics, torch.device(device)

    def evaluate(self, states, k):
        return [Evaluation(self.tactics[:n], tuple(-float(i) for i in range(len(self.tactics[:n]))), 0.5)
                for n in per_state(k, len(states))]


class FakeClock:
    """``time`` for the trainer: purely virtual, it starts at a constant and only sleeping moves it on (at once;
    the sleeps are recorded). So how long the machine really takes cannot change what a time limit allows.

    Wherever a run's ``deadline`` goes (the searches compare it with their own module's ``time.monotonic()``),
    that module must read this clock too: :meth:`install`."""

    def __init__(self):
        self.now, self.sleeps = 1000.0, []

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.sleeps.append(s)
        self.now += s
        assert len(self.sleeps) < 100, f"the trainer keeps waiting, its time limit never ends it: {self.sleeps[:8]}"

    def install(self, monkeypatch):
        for module in (train_mod, actors_mod, search_mod):
            monkeypatch.setattr(module, "time", self)
        return self


def _down_between(first_bad: int, is_back):
    """A process factory whose starts from number ``first_bad`` on raise ServerUnavailable until ``is_back()``."""
    starts = {"n": 0}

    def factory(args, deadline=None):
        def new():
            starts["n"] += 1
            if starts["n"] >= first_bad and not is_back():
                raise ServerUnavailable("No LeanTree server answers at http://127.0.0.1:1 (refused)")
            return LocalProcess(factorized=True)
        return new
    return factory


DETERMINISTIC = ("solve_rate", "loss", "policy_loss", "value_loss", "replay_size", "new_rows", "tactic_error_rate")


# ---------------------------------------------------------------------------- 1. a server outage
def test_an_outage_does_not_count_and_the_run_goes_on_as_if_it_never_happened(tmp_path, monkeypatch, capsys):
    straight = train_mod.train(tiny_args(tmp_path, "straight", iterations=3))
    clock = FakeClock().install(monkeypatch)
    # iteration 2's starts (start 3 on) fail until the trainer has waited three times
    monkeypatch.setattr(train_mod, "process_factory", _down_between(3, lambda: len(clock.sleeps) >= 3))
    learned = []
    real_learn = train_mod.learn
    monkeypatch.setattr(train_mod, "learn", lambda *a, **k: learned.append(1) or real_learn(*a, **k))
    out = train_mod.train(tiny_args(tmp_path, "outage", iterations=3))
    assert out["iteration"] == 3 and len(out["history"]) == 3 and len(learned) == 3
    assert clock.sleeps == [1, 2, 4]  # exponential backoff
    err = [line for line in capsys.readouterr().err.splitlines() if "unavailable" in line]
    assert [line.split("retrying in ")[1] for line in err] == ["1s", "2s", "4s"]  # one line per wait
    # the reason (with its how-to-start hint) once, then a short line per wait
    assert err[0].startswith("[iteration 2] server unavailable (ServerUnavailable: No LeanTree")
    assert all(line.startswith("[iteration 2] server still unavailable; retrying") for line in err[1:])
    # the same theorems were tried again and nothing else was drawn: the run is the one without the outage
    for a, b in zip(straight["history"], out["history"], strict=True):
        assert {k: a.get(k) for k in DETERMINISTIC} == {k: b.get(k) for k in DETERMINISTIC}
    for k, v in straight["net"].model.state_dict().items():
        assert torch.equal(v, out["net"].model.state_dict()[k]), k


def test_an_outage_longer_than_max_minutes_ends_the_run_saved_and_unevaluated(tmp_path, monkeypatch, capsys):
    clock = FakeClock().install(monkeypatch)
    # evaluation after the warm start (2 starts) and iteration 1 (2 starts) run; then the server is gone
    monkeypatch.setattr(train_mod, "process_factory", _down_between(5, lambda: False))
    out = train_mod.train(tiny_args(tmp_path, "long", iterations=50, eval_every=2, max_minutes=1.0))
    assert out["iteration"] == 1 and [e["iteration"] for e in out["evals"]] == [0]
    assert clock.sleeps == [1, 2, 4, 8, 16, 29]  # the last wait capped by the time left: 60 s in all
    err = capsys.readouterr().err
    assert "--max-minutes 1.0 reached after iteration 1; no final evaluation: the server is unavailable" in err
    saved = checkpoint.load(tmp_path / "long" / "ck" / "latest.pt")["progress"]
    assert saved["iteration"] == 1 and saved["seconds"] == 60.0


def test_evaluation_counts_only_the_theorems_that_could_be_searched(tmp_path, capsys):
    tasks = [Task(Theorem(TRIVIAL.replace("triv", f"t{i}")), f"t{i}", 1) for i in range(4)]
    args = tiny_args(tmp_path, "ev", actors=4)
    starts = {"n": 0}

    def every_other_start_fails():  # (t1's and t3's; the re-checks of the proofs that follow get processes)
        starts["n"] += 1
        if starts["n"] in (2, 4):
            raise ServerUnavailable("No LeanTree server answers at http://127.0.0.1:1")
        return LocalProcess(factorized=True)

    net = Proposes("exact hp")
    ev = train_mod.evaluate(net, tasks, every_other_start_fails, args)
    assert ev["solve_rate"] == 1.0 and ev["evaluated"] == 2 and ev["not_evaluated"] == 2  # not 2 of 4
    assert ev["solve_rate_level_1"] == 1.0
    assert actors_mod.describe(ev) == "1.00 (2 theorems; 2 without a verdict)"

    def down():
        raise ServerUnavailable("No LeanTree server answers at http://127.0.0.1:1")

    ev = train_mod.evaluate(net, tasks, down, args)
    assert "solve_rate" not in ev and ev["evaluated"] == 0  # no made-up 0.0
    assert actors_mod.describe(ev).startswith("nothing evaluated")


def test_search_stats_without_a_search_log_no_throughput_and_no_latency(tmp_path):
    def down():
        raise ServerUnavailable("No LeanTree server answers at http://127.0.0.1:1")

    tasks = [Task(Theorem(TRIVIAL), "t", 1)]
    out = train_mod.run_searches(tasks, Proposes("exact hp"), down, tiny_args(tmp_path, "st"))
    stats = train_mod.search_stats(out)
    assert stats == {"server_failures": 0.0, "crashed_searches": 0.0, "failed_starts": 1.0}
    assert out.outage.startswith("ServerUnavailable")


# ---------------------------------------------------------------------------- 3. a hung server
class HungAfterStart(LocalProcess):
    """Starts fine, then every tactic fails the way the HTTP client reports a hung server."""

    in_process = False  # as a lease: the search runs Lean calls on threads
    error = "LeanTree server at http://127.0.0.1:1 did not answer /process/0/proof/0/try_apply_tactic within 2 s " \
            "(read timeout)"
    cause = "ServerTimeout"

    def __init__(self, raises=False):
        super().__init__(factorized=True)
        self.raises, self.calls = raises, 0

    def apply_tactics(self, state, tactics, timeout_ms=1000):
        self.calls += len(tactics)
        if self.raises:
            raise ServerTimeout(self.error)
        return [TacticResult(t, Outcome.SERVER_FAILURE, (), self.error, cause=self.cause) for t in tactics]

    def apply_tactic(self, state, tactic, timeout_ms=1000):
        return self.apply_tactics(state, [tactic], timeout_ms)[0]


@pytest.mark.parametrize("raises", [False, True], ids=["failure-result", "raised"])
def test_a_hung_server_stops_the_search_after_one_call(raises):
    proc = HungAfterStart(raises)
    cfg = SearchConfig(num_simulations=20, max_lean_calls=50, num_tactics=2, leaves_per_round=4)
    result = run_search(ProofSession(proc, TRIVIAL), Proposes("exact hp", "intro h"), cfg)
    assert result.stop_reason == "server_timeout" and proc.calls == 2  # not 50 calls of 2 minutes each
    # it did not spend its budget: nothing is labelled "not provable"
    assert train_mod.rows_from_result(result, min_unsolved_visits=1) == []


def test_a_vanished_server_stops_the_search_too():
    class Gone(HungAfterStart):
        error = "No LeanTree server answers at http://127.0.0.1:1 (connection refused). Start one with ..."
        cause = "ServerUnavailable"

    result = run_search(ProofSession(Gone(), TRIVIAL), Proposes("exact hp"), SearchConfig(num_simulations=20))
    assert result.stop_reason == "server_unavailable"


def test_an_iteration_against_a_hung_server_does_not_count(tmp_path, monkeypatch, capsys):
    # Every search found the server hung: as in an outage, no learning on the old buffer and no step;
    # training waits for the server (here until --max-minutes ends the run).
    from agents.alphaproof.policy import PolicyValueNet

    fixed = Proposes("exact hp", "intro h")  # (an untrained net may propose nothing at all)
    monkeypatch.setattr(PolicyValueNet, "evaluate", lambda self, states, k: fixed.evaluate(states, k))
    monkeypatch.setattr(train_mod, "process_factory", lambda args, deadline=None: HungAfterStart)
    clock = FakeClock().install(monkeypatch)  # the waits for the server take no real time
    out = train_mod.train(tiny_args(tmp_path, "hung", iterations=2, read_timeout=2.0, max_minutes=1.0))
    assert out["iteration"] == 0 and out["history"] == []
    assert clock.sleeps == [1, 2, 4, 8, 16, 29]  # backoff, the last wait capped by the time left
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith("[iteration 1] server unavailable (every search found it hung or gone)")
               for line in err)


def test_a_deadline_ends_every_search():
    import time

    sessions = [ProofSession(LocalProcess(factorized=True), TRIVIAL) for _ in range(2)]
    results = run_batched_search(sessions, Proposes("intro h"), SearchConfig(num_simulations=20),
                                 deadline=time.monotonic() - 1)
    assert [r.stop_reason for r in results] == ["deadline", "deadline"]
    assert all(r.simulations == 0 and not train_mod.rows_from_result(r, 1) for r in results)


@pytest.fixture
def hung_url():
    """A TCP port that accepts connections and never answers (a hung server)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


def test_read_timeout_reaches_the_client(tmp_path, hung_url):
    with pytest.raises(ServerTimeout, match=r"within 0\.3 s \(read timeout\)"):  # not after 2 minutes
        train_mod.train(tiny_args(tmp_path, "rt", server=hung_url, read_timeout=0.3))
    with pytest.raises(ValueError, match="--read-timeout"):
        train_mod.train(tiny_args(tmp_path, "rt", server=hung_url, read_timeout=0.0))


# ---------------------------------------------------------------------------- 2. Ctrl-C / SIGTERM
class Lease(LocalProcess):
    """An in-process process that is closed the way an HttpLease is (``quick`` or not)."""

    in_process = False

    def __init__(self, closed):
        super().__init__(factorized=True)
        self._closed_with = closed

    def close(self, *, quick=False):
        self._closed_with.append(quick)
        super().close()


def test_unwinding_gives_every_lease_back_quickly_and_without_retry(tmp_path):
    closed = []

    class Interrupted(Proposes):
        def evaluate(self, states, k):
            raise KeyboardInterrupt

    tasks = [Task(Theorem(TRIVIAL), "t", 1)] * 3
    with pytest.raises(KeyboardInterrupt):
        train_mod.run_searches(tasks, Interrupted("exact hp"), lambda: Lease(closed), tiny_args(tmp_path, "ki"))
    assert closed == [True] * 3  # not the client's default (two minutes, then retries)


def test_quick_give_back_of_real_leases_on_a_hung_server(hung_url, monkeypatch, caplog):
    from agents.alphaproof import actors
    from leangym.backends.leantree import HttpLease, LeanTreeClient

    from leangym.backends import lease as lease_module

    monkeypatch.setattr(lease_module, "_EXIT_TIMEOUT", (1.0, 0.2))
    client = LeanTreeClient(hung_url, read_timeout=60)
    leases = [HttpLease(client, pid) for pid in (1, 2, 3)]
    actors.give_back(leases, quick=True)
    assert all(lease.closed for lease in leases)
    warned = [r.getMessage() for r in caplog.records if "could not return" in r.getMessage()]
    assert len(warned) == 3 and all("within 0.2 s" in w for w in warned)  # the short timeout, not 60 s


def test_an_interrupt_does_not_wait_for_a_lean_call_that_hangs():
    """Ctrl-C while a search thread waits on a hung server: the program ends without that thread."""
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from agents.alphaproof.interfaces import Evaluation
        from agents.alphaproof.search import SearchConfig, run_search
        from leangym.session import ProofSession
        from leangym.sim.local import LocalProcess

        class Hangs(LocalProcess):
            in_process = False
            def apply_tactic(self, state, tactic, timeout_ms=1000):
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while this call waits on the "server"
                time.sleep(3)
                print("the hung call finished", flush=True)
                return super().apply_tactic(state, tactic, timeout_ms)

        class Ev:
            def evaluate(self, states, k):
                return [Evaluation(("exact hp",), (0.0,), 0.5) for _ in states]

        try:
            run_search(ProofSession(Hangs(), {TRIVIAL!r}), Ev(), SearchConfig(num_simulations=4))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(130)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 130 and proc.stdout == "interrupted\n", (proc.stdout, proc.stderr)


# ---------------------------------------------------------------------------- the final check
def test_a_server_failure_in_the_final_check_is_no_verdict():
    class CheckFails(LocalProcess):
        def run_command(self, source):
            raise ServerTimeout("did not answer /command within 2 s (read timeout)")

    result = run_search(ProofSession(CheckFails(factorized=True), TRIVIAL), Proposes("exact hp"),
                        SearchConfig(num_simulations=4))
    assert result.solved and not result.verified and result.stop_reason == "server_unavailable"
    assert result.stop_reason in CUT_SHORT  # so the theorem is not counted as failed
