"""Speed of the simulated Lean backend: in-process tactic steps/s vs. steps/s over HTTP.

    python benchmarks/bench_sim.py [--theorems 200] [--seconds 5]

Replays the reference proofs of generated PropLogic theorems tactic by tactic
(the same work both ways) on (1) a `LocalProcess` (the kernel in this process) and (2) the
simulated LeanTree server on loopback through `LeanTreeClient`. Prints both
rates and their ratio, measured in one run (the issue's goal: >= 5,000
in-process steps/s on one core), counting the tactic calls' time only and end to
end (each statement's elaboration too: about half the time for these short proofs).
"""
from __future__ import annotations

import contextlib
import time

from tqdm import tqdm

from leangym.backends.leantree import LeanTreeClient
from leangym.datasets.proplogic import generate
from leangym.sim.local import LocalProcess
from leangym.sim.server import SimServerConfig, start_server


def replay(new_process, theorems, seconds: float, label: str) -> tuple[float, float]:
    """Tactic steps/s replaying reference proofs for about ``seconds``: counting the tactic calls' time
    only, and end to end (each statement's elaboration, ``start_proof``, too). Each pass over the
    theorems gets a fresh process from ``new_process()`` (a context manager): a process keeps what it
    started, as Lean's do, and one that served every pass would measure its own growth."""
    steps, busy, start = 0, 0.0, time.perf_counter()
    with tqdm(desc=label, unit="step", mininterval=0.5) as bar:
        while time.perf_counter() - start < seconds:
            sources = [t.theorem.start_source() for t in theorems]  # (client-side text work)
            with new_process() as process:
                busy, steps = _pass(process, theorems, sources, bar, busy, steps)
    return steps / busy, steps / (time.perf_counter() - start)


def _pass(process, theorems, sources, bar, busy: float, steps: int) -> tuple[float, int]:
    for t, source in zip(theorems, sources):
        state = process.start_proof(source)
        tic = time.perf_counter()
        for tactic in t.proof:
            result = process.apply_tactic(state, tactic)
            assert result.ok, (t.name, tactic, result.error)
            state = result.states[0] if result.states else state
        busy += time.perf_counter() - tic
        steps += len(t.proof)
        bar.update(len(t.proof))
    return busy, steps


def main(argv=None) -> None:
    from leangym.cli import ArgumentParser

    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--theorems", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    theorems = generate(args.theorems, seed=1, difficulty=(1, 5))

    local = replay(lambda: contextlib.nullcontext(LocalProcess()), theorems, args.seconds, "in-process")
    server = start_server(SimServerConfig(max_processes=1))
    try:
        with LeanTreeClient(server.url) as client:  # a lease per pass (rolled back when it is returned)
            http = replay(client.lease, theorems, args.seconds, "http")
    finally:
        server.stop()
    print("tactic steps/s: tactic calls only | end to end (statements elaborated too)")
    print(f"in-process: {local[0]:,.0f} | {local[1]:,.0f} (goal >= 5,000, tactic calls)")
    print(f"http:       {http[0]:,.0f} | {http[1]:,.0f}")
    print(f"ratio in-process / http: {local[0] / http[0]:.1f}x | {local[1] / http[1]:.1f}x")


if __name__ == "__main__":
    from leangym.cli import run_cli

    run_cli(main)
