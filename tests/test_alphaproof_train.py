"""The AlphaProof training loop: replay buffer, curriculum, checkpoints, a short run, resume, prove CLI."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.alphaproof import checkpoint
from agents.alphaproof.curriculum import Curriculum
from agents.alphaproof.replay import ReplayBuffer


# ---------------------------------------------------------------------------- replay buffer
def test_replay_keeps_newest_rows_and_samples_uniformly():
    buf = ReplayBuffer(capacity=100)
    buf.add({"state": f"⊢ s{i}", "tactic": "intro h", "steps_to_go": i % 3} for i in range(250))
    assert len(buf) == 100 and buf.added == 250
    assert buf.rows[0]["state"] == "⊢ s150"  # FIFO: the oldest 150 are gone
    counts = {}
    for row in buf.sample(20_000, random.Random(0)):
        counts[row["state"]] = counts.get(row["state"], 0) + 1
    assert set(counts) <= {f"⊢ s{i}" for i in range(150, 250)}
    assert len(counts) == 100 and min(counts.values()) > 100  # every row drawn, none starved
    assert buf.sample(3, random.Random(0)) == buf.sample(3, random.Random(0))  # the caller's RNG decides
    assert ReplayBuffer().sample(5, random.Random(0)) == []


def test_replay_round_trips_through_a_weights_only_checkpoint(tmp_path):
    buf = ReplayBuffer(capacity=10)
    buf.add([{"state": "p q : Prop\n⊢ p → p", "tactic": "intro h", "steps_to_go": 2},
             {"state": "⊢ False", "steps_to_go": None},
             {"state": "⊢ True", "tactic": "trivial", "value": 0.95, "extra": ("a", 1)}])
    path = checkpoint.save(tmp_path / "c.pt", {"replay": buf.state_dict()})
    back = ReplayBuffer()
    back.load_state_dict(checkpoint.load(path)["replay"])
    assert list(back.rows) == list(buf.rows) and back.capacity == 10 and back.added == 3
    assert back.rows[1]["steps_to_go"] is None and back.rows[2]["extra"] == ["a", 1]


def test_replay_refuses_objects():
    with pytest.raises(TypeError):
        ReplayBuffer().add([{"state": "⊢ p", "tactic": object()}])


# ---------------------------------------------------------------------------- curriculum
def test_curriculum_favours_levels_solved_half_the_time():
    cur = Curriculum([1, 2, 3])
    for i in range(60):
        cur.record(f"easy{i}", 1, solved=True)  # always solved: nothing left to learn
        cur.record(f"mid{i}", 2, solved=i % 2 == 0)  # sometimes: the sweet spot
        cur.record(f"hard{i}", 3, solved=False)  # never: only "unprovable" targets
    w = cur.level_weights()
    assert w[2] > 3 * w[1] and w[2] > 3 * w[3]
    assert w[1] > 0 and w[3] > 0  # never abandoned: progress on hard levels gets noticed
    draws = [cur.sample_level(random.Random(s)) for s in range(400)]
    assert draws.count(2) > draws.count(1) + draws.count(3)
    # rates track the recent past: a level that becomes solvable moves back into the middle
    for i in range(40):
        cur.record(f"hard_again{i}", 3, solved=i % 2 == 0)
    assert 0.3 < cur.level_rate(3) < 0.7


def test_curriculum_per_theorem_sampling_and_state_round_trip(tmp_path):
    cur = Curriculum([0], max_theorems=3)
    for _ in range(10):
        cur.record("always", 0, True)
        cur.record("never", 0, False)
    cur.record("sometimes", 0, True)
    cur.record("sometimes", 0, False)
    keys = ["always", "never", "sometimes"]
    picks = [keys[cur.sample_theorem(keys, random.Random(s))] for s in range(300)]
    assert picks.count("sometimes") > picks.count("always") and picks.count("sometimes") > picks.count("never")
    cur.record("new", 0, True)  # the per-theorem table is bounded: the least recently seen goes
    assert "always" not in cur.theorems and len(cur.theorems) == 3
    path = checkpoint.save(tmp_path / "c.pt", {"curriculum": cur.state_dict()})
    back = Curriculum([])
    back.load_state_dict(checkpoint.load(path)["curriculum"])
    assert back.state_dict() == cur.state_dict()


# ---------------------------------------------------------------------------- checkpoint
def test_rng_states_restore_exactly(tmp_path):
    trainer_rng = random.Random(7)
    path = checkpoint.save(tmp_path / "c.pt", {"rng": checkpoint.rng_state(trainer_rng)})
    first = (random.random(), np.random.rand(), torch.rand(2).tolist(), trainer_rng.random())
    checkpoint.set_rng_state(checkpoint.load(path)["rng"], trainer_rng)
    assert (random.random(), np.random.rand(), torch.rand(2).tolist(), trainer_rng.random()) == first


def test_checkpoint_load_rejects_foreign_files(tmp_path):
    import re

    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(1)}, other)
    with pytest.raises(ValueError, match=re.escape(f"{other} is not a leangym-alphaproof-v1 checkpoint")):
        checkpoint.load(other)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=re.escape(f"{empty}: not a readable checkpoint (truncated or corrupt")):
        checkpoint.load(empty)
    assert checkpoint.latest(tmp_path) is None


def test_junk_and_pickled_objects_get_different_errors(tmp_path):
    """Bytes that are no pickle at all are a damaged file; a pickle of Python objects is refused as
    such (never unpickled). torch's advice to pass weights_only=False is never repeated."""
    import fractions
    import re

    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=re.escape(f"{junk}: not a readable checkpoint")) as err:
        checkpoint.read(junk)
    assert "weights_only" not in str(err.value)
    objects = tmp_path / "objects.pt"
    torch.save({"x": fractions.Fraction(1, 3)}, objects)
    with pytest.raises(ValueError, match=re.escape(f"{objects}: holds Python objects")):
        checkpoint.read(objects)


# ---------------------------------------------------------------------------- training rows from a search
TRIVIAL = "theorem triv (p : Prop) (hp : p) : p := by sorry"


class FixedEvaluator:
    """Proposes the same tactics everywhere (a stand-in for the network)."""

    def __init__(self, tactics):
        self.tactics = tuple(tactics)

    def evaluate(self, states, k):
        from agents.alphaproof.interfaces import Evaluation, per_state

        return [Evaluation(self.tactics[:n], tuple(-float(i) for i in range(len(self.tactics[:n]))), 0.5)
                for n in per_state(k, len(states))]


def _search(statement, tactics, sims=8):
    from agents.alphaproof.search import SearchConfig, run_search
    from leangym.session import ProofSession
    from leangym.sim.local import LocalProcess

    session = ProofSession(LocalProcess(factorized=True), statement)
    return run_search(session, FixedEvaluator(tactics), SearchConfig(num_simulations=sims, max_lean_calls=32))


def test_rows_from_a_solved_search_teach_the_proof_tactic():
    from agents.alphaproof.train import rows_from_result

    result = _search(TRIVIAL, ["intro x", "exact hp"])
    assert result.verified
    rows = rows_from_result(result, min_unsolved_visits=1)
    root = [r for r in rows if r["state"].endswith("⊢ p") and "hp : p" in r["state"]]
    assert root and root[0]["tactic"] == "exact hp" and root[0]["steps_to_go"] == 1
    assert all(r.get("steps_to_go") is not None for r in rows)  # a solved search labels nothing "unprovable"


def test_rows_from_an_exhausted_search_say_unprovable_and_have_no_policy_target():
    from agents.alphaproof.train import rows_from_result

    result = _search(TRIVIAL, ["exfalso", "nonsense_tactic"])
    assert not result.solved
    rows = rows_from_result(result, min_unsolved_visits=1)
    assert rows and all(r.get("steps_to_go") is None and "tactic" not in r for r in rows)
    assert any("steps_to_go" in r for r in rows)
    # what Lean rejected is a negative wherever it was tried; a row with only that has no value target
    rejected = [r for r in rows if "nonsense_tactic" in r.get("rejected", [])]
    assert rejected and all(r.get("steps_to_go") is None for r in rejected)


def test_rejected_tactics_become_less_likely_under_the_negative_loss():
    from agents.alphaproof.policy import PolicyValueNet

    net = PolicyValueNet.create("tiny", seed=0, negative_weight=1.0)
    row = {"state": "p : Prop\nhp : p\n⊢ p", "rejected": ["exfalso"]}

    def logp() -> float:
        with torch.no_grad():
            b = net.collate([{"state": row["state"], "tactic": "exfalso"}])
            logits = net.model.logits(net.model(b.idx))[0].log_softmax(-1)
            sel = (b.targets[0] >= 0).nonzero()[:, 0]
            return float(logits[sel, b.targets[0, sel]].sum())

    opt = torch.optim.Adam(net.parameters(), lr=3e-3)

    def steps(rows, n):
        for _ in range(n):
            out = net.losses(rows)
            opt.zero_grad()
            out["loss"].backward()
            opt.step()
        return out

    steps([{"state": row["state"], "tactic": "exfalso"}], 100)  # first teach the mistake
    assert logp() > -0.5
    out = steps([row], 100)
    assert out["policy_loss"].item() == 0.0 and out["value_loss"].item() == 0.0  # only the negative
    assert logp() < -2.0


# ---------------------------------------------------------------------------- end to end
def tiny_args(tmp_path, name, **kw):
    from agents.alphaproof.train import Args

    base = dict(model_size="tiny", actors=2, iterations=2, sims=2, lean_calls=8, num_tactics=2, batch_size=4, learn_steps=2,
                warmup_steps=2, warmup_theorems=8, eval_lean_calls=8, eval_every=1, eval_size=2, replay_size=1000,
                logdir=str(tmp_path / name / "tb"), checkpoint_dir=str(tmp_path / name / "ck"),
                seed=3, progress=False, max_tactic_tokens=8)
    base.update(kw)
    return Args(**base)


def _weights(net):
    return {k: v.clone() for k, v in net.model.state_dict().items()}


DETERMINISTIC = ("solve_rate", "loss", "policy_loss", "value_loss", "replay_size", "new_rows", "tactic_error_rate")


def test_short_run_then_resume_matches_an_uninterrupted_run(tmp_path):
    """k iterations + checkpoint + resume for m == k + m straight (same seed): weights and metrics."""
    from agents.alphaproof.train import train

    straight = train(tiny_args(tmp_path, "straight", iterations=2))
    first = train(tiny_args(tmp_path, "split", iterations=1))  # checkpoints after every iteration
    assert first["iteration"] == 1
    resumed = train(tiny_args(tmp_path, "split", iterations=2, resume=str(tmp_path / "split" / "ck")))
    assert resumed["iteration"] == straight["iteration"] == 2
    for k, v in _weights(straight["net"]).items():
        assert torch.equal(v, _weights(resumed["net"])[k]), k
    for a, b in zip(straight["history"], resumed["history"], strict=True):
        assert {k: a.get(k) for k in DETERMINISTIC} == {k: b.get(k) for k in DETERMINISTIC}
    assert [e["solve_rate"] for e in straight["evals"]] == [e["solve_rate"] for e in resumed["evals"]]
    # what the run left behind: a weights-only checkpoint and TensorBoard events
    state = checkpoint.load(tmp_path / "split" / "ck" / "latest.pt")
    assert state["progress"]["iteration"] == 2 and len(state["replay"]["rows"]) > 0
    assert list((tmp_path / "straight" / "tb").glob("events.out.tfevents.*"))


def test_resume_is_exact_when_the_first_run_ended_with_an_evaluation(tmp_path):
    """A run's last iteration evaluates (step == --iterations); that must not change what a resume does."""
    from agents.alphaproof.train import train

    straight = train(tiny_args(tmp_path, "straight", iterations=2, eval_every=5))
    train(tiny_args(tmp_path, "split", iterations=1, eval_every=5))  # evaluates at iteration 1, straight does not
    resumed = train(tiny_args(tmp_path, "split", iterations=2, eval_every=5, resume=str(tmp_path / "split" / "ck")))
    for k, v in _weights(straight["net"]).items():
        assert torch.equal(v, _weights(resumed["net"])[k]), k
    for a, b in zip(straight["history"], resumed["history"], strict=True):
        assert {k: a.get(k) for k in DETERMINISTIC} == {k: b.get(k) for k in DETERMINISTIC}
    rng = [checkpoint.load(tmp_path / run / "ck" / "latest.pt")["rng"]["torch"] for run in ("straight", "split")]
    assert torch.equal(*rng)  # the evaluation drew on a fork of torch's RNG


def test_reference_rows_count_steps_as_the_search_does():
    """A state's steps are the tactics of its own subproof (every branch's: each costs its Lean calls), not the
    tactics left in the whole script."""
    from agents.alphaproof.sft import rows_from_reference_proofs
    from leangym.datasets.proplogic import PropTheorem
    from leangym.theorem import Theorem

    stmt = "theorem t (p q r : Prop) (hp : p) (hq : q) (hr : r) : p ∧ (q ∧ r) := by sorry"
    proof = ("constructor", "exact hp", "constructor", "exact hq", "exact hr")
    rows = rows_from_reference_proofs([PropTheorem(Theorem(stmt), proof, 3, 3)])
    assert [(r["tactic"], r["steps_to_go"]) for r in rows] == [
        ("constructor", 5), ("exact hp", 1), ("constructor", 3), ("exact hq", 1), ("exact hr", 1)]


def test_a_crashing_worker_is_counted_and_training_goes_on(tmp_path, monkeypatch):
    from agents.alphaproof import actors
    from agents.alphaproof import train as train_mod
    from leangym.backends.types import NoProcessAvailable, ServerError
    from leangym.sim.local import LocalProcess

    starts, searches = {"n": 0}, {"n": 0}

    def flaky_factory(args, deadline=None):
        def new():
            starts["n"] += 1
            if starts["n"] == 1:
                raise NoProcessAvailable("no process available")  # a start that fails: that theorem is skipped
            if starts["n"] == 2:
                raise ServerError("HTTP 500: REPL died")  # a server failure: retried on a fresh process
            return LocalProcess(factorized=True)
        return new

    real_search = actors.run_batched_search

    def crashing_search(sessions, evaluator, config, **kw):
        searches["n"] += 1
        if searches["n"] == 1:
            raise RuntimeError("worker died")  # e.g. a kernel bug on one tactic
        return real_search(sessions, evaluator, config, **kw)

    monkeypatch.setattr(train_mod, "process_factory", flaky_factory)
    monkeypatch.setattr(actors, "run_batched_search", crashing_search)
    out = train_mod.train(tiny_args(tmp_path, "flaky", iterations=3, eval_every=0, warmup_steps=0, sft_mix=0.0))
    assert out["iteration"] == 3
    assert out["crashes"] == 1 and out["errors"] == 2
    assert out["history"][0]["failed_starts"] == 1.0 and out["history"][0]["crashed_searches"] == 1.0
    assert out["history"][-1]["crashed_searches"] == 0.0 and out["history"][-1]["replay_size"] > 0


def test_train_on_a_theorem_file_then_prove_cli(tmp_path, capsys):
    """Warm start on a JSONL with reference proofs, then ``prove`` finds and verifies the proof."""
    import json

    from agents.alphaproof.prove import main as prove_main
    from agents.alphaproof.train import train

    rows = [{"name": f"t{i}", "formal_statement": TRIVIAL.replace("triv", f"t{i}"), "proof": ["exact hp"],
             "difficulty": 1} for i in range(3)]
    path = tmp_path / "thms.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    args = tiny_args(tmp_path, "file", theorems=str(path), iterations=1, warmup_steps=40, batch_size=8,
                     lr=3e-3, eval_every=0, sims=4)
    args.warmup_lr = 1e-2
    args.warmup_closers = ""  # the file's proofs as written (the default golfs "exact hp" into "trivial")
    out = train(args)
    assert out["iteration"] == 1
    ck = tmp_path / "file" / "ck" / "latest.pt"
    assert prove_main(["--checkpoint", str(ck), "--theorem", TRIVIAL, "--sims", "16", "--lean-calls", "64"]) == 0
    printed = capsys.readouterr()
    assert "exact hp" in printed.out and "verified" in printed.out
    unprovable = "theorem nope (p q : Prop) (hp : p) : q := by sorry"
    assert prove_main(["--checkpoint", str(ck), "--theorem", unprovable, "--sims", "4", "--lean-calls", "16"]) == 1
    assert "Lean calls" in capsys.readouterr().err


def test_train_over_a_leantree_server(tmp_path, sim_server):
    """``--env LeanProof-v0 --server URL --theorems FILE``: every search on a leased process."""
    import json

    from agents.alphaproof.train import train

    srv = sim_server(factorized=True, max_processes=2)
    path = tmp_path / "thms.jsonl"
    path.write_text(json.dumps({"name": "t", "formal_statement": TRIVIAL}) + "\n", encoding="utf-8")
    out = train(tiny_args(tmp_path, "server", env="LeanProof-v0", server=srv.url, theorems=str(path),
                          iterations=1, warmup_steps=0, sft_mix=0.0, eval_every=1))
    assert out["iteration"] == 1 and out["crashes"] == 0 and out["history"][0]["failed_starts"] == 0.0
    h = out["history"][0]
    assert ("lean_latency_p50_ms" in h) == (h["lean_calls_per_s"] > 0) and len(out["evals"]) == 2  # latency if measured


def test_a_server_too_small_or_away_stops_the_run_before_it_saves(tmp_path, sim_server):
    from agents.alphaproof.train import train
    from leangym.backends.types import ServerUnavailable

    srv = sim_server(max_processes=2)
    with pytest.raises(ValueError, match="--max-processes 4"):
        train(tiny_args(tmp_path, "small", server=srv.url, actors=4))
    with pytest.raises(ServerUnavailable):
        train(tiny_args(tmp_path, "away", server="http://127.0.0.1:1"))
    assert not list(tmp_path.rglob("latest.pt"))  # an earlier checkpoint there would have been kept


def test_resume_says_which_settings_changed(tmp_path, capsys):
    from agents.alphaproof.train import train

    train(tiny_args(tmp_path, "run", iterations=1, eval_every=0))
    train(tiny_args(tmp_path, "run", iterations=1, eval_every=0, model_size="small", lr=1e-2,
                    resume=str(tmp_path / "run" / "ck")))
    err = capsys.readouterr().err
    assert "--model-size is 'small', the checkpoint's run had 'tiny' (ignored" in err
    assert "--lr is 0.01" in err and "applies from now on" in err


def test_a_gpu_runs_checkpoint_resumes_on_this_machines_device_and_optimizer_kernel(tmp_path, capsys):
    """A checkpoint saved on a GPU (device cuda:0, fused AdamW) goes on with --device cpu: the optimizer
    takes this device's kernel (fused AdamW carried over would be a CPU fused step), and the device
    change is not called ignored."""
    import dataclasses

    from agents.alphaproof.curriculum import Curriculum
    from agents.alphaproof.resume import restore, warn_changed_settings
    from agents.alphaproof.train import train

    train(tiny_args(tmp_path, "gpu", iterations=1, eval_every=0))
    path = tmp_path / "gpu" / "ck" / "latest.pt"
    state = checkpoint.load(path, map_location="cpu")
    for group in state["optimizer"]["param_groups"]:
        group["fused"] = True  # as torch saves it from a CUDA run
    args = tiny_args(tmp_path, "gpu")
    net, opt, progress, _ = restore(state, path, args, ReplayBuffer(args.replay_size), Curriculum([1, 2]),
                                    random.Random(0))
    assert [g["fused"] for g in opt.param_groups] == [False] * len(opt.param_groups)
    assert progress["iteration"] == 1 and net.device.type == "cpu"
    capsys.readouterr()
    warn_changed_settings({**dataclasses.asdict(args), "device": "cuda:0"}, args)
    assert capsys.readouterr().err == ""


def test_a_training_checkpoint_loads_as_a_net(tmp_path):
    from agents.alphaproof.policy import PolicyValueNet
    from agents.alphaproof.train import train

    out = train(tiny_args(tmp_path, "ck", iterations=1, eval_every=0))
    net = PolicyValueNet.load(str(tmp_path / "ck" / "ck" / "latest.pt"))  # what `sft --init` and `prove` do
    for k, v in net.model.state_dict().items():
        assert torch.equal(v, out["net"].model.state_dict()[k]), k
    import re

    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    # a ValueError naming the file (torch itself would raise an UnpicklingError naming nothing)
    with pytest.raises(ValueError, match=re.escape(str(junk)) + r": .*checkpoint"):
        PolicyValueNet.load(str(junk))
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(1)}, foreign)
    with pytest.raises(ValueError, match=re.escape(f"{foreign} is neither a leangym-alphaproof-net-v1 net nor "
                                                   "a leangym-alphaproof-v1 training checkpoint")):
        PolicyValueNet.load(str(foreign))


def test_prove_cli_runs_as_a_module(tmp_path):
    import re

    from agents.alphaproof.policy import PolicyValueNet

    PolicyValueNet.create("tiny", seed=0, max_tactic_tokens=4).save(str(tmp_path / "net.pt"))  # a bare net file
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "agents.alphaproof.prove", "--checkpoint", str(tmp_path / "net.pt"),
                           "--theorem", TRIVIAL, "--sims", "2", "--lean-calls", "4"],
                          capture_output=True, text=True, timeout=80, cwd=repo,  # this checkout's code
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])))
    # The seeded, untrained net with a 4-token cap finishes no tactic (every sample runs past the cap), so the
    # search is deterministic: both simulations end without a Lean call, exit status 1, the reason on stderr only.
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == "", proc.stdout
    assert re.fullmatch(r"-- no proof found \(2 simulations, 0 Lean calls, \d+\.\ds, stopped by: simulations\)",
                        proc.stderr.splitlines()[-1]), proc.stderr


def test_reference_rows_from_theorems_sharing_a_declaring_header_and_repeated_names():
    # a kernel keeps what a proof start declared, as Lean does: the header's `helper` and the statement's
    # name must not make the second theorem "already declared"
    from agents.alphaproof.sft import rows_from_reference_proofs
    from leangym.datasets.proplogic import PropTheorem
    from leangym.theorem import Theorem

    header = "theorem helper (p : Prop) (hp : p) : p := by\n  exact hp\n"
    same = [PropTheorem(Theorem(f"theorem u{i} (q : Prop) (hq : q) : q := by sorry", header=header),
                        ("exact helper q hq",), 1, 1) for i in range(2)]
    assert len(rows_from_reference_proofs(same)) == 2
    twice = [PropTheorem(Theorem("theorem t (p : Prop) (hp : p) : p := by sorry"), ("exact hp",), 1, 1)] * 2
    from leangym.sim.local import LocalProcess

    assert len(rows_from_reference_proofs(twice, LocalProcess())) == 2  # one process, the same name twice


def test_resuming_a_checkpoint_of_an_older_version_keeps_the_settings_it_ran_with():
    # an older checkpoint's args lack --temperature/--oversample/--value-weight/--negative-weight/
    # --warmup-batch-size/--warmup-closers/--warmup-nat: its run goes on as it ran (its net's settings), not with this
    # version's defaults
    import dataclasses
    from agents.alphaproof.resume import inherit_settings, saved_settings
    from agents.alphaproof.train_args import Args
    old_args = {k: v for k, v in dataclasses.asdict(Args(batch_size=8)).items()
                if k not in ("temperature", "oversample", "value_weight", "negative_weight", "warmup_batch_size",
                             "warmup_closers", "warmup_nat")}
    state = {"args": old_args, "net": {"settings": {"max_tactic_tokens": 24, "temperature": 1.0, "oversample": 2,
                                                    "value_weight": 1.0}}}
    args = inherit_settings(Args(), saved_settings(state), explicit=set())
    assert (args.temperature, args.oversample, args.value_weight, args.negative_weight,
            args.warmup_batch_size, args.warmup_closers, args.warmup_nat) == (1.0, 2, 1.0, 0.0, 8, "", 0.0)
    given = inherit_settings(Args(negative_weight=0.5), saved_settings(state), explicit={"negative_weight"})
    assert given.negative_weight == 0.5  # a flag given on the command line still wins
