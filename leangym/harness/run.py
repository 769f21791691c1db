"""Running a prover over a theorem set: one leased Lean process per worker thread, resumable.

Each attempt gets a fresh :class:`ProofSession` with the run's budget. The
prover's answer counts only if the final check accepts it, run on a clean
process: the worker gives its process back (the server rolls it back to its
post-import state) and leases one for the check, because a prover holds the
process and could have declared lemmas on it to cite. Anything the prover
raises (SystemExit and KeyboardInterrupt too: in a worker thread they never
come from the user, whose Ctrl-C goes to the main thread) is a failed attempt
with the error recorded, never a crash of the run. Server trouble (cannot
lease, cannot start the proof, Lean calls that failed on the server side in a
search that found nothing, the final check did not get an answer) is recorded
as ``infra_error``: it says nothing about the prover, so the worker leases a
fresh process and a resumed run tries the attempt again.

The time budget binds the prover, not only its Lean calls: a late answer does
not count, and a prover still busy a grace period later is abandoned to its
daemon thread (Python cannot stop one) with its prover. Its session is ended
(every later Lean call raises), and its process goes back once the Lean call
under way, if any, is answered: never while the call drives it, and never held
for good by an agent that hangs. The worker builds and leases new ones.
"""
from __future__ import annotations

import hashlib
import queue
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Sequence

from leangym.backends.types import LeanError, LeanProcess, ServerError
from leangym.datasets import category_of
from leangym.proof import script_of
from leangym.prover import AgentSpecError, Prover
from leangym.session import Budget, BudgetExhausted, ProofSession
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem
from leangym.harness.records import STATEMENT_REJECTED, AttemptResult


@dataclass(frozen=True)
class Task:
    theorem: Theorem
    attempt: int


class AgentBuildError(AgentSpecError):
    """No worker could build the agent: the run cannot go on. (A ValueError: ``run_cli`` prints ``error: ...``.)"""


def attempt_seed(run_seed: int, theorem: str, attempt: int) -> int:
    """A per-attempt seed that does not depend on scheduling (which worker, in which order)."""
    digest = hashlib.sha256(f"{run_seed}:{theorem}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _describe(e: BaseException, traceback_lines: int = 0) -> str:
    """``Type: message`` (and the last ``traceback_lines`` of its traceback); never raises, whatever an
    agent's exception does in ``__str__`` (or its class in ``__name__``)."""
    name = type.__dict__["__name__"].__get__(type(e))  # (type's own, not a metaclass's property)
    try:
        text = f"{name}: {e}" if str(e) else name
        if traceback_lines:
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            text += "\n" + "".join(tb[-traceback_lines:])
        return text
    except BaseException:  # noqa: BLE001 - an agent's exception must not take the run down (SystemExit too)
        return f"{name} (its message could not be read)"


END_WAIT_S = 600.0  # an abandoned attempt's Lean call under way is waited for this long, then its agent


@dataclass
class _Call:
    """One prove() call: its answer or what it raised; the thread still running it if abandoned."""
    proof: object = None
    error: BaseException | None = None
    abandoned: threading.Thread | None = None


def _call_prover(prover: Prover, session: ProofSession, budget: Budget, seed: int, wait_s: float | None) -> _Call:
    """set_seed and prove; with ``wait_s``, on a thread of its own that is waited for that long at most.
    A call that returned ends its session (an abandoned one's is ended by ``on_abandon``'s taker)."""
    call = _Call()

    def body() -> None:
        try:
            set_seed = getattr(prover, "set_seed", None)
            if callable(set_seed):
                set_seed(seed)
            call.proof = prover.prove(session.theorem, session, budget)
        except BaseException as e:  # noqa: BLE001 - see the module docstring
            if threading.current_thread() is threading.main_thread() and not isinstance(e, Exception):
                raise  # run_attempt called from the main thread: this may be the user's Ctrl-C
            call.error = e

    if wait_s is None:
        body()
    else:
        thread = threading.Thread(target=body, name=f"prove-{session.theorem.name}", daemon=True)
        thread.start()
        thread.join(wait_s)
        call.abandoned = thread if thread.is_alive() else None
    if call.abandoned is None:  # kept by the prover, a session could spend its unspent budget on a later attempt
        session.end("the attempt is over")
    return call


def run_attempt(prover: Prover, process: LeanProcess, task: Task, budget: Budget, *, run_seed: int = 0,
                timeout_ms: int = 1000, clean_process: Callable[[], LeanProcess] | None = None,
                spare_process: Callable[[], LeanProcess] | None = None, grace_s: float | None = None,
                on_abandon: Callable[[threading.Thread, ProofSession], None] | None = None) -> AttemptResult:
    """One proof attempt; never raises for prover or server failures (they are in the result).

    ``clean_process``: gives the process the final check runs on (default: the prover's own);
    ``spare_process``: a second clean one, for a header that cannot be declared twice (``soundness.verify``).
    With a time budget, prove() runs on its own thread, waited for ``max_seconds + grace_s`` at most
    (default grace: 5 s or 10% of the budget if more); then the attempt fails and ``on_abandon(thread,
    session)`` is called: ``thread`` still runs the prover; ``session.end(...)`` says when ``process``
    is free of its calls.
    """
    theorem = task.theorem
    seed = attempt_seed(run_seed, theorem.name, task.attempt)
    result = AttemptResult(theorem.name, task.attempt, category_of(theorem), "failed", seed=seed)
    t0 = time.monotonic()
    try:
        session = ProofSession(process, theorem, budget=budget, timeout_ms=timeout_ms)
    except LeanError as e:  # the statement itself does not elaborate: retrying will not help
        result.status, result.error = "error", f"{STATEMENT_REJECTED}: {e}"
        result.wall_s = time.monotonic() - t0
        return result
    except ServerError as e:
        result.status, result.error = "infra_error", f"could not start the proof: {e}"
        result.wall_s = time.monotonic() - t0
        return result
    # what the proof is checked against, fixed before the prover runs: the session hands the prover
    # copies of its theorem and policy, so nothing the prover does to them reaches these
    policy = session.policy
    cap = budget.max_seconds
    wait_s = None if cap is None else cap + (max(5.0, 0.1 * cap) if grace_s is None else grace_s)
    t_call = time.monotonic()
    call = _call_prover(prover, session, session.budget, seed, wait_s)  # (a copy: the session keeps its own)
    call_s = time.monotonic() - t_call
    if call.abandoned is not None:
        result.budget_exhausted = True
        result.error = (f"the agent did not return in time (a time budget of {cap:g}s, waited {wait_s:g}s) "
                        "and was abandoned; it may still be running")
        if on_abandon is not None:
            on_abandon(call.abandoned, session)
    elif isinstance(call.error, BudgetExhausted):
        result.budget_exhausted = True
    elif call.error is not None:  # a prover bug is a failed attempt, not a crashed benchmark
        result.status, result.error = "error", _describe(call.error, traceback_lines=3)
    elif cap is not None and call_s > cap:  # thinking time counts, not only time spent in Lean
        result.budget_exhausted = True
        if call.proof is not None:
            result.error = f"the agent answered after its time budget ({call_s:.2f}s of {cap:g}s): not counted"
    elif call.proof is not None:
        _check(theorem, policy, process, call.proof, result, clean_process, spare_process)
    _record_stats(session, result)
    if session.stats.server_failures and result.status == "failed" and result.candidate is None:
        # a search that found nothing while Lean calls failed on the server says nothing about the prover
        # (a prover that raised, or gave an answer the check refused, did say something)
        why = f"{session.stats.server_failures} Lean call(s) failed on the server side"
        result.status, result.error = "infra_error", f"{why}; {result.error}" if result.error else why
    result.wall_s = time.monotonic() - t0
    return result


def _check(theorem: Theorem, policy: SoundnessPolicy, process: LeanProcess, proof: object, result: AttemptResult,
           clean_process: Callable[[], LeanProcess] | None,
           spare_process: Callable[[], LeanProcess] | None = None) -> None:
    """The final check of ``proof`` as a proof of the task's ``theorem`` under the run's ``policy``, on
    ``clean_process()`` or else on ``process`` itself (not ``session.process``, whose meter would
    charge the check to the prover's budget)."""
    try:
        script = script_of(proof)
    except TypeError as e:
        result.status, result.error = "error", f"prover returned {type(proof).__name__}: {e}"
        return
    if clean_process is not None:
        try:
            process = clean_process()
        except ServerError as e:
            result.status, result.candidate = "infra_error", script
            result.error = f"could not lease a clean process for the final check: {e}"
            return
    verdict = verify(process, theorem, script, policy, spare=spare_process)  # tactic mode first, then the command
    if verdict.ok:
        result.status, result.proof = "proved", script
        return
    result.candidate, result.verify_error = script, verdict.error
    if verdict.server_failure:  # the check could not run: no verdict on the proof
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
    grace_s: float | None = None  # past the time budget, before a prover is abandoned (None: see run_attempt)


ATTEMPTS_PER_PROCESS = 64  # then a worker's process goes back to the server (which rolls it back)
LEASE_LOST_RETRIES = 1  # an attempt whose lease the server took back (reclaimed, recycled) runs again on a fresh one


def _lease_lost(r: AttemptResult, *processes: LeanProcess | None) -> bool:
    """Whether ``r`` is server trouble because the server no longer has one of the attempt's leases."""
    return r.status == "infra_error" and any(getattr(p, "lost", None) for p in processes if p is not None)


class _Worker:
    """A worker thread's prover and leased process; both are replaced when an attempt is abandoned."""

    def __init__(self, lease: Callable[[], LeanProcess], abandoned: list[int], lock: threading.Lock) -> None:
        self.lease = lease
        self.prover: Prover | None = None
        self.process: LeanProcess | None = None
        self.attempts_on_process = 0  # attempts the current process has served (see ATTEMPTS_PER_PROCESS)
        self.abandoned, self.lock = abandoned, lock  # the run's abandoned calls still holding a process

    def renew(self) -> LeanProcess:
        """The prover's process back to the pool, and a clean one for the check (and what follows)."""
        self.drop_process()
        self.process = self.lease()
        return self.process

    def drop_process(self) -> None:
        process, self.process, self.attempts_on_process = self.process, None, 0
        if process is not None:
            process.close()

    def abandon(self, call: threading.Thread, session: ProofSession) -> None:
        """``call`` keeps the prover; its session is ended (no Lean call after the one under way), and the
        process goes back once that call is answered, whether or not ``call`` ever returns."""
        process, self.process, self.prover = self.process, None, None

        def close_after() -> None:
            if not session.end("the attempt was abandoned past its time budget", timeout=END_WAIT_S):
                call.join()  # (a Lean call that never came back: the process goes back when the agent does)
            process.close()
            with self.lock:
                self.abandoned[0] -= 1
        if process is not None:
            with self.lock:
                self.abandoned[0] += 1
            threading.Thread(target=close_after, name="bench-close-abandoned", daemon=True).start()


def _wait(done: threading.Event, threads: list[threading.Thread]) -> None:
    # Short waits: Ctrl-C is seen on every platform (not Thread.join: interrupted, it may return early).
    # The threads too: a Ctrl-C while they were being started leaves some never started, and never done.
    while not done.wait(0.2) and any(t.is_alive() for t in threads):
        pass


def run_tasks(tasks: Sequence[Task], make_prover: Callable[[], Prover], lease: Callable[[], LeanProcess],
              config: RunConfig, sink: Callable[[AttemptResult], None],
              stop: threading.Event | None = None) -> bool:
    """Run ``tasks`` on ``config.workers`` threads; ``sink`` gets each result (from worker threads).

    True when every task produced a result; False when the run stopped early (``stop`` set, or the
    server kept failing). A worker that cannot build its prover leaves the run to the others; if none
    can, raises :class:`AgentBuildError`. Any other worker failure (``sink`` or ``lease`` raising)
    stops the run and is raised here. Ctrl-C: the attempts in progress finish and go to ``sink``,
    then KeyboardInterrupt; a second Ctrl-C raises it at once.
    """
    todo: queue.SimpleQueue[Task] = queue.SimpleQueue()
    for t in tasks:
        todo.put(t)
    stop = stop or threading.Event()
    lock = threading.Lock()
    streak, produced, built, said, abandoned = [0], [0], [0], [False], [0]
    build_errors: list[BaseException] = []
    crashes: list[BaseException] = []

    def worker() -> None:
        w = _Worker(lease, abandoned, lock)
        try:
            while not stop.is_set():
                if w.prover is None and (todo.empty() or not _build(w)):
                    return  # nothing left to build a prover for, or it cannot be built
                try:
                    task = todo.get_nowait()
                except queue.Empty:
                    return
                if w.process is None:
                    try:
                        w.process = lease()
                    except ServerError as e:
                        r = AttemptResult(task.theorem.name, task.attempt, category_of(task.theorem),
                                          "infra_error", error=f"could not lease a Lean process: {e}")
                        if abandoned[0]:  # the agent's own hung calls hold the processes: its failure
                            r.status, r.budget_exhausted = "failed", True
                            r.error = (f"no Lean process free while {abandoned[0]} abandoned attempt(s) of this "
                                       f"agent (it did not return in time) still hold theirs: {e}")
                        _after(r)
                        continue
                for retry in range(1 + LEASE_LOST_RETRIES):
                    used = w.process
                    r = run_attempt(w.prover, w.process, task, config.budget, run_seed=config.run_seed,
                                    timeout_ms=config.timeout_ms, clean_process=w.renew, spare_process=w.lease,
                                    grace_s=config.grace_s, on_abandon=w.abandon)
                    if retry == LEASE_LOST_RETRIES or not _lease_lost(r, used, w.process):
                        break
                    try:  # the server no longer has the lease: the attempt again, on a fresh one
                        w.drop_process()
                        w.process = lease()
                    except ServerError:
                        break
                # the process may be dead: lease a fresh one; a header that declares something stays
                # declared on the process (as LeanTree's keep it), so the next start there would fail; and a
                # process keeps every proof start and state until it is returned, so it goes back now and then
                w.attempts_on_process += 1
                if (r.status == "infra_error" or task.theorem.header_declares
                        or w.attempts_on_process >= ATTEMPTS_PER_PROCESS):
                    w.drop_process()
                _after(r)
        except BaseException as e:  # noqa: BLE001 - the harness failed, not the prover: stop, and say so
            with lock:
                crashes.append(e)
            stop.set()
        finally:
            w.drop_process()
            with lock:
                running[0] -= 1
                if running[0] == 0:
                    all_done.set()

    def _build(w: _Worker) -> bool:
        error = None
        try:
            w.prover = make_prover()  # one per worker: provers need not be thread-safe
        except BaseException as e:  # noqa: BLE001 - the agent's constructor: its error goes to the user
            error = e
        with lock:  # once a worker could not build a prover and another could, say so (once)
            if error is not None:
                build_errors.append(error)
            built[0] += error is None
            say = bool(build_errors) and built[0] > 0 and not said[0]
            said[0] = said[0] or say
        if say:
            print(f"[benchmark] a worker could not build the agent ({_describe(build_errors[0])}); the run goes "
                  "on with the workers that could", file=sys.stderr)
        return error is None

    def _after(r: AttemptResult) -> None:
        sink(r)
        with lock:
            produced[0] += 1
            streak[0] = streak[0] + 1 if r.status == "infra_error" else 0
            if streak[0] >= config.max_consecutive_infra_errors:
                stop.set()

    n = max(1, config.workers)
    running = [n]
    all_done = threading.Event()
    threads = [threading.Thread(target=worker, name=f"bench-worker-{i}", daemon=True) for i in range(n)]
    try:
        for t in threads:
            t.start()
        _wait(all_done, threads)
    except KeyboardInterrupt:  # let running attempts finish, be written and give their leases back
        stop.set()
        print("[benchmark] interrupted: finishing the attempts in progress and writing their results; "
              "press Ctrl-C again to quit at once", file=sys.stderr, flush=True)
        _wait(all_done, threads)  # a second Ctrl-C raises out of here, at once
        raise
    if crashes:
        raise crashes[0]
    if produced[0] < len(tasks) and not stop.is_set() and build_errors:
        raise AgentBuildError(f"could not build the agent: {_describe(build_errors[0])}") from build_errors[0]
    return produced[0] == len(tasks) and not stop.is_set()
