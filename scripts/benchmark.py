"""Benchmark a prover on a theorem set: ``python -m scripts.benchmark``.

Run (resumable: rerun the same command to finish an interrupted run)::

    python -m scripts.benchmark --agent hammer --dataset minif2f --split test \\
        --server http://127.0.0.1:8000 --attempts 4 --budget-calls 64 --workers 8 --out hammer.jsonl
    python -m scripts.benchmark --agent mypkg.mod:MyProver --agent-kwargs '{"width": 8}' \\
        --dataset proplogic-heldout --sim --out mine.jsonl

Without ``--server`` and with ``LEANGYM_SERVER`` unset, the run uses an
in-process simulated LeanTree server on 127.0.0.1 (``--sim``), and says so:
its numbers are about the simulator, not about Lean.

Reports::

    python -m scripts.benchmark summary results.jsonl [--plot curve.png]
    python -m scripts.benchmark compare A.jsonl B.jsonl [--plot both.png]

``--agent`` takes ``random``, ``hammer`` (the baselines) or ``module:Name`` /
``path/to/file.py:Name`` naming a prover class, a factory, an instance, or a
policy with ``act(observation, info)`` (see :mod:`leangym.prover`).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from importlib import metadata
from pathlib import Path
from typing import Any

from leangym.cli import run_cli
from leangym.datasets import DatasetError, load_theorems
from leangym.prover import AgentSpecError, load_agent
from leangym.session import Budget
from scripts.bench_records import FORMAT, ResultsWriter, mismatches, read_results
from scripts.bench_report import compare, markdown, plot, summary_of
from scripts.bench_run import RunConfig, Task, run_tasks

AGENT_ALIASES = {
    "random": "baselines.random_prover:RandomProver",
    "hammer": "baselines.hammer:HammerProver",
}
SERVER_ENV = "LEANGYM_SERVER"


def _versions() -> dict[str, Any]:
    try:
        version = metadata.version("leangym")
    except metadata.PackageNotFoundError:
        version = "unknown"
    root = Path(__file__).resolve().parents[1]
    commit = dirty = None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=5).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                    capture_output=True, text=True, timeout=5).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return {"leangym_version": version, "git_commit": commit, "git_dirty": dirty,
            "python": platform.python_version(), "platform": platform.platform()}


def _server_identity(client: Any, simulated: bool) -> dict[str, Any]:
    ident = client.identity()
    info = ident.info if isinstance(ident.info, dict) else {}
    sim = info.get("leangym") if isinstance(info.get("leangym"), dict) else {}
    return {"url": ident.url, "generation": ident.generation, "simulated": simulated or bool(sim.get("simulated")),
            "max_processes": info.get("max_processes"),
            # identity only: the simulator's live counters (requests, load) would make headers differ run to run
            "leangym_status": {k: sim[k] for k in ("simulated", "generation", "version") if k in sim}}


def _parser_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", required=True, help="random | hammer | module:Name | file.py:Name")
    p.add_argument("--agent-kwargs", default="{}", help="JSON object of keyword arguments for the agent")
    p.add_argument("--dataset", default="minif2f", help="minif2f | proplogic-heldout[:N] | FILE.jsonl | DIR | URL")
    p.add_argument("--split", default=None, help="e.g. test or valid (miniF2F); default: every theorem")
    p.add_argument("--limit", type=int, default=None, help="only the first N theorems (file order)")
    p.add_argument("--server", default=None, help=f"LeanTree server URL (default: ${SERVER_ENV}, else --sim)")
    p.add_argument("--sim", action="store_true", help="start an in-process simulated server on 127.0.0.1")
    p.add_argument("--sim-factorized", action="store_true", help="--sim, with the newer server generation (one branch per goal)")
    p.add_argument("--attempts", type=int, default=1, help="attempts per theorem (for pass@k)")
    p.add_argument("--budget-calls", type=int, default=100, help="Lean calls per attempt (0: unlimited)")
    p.add_argument("--budget-seconds", type=float, default=None, help="wall seconds per attempt")
    p.add_argument("--timeout-ms", type=int, default=1000, help="Lean timeout per tactic")
    p.add_argument("--workers", type=int, default=1, help="parallel attempts (one leased process each)")
    p.add_argument("--seed", type=int, default=0, help="run seed (each attempt gets a seed derived from it)")
    p.add_argument("--out", type=Path, required=True, help="results JSONL (appended; rerun to resume)")
    p.add_argument("--restart", action="store_true", help="delete an existing --out file and start over")
    p.add_argument("--plot", default=None, help="PNG of pass rate vs budget (default: OUT.png; 'none' to skip)")
    p.add_argument("--lease-timeout", type=float, default=120.0, help="seconds to wait for a free Lean process")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.benchmark", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command")
    _parser_run(sub.add_parser("run", help="run a benchmark (the default command)"))
    s = sub.add_parser("summary", help="summarise a results file")
    s.add_argument("results", type=Path)
    s.add_argument("--plot", default=None, help="write the pass-rate-vs-budget PNG here")
    c = sub.add_parser("compare", help="compare two results files")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--plot", default=None, help="write both curves into this PNG")
    return p


def _header(args: argparse.Namespace, kwargs: dict, count: int, server: dict) -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "agent": args.agent, "agent_resolved": AGENT_ALIASES.get(args.agent, args.agent),
            "agent_kwargs": kwargs, "dataset": args.dataset, "split": args.split, "count": count,
            "limit": args.limit, "attempts": args.attempts, "budget_calls": args.budget_calls or None,
            "budget_seconds": args.budget_seconds, "seed": args.seed, "timeout_ms": args.timeout_ms,
            "workers": args.workers, "server": server, **_versions(), "argv": sys.argv[1:]}


def cmd_run(args: argparse.Namespace) -> int:
    from leangym.backends.leantree import LeanTreeClient
    from tqdm import tqdm

    try:
        kwargs = json.loads(args.agent_kwargs)
        if not isinstance(kwargs, dict):
            raise ValueError("not a JSON object")
    except ValueError as e:
        print(f"--agent-kwargs: {e}", file=sys.stderr)
        return 2
    spec = AGENT_ALIASES.get(args.agent, args.agent)
    try:
        load_agent(spec, kwargs)  # fail now, not in every worker
        theorems = load_theorems(args.dataset, args.split)
    except (AgentSpecError, DatasetError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    theorems = theorems[: args.limit] if args.limit is not None else theorems
    budget = Budget(args.budget_calls or None, args.budget_seconds)

    args.sim = args.sim or args.sim_factorized
    with ExitStack() as stack:
        url = args.server or (None if args.sim else os.environ.get(SERVER_ENV))
        simulated = url is None
        if simulated:
            from leangym.sim.server import SimServerConfig, start_server

            handle = start_server(SimServerConfig(max_processes=max(1, args.workers),
                                                  factorized=args.sim_factorized))
            stack.callback(handle.stop)
            url = handle.url
            why = "--sim" if args.sim else f"no --server and ${SERVER_ENV} unset"
            print(f"[benchmark] {why}: using an in-process SIMULATED LeanTree server at {url} "
                  "(simulated Lean, not real Lean results)", file=sys.stderr)
        client = LeanTreeClient(url)
        stack.callback(client.close)
        try:
            client.status()  # identity() below tolerates a silent server; a run must not start on one
            server = _server_identity(client, simulated)
        except Exception as e:  # noqa: BLE001
            print(f"error: cannot reach the server: {e}", file=sys.stderr)
            return 2
        workers = args.workers
        if server.get("max_processes") and workers > server["max_processes"]:
            print(f"[benchmark] the server has {server['max_processes']} processes: using that many workers",
                  file=sys.stderr)
            workers = server["max_processes"]

        header = _header(args, kwargs, len(theorems), server)
        if args.restart and args.out.exists():
            args.out.unlink()
        done: set = set()
        if args.out.exists() and b"\n" not in args.out.read_bytes():
            args.out.write_bytes(b"")  # only part of a header: the run never wrote a result; start afresh
        if args.out.exists() and args.out.stat().st_size > 0:
            old = read_results(args.out)
            bad = mismatches(old.header, header)
            if bad:
                print(f"error: {args.out} holds a different run ({'; '.join(bad)}); use another --out or "
                      "--restart", file=sys.stderr)
                return 2
            done = old.done()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        writer = ResultsWriter(args.out)
        stack.callback(writer.close)
        if args.out.stat().st_size > 0:
            writer.write({**header, "type": "resume", "already_done": len(done)})
        else:
            writer.write(header)

        tasks = [Task(t, k) for k in range(args.attempts) for t in theorems if (t.name, k) not in done]
        print(f"[benchmark] {len(theorems)} theorems x {args.attempts} attempts: {len(done)} done, "
              f"{len(tasks)} to run on {workers} worker(s)", file=sys.stderr)
        bar = tqdm(total=len(tasks), unit="attempt", disable=args.quiet, file=sys.stderr, dynamic_ncols=True)
        stack.callback(bar.close)
        lock = threading.Lock()
        solved = [0]

        def sink(r: Any) -> None:
            writer.write_result(r)
            with lock:
                solved[0] += r.solved
                bar.set_postfix(solved=solved[0], refresh=False)
                bar.update(1)

        config = RunConfig(budget, workers, args.seed, args.timeout_ms)
        interrupted = False
        try:
            complete = run_tasks(tasks, lambda: load_agent(spec, kwargs),
                                 lambda: client.lease(timeout=args.lease_timeout), config, sink)
        except KeyboardInterrupt:  # the attempts in flight were finished and written
            complete, interrupted = False, True
        writer.write({"type": "run_end", "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                      "complete": complete, "server_generation": client.generation})
    _report(args.out, None if args.plot == "none" else (args.plot or args.out.with_suffix(".png")))
    if not complete:
        why = "interrupted" if interrupted else "stopped early (the server kept failing)"
        print(f"[benchmark] {why}; rerun the same command to resume", file=sys.stderr)
    return 130 if interrupted else 0 if complete else 1


def _report(path: Path, plot_path: Any) -> None:
    rs = read_results(path)
    print(markdown(summary_of(rs), rs.header))
    if plot_path:
        print(f"\nplot: {plot({path.stem: rs}, plot_path)}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in ("run", "summary", "compare", "-h", "--help"):
        argv.insert(0, "run")
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return cmd_run(args)
    if args.command == "summary":
        _report(args.results, args.plot)
        return 0
    if args.command == "compare":
        a, b = read_results(args.a), read_results(args.b)
        la, lb = args.a.stem, args.b.stem
        if la == lb:  # a/run.jsonl vs b/run.jsonl: name them by their paths
            la, lb = str(args.a.with_suffix("")), str(args.b.with_suffix(""))
        print(compare(a, b, la, lb))
        if args.plot:
            print(f"\nplot: {plot({la: a, lb: b}, args.plot)}")
        return 0
    build_parser().print_help()
    return 2


if __name__ == "__main__":
    run_cli(main)
