"""benchmarks/bench_distributed.py's transport measurement as a user runs it (a ratio is printed; its
value is not checked: no timing assertions)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_distributed_transport_prints_rows_per_second_and_the_ratio_to_the_goal(tmp_path):
    out = tmp_path / "d.md"
    proc = subprocess.run([sys.executable, "benchmarks/bench_distributed.py", "--only", "transport",
                           "--transport-messages", "20", "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = re.search(r"\| 10,000 \| [\d.]+ \| ([\d,]+) \| (\d+) \|", proc.stdout)
    assert row and int(row[1].replace(",", "")) > 0 and int(row[2]) > 0, proc.stdout
    assert re.search(r"ratio to the goal \(100,000 rows/s\): [\d.]+x", proc.stdout)
    assert out.read_text().startswith("machine: ") and "\n## 1. Transport\n" in out.read_text()
