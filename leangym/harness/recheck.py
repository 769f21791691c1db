"""Check a results file's proofs again, in a process that never ran the agent.

``leangym-benchmark recheck results.jsonl [--server URL | --sim] [--dataset D]``

A benchmark run checks every proof whole before it counts it, but it runs the
agent in its own Python interpreter: agent code could patch the harness itself
(its checker, its results writer). The harness defends against provers that
game the search API, not against code that rewrites the harness. For results
from agent code you do not trust, recheck them: this command imports no agent.
It reloads the statements from the dataset, makes sure each one is the
statement the run proved (its hash), and checks each recorded proof as one
command on a fresh Lean process, under the default soundness policy.
"""
from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Callable, Mapping

from leangym.backends.types import LeanProcess, ServerError
from leangym.cli import user_error
from leangym.datasets import DatasetError, load_theorems
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem
from leangym.harness.records import AttemptResult, ResultSet, is_results_file, read_results, statement_hash
from leangym.harness.server import connect


@dataclass
class Recheck:
    """What a recheck found: proofs that hold, proofs that do not (and why), and those it could not check."""

    held: list[AttemptResult] = field(default_factory=list)
    failed: list[tuple[AttemptResult, str]] = field(default_factory=list)
    unchecked: list[tuple[AttemptResult, str]] = field(default_factory=list)  # server trouble: rerun

    @property
    def checked(self) -> int:
        return len(self.held) + len(self.failed)


def recheck(rs: ResultSet, theorems: Mapping[str, Theorem], lease: Callable[[], LeanProcess],
            policy: SoundnessPolicy | None = None, on_result: Callable[[], None] | None = None) -> Recheck:
    """Check again every proof ``rs`` counts, each on a fresh process from ``lease()``.

    ``theorems``: the dataset's statements by name. A proof whose theorem is missing there, or whose
    statement differs from the one the run recorded (its hash), fails: it was not a proof of this
    dataset's theorem. ``on_result`` is called after each proof (progress).
    """
    policy = policy or SoundnessPolicy()
    out = Recheck()
    for r in sorted((r for r in rs.attempts if r.solved), key=lambda r: r.key):
        why, server_trouble = _recheck_one(r, theorems, lease, policy)
        if why is None:
            out.held.append(r)
        else:
            (out.unchecked if server_trouble else out.failed).append((r, why))
        if on_result is not None:
            on_result()
    return out


def _recheck_one(r: AttemptResult, theorems: Mapping[str, Theorem], lease: Callable[[], LeanProcess],
                 policy: SoundnessPolicy) -> tuple[str | None, bool]:
    """(None if ``r``'s proof holds, else why not; whether the server, not the proof, was the trouble)."""
    theorem = theorems.get(r.theorem) if isinstance(r.theorem, str) else None  # the file is the agent's too
    if theorem is None:
        return "no theorem of this name in the dataset", False
    if r.statement_hash is None:
        return "the result records no statement hash (a file older than the hashes): cannot tell what it proved", False
    if r.statement_hash != statement_hash(theorem):
        return "the dataset's statement differs from the one this result proved (statement hash)", False
    if not isinstance(r.proof, str) or not r.proof.strip():
        return "the result records no proof", False
    try:
        process = lease()
    except ServerError as e:
        return f"could not lease a Lean process: {e}", True
    try:
        verdict = verify(process, theorem, r.proof, policy, spare=lease)
    finally:
        process.close()
    return (None if verdict.ok else verdict.error or "the final check failed"), verdict.server_failure


def report(rec: Recheck, total: int) -> str:
    """A few lines for the terminal: counts, then each proof that did not hold or could not be checked."""
    lines = [f"rechecked {rec.checked} of {total} proofs: {len(rec.held)} hold, {len(rec.failed)} do not"
             + (f", {len(rec.unchecked)} could not be checked (server trouble: run recheck again)"
                if rec.unchecked else "")]
    for r, why in rec.failed:
        lines.append(f"  DOES NOT HOLD  {r.theorem} (attempt {r.attempt}): {why.splitlines()[0][:300]}")
    for r, why in rec.unchecked:
        lines.append(f"  not checked    {r.theorem} (attempt {r.attempt}): {why.splitlines()[0][:300]}")
    return "\n".join(lines)


def cmd_recheck(args: argparse.Namespace) -> int:
    """Exit 0 when every proof holds; 1 when one does not, or could not be checked; 2 for a usage mistake."""
    from tqdm import tqdm

    if not args.results.is_file() or not is_results_file(args.results):
        print(f"error: {args.results} is not a leangym results file", file=sys.stderr)
        return 2
    try:
        rs = read_results(args.results)
    except (ValueError, TypeError, KeyError) as e:
        return user_error(e, f"{args.results}: not a readable results file: ")
    run = rs.header  # a run never changes its dataset: a resume line that names another is an edited file
    def names(line: dict) -> tuple:  # by resolved source where recorded: a relative path differs by directory
        return line.get("dataset_source") or line.get("dataset"), line.get("split")

    if args.dataset is None and any(names(e) != names(run) for e in rs.events if e.get("type") == "resume"):
        print(f"error: {args.results} names more than one dataset (its header and its resume lines differ): "
              "pass --dataset (and --split) with the statements to check against", file=sys.stderr)
        return 2
    dataset = args.dataset or run.get("dataset")
    if args.dataset is None and "…" in str(dataset):  # a URL recorded without its query (bench_records.recorded)
        print(f"error: {args.results} names its dataset {dataset!r} without the URL's query or credentials: pass "
              "--dataset with the whole URL (or a copy of the file)", file=sys.stderr)
        return 2
    split = args.split if args.split is not None else run.get("split")
    try:
        theorems = {t.name: t for t in load_theorems(dataset, split)}
    except DatasetError as e:
        return user_error(e, hint=f" (the run's dataset was {run.get('dataset')!r}: pass --dataset where it is now)")
    if args.dataset is None:  # the file was written in the agent's own process: so was its header
        print(f"[benchmark] statements from {dataset!r}, as the results file names it; for results of agent "
              "code you do not trust, pass --dataset with your own copy", file=sys.stderr)
    proofs = sum(r.solved for r in rs.attempts)
    with ExitStack() as stack:
        try:
            client, server = connect(args, stack, 1)
        except ConnectionError as e:
            return user_error(e)
        ran_on = run.get("server") if isinstance(run.get("server"), dict) else {}
        if server["simulated"] and ran_on.get("simulated") is False:
            print(f"[benchmark] warning: the run used Lean at {ran_on.get('url')} and this recheck the simulator: "
                  "proofs outside its fragment will not hold here; pass --server", file=sys.stderr)
        bar = tqdm(total=proofs, unit="proof", disable=args.quiet, file=sys.stderr, dynamic_ncols=True)
        stack.callback(bar.close)
        rec = recheck(rs, theorems, lambda: client.lease(timeout=args.lease_timeout),
                      on_result=lambda: bar.update(1))
    print(report(rec, proofs))
    return 0 if not rec.failed and not rec.unchecked else 1
