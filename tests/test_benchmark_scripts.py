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


def load_script(monkeypatch, name: str):
    """benchmarks/NAME.py as a module, not run: its ``main(argv)`` in this process (the script's
    ``sys.path`` insert and its module entry are undone after the test)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # a dataclass in it looks its module up there
    spec.loader.exec_module(module)
    return module


def load_bench_mcts(monkeypatch):
    return load_script(monkeypatch, "bench_mcts")


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


@pytest.mark.parametrize("argv", [["--repeats", "0"], ["--warmup-steps", "0"], ["--n", "-3"]])
def test_bench_mcts_counts_must_be_positive(monkeypatch, capsys, argv):
    # --repeats 0 ran no run and then divided by the zero simulations/s it kept
    bench = load_bench_mcts(monkeypatch)
    monkeypatch.setattr(bench, "warm_started_net", lambda args: pytest.fail("started despite " + " ".join(argv)))
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(f"error: argument {argv[0]}: must be >= 1") and err.count("\n") == 1


def test_bench_sim_replays_the_same_theorems_pass_after_pass(capsys):
    # every pass starts the same statements again: on one process that kept the first starts (as Lean's
    # do) the second pass was "already declared"; each pass now gets a fresh process
    spec = importlib.util.spec_from_file_location("bench_sim", REPO / "benchmarks" / "bench_sim.py")
    bench_sim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_sim)
    bench_sim.main(["--theorems", "3", "--seconds", "0.3"])
    out = capsys.readouterr().out
    assert "in-process:" in out and "http:" in out


def test_product_shapes_records_what_linear_and_matmul_compute(monkeypatch):
    # the bound bench_mcts_products.py prints rests on these counts: under inference mode (as in
    # evaluate) linear and @ arrive whole, and must be counted as the products they run
    import torch
    import torch.nn.functional as F

    products = load_script(monkeypatch, "bench_mcts_products")
    x, w, bias = torch.randn(2, 3, 64), torch.randn(192, 64), torch.randn(192)
    q, k = torch.randn(5, 4, 2, 16), torch.randn(5, 4, 16, 31)
    with torch.inference_mode(), products.ProductShapes() as seen:
        F.linear(x, w)
        F.linear(x, w, bias)
        q @ k
        torch.randn(7, 33) @ torch.randn(33)
        torch.mm(torch.randn(3, 4), torch.randn(4, 5))
        x + 1.0  # not a product
    assert seen.counts == {("mm", ((6, 64), (64, 192))): 1, ("addmm", ((192,), (6, 64), (64, 192))): 1,
                           ("bmm", ((20, 2, 16), (20, 16, 31))): 1, ("mm", ((7, 33), (33, 1))): 1,
                           ("mm", ((3, 4), (4, 5))): 1}
    assert seen.flops == 2 * (2 * 6 * 64 * 192 + 20 * 2 * 16 * 31 + 7 * 33 + 3 * 4 * 5)
    for (name, shapes), _ in seen.counts.items():  # each recorded shape can be timed alone
        assert products.time_alone(name, shapes, target_s=0.0001) > 0


def test_bench_mcts_products_prints_both_modes_and_their_ratios():
    proc = subprocess.run([sys.executable, "benchmarks/bench_mcts_products.py", "--n", "3", "--sims", "2",
                           "--warmup-steps", "2", "--repeats", "1"], capture_output=True, text=True, timeout=300,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    cells = [[c.strip() for c in line.strip().strip("|").split("|")]
             for line in proc.stdout.splitlines() if line.startswith("| ") and "mode |" not in line]
    rows = {row[0]: [c.rstrip("x").replace(",", "") for c in row[1:]] for row in cells}
    one, batched, ratio = rows["one at a time, 1 thread"], rows["3 batched, 2 threads"], rows["one at a time / batched"]
    # columns: evaluate calls, search s, model ms, products, GFLOP, products alone ms
    assert int(one[0]) > int(batched[0]) >= 1  # one at a time makes more, smaller calls
    for col in (1, 2, 4, 5):  # a timing ratio may round to 0.0 on a loaded machine: only its sign is checked
        assert float(one[col]) > 0 and float(batched[col]) > 0 and float(ratio[col]) >= 0
    assert float(ratio[4]) > 0  # GFLOP do not depend on load
    for col in (2, 4):  # model ms and GFLOP: printed with enough digits to check the ratio from them
        quotient = float(one[col]) / float(batched[col])  # (the ratio is rounded to 1 or 2 decimals)
        assert abs(float(ratio[col]) - quotient) <= 0.051 + 0.03 * quotient, (col, rows)
    assert "an implementation whose only cost were its matrix products would get" in proc.stdout
