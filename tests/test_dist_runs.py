"""Distributed training runs for real: a learner process, actor processes, ZeroMQ on loopback.

A run with 2 local actor processes finishes and reports held-out; the same with one actor
SIGKILLed mid-run (requeued, restarted, no Lean lease left on the simulated server); a remote
actor that joins over --connect and rejoins a learner that was killed and resumed; a 2-rank
gloo DDP learner under torchrun; a Lean server that dies or hangs under one of two actors
(only that actor's searches are lost, requeued). Tiny model, short runs."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.alphaproof import checkpoint
from agents.alphaproof.distributed.sockets import Net
from agents.alphaproof.status import fetch

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--actors", "4", "--sims", "4", "--lean-calls", "12", "--eval-lean-calls", "12", "--num-tactics", "2",
        "--batch-size", "4",
        "--learn-steps", "1", "--warmup-steps", "0", "--warmup-theorems", "8", "--eval-size", "2", "--replay-size",
        "1000", "--sft-mix", "0", "--max-tactic-tokens", "8", "--no-progress", "--threads", "1", "--seed", "3",
        "--logdir", "", "--heartbeat-timeout", "4"]


def env():
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def start(argv, log: Path, module="agents.alphaproof.train", prefix=()) -> subprocess.Popen:
    cmd = [*prefix, *([] if prefix else [sys.executable, "-m"]), module, *argv]
    return subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=log.open("w"), text=True)


def wait_for(log: Path, pattern: str, proc: subprocess.Popen, timeout: float = 180) -> re.Match:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        m = re.search(pattern, log.read_text())
        if m:
            return m
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"{pattern!r} never appeared; log:\n{log.read_text()[-3000:]}")


def finish(proc: subprocess.Popen, log: Path, timeout: float = 240) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the run did not finish; log:\n{log.read_text()[-3000:]}") from None
    assert proc.returncode == 0, f"exit {proc.returncode}; log:\n{log.read_text()[-3000:]}"
    return out


def actor_pids(parent: int | None = None, name: str | None = None) -> dict[str, int]:
    """Running actor processes (by --name) whose command line names ``parent`` / ``name``."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
            state = (d / "stat").read_text().split()[2]
        except OSError:
            continue
        if "agents.alphaproof.actor" not in argv or state == "Z":
            continue
        if parent is not None and str(parent) not in argv:
            continue
        n = argv[argv.index("--name") + 1] if "--name" in argv else "?"
        if name is None or n == name:
            found[n] = int(d.name)
    return found


def status_cli(port: int) -> dict:
    got = subprocess.run([sys.executable, "-m", "agents.alphaproof.status", "--connect", f"tcp://127.0.0.1:{port}",
                          "--once", "--json"], cwd=ROOT, env=env(), capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def test_two_actor_processes_finish_and_report_held_out(tmp_path):
    log = tmp_path / "learner.log"
    # (a mid-run evaluation still open when the run ends is superseded by the final one: 8 iterations give the
    # evaluations at 2, 4 and 6 room to finish, and a small evaluation budget keeps them short)
    proc = start([*TINY, "--eval-lean-calls", "2", "--actor-procs", "2", "--iterations", "8", "--eval-every", "2",
                  "--checkpoint-dir", str(tmp_path / "ck")], log)
    out = finish(proc, log)
    assert re.search(r"held-out solve rate: \d+/2 = [\d.]+ \(before self-play.*\) -> \d+/2 = [\d.]+ \(iteration 8\)",
                     out), out
    # the actors' evaluations give the budget curve too: every verified proof within the evaluation's budget
    assert re.search(r"solved within 1/2 Lean calls: [\d/]+ of 2 \(.*\) -> [\d/]+ of 2 \(iteration 8\)", out), out
    text = log.read_text()
    assert "[actor local0] joined" in text and "[actor local1] joined" in text
    state = checkpoint.load(tmp_path / "ck" / "latest.pt")
    evals, history = state["progress"]["evals"], state["progress"]["history"]
    mid = evals[1:-1]
    assert state["progress"]["iteration"] == 8 and evals[0]["iteration"] == 0 and evals[-1]["iteration"] == 8
    assert mid and {e["iteration"] for e in mid} <= {2, 4, 6}, evals
    assert all(e["within_2_calls"] == round(e["solve_rate"] * e["evaluated"]) for e in evals), evals
    # each evaluation used one weight version: a mid-run one, the weights at the end of its iteration
    for e in mid:
        assert e["weight_version"] == history[e["iteration"] - 1]["dist_weight_version"] >= 1, (evals, history)
    assert evals[-1]["weight_version"] == history[-1]["dist_weight_version"] >= mid[-1]["weight_version"]
    rec = history[-1]
    assert rec["dist_live_actors"] == 2 and rec["dist_inference_batch"] > 0 and rec["replay_size"] > 0
    assert actor_pids(parent=proc.pid) == {}  # the learner stopped its actors


def test_sigkilled_actor_is_requeued_and_restarted_and_leaks_no_lease(tmp_path, sim_server):
    from leangym.backends.leantree import LeanTreeClient

    # slow Lean (200 ms a call): a search lasts seconds, so the actor is killed mid-search, not between results
    srv = sim_server(factorized=True, max_processes=8, lease_idle_timeout=2.0, latency_ms=200)
    log = tmp_path / "learner.log"
    proc = start([*TINY, "--server", srv.url, "--actor-procs", "2", "--iterations", "5", "--eval-every", "5",
                  "--sims", "12", "--lean-calls", "30",
                  "--checkpoint-dir", str(tmp_path / "ck")], log)
    port = int(wait_for(log, r"--connect tcp://127\.0\.0\.1:(\d+)", proc)[1])
    wait_for(log, r"\[actor local0\] joined", proc)
    victim = actor_pids(parent=proc.pid, name="local0")["local0"]
    table = status_cli(port)  # the status command as a user runs it
    assert {a["actor"] for a in table["actors"]} <= {"local0", "local1"} and "inference" in table
    znet = Net()
    for _ in range(3000):  # kill it while it holds theorems (asked in-process: a quick answer, a short race)
        held = {a["actor"]: a["held"] for a in (fetch(znet, f"tcp://127.0.0.1:{port}") or {}).get("actors", [])}
        if held.get("local0", 0) > 0:
            os.kill(victim, signal.SIGKILL)
            break
        time.sleep(0.01)
    znet.close()
    out = finish(proc, log)
    assert "held-out solve rate" in out
    text = log.read_text()
    assert "local actor 0 exited (killed by SIGKILL)" in text
    counts = checkpoint.load(tmp_path / "ck" / "latest.pt")["progress"]["distributed"]
    assert counts["requeued"] >= 1 and counts["actor_restarts"] >= 1, counts
    client = LeanTreeClient(srv.url)
    for _ in range(100):  # the killed actor's leases come back when the server reclaims them (idle timeout)
        if client.status()["used_processes"] == 0:
            break
        time.sleep(0.2)
    assert client.status()["used_processes"] == 0
    assert actor_pids(parent=proc.pid) == {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT])
def test_remote_actor_joins_and_rejoins_a_resumed_learner(tmp_path, stop):
    """Killed, or stopped with Ctrl-C (it tells the actor it may come back), the learner is resumed and the
    remote actor, never restarted, joins it again."""
    port, ck = free_port(), tmp_path / "ck"
    flags = [*TINY, "--actor-procs", "0", "--bind", f"127.0.0.1:{port}", "--eval-every", "0",
             "--checkpoint-dir", str(ck)]
    log1, alog = tmp_path / "learner1.log", tmp_path / "actor.log"
    learner = start([*flags, "--iterations", "40"], log1)
    actor = start(["--connect", f"tcp://127.0.0.1:{port}", "--actors", "4", "--name", "remote1"], alog,
                  module="agents.alphaproof.actor")
    try:
        wait_for(alog, r"\[actor remote1\] joined", actor)
        for _ in range(600):  # a checkpoint after an iteration or two, then the learner dies
            if (ck / "latest.pt").exists() and checkpoint.load(ck / "latest.pt")["progress"]["iteration"] >= 1:
                break
            time.sleep(0.2)
        learner.send_signal(stop)
        learner.wait(timeout=60)
        if stop == signal.SIGINT:
            wait_for(alog, r"\[actor remote1\] the learner stopped; waiting for it to come back", actor)
            assert "go on with --resume" in log1.read_text() and actor.poll() is None
        done = checkpoint.load(ck / "latest.pt")["progress"]["iteration"]
        log2 = tmp_path / "learner2.log"
        learner = start([*flags, "--resume", str(ck), "--iterations", str(done + 2)], log2)
        finish(learner, log2)
        assert re.search(r"joined tcp://\S+: 4 searches[\s\S]*joined tcp://", alog.read_text())  # joined twice
        assert checkpoint.load(ck / "latest.pt")["progress"]["iteration"] == done + 2
        actor.wait(timeout=60)  # told to stop when the run is over
        assert "stopping: the run is over" in alog.read_text()
    finally:
        for p in (learner, actor):
            if p.poll() is None:
                p.kill()


def test_ddp_learner_with_two_gloo_ranks_under_torchrun(tmp_path):
    log = tmp_path / "ddp.log"
    # (no --actor-procs: on a small machine torchrun's learner starts one actor itself, none would search else)
    proc = start(["--standalone", "--nproc_per_node=2", "-m", "agents.alphaproof.train", *TINY,
                  "--iterations", "2", "--eval-every", "2", "--checkpoint-dir", str(tmp_path / "ck")], log,
                 module="torch.distributed.run", prefix=[sys.executable, "-m"])
    out = finish(proc, log)
    assert "held-out solve rate" in out
    assert "inference on 2 rank(s)" in log.read_text()
    state = checkpoint.load(tmp_path / "ck" / "latest.pt")
    assert state["progress"]["iteration"] == 2 and state["progress"]["history"][-1]["dist_weight_version"] >= 1


def test_each_torchrun_rank_takes_its_own_gpu_before_the_net_is_built(monkeypatch):
    import torch

    from agents.alphaproof.distributed.ddp import rank_device

    assert rank_device("cuda") == "cuda"  # (no torchrun: the flag as given)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert rank_device("cpu") == "cpu"
    current = []
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", current.append)
    assert rank_device("cuda") == rank_device("cuda:0") == "cuda:1" and current == [1, 1]
    monkeypatch.setenv("LOCAL_RANK", "2")
    with pytest.raises(ValueError, match="--nproc_per_node=2"):
        rank_device("cuda")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(ValueError, match="one rank per GPU"):  # (two ranks on one GPU: NCCL refuses, later)
        rank_device("cuda")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # (a GPU made visible to each rank alone)
    assert rank_device("cuda") == "cuda:0" and current[-1] == 0


def test_a_learner_no_actor_joins_ends_at_max_minutes_and_torchrun_needs_someone_to_search(tmp_path, monkeypatch):
    log = tmp_path / "alone.log"
    proc = start([*TINY, "--actor-procs", "0", "--bind", f"127.0.0.1:{free_port()}", "--max-minutes", "0.05",
                  "--checkpoint-dir", str(tmp_path / "ck")], log)
    finish(proc, log)
    assert "no actor connected for --heartbeat-timeout 4 s: the run ends without its final evaluation" in log.read_text()
    from agents.alphaproof.train_args import Args, check_args

    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="--actor-procs 0 under torchrun: no actor would search"):
        check_args(Args(actor_procs=0))
    check_args(Args(actor_procs=0, bind="127.0.0.1:0"))  # (remote actors will search)


@pytest.mark.parametrize("fault", ["dies", "hangs"])
def test_a_failed_lean_server_costs_only_its_actors_searches(tmp_path, sim_server, fault):
    # two servers, one actor process on each (round robin); the second one dies or hangs mid-run
    good, bad = (sim_server(factorized=True, max_processes=8, latency_ms=100) for _ in range(2))
    log = tmp_path / "learner.log"
    proc = start([*TINY, "--server", f"{good.url},{bad.url}", "--actor-procs", "2", "--iterations", "6",
                  "--eval-every", "6", "--read-timeout", "1", "--checkpoint-dir", str(tmp_path / "ck")], log)
    port = int(wait_for(log, r"--connect tcp://127\.0\.0\.1:(\d+)", proc)[1])
    wait_for(log, r"\[actor local1\] joined", proc)
    znet = Net()
    for _ in range(3000):  # kill the server while local1 searches on it
        held = {a["actor"]: a["held"] for a in (fetch(znet, f"tcp://127.0.0.1:{port}") or {}).get("actors", [])}
        if held.get("local1", 0) > 0:
            if fault == "dies":
                bad.stop()
            else:  # every Lean call now answers after a minute: past the actors' 1 s read timeout
                bad.server.config = dataclasses.replace(bad.server.config, latency_ms=60_000)
            break
        time.sleep(0.01)
    znet.close()
    out = finish(proc, log)
    assert re.search(r"held-out solve rate: \d+/2 = [\d.]+ .* -> \d+/2 = [\d.]+ \(iteration 6\)", out), out
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    state = checkpoint.load(tmp_path / "ck" / "latest.pt")
    progress = state["progress"]
    assert progress["iteration"] == 6
    # the searches that could not start on the dead server went back to the queue, uncounted
    assert progress["distributed"]["requeued"] >= 1, progress["distributed"]
    after = [h for h in progress["history"] if h["iteration"] > 1]
    assert sum(h["new_rows"] for h in after) > 0  # the good server's actor went on producing rows
    assert all(h["failed_starts"] == 0 for h in progress["history"])  # a server failure is no result
    assert progress["evals"][-1]["evaluated"] >= 1


def test_a_remote_actor_whose_lean_server_is_not_up_yet_waits_for_it(tmp_path, sim_server):
    """Real Lean + Mathlib takes minutes to start: an actor started beside it joins again until it answers."""
    port, lean_port = free_port(), free_port()
    log, alog = tmp_path / "learner.log", tmp_path / "actor.log"
    learner = start([*TINY, "--actor-procs", "0", "--bind", f"127.0.0.1:{port}", "--eval-every", "0",
                     "--iterations", "2", "--checkpoint-dir", ""], log)
    actor = start(["--connect", f"tcp://127.0.0.1:{port}", "--actors", "4", "--name", "early",
                   "--server", f"http://127.0.0.1:{lean_port}"], alog, module="agents.alphaproof.actor")
    try:
        wait_for(alog, r"No LeanTree server answers.*; joining again in \d+ s", actor)
        sim_server(port=lean_port, max_processes=8)  # the server comes up: the same actor goes on
        finish(learner, log)
        actor.wait(timeout=60)
        assert actor.returncode == 0 and "stopping: the run is over" in alog.read_text()
    finally:
        for p in (learner, actor):
            if p.poll() is None:
                p.kill()
