"""benchmarks/bench_mcts.py as a user runs it: several Lean settings in one run, a table and a plot
(with the fixed-cost model stand-in and tiny budgets, so this checks the script, not speed)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def test_bench_mcts_latency_without_a_server_is_a_one_line_error():
    proc = bench_mcts("--latency-ms", "5")
    assert proc.returncode == 2 and "add --lean server" in proc.stderr and "Traceback" not in proc.stderr
