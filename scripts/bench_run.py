"""Running a prover over a theorem set: one leased Lean process per worker thread, resumable.

Each attempt gets a fresh :class:`ProofSession` with the run's budget. The
prover's answer counts only if the final check accepts it, run on a clean
process: the worker gives its process back (the server rolls it back to its
post-import state) and leases one for the check, because a prover holds the
process and could have declared lemmas on it to cite. An exception
from the prover is a failed attempt with the error recorded, never a crash of
the run. Server trouble (cannot lease, cannot start the proof, the final
check did not get an answer) is recorded as ``infra_error``: it says nothing
about the prover, so the worker leases a fresh process and a resumed run
tries the attempt again.
"""
from __future__ import annotations

import hashlib
import queue
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Sequence

from leangym.backends.types import LeanError, LeanProcess, ServerError
from leangym.datasets import category_of
from leangym.proof import ProofTree, assemble
from leangym.prover import Prover
from leangym.session import Budget, BudgetExhausted, ProofSession
from leangym.soundness import verify
from leangym.theorem import Theorem
from scripts.bench_records import AttemptResult

SERVER_CHECK_FAILURE = "server failure during the final check"


@dataclass(frozen=True)
class Task:
    theorem: Theorem
    attempt: int


def attempt_seed(run_seed: int, theorem: str, attempt: int) -> int:
    """A per-attempt seed that does not depend on scheduling (which worker, in which order)."""
    digest = hashlib.sha256(f"{run_seed}:{theorem}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def script_of(proof: object) -> str:
    if isinstance(proof, ProofTree):
        return assemble(proof)
    if isinstance(proof, str):
        return proof
    if isinstance(proof, (list, tuple)) and all(isinstance(t, str) for t in proof):
        return "\n".join(proof)
    raise TypeError(f"prover returned {type(proof).__name__}; expected a ProofTree, a script or a list of tactics")


def run_attempt(prover: Prover, process: LeanProcess, task: Task, budget: Budget, *, run_seed: int = 0,
                timeout_ms: int = 1000, clean_process: Callable[[], LeanProcess] | None = None) -> AttemptResult:
    """One proof attempt; never raises for prover or server failures (they are in the result).

    ``clean_process``: gives the process the final check runs on (default: the prover's own).
    """
    theorem = task.theorem
    seed = attempt_seed(run_seed, theorem.name, task.attempt)
    result = AttemptResult(theorem.name, task.attempt, category_of(theorem), "failed", seed=seed)
    t0 = time.monotonic()
    try:
        session = ProofSession(process, theorem, budget=budget, timeout_ms=timeout_ms)
    except LeanError as e:  # the statement itself does not elaborate: retrying will not help
        result.status, result.error = "error", f"Lean rejected the statement: {e}"
        result.wall_s = time.monotonic() - t0
        return result
    except ServerError as e:
        result.status, result.error = "infra_error", f"could not start the proof: {e}"
        result.wall_s = time.monotonic() - t0
        return result
    proof = None
    try:
        set_seed = getattr(prover, "set_seed", None)
        if callable(set_seed):
            set_seed(seed)
        proof = prover.prove(theorem, session, budget)
    except BudgetExhausted:
        result.budget_exhausted = True
    except Exception as e:  # noqa: BLE001 - a prover bug is a failed attempt, not a crashed benchmark
        tb = traceback.format_exception(type(e), e, e.__traceback__)
        result.status, result.error = "error", f"{type(e).__name__}: {e}\n{''.join(tb[-3:])}"
    if proof is not None and result.status != "error":
        _check(session, proof, result, clean_process)
    _record_stats(session, result)
    result.wall_s = time.monotonic() - t0
    return result


def _check(session: ProofSession, proof: object, result: AttemptResult,
           clean_process: Callable[[], LeanProcess] | None) -> None:
    try:
        script = script_of(proof)
    except TypeError as e:
        result.status, result.error = "error", str(e)
        return
    process = session.process
    if clean_process is not None:
        try:
            process = clean_process()
        except ServerError as e:
            result.status, result.candidate = "infra_error", script
            result.error = f"could not lease a clean process for the final check: {e}"
            return
    verdict = verify(process, session.theorem, script, session.policy)
    if verdict.ok:
        result.status, result.proof = "proved", script
        return
    result.candidate, result.verify_error = script, verdict.error
    if verdict.error and verdict.error.startswith(SERVER_CHECK_FAILURE):
        result.status = "infra_error"


def _record_stats(session: ProofSession, result: AttemptResult) -> None:
    st = session.stats
    result.lean_calls, result.rejected, result.policy_rejected = st.lean_calls, st.rejected, st.policy_rejected
    result.timeouts, result.server_failures = st.timeouts, st.server_failures
    result.tactics_tried = st.lean_calls + st.policy_rejected
    result.latencies_ms = [round(1000 * x, 3) for x in st.latencies_s]
    if (cap := session.budget.max_lean_calls) is not None and st.lean_calls >= cap and not result.solved:
        result.budget_exhausted = True  # (a proof found with the last allowed call did not run out)


@dataclass
class RunConfig:
    budget: Budget
    workers: int = 1
    run_seed: int = 0
    timeout_ms: int = 1000
    max_consecutive_infra_errors: int = 20  # then stop: the server is down, not flaky


def run_tasks(tasks: Sequence[Task], make_prover: Callable[[], Prover], lease: Callable[[], LeanProcess],
              config: RunConfig, sink: Callable[[AttemptResult], None],
              stop: threading.Event | None = None) -> bool:
    """Run ``tasks`` on ``config.workers`` threads; ``sink`` gets each result (from worker threads).

    Returns False when the run stopped early (``stop`` set, or the server kept failing).
    """
    todo: queue.SimpleQueue[Task] = queue.SimpleQueue()
    for t in tasks:
        todo.put(t)
    stop = stop or threading.Event()
    streak = [0]
    lock = threading.Lock()

    def worker() -> None:
        prover = make_prover()  # one per worker: provers need not be thread-safe
        process: LeanProcess | None = None

        def renew() -> LeanProcess:
            """The prover's process back to the pool, and a clean one for the check (and what follows)."""
            nonlocal process
            process.close()
            process = None
            process = lease()
            return process
        try:
            while not stop.is_set():
                try:
                    task = todo.get_nowait()
                except queue.Empty:
                    return
                if process is None:
                    try:
                        process = lease()
                    except ServerError as e:
                        r = AttemptResult(task.theorem.name, task.attempt, category_of(task.theorem),
                                          "infra_error", error=f"could not lease a Lean process: {e}")
                        _after(r)
                        continue
                r = run_attempt(prover, process, task, config.budget, run_seed=config.run_seed,
                                timeout_ms=config.timeout_ms, clean_process=renew)
                if r.status == "infra_error" and process is not None:  # it may be dead: lease a fresh one
                    process.close()
                    process = None
                _after(r)
        finally:
            if process is not None:
                process.close()
            with lock:
                running[0] -= 1
                if running[0] == 0:
                    all_done.set()

    def _after(r: AttemptResult) -> None:
        sink(r)
        with lock:
            streak[0] = streak[0] + 1 if r.status == "infra_error" else 0
            if streak[0] >= config.max_consecutive_infra_errors:
                stop.set()

    n = max(1, config.workers)
    running = [n]
    all_done = threading.Event()  # not Thread.join: a join interrupted by Ctrl+C may return too early
    for i in range(n):
        threading.Thread(target=worker, name=f"bench-worker-{i}", daemon=True).start()
    try:
        while not all_done.wait(0.2):
            pass
    except KeyboardInterrupt:  # let running attempts finish, be written and give their leases back
        stop.set()
        all_done.wait()
        raise
    return not stop.is_set()
