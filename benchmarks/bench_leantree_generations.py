"""Tactic calls per second through the LeanTree client, against the simulated server in each generation.

    python benchmarks/bench_leantree_generations.py --calls 400

One lease per generation, the same proof start, then ``--calls`` tactics (``constructor``, which
always makes progress) on the root, one after another. Generation 3 answers HTTP/1.0 and closes
the connection after each answer, so every call opens a new one; the ratio shows what that costs
next to the keep-alive connections of generations 1-2 (on loopback: a lower bound of the cost).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # also runnable as a file

from leangym.backends.leantree import LeanTreeClient  # noqa: E402
from leangym.cli import ArgumentParser, integer, run_cli  # noqa: E402
from leangym.sim.server import start_server  # noqa: E402

AND = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"


def calls_per_s(generation: int, calls: int) -> float:
    handle = start_server(generation=generation, max_processes=1)
    try:
        with LeanTreeClient(handle.url) as client, client.lease() as lease:
            root = lease.start_proof(AND)
            lease.apply_tactic(root, "constructor")  # (connections opened, generation known)
            t0 = time.perf_counter()
            for _ in range(calls):
                assert lease.apply_tactic(root, "constructor").ok
            return calls / (time.perf_counter() - t0)
    finally:
        handle.stop()


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=integer(1), default=400, help="tactic calls per generation (default 400)")
    args = p.parse_args(argv)
    rates = {g: calls_per_s(g, args.calls) for g in (1, 2, 3)}
    print("| generation | tactic calls/s | vs generation 1 |\n|---|---:|---:|")
    for g, rate in rates.items():
        print(f"| {g} | {rate:,.0f} | {rate / rates[1]:.2f}x |")
    return 0


if __name__ == "__main__":
    run_cli(main)
