"""The benchmark runner under faulty agents: constructors that fail, provers that raise anything, servers
that fail mid-search, and Ctrl-C (late answers, hung provers and budgets: test_bench_budgets.py).

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
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

from leangym.backends.types import (
    CommandResult, Goal, Hypothesis, Outcome, ProofState, ReplMessage, ServerIdentity, TacticResult,
)
from leangym.cli import run_cli
from leangym.prover import AgentSpecError, PolicyProver
from leangym.session import Budget
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
