"""benchmarks/learning_curve.py end to end, tiny: a few seconds of training, then every agent through the
harness on 5 held-out theorems; the tables, plot and JSON hold a row for every agent (checks the script,
not the agent's strength)."""
from __future__ import annotations

import argparse
import json
import re

import pytest

from leangym.harness.records import read_results
from test_benchmark_scripts import load_script

N = 5


def test_learning_curve_trains_then_runs_every_agent_through_the_harness(monkeypatch, tmp_path, capsys):
    script = load_script(monkeypatch, "learning_curve")
    out = tmp_path / "results" / "lc"
    code = script.main(["--minutes", "0.2", "--snapshots", "0.05", "--n", str(N), "--budget-calls", "16",
                        "--sims", "8", "--ppo-timesteps", "256", "--work", str(tmp_path / "work"), "--out", str(out),
                        "--train-args", "--actors 2 --sims 4 --warmup-steps 5 --warmup-theorems 20 --eval-size 5 "
                                        "--eval-every 1 --lean-calls 16 --threads 1 --actor-procs 0 --no-progress"])
    assert code == 0
    nums = json.loads((tmp_path / "results" / "lc.json").read_text())
    md = (tmp_path / "results" / "lc.md").read_text()
    assert (tmp_path / "results" / "lc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "python benchmarks/learning_curve.py --minutes 0.2" in md and "load average" in md
    assert "the agent with 8 simulations, 1 tactic(s)" in md and "prove`'s defaults" not in md  # --sims 8 is not

    labels = list(nums["agents"])
    assert labels[0].startswith("AlphaProof agent, final") and labels[-3:] == [
        "best-first, the final net", "MaskablePPO, 256 steps", "random"]
    # the snapshot (taken once the warm start has saved) is an agent row of its own
    assert len(nums["snapshots"]) == 1 and labels[1].startswith("AlphaProof agent at ") and len(labels) == 5
    assert nums["evals"] and all(0 <= e["solve_rate"] <= 1 for e in nums["evals"])

    main_rows = {r.split(" | ")[0][2:]: r for r in md.splitlines() if re.match(r"\| .* \| \d+/\d+ \| ", r)}
    within_rows = {r.split(" | ")[0][2:]: r for r in md.splitlines() if r.startswith("| ") and "%" not in r
                   and r.split(" | ")[0][2:] in labels}
    assert set(main_rows) == set(labels) == set(within_rows)
    for label, x in nums["agents"].items():
        solved, total = map(int, main_rows[label].split(" | ")[1].split("/"))
        assert total == N and 0 <= solved <= N and (solved, total) == (x["solved"], x["theorems"])
        within = [int(c.strip(" |")) for c in within_rows[label].split(" | ")[1:]]
        assert list(x["solved_within"]) == ["8", "16"] and within == list(x["solved_within"].values())
        assert all(0 <= w <= solved for w in within) and within == sorted(within)
        assert within[-1] == solved  # every solve used at most the budget
        run = read_results(x["jsonl"]).run  # the harness's own record: the factorized simulator, the same budget
        assert run["server"]["generation"] == "factorized" and run["budget_calls"] == 16 and run["count"] == N
    assert "[learning_curve] harness 5/5: random" in capsys.readouterr().err


def test_learning_curve_refuses_train_flags_it_sets_itself(monkeypatch, capsys):
    script = load_script(monkeypatch, "learning_curve")
    monkeypatch.setattr(script, "train", lambda *a, **kw: pytest.fail("trained despite a refused flag"))
    with pytest.raises(SystemExit) as e:
        script.main(["--train-args", "--max-minutes 3"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("error: --train-args: ") and "--max-minutes" in err


def test_baselines_run_agent_picks_the_simulator_generation(monkeypatch, tmp_path):
    script = load_script(monkeypatch, "baselines_proplogic")
    args = argparse.Namespace(n=2, budget_calls=4, seed=0, work=tmp_path)
    plain, _ = script.run_agent("random plain", "random", {}, args)
    factorized, _ = script.run_agent("random factorized", "random", {}, args, "--sim-factorized")
    assert plain.run["server"]["generation"] != "factorized" and plain.run["server"]["simulated"]
    assert factorized.run["server"]["generation"] == "factorized" and len(factorized.attempts) == 2
