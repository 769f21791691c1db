"""The benchmark runner's budgets under agents that play with them: answers after the time budget, hung
provers (abandoned: their sessions ended, their processes back), kept sessions, copied or edited budgets
and counters.

As in test_bench_run_faults.py (whose fakes these tests use), no assertion is about how long something took.
"""
from __future__ import annotations

import copy
import threading
import time

import pytest

from leangym.backends.types import ProofState, ServerError
from leangym.harness.records import AttemptResult
from leangym.harness.run import RunConfig, run_attempt, run_tasks
from leangym.session import Budget, BudgetExhausted, ProofSession
from test_bench_run_faults import HANG_GUARD_S, FakeLean, Honest, Leases, guarded, tasks


# --------------------------------------------------------------------------- the time budget


class SlowHonest:
    """Finds the proof at once, then thinks for ``delay`` seconds before answering."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def prove(self, theorem, session, budget):
        tactic = session.apply(session.root, "exact h").tactic
        time.sleep(self.delay)
        return [tactic]


def test_an_answer_after_the_time_budget_does_not_count() -> None:
    task = tasks(1)[0]
    late = run_attempt(SlowHonest(0.3), FakeLean(), task, Budget(5, 0.1))  # late, well within the grace
    assert late.status == "failed" and late.budget_exhausted and late.proof is None
    assert "after its time budget" in late.error
    in_time = run_attempt(SlowHonest(0.0), FakeLean(), task, Budget(5, 60.0))
    assert in_time.status == "proved" and not in_time.budget_exhausted


def test_a_hung_prover_is_abandoned_and_its_process_goes_back_though_it_never_returns() -> None:
    release = threading.Event()
    provers: list["Hangs"] = []

    class Hangs:
        def __init__(self) -> None:
            self.hang = not provers  # the first prover built hangs in its first call (in Python, not in Lean)
            self.processes: list[int] = []
            self.later: BaseException | None = None

        def prove(self, theorem, session, budget):
            self.processes.append(session.process.process_id)
            if self.hang:
                release.wait(2 * HANG_GUARD_S)
                try:  # woken after it was abandoned: its session takes no more Lean calls
                    session.apply(session.root, "exact h")
                except BaseException as e:  # noqa: BLE001
                    self.later = e
            return None

    def make() -> Hangs:
        provers.append(Hangs())
        return provers[-1]

    out: list[AttemptResult] = []
    leases = Leases()
    config = RunConfig(Budget(5, 0.25), workers=1, grace_s=0.25)  # the hung attempt (t0) is abandoned soon ...

    def sink(r: AttemptResult) -> None:
        out.append(r)
        # ... and the attempts after it, which do return, get time to spare, however loaded the machine:
        # the worker reads the budget and grace from the config at each attempt, after the last result.
        config.budget, config.grace_s = Budget(5, HANG_GUARD_S / 3), HANG_GUARD_S / 3

    try:
        complete = guarded(lambda: run_tasks(tasks(3), make, leases, config, sink))
        assert complete and [r.theorem for r in out] == ["t0", "t1", "t2"]
        assert out[0].status == "failed" and out[0].budget_exhausted
        assert "did not return in time" in out[0].error and "abandoned" in out[0].error
        # the worker went on with a new prover on a new process ...
        assert len(provers) == 2 and len(leases.procs) == 2
        zombie = leases.procs[0]
        assert provers[0].processes == [zombie.process_id]
        assert provers[1].processes == [leases.procs[1].process_id] * 2
        assert leases.procs[1].closed
        # ... and the abandoned call, with no Lean call under way, no longer holds its process
        assert zombie.closed_event.wait(HANG_GUARD_S), "the abandoned process never went back"
    finally:
        release.set()
    deadline = time.monotonic() + HANG_GUARD_S
    while provers[0].later is None and time.monotonic() < deadline:  # (the woken prover's call)
        time.sleep(0.01)
    assert isinstance(provers[0].later, BudgetExhausted) and "abandoned" in str(provers[0].later)


def test_no_free_process_while_the_agents_hung_calls_hold_them_is_the_agents_failure() -> None:
    # A pool of one: the abandoned call is stuck in a Lean call, which keeps the process, so the next
    # lease fails. That is the agent's doing, not a server fault (as an infra error it would be retried
    # forever and stop the run as "the server kept failing"). Once the call is answered it goes back.
    release = threading.Event()

    class StuckLean(FakeLean):
        def apply_tactic(self, state, tactic, timeout_ms=1000):
            release.wait(2 * HANG_GUARD_S)  # (a Lean call that takes its time)
            return super().apply_tactic(state, tactic, timeout_ms)

    class Hangs:
        def prove(self, theorem, session, budget):
            session.apply(session.root, "simp")

    class PoolOfOne(Leases):
        def __call__(self) -> FakeLean:
            if any(not p.closed for p in self.procs):
                raise ServerError("no process free")
            self.procs.append(StuckLean())
            return self.procs[-1]

    out: list[AttemptResult] = []
    pool = PoolOfOne()
    try:
        guarded(lambda: run_tasks(tasks(3), Hangs, pool, RunConfig(Budget(5, 0.2), grace_s=0.2), out.append))
        assert [r.status for r in out] == ["failed"] * 3
        assert "abandoned" in out[1].error and "no Lean process free" in out[1].error
        assert not pool.procs[0].closed  # its Lean call is still under way
    finally:
        release.set()
    assert pool.procs[0].closed_event.wait(HANG_GUARD_S), "the process did not go back once its call was answered"


@pytest.mark.parametrize("budget, watched", [(Budget(5), False), (Budget(5, 60.0), True)],
                         ids=["no time budget", "time budget"])
def test_prove_runs_on_the_worker_unless_a_time_budget_needs_a_watchdog(budget: Budget, watched: bool) -> None:
    threads: list[str] = []

    class Records(Honest):
        def prove(self, theorem, session, budget):
            threads.append(threading.current_thread().name)
            return super().prove(theorem, session, budget)

    out: list[AttemptResult] = []
    assert run_tasks(tasks(2), Records, Leases(), RunConfig(budget), out.append)
    assert all(r.solved for r in out) and len(threads) == 2
    assert all(name.startswith("bench-worker-") != watched for name in threads), threads


def test_the_final_check_is_not_charged_to_the_provers_budget() -> None:
    # a proof found with the last allowed Lean call: the check (on the prover's own process when no
    # clean one is given) must not be charged through the session's metered process
    r = run_attempt(Honest(), FakeLean(), tasks(1)[0], Budget(1))
    assert r.status == "proved" and r.lean_calls == 1 and not r.budget_exhausted


# --------------------------------------------------------------------------- budgets and sessions kept or edited


def test_a_prover_cannot_lift_its_budget_or_reset_its_counters() -> None:
    """Frozen dataclasses still yield to object.__setattr__: the prover gets copies of the budget and the
    counters, and the session holds to its own."""

    class Tampers:
        def prove(self, theorem, session, budget):
            object.__setattr__(budget, "max_lean_calls", None)
            object.__setattr__(session.budget, "max_lean_calls", None)
            for _ in range(20):
                object.__setattr__(session.stats, "lean_calls", 0)
                session.apply(session.root, "simp")

    r = run_attempt(Tampers(), FakeLean(), tasks(1)[0], Budget(5))
    assert r.budget_exhausted and r.lean_calls == 5 and len(r.latencies_ms) == 5


def test_a_session_kept_past_its_attempt_spends_nothing_more() -> None:
    """A prover that returns at once and keeps its sessions cannot spend their unspent budgets later."""
    kept, later = [], []

    class Hoards:
        def prove(self, theorem, session, budget):
            for old in kept:
                try:
                    later.append(old.apply(session.root, "simp"))
                except BudgetExhausted as e:
                    later.append(e)
            kept.append(session)

    out: list[AttemptResult] = []
    assert guarded(lambda: run_tasks(tasks(3), Hoards, Leases(), RunConfig(Budget(2)), out.append))
    assert len(later) == 3 and all(isinstance(x, BudgetExhausted) and "attempt is over" in str(x) for x in later)
    assert [r.lean_calls for r in out] == [0, 0, 0]


def test_ending_a_session_ends_its_copies_and_waits_for_no_prover_code() -> None:
    session = ProofSession(FakeLean(), "theorem t (P : Prop) (h : P) : P := by sorry", budget=Budget(10))
    twin = copy.copy(session)
    stuck, inside = threading.Event(), threading.Semaphore(0)

    class SlowState(ProofState):  # a prover's object whose code never returns
        @property
        def goals(self):
            inside.release()
            stuck.wait(HANG_GUARD_S)
            return ()

    class SlowProof(list):
        def __iter__(self):
            inside.release()
            stuck.wait(HANG_GUARD_S)
            return iter(["exact h"])

    def quietly(call):
        def run():
            try:
                call()
            except BudgetExhausted:  # (woken after the end)
                pass
        return run

    root = session.root
    slow = object.__new__(SlowState)
    object.__setattr__(slow, "process_id", root.process_id)
    object.__setattr__(slow, "proof_state_id", root.proof_state_id)
    threads = [threading.Thread(target=quietly(lambda: session.apply(slow, "exact h")), daemon=True),
               threading.Thread(target=quietly(lambda: session.verify(SlowProof())), daemon=True)]
    try:
        for t in threads:
            t.start()
        assert inside.acquire(timeout=HANG_GUARD_S) and inside.acquire(timeout=HANG_GUARD_S)
        assert session.end("done", timeout=HANG_GUARD_S)  # both are in the prover's code, neither in a call
        with pytest.raises(BudgetExhausted, match="done"):
            twin.apply(root, "exact h")
    finally:
        stuck.set()
    for t in threads:
        t.join(HANG_GUARD_S)
