"""The benchmark runner under faulty agents: constructors that fail, provers that raise anything, hang or
answer late, servers that fail mid-search, and Ctrl-C.

No assertion is about how long something took: hangs are made with events the tests set themselves,
and a run the old code never finished runs under ``guarded``, which fails the test instead of hanging
the suite.
"""
from __future__ import annotations

import _thread
import io
import re
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

from leangym.backends.types import (
    CommandResult, Goal, Hypothesis, Outcome, ProofState, ReplMessage, ServerError, ServerIdentity, TacticResult,
)
from leangym.cli import run_cli
from leangym.prover import AgentSpecError, PolicyProver
from leangym.session import Budget, BudgetExhausted
from leangym.theorem import Theorem
from leangym.harness.records import AttemptResult
from leangym.harness.run import RunConfig, Task, run_attempt, run_tasks

HANG_GUARD_S = 30.0  # only reached when the code under test hangs


class FakeLean:
    """A LeanProcess whose only theorem is ``h : P ⊢ P``: ``exact h`` proves it, ``flaky`` fails on the
    server side; the final check is honest. ``closed_event`` is set when it goes back to the pool."""

    in_process = True
    _ids = iter(range(1, 10**6))

    def __init__(self) -> None:
        self.process_id = next(self._ids)
        self.closed_event = threading.Event()

    @property
    def closed(self) -> bool:
        return self.closed_event.is_set()

    def start_proof(self, theorem_with_sorry: str) -> ProofState:
        return ProofState(self.process_id, 0, (Goal((Hypothesis("h", "P"),), "P"),))

    def apply_tactic(self, state: ProofState, tactic: str, timeout_ms: int = 1000) -> TacticResult:
        t = tactic.strip()
        if t == "exact h":
            return TacticResult(t, Outcome.PROVED, (), None, 0.001)
        if t == "flaky":
            return TacticResult(t, Outcome.SERVER_FAILURE, (), "HTTP 500", 0.001)
        return TacticResult(t, Outcome.REJECTED, (), f"unknown tactic '{t}'", 0.001)

    def apply_tactics(self, state: ProofState, tactics: Sequence[str], timeout_ms: int = 1000) -> list[TacticResult]:
        return [self.apply_tactic(state, t, timeout_ms) for t in tactics]

    def run_command(self, source: str) -> CommandResult:
        name = re.search(r"#print axioms (\S+)", source).group(1)
        lines = [x.strip() for x in source.split(":= by", 1)[1].split("#print", 1)[0].splitlines()
                 if x.strip() not in ("", "(", ")")]  # (the brackets the check puts around the proof)
        if lines == ["exact h"]:
            line = source[:source.index("#print")].count("\n") + 1
            return CommandResult((ReplMessage("info", f"'{name}' depends on axioms: [propext]", line, 0),))
        return CommandResult((ReplMessage("error", "unsolved goals"),))

    def identity(self) -> ServerIdentity:
        return ServerIdentity("fake://")

    def close(self) -> None:
        self.closed_event.set()


class Leases:
    """``lease`` for run_tasks that keeps every process it handed out."""

    def __init__(self) -> None:
        self.procs: list[FakeLean] = []

    def __call__(self) -> FakeLean:
        self.procs.append(FakeLean())
        return self.procs[-1]


class RecordingStderr(io.StringIO):
    """A stand-in for sys.stderr that sets ``seen`` once the runner has said something with ``needle``
    (a line of its own, not a traceback that happens to quote the test's source)."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self.needle, self.seen = needle, threading.Event()

    def said(self) -> list[str]:
        return [line for line in self.getvalue().splitlines()
                if line.startswith("[benchmark]") and self.needle in line]

    def write(self, s: str) -> int:
        n = super().write(s)
        if self.said():
            self.seen.set()
        return n


def tasks(n: int) -> list[Task]:
    return [Task(Theorem(f"theorem t{i} (P : Prop) (h : P) : P := by sorry"), 0) for i in range(n)]


def guarded(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a thread of its own; a test failure, not a hung suite, if it never returns."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(HANG_GUARD_S)
    assert not t.is_alive(), "hung: it never returned"
    if "error" in box:
        raise box["error"]
    return box["value"]


class Honest:
    def prove(self, theorem, session, budget):
        return [session.apply(session.root, "exact h").tactic]


# --------------------------------------------------------------------------- agents that cannot be built


def test_an_agent_no_worker_can_build_stops_the_run_with_its_error() -> None:
    def make():
        raise MemoryError("CUDA out of memory (simulated)")

    out: list[AttemptResult] = []
    leases = Leases()
    with pytest.raises(AgentSpecError, match=r"could not build the agent: MemoryError: CUDA out of memory") as info:
        guarded(lambda: run_tasks(tasks(3), make, leases, RunConfig(Budget(5), workers=2), out.append))
    assert isinstance(info.value.__cause__, MemoryError)
    assert out == [] and leases.procs == []  # no task was taken, no process leased


def test_a_worker_that_cannot_build_its_agent_leaves_the_tasks_to_the_others(monkeypatch) -> None:
    stderr = RecordingStderr("could not build the agent")
    monkeypatch.setattr(sys, "stderr", stderr)
    built: list[object] = []
    lock = threading.Lock()

    class WaitsForTheNews(Honest):
        def prove(self, theorem, session, budget):
            stderr.seen.wait(HANG_GUARD_S)  # so that the failing worker surely fails while this one works
            return super().prove(theorem, session, budget)

    def make():  # like a model that fits in memory once: the second construction fails
        with lock:
            built.append(None)
            if len(built) > 1:
                raise MemoryError("CUDA out of memory (simulated)")
        return WaitsForTheNews()

    out: list[AttemptResult] = []
    leases = Leases()
    complete = guarded(lambda: run_tasks(tasks(4), make, leases, RunConfig(Budget(5), workers=2), out.append))
    assert complete and sorted(r.theorem for r in out) == ["t0", "t1", "t2", "t3"]
    assert all(r.solved for r in out) and len(built) == 2
    assert len(stderr.said()) == 1 and "MemoryError: CUDA out of memory" in stderr.said()[0]
    assert all(p.closed for p in leases.procs)


def test_the_command_line_reports_an_agent_that_cannot_be_built_as_one_error_line(
        tmp_path: Path, monkeypatch, capsys) -> None:
    from leangym.harness import benchmark

    pkg = tmp_path / "faulty_agents_bench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "once.py").write_text(textwrap.dedent('''
        BUILT = [0]

        class OnceOnly:
            """Fits in memory once: the benchmark's up-front check builds it, a worker cannot."""
            def __init__(self):
                BUILT[0] += 1
                if BUILT[0] > 1:
                    raise MemoryError("CUDA out of memory (simulated)")
            def prove(self, theorem, session, budget):
                return None
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["--agent", "faulty_agents_bench.once:OnceOnly", "--dataset", "proplogic-heldout:2", "--sim",
            "--out", str(tmp_path / "once.jsonl"), "--quiet", "--plot", "none"]
    try:
        with pytest.raises(SystemExit) as info:
            guarded(lambda: run_cli(lambda: benchmark.main(args)))
    finally:
        for name in [m for m in sys.modules if m.startswith("faulty_agents_bench")]:
            del sys.modules[name]
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "error: could not build the agent: MemoryError: CUDA out of memory (simulated)" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- provers that raise anything


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), GeneratorExit()], ids=type)
@pytest.mark.parametrize("budget", [Budget(5), Budget(5, 60.0)], ids=["calls", "calls+seconds"])
def test_a_prover_raising_a_base_exception_is_an_error_not_a_dead_worker(exc: BaseException,
                                                                         budget: Budget) -> None:
    class Raises:
        def prove(self, theorem, session, budget):
            raise exc

    out: list[AttemptResult] = []
    leases = Leases()
    complete = run_tasks(tasks(3), Raises, leases, RunConfig(budget, workers=2), out.append)
    assert complete and sorted(r.theorem for r in out) == ["t0", "t1", "t2"]
    assert all(r.status == "error" and r.error.startswith(type(exc).__name__) for r in out)
    assert all(p.closed for p in leases.procs)


def test_a_run_that_loses_a_result_is_not_complete_and_says_why() -> None:
    def sink(r: AttemptResult) -> None:  # e.g. the results file's disk is full
        raise OSError(28, "No space left on device")

    leases = Leases()
    with pytest.raises(OSError, match="No space left on device"):
        run_tasks(tasks(3), Honest, leases, RunConfig(Budget(5), workers=2), sink)
    assert all(p.closed for p in leases.procs)


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


# --------------------------------------------------------------------------- server failures


class SearchesOnAFlakyServer:
    def __init__(self, answer: object) -> None:
        self.answer = answer

    def prove(self, theorem, session, budget):
        session.apply(session.root, "flaky")
        return self.answer


@pytest.mark.parametrize("answer, status", [(None, "infra_error"), (["skip"], "failed"),
                                            (["exact h"], "proved")])
def test_server_failures_in_a_search_make_an_unsolved_attempt_an_infra_error(answer, status: str) -> None:
    r = run_attempt(SearchesOnAFlakyServer(answer), FakeLean(), tasks(1)[0], Budget(5))
    assert r.status == status and r.server_failures == 1
    if status == "infra_error":
        assert "1 Lean call(s) failed on the server side" in r.error and not r.solved
    elif status == "failed":  # an answer the check refused says something about the prover
        assert r.candidate == "skip" and r.verify_error
    else:
        assert r.proof == "exact h" and r.error is None


def test_a_prover_that_raises_after_server_failures_is_an_error_not_an_infra_error() -> None:
    class Raises(SearchesOnAFlakyServer):
        def prove(self, theorem, session, budget):
            super().prove(theorem, session, budget)
            raise RuntimeError("prover bug")

    r = run_attempt(Raises(None), FakeLean(), tasks(1)[0], Budget(5))
    assert r.status == "error" and "prover bug" in r.error


# --------------------------------------------------------------------------- Ctrl-C


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_finishes_the_attempts_in_progress_and_a_second_ctrl_c_quits_at_once(presses: int,
                                                                                   monkeypatch) -> None:
    stderr = RecordingStderr("Ctrl-C again")
    monkeypatch.setattr(sys, "stderr", stderr)
    started, release, quit_ = threading.Event(), threading.Event(), threading.Event()
    problems: list[str] = []

    class Blocks:
        def prove(self, theorem, session, budget):
            started.set()
            release.wait(2 * HANG_GUARD_S)
            return None

    def user() -> None:  # presses Ctrl-C (in the main thread, where signals go) while an attempt runs
        try:
            if not started.wait(HANG_GUARD_S):
                problems.append("the attempt never started")
                return
            _thread.interrupt_main()
            if not stderr.seen.wait(HANG_GUARD_S):
                problems.append("no word that running attempts are being finished")
                return
            if presses == 2:
                _thread.interrupt_main()
                if not quit_.wait(HANG_GUARD_S):
                    problems.append("a second Ctrl-C did not quit")
        finally:
            release.set()

    out: list[AttemptResult] = []
    leases = Leases()
    pressing = threading.Thread(target=user, daemon=True)
    pressing.start()
    with pytest.raises(KeyboardInterrupt):
        try:
            run_tasks(tasks(3), Blocks, leases, RunConfig(Budget(5)), out.append)
        finally:
            quit_while_blocked, written = not release.is_set(), len(out)
            quit_.set()
    pressing.join(2 * HANG_GUARD_S)
    assert problems == []
    if presses == 1:  # the attempt in progress was finished and written; no other was started
        assert written == 1 and out[0].theorem == "t0" and not quit_while_blocked
    else:  # it did not wait for the prover
        assert written == 0 and quit_while_blocked


def test_a_policys_indented_tactic_is_recorded_as_sent() -> None:
    """The session sends a tactic normalised (no leading blank lines or indentation); the proof must hold
    that text: an indented line recorded as written would continue the line before it in the script."""
    from leangym.sim.local import LocalProcess
    from leangym.harness.run import run_attempt

    tactics = iter(["constructor", "\n  exact hp", "exact hq"])
    task = Task(Theorem("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"), 0)
    result = run_attempt(PolicyProver(lambda obs, info: next(tactics, None)), LocalProcess(), task, Budget(5))
    assert result.status == "proved", result.verify_error


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


def test_an_exception_that_cannot_be_printed_is_a_failed_attempt() -> None:
    class Unprintable(Exception):
        def __str__(self):
            raise ValueError("no str for you")

    class Raises:
        def prove(self, theorem, session, budget):
            raise Unprintable()

    out: list[AttemptResult] = []
    assert guarded(lambda: run_tasks(tasks(2), Raises, Leases(), RunConfig(Budget(5)), out.append))
    assert [r.status for r in out] == ["error", "error"]
    assert "Unprintable" in out[0].error and "could not be read" in out[0].error


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
    import copy

    from leangym.session import ProofSession

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


def test_an_exception_that_cannot_even_name_itself_is_a_failed_attempt() -> None:
    class Meta(type):
        @property
        def __name__(cls):
            raise ValueError("no name")

    class Nameless(Exception, metaclass=Meta):
        pass

    class ExitsInStr(Exception):
        def __str__(self):
            raise SystemExit(3)

    out: list[AttemptResult] = []
    errors = iter([Nameless("x"), ExitsInStr()])

    class Raises:
        def prove(self, theorem, session, budget):
            raise next(errors)

    assert guarded(lambda: run_tasks(tasks(2), Raises, Leases(), RunConfig(Budget(5)), out.append))
    assert [r.status for r in out] == ["error", "error"]
    assert out[0].error.startswith("Nameless") and "ExitsInStr" in out[1].error
