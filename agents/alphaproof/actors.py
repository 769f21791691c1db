"""Running batches of proof searches on Lean processes, and surviving a failing server.

The trainer hands :func:`run_searches` a list of theorems; it opens a session per
theorem on a fresh process (a lease of the LeanTree server, or the in-process
simulator), searches them all in one batched actor, gives the processes back,
re-checks every proof found on a fresh process (``proof_gate.confirm``), and
reports what happened, failures included: it never raises for a server
failure. What the trainer then needs to tell apart:

* a theorem that could not start (a failing server): no verdict;
* a statement the server rejects (``LeanError`` at the start): no verdict, and
  ``out.rejected`` names it, so that the trainer stops drawing it;
* a search cut short by a hung or vanished server, or by the run's time limit
  (``search.CUT_SHORT``), or an unsolved one that met server failures: no
  verdict either, since its budget was not spent on proving (``search.gives_verdict``);
* an outage: no search could start, and the server is to blame (``out.outage``
  says why), so the iteration taught nothing and must not count (the trainer
  waits, :class:`Backoff`, and retries).

:func:`evaluate` is the held-out solve rate over the theorems that got a verdict.
"""
from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import torch

from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.proof_gate import confirm
from agents.alphaproof.prove import default_sims, prove_config
from agents.alphaproof.search import SERVER_STOPS, SearchConfig, SearchResult, gives_verdict, run_batched_search
from agents.alphaproof.theorem_source import Task
from leangym.backends.select import open_backend
from leangym.backends.types import (LeanError, LeanProcess, NoProcessAvailable, ServerError, ServerTimeout,
                                    ServerUnavailable)
from leangym.daemon_pool import DaemonPool
from leangym.session import VERIFY_CALLS, Budget, ProofSession

if TYPE_CHECKING:
    from agents.alphaproof.train_args import Args


# ============================================================================ processes and sessions
LEASE_WAIT = 60.0  # seconds a start waits for a free process of the server's pool


def process_factory(args: "Args", deadline: float | None = None) -> Callable[[], LeanProcess]:
    """A fresh Lean process per theorem: the simulator in-process, or a lease from the server.

    A server is asked first whether it can serve the run at all, so that a wrong URL or a
    pool smaller than ``--actors`` stops the run before it trains (and saves) anything:
    actors beyond the pool would wait a minute for a process and then count as unsolved.
    A lease waits for a free process at most until ``deadline`` (``time.monotonic()``), if sooner.
    """
    if args.server and not args.read_timeout > 0:
        raise ValueError(f"--read-timeout must be a number of seconds > 0, got {args.read_timeout}")
    source = open_backend(args.server, factorized=args.factorized, read_timeout_s=args.read_timeout,
                          processes=args.actors if args.server else None,
                          what=f"--actors {args.actors} (one theorem per Lean process)")
    if source.in_process:
        return source

    def lease():
        wait = LEASE_WAIT if deadline is None else min(LEASE_WAIT, max(1.0, deadline - time.monotonic()))
        return source(timeout=wait)

    return lease


START_ATTEMPTS = 3  # a theorem's start is tried this often on a failing server (fresh process each time)


def _in_threads(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``[fn(x) for x in items]``, all at once on daemon threads: calls that wait on a server then
    cost one wait, not one each, and an interrupted caller need not wait (see DaemonPool)."""
    if not items:
        return []
    pool = DaemonPool(len(items), name="actor-lean")
    try:
        return pool.map(fn, items)
    finally:
        pool.close()


def _give_back(process: Any, quick: bool = False) -> None:
    try:
        if quick:
            try:
                process.close(quick=True)  # an HttpLease: a short timeout and no retry
                return
            except TypeError:  # a LeanProcess whose close() takes no options
                pass
        process.close()
    except Exception:  # a lease on a dead server cannot be given back (a restart frees it)
        pass


def give_back(processes: Sequence[Any], quick: bool = False) -> None:
    """Give processes back; leases all at once (one slow server answer, not one per lease).

    ``quick``: the caller is unwinding (Ctrl-C, SIGTERM): a short timeout and no retry.
    """
    if all(getattr(p, "in_process", False) for p in processes):
        for p in processes:
            _give_back(p, quick)
    else:
        _in_threads(lambda p: _give_back(p, quick), processes)


def close_sessions(sessions: Sequence[ProofSession], quick: bool = False) -> None:
    give_back([s.process for s in sessions], quick)


def _start(task: Task, new_process: Callable[[], LeanProcess], budget: Budget) -> ProofSession:
    """A session for ``task`` on a fresh process. A server failure (HTTP 5xx, a dropped connection,
    a dead process) is retried on a fresh process, so that a flaky server does not count as
    unsolved theorems; a server that is down, hung or out of processes is not."""
    for attempt in range(START_ATTEMPTS):
        proc = None
        try:
            proc = new_process()
            return ProofSession(proc, task.theorem, budget=budget)
        except BaseException as e:  # LeanError (bad statement), ServerError, a dead lease, Ctrl-C ...
            if proc is not None:
                _give_back(proc, quick=not isinstance(e, Exception))
            transient = isinstance(e, ServerError) and not isinstance(
                e, (ServerUnavailable, ServerTimeout, NoProcessAvailable))
            if not transient or attempt + 1 == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def open_sessions(tasks: Sequence[Task], new_process: Callable[[], LeanProcess], args: "Args",
                  errors: list[str], rejected: list[tuple[Task, str]] | None = None,
                  server_failed: list[tuple[Task, ServerError]] | None = None
                  ) -> tuple[list[Task], list[ProofSession], str | None]:
    """A ProofSession per task; a task whose process or statement fails is dropped (and logged).

    Returns the tasks kept, their sessions, and the first server failure (None if there was none).
    A task whose statement the server rejected (``LeanError``: Lean refused it, which no retry
    changes) goes to ``rejected`` with the error, if given, else to ``errors``; one the server failed
    (``ServerError``) also to ``server_failed`` with the error, if given. On a server the
    starts run at once: a hung one costs one read timeout, not one per theorem.
    """
    # (each search stops at its own config's calls, training's or the evaluation's: the session's bounds both)
    budget = Budget(max_lean_calls=max(args.lean_calls, args.eval_lean_calls + VERIFY_CALLS),
                    max_seconds=args.time_per_theorem)
    handed_out: list[LeanProcess] = []  # every process leased, so that an interrupted start can give it back

    def leased() -> LeanProcess:
        handed_out.append(new_process())
        return handed_out[-1]

    def attempt(task: Task) -> ProofSession | Exception:
        try:
            return _start(task, leased, budget)
        except Exception as e:  # noqa: BLE001 -- LeanError (bad statement), ServerError, a dead lease ...
            return e

    try:
        outcomes = _in_threads(attempt, tasks) if args.server else [attempt(t) for t in tasks]
    except BaseException:  # Ctrl-C while starts wait on the server: give back what we hold, fast
        give_back(handed_out, quick=True)
        raise
    kept, sessions, server_error = [], [], None
    for task, got in zip(tasks, outcomes):
        if isinstance(got, ProofSession):
            kept.append(task)
            sessions.append(got)
            continue
        if isinstance(got, LeanError) and rejected is not None:
            rejected.append((task, f"{type(got).__name__}: {got}"))  # reported by the caller, once
            continue
        errors.append(f"{task.theorem.name}: {type(got).__name__}: {got}")
        if isinstance(got, ServerError):
            server_error = server_error or f"{type(got).__name__}: {got}"
            if server_failed is not None:
                server_failed.append((task, got))
    return kept, sessions, server_error


class CountingEvaluator:
    """The network, with the batch size and time of every ``evaluate`` call recorded."""

    def __init__(self, net: PolicyValueNet) -> None:
        self.net, self.batch_sizes, self.seconds = net, [], 0.0

    def evaluate(self, states, k):
        t0 = time.monotonic()
        out = self.net.evaluate(states, k)
        self.seconds += time.monotonic() - t0
        self.batch_sizes.append(len(states))
        return out


@dataclass
class BatchOutcome:
    """What one batch of searches gave: for each task that started, its session and its search's result
    (None: the batch crashed), with what went wrong on the way."""

    tasks: list[Task]  # the tasks that started, in order
    sessions: list[ProofSession]
    results: list[SearchResult | None]
    errors: list[str]
    rejected: list[tuple[Task, str]]  # statements the server refused to start, with its error
    failed_starts: int
    crashed: int  # searches lost to a crashed batch
    evaluator: CountingEvaluator
    wall_s: float = 0.0
    outage: str | None = None  # why no search could start, when the server is to blame

    def absorb_retries(self, alone: Sequence["BatchOutcome"]) -> None:
        """Take the results of the batch's tasks searched again one by one, after it crashed."""
        self.tasks = [t for a in alone for t in a.tasks]
        self.sessions = [s for a in alone for s in a.sessions]
        self.results = [r for a in alone for r in a.results]
        self.crashed = sum(a.crashed for a in alone)
        self.failed_starts += sum(a.failed_starts for a in alone)
        self.errors += [e for a in alone for e in a.errors]
        self.rejected += [r for a in alone for r in a.rejected]
        self.evaluator.batch_sizes += [b for a in alone for b in a.evaluator.batch_sizes]
        self.evaluator.seconds += sum(a.evaluator.seconds for a in alone)


def search_config(args: "Args") -> SearchConfig:
    return SearchConfig.for_budget(args.sims, args.num_tactics, args.lean_calls, args.time_per_theorem)


def eval_search_config(args: "Args") -> SearchConfig:
    """The held-out search: ``prove``'s and the harness's (training's explores wider and runs out of simulations
    first), ``--eval-lean-calls`` to search as the harness gives every agent, plus its own final check's, so that
    the run reports what ``scripts.benchmark --budget-calls`` measures of its net."""
    return prove_config(default_sims(None, args.eval_lean_calls), 1, args.eval_lean_calls + VERIFY_CALLS,
                        args.time_per_theorem)


def run_searches(tasks: Sequence[Task], net: PolicyValueNet, new_process, args: "Args",
                 retry_alone: bool = True, deadline: float | None = None,
                 config: SearchConfig | None = None) -> BatchOutcome:
    """Search every task in one batched actor. Never raises for a failure: they are counted in the result.

    If the batch raises (a kernel bug on one tactic ...), its theorems are searched again one by
    one on fresh processes, so that one poisoned theorem costs only itself. ``deadline``
    (``time.monotonic()``) ends the searches early (stop reason "deadline"). ``config``: the search (default:
    training's, :func:`search_config`). See :class:`BatchOutcome`.
    """
    errors: list[str] = []
    rejected: list[tuple[Task, str]] = []
    kept, sessions, server_error = open_sessions(tasks, new_process, args, errors, rejected)
    evaluator = CountingEvaluator(net)
    t0 = time.monotonic()
    results: list[SearchResult | None] = [None] * len(kept)
    crashed, unwinding = 0, False
    try:
        if sessions:
            results = list(run_batched_search(sessions, evaluator, config or search_config(args), deadline=deadline))
    except Exception as e:  # noqa: BLE001 -- a long run must outlive a failed worker
        errors.append(f"search batch of {len(sessions)} raised {type(e).__name__}: {e}\n"
                      f"{traceback.format_exc(limit=-3)}")
        crashed = len(sessions)
    except BaseException:  # Ctrl-C, SIGTERM: stop now, whatever the server does
        unwinding = True
        raise
    finally:
        close_sessions(sessions, quick=unwinding)
    results = confirm([t.theorem for t in kept], results, new_process, errors)  # the one gate a proof passes
    out = BatchOutcome(kept, sessions, results, errors, rejected, len(tasks) - len(kept), crashed, evaluator)
    if crashed and retry_alone and len(kept) > 1:
        alone = [run_searches([t], net, new_process, args, retry_alone=False, deadline=deadline, config=config)
                 for t in kept]
        out.absorb_retries(alone)
        server_error = server_error or next((a.outage for a in alone if a.outage), None)
    out.wall_s = time.monotonic() - t0
    out.outage = None if out.tasks else server_error
    return out


# ============================================================================ what a batch tells
def verdicts(out: BatchOutcome, *, for_rate: bool = False) -> list[tuple[Task, bool]]:
    """``(task, verified)`` for every task of a batch that got a verdict.

    A task that could not start has none, nor has a search whose budget was not spent on proving
    (cut short, or unsolved after server failures: :func:`search.gives_verdict`); a crashed search
    counts as unsolved (the theorem may be what crashes it).

    ``for_rate``: the verdicts a solve rate is computed from. There a search that met server
    failures counts for nothing even when solved: dropping only the unsolved ones would raise
    the rate on a flaky server. For the same reason a batch that the run's time limit cut short
    gives no rate at all: the searches that had finished by then are the quick solves.
    """
    if for_rate and cut_by_deadline(out):
        return []
    return [(t, r is not None and r.verified) for t, r in zip(out.tasks, out.results)
            if r is None or (gives_verdict(r) and not (for_rate and r.server_failures))]


def cut_by_deadline(out: BatchOutcome) -> bool:
    """Whether the run's time limit (``--max-minutes``) stopped searches of this batch."""
    return any(r is not None and r.stop_reason == "deadline" for r in out.results)


def server_lost(out: BatchOutcome) -> bool:
    """The server served none of this batch: no search started, or each was stopped by a hung or
    vanished server. (What would then need the server, an evaluation, would wait in vain.)"""
    results = [r for r in out.results if r is not None]
    return bool(out.outage) or bool(results) and all(r.stop_reason in SERVER_STOPS for r in results)


def server_warning(out: BatchOutcome, args: "Args") -> str | None:
    """One line when searches of this batch were stopped by a hung or vanished server."""
    stopped = [r.stop_reason for r in out.results if r is not None and r.stop_reason in SERVER_STOPS]
    if not stopped:
        return None
    why = (f"the LeanTree server did not answer within --read-timeout {args.read_timeout:g} s"
           if "server_timeout" in stopped else "the LeanTree server stopped answering")
    return f"warning: {len(stopped)} of {len(out.results)} searches stopped early: {why}"


def search_stats(out: BatchOutcome) -> dict[str, float]:
    """Throughput and Lean health of one batch of searches (for TensorBoard).

    Only what was measured: no solve rate without a verdict, no throughput without a search,
    no latency without a Lean call (a 0 there would read as a fast server).
    """
    results = [r for r in out.results if r is not None]
    sessions = out.sessions
    stats = {"server_failures": float(sum(s.stats.server_failures for s in sessions)),
             "crashed_searches": float(out.crashed), "failed_starts": float(out.failed_starts)}
    judged = verdicts(out, for_rate=True)
    if judged:
        stats["solve_rate"] = sum(ok for _, ok in judged) / len(judged)
    if not sessions:
        return stats
    calls = sum(s.stats.lean_calls for s in sessions)
    lat = [x for s in sessions for x in s.stats.latencies_s]
    wall = max(out.wall_s, 1e-9)
    ev = out.evaluator
    stats.update(simulations_per_s=sum(r.simulations for r in results) / wall, lean_calls_per_s=calls / wall,
                 network_time_frac=ev.seconds / wall)
    tried = calls + sum(s.stats.policy_rejected for s in sessions)
    if tried:
        stats["tactic_error_rate"] = sum(s.stats.rejected for s in sessions) / tried
    if lat:
        stats["lean_latency_p50_ms"] = 1e3 * float(np.percentile(lat, 50))
        stats["lean_latency_p99_ms"] = 1e3 * float(np.percentile(lat, 99))
    if ev.batch_sizes:
        stats["eval_batch_mean"] = float(np.mean(ev.batch_sizes))
        stats["eval_batch_max"] = float(max(ev.batch_sizes))
    return stats


class Backoff:
    """Waits between retries against a server that is down: ``first``, twice that ... at most ``cap`` s."""

    def __init__(self, first: float = 1.0, cap: float = 60.0) -> None:
        self.first, self.cap, self._next = first, cap, first

    def delay(self) -> float:
        d, self._next = self._next, min(self.cap, 2 * self._next)
        return d

    def reset(self) -> None:
        self._next = self.first


# ============================================================================ evaluation
EVAL_CURVE = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # the solved-within counts an evaluation reports (and its budget)


def solved_within(calls: Sequence[int], budget: int) -> dict[str, float]:
    """``within_K_calls``: how many of the verified proofs (``calls``: each one's search calls) took at most K."""
    ks = [k for k in EVAL_CURVE if k < budget] + [budget]
    return {f"within_{k}_calls": float(sum(c <= k for c in calls)) for k in ks}


def evaluate(net: PolicyValueNet, tasks: Sequence[Task], new_process, args: "Args",
             config: SearchConfig | None = None) -> dict[str, float]:
    """Held-out solve rate (verified proofs only), overall and per level, over the theorems that got a
    verdict (``evaluated``; see :func:`verdicts`), and ``within_K_calls``: how many were solved within K Lean calls
    of the search (the final check's not counted, as the harness counts). With none, there is no ``solve_rate``.

    ``config``: the search (default: :func:`eval_search_config`; the counts then stop at its budget).
    In-process, every theorem is searched in one batch (bigger network batches); on a server, or with a
    time limit per theorem (which would then run on the whole batch's clock), ``--actors`` at a time.
    """
    # Evaluating draws from torch's RNG (the policy samples): on a fork of it, so that the run's
    # own draws, and so a resumed run, do not depend on when evaluations happened.
    with torch.random.fork_rng(devices=[net.device] if net.device.type == "cuda" else []):
        return _evaluate(net, tasks, new_process, args, config)


def _evaluate(net: PolicyValueNet, tasks: Sequence[Task], new_process, args: "Args",
              config: SearchConfig | None) -> dict[str, float]:
    solved: dict[Any, list[int]] = {}
    calls: list[int] = []  # the search's Lean calls of each verified proof
    width = args.actors if args.server or args.time_per_theorem else max(1, len(tasks))
    for i in range(0, len(tasks), width):
        out = run_searches(list(tasks[i:i + width]), net, new_process, args, config=config or eval_search_config(args))
        for e in out.errors + [f"{t.theorem.name}: {why}" for t, why in out.rejected] \
                + [w for w in [server_warning(out, args)] if w]:
            print(f"[evaluation] {e}", file=sys.stderr)
        spent = {id(t): r.lean_calls - VERIFY_CALLS for t, r in zip(out.tasks, out.results) if r is not None}
        for t, ok in verdicts(out, for_rate=True):
            solved.setdefault(t.level, []).append(int(ok))
            calls += [spent[id(t)]] if ok else []
        if server_lost(out):  # the other chunks would wait on it in vain
            break
    flat = [x for v in solved.values() for x in v]
    metrics = {"evaluated": float(len(flat)), "not_evaluated": float(len(tasks) - len(flat))}
    if flat:
        metrics["solve_rate"] = sum(flat) / len(flat)
        metrics.update({f"solve_rate_level_{lv}": sum(v) / len(v) for lv, v in sorted(solved.items())})
        if config is None:
            metrics.update(solved_within(calls, args.eval_lean_calls))
    return metrics


def describe(ev: dict[str, float]) -> str:
    """An evaluation in words: the solve rate and over how many theorems."""
    n, missing = int(ev["evaluated"]), int(ev["not_evaluated"])
    if not n:
        # (the searches ran: they met server failures or were cut short, so they say nothing)
        return f"nothing evaluated (none of {missing} theorems got a verdict: server failures or searches cut short)"
    return f"{ev['solve_rate']:.2f} ({n} theorems" + (f"; {missing} without a verdict)" if missing else ")")
