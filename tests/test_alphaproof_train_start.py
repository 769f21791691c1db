"""Starting a training run: the warm start's rows (on the run's own Lean, within its time), --init from an sft
net, and what --resume takes from the run it resumes."""
from __future__ import annotations

import json

import pytest
import torch

from test_alphaproof_train import _weights, tiny_args


def test_init_starts_self_play_from_an_sft_net(tmp_path):
    """sft --out, then train --init: the usual way from supervised data (Mathlib transitions) into RL."""
    from agents.alphaproof.policy import PolicyValueNet
    from agents.alphaproof.train import train

    sft_net = PolicyValueNet.create("tiny", seed=11)
    sft_net.save(str(tmp_path / "sft.pt"))
    out = train(tiny_args(tmp_path, "rl", init=str(tmp_path / "sft.pt"), iterations=0, warmup_steps=0, sft_mix=0.0))
    assert all(torch.equal(v, _weights(sft_net)[k]) for k, v in _weights(out["net"]).items())
    with pytest.raises(ValueError, match="exclude each other"):
        train(tiny_args(tmp_path, "rl", init=str(tmp_path / "sft.pt"), resume=str(tmp_path / "rl" / "ck")))
    with pytest.raises(ValueError, match="--init"):
        train(tiny_args(tmp_path, "x", init=str(tmp_path / "missing.pt")))


def test_the_warm_start_replays_on_the_kernel_the_run_searches():
    """`train --no-factorized` searches states holding every open goal: its warm-start rows must too."""
    from agents.alphaproof.train import reference_rows
    from agents.alphaproof.train_args import Args
    from leangym.datasets.proplogic import PropTheorem
    from leangym.theorem import Theorem

    stmt = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"

    class Source:
        def reference(self, n, seed):
            return [PropTheorem(Theorem(stmt), ("constructor", "exact hp", "exact hq"), 2, 2)]

    for factorized, goals in ((True, 1), (False, 2)):
        rows = reference_rows(Source(), Args(factorized=factorized, warmup_closers=""))  # as written: 3 rows
        assert rows[1]["tactic"] == "exact hp" and rows[1]["state"].count("⊢") == goals, rows[1]["state"]


def test_the_warm_start_replays_on_the_runs_server_and_skips_what_lean_refuses(sim_server, capsys):
    """With --server, reference proofs are replayed there (a theorem file for real Lean holds statements the
    simulator cannot start): the rows hold the server's states, a refused statement only costs its rows."""
    from agents.alphaproof.train import reference_rows
    from agents.alphaproof.train_args import Args
    from leangym.backends.leantree import LeanTreeClient
    from leangym.datasets.proplogic import PropTheorem
    from leangym.theorem import Theorem

    good = PropTheorem(Theorem("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"),
                       ("constructor", "exact hp", "exact hq"), 2, 2)
    real = PropTheorem(Theorem("theorem r (x : ℝ) : x = x := by sorry"), ("rfl",), 1, 1)

    class Source:
        def reference(self, n, seed):
            return [real, good]

    srv = sim_server(factorized=False, max_processes=2)  # the run's own --factorized is True
    rows = reference_rows(Source(), Args(server=srv.url, actors=2, warmup_closers=""))
    assert [r["tactic"] for r in rows] == ["constructor", "exact hp", "exact hq"]
    assert rows[1]["state"].count("⊢") == 2  # the server's state: both goals in one branch
    assert "1 of 2 reference proofs give no rows" in capsys.readouterr().err
    assert LeanTreeClient(srv.url).status()["used_processes"] == 0  # every lease given back
    assert len(reference_rows(Source(), Args(warmup_closers=""))) == 3  # the simulator: the same warning, no error
    golfed = reference_rows(Source(), Args(server=srv.url, actors=2))  # --warmup-closers trivial, on the server
    assert [(r["tactic"], r["steps_to_go"]) for r in golfed] == [("trivial", 1)]
    assert LeanTreeClient(srv.url).status()["used_processes"] == 0


def test_resume_with_only_resume_goes_on_as_the_run_was_configured(tmp_path, capsys):
    """`train --resume DIR` alone: the flags it does not give are the resumed run's (its budgets, seed,
    server ...), not the command line's defaults, so it still continues exactly."""
    from agents.alphaproof.policy import PolicyValueNet
    from agents.alphaproof.train import main, train

    straight = train(tiny_args(tmp_path, "straight", iterations=2))
    train(tiny_args(tmp_path, "split", iterations=1))
    main(["--resume", str(tmp_path / "split" / "ck"), "--iterations", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert "as the resumed run" in err and "--lean-calls 8" in err and "the run no longer continues exactly" not in err
    resumed = PolicyValueNet.load(str(tmp_path / "split" / "ck" / "latest.pt"))
    for k, v in _weights(straight["net"]).items():
        assert torch.equal(v, _weights(resumed)[k]), k
    # a flag given on the command line still wins, and says the run no longer continues exactly
    main(["--resume", str(tmp_path / "split" / "ck"), "--iterations", "3", "--lean-calls", "9", "--no-progress"])
    assert "--lean-calls is 9, the checkpoint's run had 8" in capsys.readouterr().err


def test_what_a_run_says_when_there_was_nothing_to_learn_or_evaluate(tmp_path, monkeypatch, capsys):
    from agents.alphaproof import train as train_mod
    from leangym.datasets.proplogic import generate

    # a theorems file without reference proofs: the warm start says it is skipped
    rows = [{"name": t.name, "formal_statement": t.theorem.formal_statement, "header": t.theorem.header}
            for t in generate(6, 0, (1, 2))]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    train_mod.train(tiny_args(tmp_path, "noref", theorems=str(path), iterations=0))
    assert "warm start: skipped, no reference proofs" in capsys.readouterr().err
    # a final evaluation that could not run is reported as such, not as the last one that did
    progress = {"evals": [{"iteration": 0, "solve_rate": 0.5, "evaluated": 4, "not_evaluated": 0},
                          {"iteration": 3, "evaluated": 0, "not_evaluated": 4}], "checkpoint_dir": ""}
    monkeypatch.setattr(train_mod, "train", lambda args, explicit=None: progress)
    train_mod.main(["--no-progress"])
    out = capsys.readouterr().out
    assert ("final evaluation (iteration 3): nothing evaluated (none of 4 theorems got a verdict: server failures "
            "or searches cut short)") in out


def test_time_limits_hold_for_the_warm_start_replay_and_for_a_resumed_run(tmp_path, monkeypatch, capsys):
    import time

    from agents.alphaproof import train as train_mod
    from leangym.datasets.proplogic import generate

    class Source:
        def reference(self, n, seed):
            return generate(3, 0, (1, 2))

    # out of time before the replay: no proof is replayed (on a server each costs a lease and Lean's time)
    assert train_mod.reference_rows(Source(), train_mod.Args(), deadline=time.monotonic() - 1) == []
    assert "3 of 3 reference proofs give no rows" in capsys.readouterr().err
    # `--resume DIR` takes the run's --max-minutes: the resumed run's deadline is set from it
    train_mod.train(tiny_args(tmp_path, "r", iterations=1, max_minutes=30.0))
    deadlines = []

    class Stop(Exception):
        pass

    def factory(args, deadline=None):
        deadlines.append(deadline)
        raise Stop

    monkeypatch.setattr(train_mod, "process_factory", factory)
    with pytest.raises(Stop):
        train_mod.main(["--resume", str(tmp_path / "r" / "ck"), "--iterations", "5", "--no-progress"])
    assert deadlines and deadlines[0] is not None  # (without the inherited limit there is none)
