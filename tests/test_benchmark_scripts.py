"""benchmarks/bench_mcts.py as a user runs it: several Lean settings in one run, a table and a plot
(with the fixed-cost model stand-in and tiny budgets, so this checks the script, not speed)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def bench_mcts(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "benchmarks/bench_mcts.py", *argv], capture_output=True, text=True,
                          timeout=300, cwd=REPO)


def test_bench_mcts_runs_every_setting_and_plots_them(tmp_path):
    png = tmp_path / "plots" / "mcts.png"
    proc = bench_mcts("--evaluator", "overhead", "--overhead-ms", "1", "--n", "3", "--sims", "2", "--repeats", "1",
                      "--lean", "local", "server", "--latency-ms", "0", "1", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "sims/s" not in line]
    assert [r.split(" | ")[0] for r in rows] == ["| in-process kernel", "| server, 0 ms per call",
                                                 "| server, 1 ms per call"]
    for row in rows:  # two positive rates and their ratio
        one, batched, ratio = (float(c.strip(" |x").replace(",", "")) for c in row.split(" | ")[1:])
        assert one > 0 and batched > 0 and abs(ratio - batched / one) < 0.051 + 0.01 * ratio
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot: {png}" in proc.stdout


def load_bench_mcts(monkeypatch):
    """benchmarks/bench_mcts.py as a module, not run: its ``main(argv)`` in this process (the script's
    ``sys.path`` insert is undone after the test)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    spec = importlib.util.spec_from_file_location("bench_mcts_under_test", REPO / "benchmarks" / "bench_mcts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_mcts_latency_without_a_server_is_a_one_line_error(monkeypatch, capsys):
    # in-process (no interpreter to start and no torch to import again): the check is argparse's, in main
    bench = load_bench_mcts(monkeypatch)

    def work_started(*a, **kw):  # main's first step after its argument checks
        raise AssertionError("bench_mcts.py started the benchmark instead of refusing --latency-ms")

    monkeypatch.setattr(bench.torch, "set_num_threads", work_started)
    with pytest.raises(SystemExit) as e:
        bench.main(["--latency-ms", "5"])
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    assert err.startswith("error: --latency-ms ") and err.count("\n") == 1 and "add --lean server" in err, err


def test_bench_sim_replays_the_same_theorems_pass_after_pass(capsys):
    # every pass starts the same statements again: on one process that kept the first starts (as Lean's
    # do) the second pass was "already declared"; each pass now gets a fresh process
    spec = importlib.util.spec_from_file_location("bench_sim", REPO / "benchmarks" / "bench_sim.py")
    bench_sim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_sim)
    bench_sim.main(["--theorems", "3", "--seconds", "0.3"])
    out = capsys.readouterr().out
    assert "in-process:" in out and "http:" in out
