"""Benchmark a prover on a theorem set: ``leangym-benchmark`` (from a checkout, ``python -m scripts.benchmark`` too).

Run (resumable: rerun the same command to finish an interrupted run)::

    leangym-benchmark --agent hammer --dataset minif2f --split test \\
        --server http://127.0.0.1:8000 --attempts 4 --budget-calls 64 --workers 8 --out hammer.jsonl
    leangym-benchmark --agent mypkg.mod:MyProver --agent-kwargs '{"width": 8}' \\
        --dataset proplogic-heldout --sim --out mine.jsonl

Without ``--server`` and with ``LEANGYM_SERVER`` unset, the run uses an
in-process simulated LeanTree server on 127.0.0.1 (``--sim``), and says so:
its numbers are about the simulator, not about Lean.

Reports::

    leangym-benchmark summary results.jsonl [--plot curve.png]
    leangym-benchmark compare A.jsonl B.jsonl [--plot both.png]
    leangym-benchmark recheck results.jsonl [--server URL]   # the proofs again, without the agent

``--agent`` takes ``random``, ``hammer`` (the baselines) or ``module:Name`` /
``path/to/file.py:Name`` naming a prover class, a factory, an instance, a
policy with ``act(observation, info)``, or a policy function
``f(observation, info)`` (see :mod:`leangym.prover`). The other agents of this
repository: ``baselines.best_first:BestFirstProver`` (its policy from
``--agent-kwargs '{"checkpoint": "C.pt"}'``), ``baselines.maskable_ppo:MaskablePPOProver``
(``'{"path": "ppo.zip"}'``) and ``agents.alphaproof.prove:AlphaProofProver``
(``'{"checkpoint": "C.pt"}'``).
``--theorems A,B`` runs only the named theorems of the dataset.
All run options: ``leangym-benchmark run --help``.

Exit status: 0 when every attempt finished; 1 when some did not (the server
kept failing, or attempts ended in server errors: rerun the same command to
retry them); 2 for a mistake on the command line; 130 when interrupted.
A resume refuses to continue a file whose finished theorems' statements have
changed since (each result records a hash of its statement). ``--out`` (and
``--restart``) only ever appends to, truncates or deletes a leangym results
file: any other file there is refused, the ``--dataset`` file included.
``--plot``'s directory is checked before the run; a plot that still fails
afterwards is a warning, and the run keeps its exit status.
"""
from __future__ import annotations

import argparse
import difflib
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
from typing import Any, Callable
from urllib.parse import urlparse

from leangym.cli import ArgumentParser, HelpFormatter, exclusive, integer, number, run_cli, user_error
from leangym.datasets import DatasetError, load_theorems
from leangym.datasets.download import file_url_path
from leangym.envs.server_lease import SERVER_ENV_VAR
from leangym.prover import AgentSpecError, load_agent
from leangym.session import Budget
from leangym.theorem import Theorem
from leangym.harness.records import (
    FORMAT, ResultSet, ResultsWriter, canonical_agent, dataset_source, is_partial_header, is_results_file, recorded,
    read_results, resume_refusal, statement_hash,
)
from leangym.harness import recheck as bench_recheck
from leangym.harness.report import compare, markdown, plot, summary_of
from leangym.harness.server import connect
from leangym.harness.run import RunConfig, Task, run_tasks

AGENT_ALIASES = {
    "random": "baselines.random_prover:RandomProver",
    "hammer": "baselines.hammer:HammerProver",
}
COMMANDS = ("run", "summary", "compare", "recheck")
PROG = "leangym-benchmark"


# --------------------------------------------------------------------------- command-line values

positive_int, non_negative_int, positive_float = integer(1), integer(0), number(positive=True)


def theorem_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected NAME[,NAME...]")
    return names


def _did_you_mean(word: str, choices: Any) -> str:
    close = difflib.get_close_matches(word, list(choices), n=3)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _versions() -> dict[str, Any]:
    try:
        version = metadata.version("leangym")
    except metadata.PackageNotFoundError:
        version = "unknown"
    root = Path(__file__).resolve().parents[2]  # the checkout, if this is one
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


def _parser_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", required=True, help="random | hammer | module:Name | file.py:Name")
    p.add_argument("--agent-kwargs", default="{}", help="JSON object of keyword arguments for the agent")
    p.add_argument("--dataset", default="minif2f", help="minif2f | proplogic-heldout[:N] | FILE.jsonl | FILE.json | FILE.lean | DIR | URL")
    p.add_argument("--refresh-dataset", action="store_true",
                   help="download an http(s) --dataset again instead of using its cached copy")
    p.add_argument("--split", default=None, help="e.g. test or valid (miniF2F); default: every theorem")
    p.add_argument("--theorems", type=theorem_names, default=None, metavar="NAME[,NAME...]",
                   help="only these theorems of the dataset (file order)")
    p.add_argument("--limit", type=positive_int, default=None, help="only the first N theorems (file order)")
    p.add_argument("--server", default=None, help=f"LeanTree server URL (default: ${SERVER_ENV_VAR}, else --sim)")
    p.add_argument("--sim", action="store_true", help="start an in-process simulated server on 127.0.0.1")
    p.add_argument("--sim-factorized", action="store_true", help="--sim, as server generation 2 (one branch per goal)")
    p.add_argument("--attempts", type=positive_int, default=1, help="attempts per theorem (for pass@k)")
    p.add_argument("--budget-calls", type=non_negative_int, default=100, help="Lean calls per attempt (0: unlimited)")
    p.add_argument("--budget-seconds", type=positive_float, default=None, help="wall seconds per attempt (thinking included); without it an agent "
                   "that never returns is waited for, so set it for agents you do not trust")
    p.add_argument("--timeout-ms", type=positive_int, default=1000, help="Lean timeout per tactic")
    p.add_argument("--workers", type=positive_int, default=1, help="parallel attempts (one leased process each)")
    p.add_argument("--seed", type=int, default=0, help="run seed (each attempt gets a seed derived from it)")
    p.add_argument("--out", type=Path, required=True, help="results JSONL (appended; rerun to resume)")
    p.add_argument("--restart", action="store_true", help="delete an existing --out file and start over")
    p.add_argument("--plot", default=None, help="PNG of pass rate vs budget (default: OUT.png; 'none' to skip)")
    p.add_argument("--lease-timeout", type=positive_float, default=120.0,
                   help="seconds to wait for a free Lean process")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command")
    _parser_run(sub.add_parser("run", help="run a benchmark (the default command)",
                               formatter_class=HelpFormatter))
    s = sub.add_parser("summary", help="summarise a results file")
    s.add_argument("results", type=Path)
    s.add_argument("--plot", default=None, help="write the pass-rate-vs-budget PNG here")
    c = sub.add_parser("compare", help="compare two results files")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--plot", default=None, help="write both curves into this PNG")
    r = sub.add_parser("recheck", help="check a results file's proofs again, without the agent (see below)",
                       description=bench_recheck.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("results", type=Path)
    r.add_argument("--dataset", default=None, help="where the statements are (default: the run's --dataset)")
    r.add_argument("--split", default=None, help="default: the run's --split")
    r.add_argument("--server", default=None, help=f"LeanTree server URL (default: ${SERVER_ENV_VAR}, else --sim)")
    r.add_argument("--sim", action="store_true", help="start an in-process simulated server on 127.0.0.1")
    r.add_argument("--sim-factorized", action="store_true", help="--sim, as server generation 2 (one branch per goal)")
    r.add_argument("--lease-timeout", type=positive_float, default=120.0,
                   help="seconds to wait for a free Lean process")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


# --------------------------------------------------------------------------- what a run is

def select(theorems: list[Theorem], names: list[str] | None, limit: int | None, *, split: str | None = None,
           everything: Callable[[], list[Theorem]] | None = None) -> list[Theorem]:
    """``--theorems`` (in file order), then ``--limit``. An unknown name is an error naming close ones, or,
    for a name in another split than ``split``, the ``--split`` to pass (``everything()``: the whole
    dataset, before split filtering; read only for that error)."""
    if names:
        known = {t.name for t in theorems}
        unknown = [n for n in names if n not in known]
        if unknown:
            split_of = {t.name: t.split for t in everything()} if split is not None and everything else {}
            absent = [n for n in unknown if n not in split_of]
            if not absent:
                raise DatasetError(_in_other_split(names, unknown[0], split, split_of))
            raise DatasetError(f"--theorems: no theorem named {absent[0]!r} in the dataset"
                               f"{_did_you_mean(absent[0], known)}"
                               + (f" (nor {', '.join(map(repr, absent[1:4]))})" if absent[1:] else ""))
        wanted = set(names)
        theorems = [t for t in theorems if t.name in wanted]
    return theorems[:limit] if limit is not None else theorems


def _in_other_split(names: list[str], name: str, split: str, split_of: dict[str, str | None]) -> str:
    """The error for a ``--theorems`` name that is in the dataset, but not in ``--split``."""
    other = split_of[name]
    found = sorted({repr(split_of[n]) if split_of[n] else "none" for n in names if n in split_of})
    if len(found) > 1:
        fix = f"leave out --split (the names are in splits {', '.join(found[:-1])} and {found[-1]})"
    else:
        fix = f"pass --split {other}" if other else "leave out --split"
    return f"--theorems: {name!r} is in {f'split {other!r}' if other else 'no split'}, not {split!r}: {fix}"


def _dataset_file(spec: str) -> Path | None:
    """The local file or directory ``--dataset`` reads (None: a download or a generated set)."""
    source = dataset_source(spec)
    if source is None:
        return None
    if urlparse(source).scheme == "file":
        return file_url_path(source)
    return None if "://" in source else Path(source)


def out_refusal(out: Path, dataset: str) -> str | None:
    """Why a run must not write ``out`` (None: it may). A run appends to it, truncates a header cut
    short, and deletes it on ``--restart``: only ever a leangym results file (or the start of one)."""
    if out.is_dir():
        return f"--out {out} is a directory; name a results file, e.g. {out / 'results.jsonl'}"
    if not out.exists():
        return None
    data = _dataset_file(dataset)
    if data is not None and data.exists() and os.path.samefile(out, data):
        return f"--out {out} is the --dataset file; choose another --out"
    if not is_results_file(out):
        return f"{out} is not a leangym results file; choose another --out"
    return None


def plot_refusal(plot_arg: str | None) -> str | None:
    """Why ``--plot`` cannot be written (None: it can, or none was asked for): checked before a run,
    which would otherwise find out only at its end."""
    if plot_arg is None or plot_arg == "none":
        return None
    path = Path(plot_arg).expanduser()
    if path.is_dir():
        return f"--plot {plot_arg} is a directory; name a file, e.g. {path / 'curve.png'}"
    if not path.parent.is_dir():
        return f"--plot {plot_arg}: no directory {path.parent}; create it or choose another --plot (or --plot none)"
    if not os.access(path.parent, os.W_OK):
        return f"--plot {plot_arg}: cannot write in {path.parent}; choose another --plot (or --plot none)"
    if path.suffix and path.suffix.lower().lstrip(".") not in PLOT_FORMATS:  # (none: .png is added)
        return (f"--plot {plot_arg}: not an image file name; end it in one of "
                f"{', '.join('.' + f for f in PLOT_FORMATS)} (or --plot none)")
    return None


PLOT_FORMATS = ("png", "pdf", "svg", "svgz", "jpg", "jpeg", "webp", "eps", "ps", "pgf", "tif", "tiff", "raw",
                "rgba")  # what matplotlib writes


def default_plot_refusal(out: Path) -> str | None:
    """``--plot`` was not given, so the plot goes to OUT.png: refuse when a fresh run (no results at
    ``out`` yet) would replace an image that is there already (not one this run's results drew)."""
    png = out.with_suffix(".png")
    if png.exists() and not (out.exists() and out.stat().st_size > 0):
        return (f"{png} exists and this new run would replace it with its plot: pass --plot PATH for the "
                "plot (or --plot none), or move the file")
    return None


def _header(args: argparse.Namespace, kwargs: dict, count: int, server: dict) -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "agent": args.agent, "agent_resolved": canonical_agent(AGENT_ALIASES.get(args.agent, args.agent)),
            "agent_kwargs": kwargs, "dataset": recorded(args.dataset), "dataset_source": dataset_source(args.dataset),
            "split": args.split, "theorems": args.theorems, "count": count,
            "limit": args.limit, "attempts": args.attempts, "budget_calls": args.budget_calls or None,
            "budget_seconds": args.budget_seconds, "seed": args.seed, "timeout_ms": args.timeout_ms,
            "workers": args.workers, "server": server, **_versions(), "argv": [recorded(a) for a in sys.argv[1:]]}


# --------------------------------------------------------------------------- run

def cmd_run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    try:
        kwargs = json.loads(args.agent_kwargs)
        if not isinstance(kwargs, dict):
            raise ValueError("not a JSON object")
    except ValueError as e:
        return user_error(e, "--agent-kwargs: ")
    if args.agent not in AGENT_ALIASES and ":" not in args.agent and "." not in args.agent:
        print(f"error: unknown agent {args.agent!r}{_did_you_mean(args.agent, AGENT_ALIASES)}; built-in agents: "
              f"{', '.join(AGENT_ALIASES)}; or name your own as module:Name or path/to/file.py:Name",
              file=sys.stderr)
        return 2
    refusal = (out_refusal(args.out, args.dataset) or plot_refusal(args.plot)
               or (default_plot_refusal(args.out) if args.plot is None and not args.restart else None))
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    spec = AGENT_ALIASES.get(args.agent, args.agent)
    try:
        load_agent(spec, kwargs)  # fail now, not in every worker
        theorems = select(load_theorems(args.dataset, args.split, refresh=args.refresh_dataset), args.theorems,
                          args.limit, split=args.split, everything=lambda: load_theorems(args.dataset))
    except (AgentSpecError, DatasetError) as e:
        return user_error(e)
    hashes = {t.name: statement_hash(t) for t in theorems}
    budget = Budget(args.budget_calls or None, args.budget_seconds)

    with ExitStack() as stack:
        # one run at a time per --out (two would write every attempt twice): a hidden lock file beside it
        stack.enter_context(exclusive(args.out.parent / f".{args.out.name}.lock", f"--out {args.out}", "--out"))
        # with a time budget, an abandoned attempt (an agent that never returned) keeps its
        # process until its Lean call under way is answered: spare ones let the workers go on meanwhile
        spare = args.workers if args.budget_seconds else 0
        try:
            client, server = connect(args, stack, max(1, args.workers) + spare)
        except ConnectionError as e:
            return user_error(e)
        workers = args.workers
        if server.get("max_processes") and workers > server["max_processes"]:
            print(f"[benchmark] the server has {server['max_processes']} processes: using that many workers",
                  file=sys.stderr)
            workers = server["max_processes"]

        header = _header(args, kwargs, len(theorems), server)
        done: set = set()
        # out_refusal() found an existing --out to be a results file, or the start of one
        if args.out.exists() and (args.restart or is_partial_header(args.out.read_bytes())):
            args.out.unlink()  # --restart; or only part of a header: the run never wrote a result, start afresh
        if args.out.exists() and args.out.stat().st_size > 0:
            old = read_results(args.out)
            refusal = resume_refusal(old, header, hashes)
            if refusal:
                print(f"error: {refusal}", file=sys.stderr)
                return 2
            done = old.done()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        writer = ResultsWriter(args.out)
        stack.callback(writer.close)
        if args.out.stat().st_size > 0:
            writer.write({**header, "type": "resume", "already_done": len(done)})
        else:
            writer.write(header)

        wanted = [(t, k) for k in range(args.attempts) for t in theorems]
        tasks = [Task(t, k) for t, k in wanted if (t.name, k) not in done]
        others = len(done - {(t.name, k) for t, k in wanted})
        print(f"[benchmark] {len(theorems)} theorems x {args.attempts} attempts: {len(wanted) - len(tasks)} done, "
              f"{len(tasks)} to run on {workers} worker(s)"
              + (f"; the file also holds {others} finished attempts beyond these (the reports count them)"
                 if others else ""), file=sys.stderr)
        bar = tqdm(total=len(tasks), unit="attempt", disable=args.quiet, file=sys.stderr, dynamic_ncols=True)
        stack.callback(bar.close)
        lock = threading.Lock()
        solved = [0]

        def sink(r: Any) -> None:
            r.statement_hash = hashes.get(r.theorem)  # what was proved: a resume checks it is still the statement
            writer.write_result(r)
            with lock:
                solved[0] += r.solved
                bar.set_postfix(proved_attempts=solved[0], refresh=False)  # the table counts theorems
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
    rs = _report(args.out, None if args.plot == "none" else (args.plot or args.out.with_suffix(".png")),
                 after_run=True)
    # infra errors are not results: this run is finished only when none of its attempts is left to retry
    infra = sum(getattr(rs.results.get((t.name, k)), "status", None) == "infra_error" for t, k in wanted)
    if interrupted or not complete:
        why = "interrupted" if interrupted else "stopped early (the server kept failing)"
        print(f"[benchmark] {why}; rerun the same command to resume", file=sys.stderr)
    elif infra:
        print(f"[benchmark] {infra} attempt{'s' if infra > 1 else ''} hit server errors; rerun the same command "
              "to retry them", file=sys.stderr)
    return 130 if interrupted else 0 if complete and not infra else 1


def _report(path: Path, plot_path: Any, *, after_run: bool = False) -> ResultSet:
    """Print the summary of ``path`` and write its plot. ``after_run``: a plot that fails is a warning,
    not an error, so that the run's exit status (130 interrupted, 1 retry) and its hint survive."""
    rs = read_results(path)
    print(markdown(summary_of(rs), rs.run))
    if plot_path:
        try:
            print(f"\nplot: {plot({path.stem: rs}, plot_path)}")
        except Exception as e:  # noqa: BLE001 - matplotlib raises several kinds; the results are written anyway
            if not after_run:
                raise
            print(f"[benchmark] warning: could not write the plot (--plot): {e}; the results are in {path}",
                  file=sys.stderr)
    return rs


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv.insert(0, "run")  # `run` is the default command: `--agent ...` alone runs
    elif argv and argv[0] not in COMMANDS and argv[0] not in ("-h", "--help"):
        print(f"error: unknown command {argv[0]!r}{_did_you_mean(argv[0], COMMANDS)}; commands: "
              f"{', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return cmd_run(args)
    refusal = plot_refusal(args.plot) if args.command in ("summary", "compare") else None
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    if args.command == "summary":
        _report(args.results, None if args.plot == "none" else args.plot)
        return 0
    if args.command == "recheck":
        return bench_recheck.cmd_recheck(args)
    if args.command == "compare":
        a, b = read_results(args.a), read_results(args.b)
        la, lb = args.a.stem, args.b.stem
        if la == lb:  # a/run.jsonl vs b/run.jsonl: name them by their paths
            la, lb = str(args.a.with_suffix("")), str(args.b.with_suffix(""))
        print(compare(a, b, la, lb))
        if args.plot and args.plot != "none":
            print(f"\nplot: {plot({la: a, lb: b}, args.plot)}")
        return 0
    build_parser().print_help()
    return 2


def cli() -> None:
    """The ``leangym-benchmark`` console script."""
    run_cli(main)


if __name__ == "__main__":
    run_cli(main)
