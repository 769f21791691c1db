"""The benchmark harness: summary math, the verify gate, agent loading, resume, and end to end on the sim."""
from __future__ import annotations

import json
import math
import re
import sys
import textwrap
from pathlib import Path
from typing import Sequence

import pytest

from leangym.backends.types import (
    CommandResult, Goal, Hypothesis, Outcome, ProofState, ReplMessage, ServerIdentity, TacticResult,
)
from leangym.proof import ProofTree
from leangym.prover import AgentSpecError, PolicyProver, load_agent
from leangym.session import Budget
from leangym.theorem import Theorem
from leangym.harness import benchmark
from leangym.harness.records import AttemptResult, read_results
from leangym.harness.report import mcnemar_p
from leangym.harness.run import RunConfig, Task, run_tasks
from leangym.harness.stats import pass_at_k, percentile, summarize, wilson

# --------------------------------------------------------------------------- summary math


def test_wilson_interval_known_values() -> None:
    lo, hi = wilson(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and round(hi, 4) == 0.2775
    lo, hi = wilson(10, 10)
    assert round(lo, 4) == 0.7225 and hi == pytest.approx(1.0)
    lo, hi = wilson(81, 263)  # a classic textbook example
    assert (round(lo, 3), round(hi, 3)) == (0.255, 0.366)
    assert wilson(0, 0) == (0.0, 1.0)


def test_pass_at_k_unbiased_estimator() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))  # 11/12
    assert pass_at_k(5, 0, 3) == 0.0 and pass_at_k(5, 3, 3) == 1.0 and pass_at_k(4, 4, 4) == 1.0
    assert pass_at_k(200, 13, 100) == pytest.approx(1 - math.comb(187, 100) / math.comb(200, 100))
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def _r(theorem: str, attempt: int, solved: bool, calls: int = 10, category: str = "c", status: str | None = None,
       latencies: Sequence[float] = ()) -> AttemptResult:
    return AttemptResult(theorem, attempt, category, status or ("proved" if solved else "failed"),
                         lean_calls=calls, latencies_ms=list(latencies))


def test_summary_on_known_numbers() -> None:
    results = [_r("a", 0, True, 4, "x"), _r("a", 1, False), _r("a", 2, True, 8, "x"), _r("a", 3, False),
               _r("b", 0, False, category="y"), _r("b", 1, False, category="y"), _r("b", 2, False, category="y"),
               _r("b", 3, True, 2, "y"),
               _r("c", 0, False, category="y"), _r("c", 1, False, category="y"), _r("c", 2, False, category="y"),
               _r("c", 3, False, category="y", latencies=[1.0, 2.0, 3.0, 100.0]),
               _r("d", 0, False, status="infra_error")]
    s = summarize(results, expected=5)
    assert (s.theorems, s.solved, s.expected, s.attempts, s.infra_errors) == (3, 2, 5, 12, 1)
    assert s.pass_at[1] == pytest.approx((2 / 4 + 1 / 4 + 0) / 3)
    assert s.pass_at[2] == pytest.approx((pass_at_k(4, 2, 2) + pass_at_k(4, 1, 2)) / 3)
    assert s.pass_at[4] == pytest.approx(2 / 3) and sorted(s.pass_at) == [1, 2, 4]
    assert s.calls_per_solve_median == 4 and s.lean_calls == 4 + 8 + 2 + 9 * 10
    assert s.latency_p50_ms == 2.5 and s.latency_p99_ms == pytest.approx(3 + 97 * 0.97)
    assert [(c.category, c.theorems, c.solved) for c in s.categories] == [("x", 1, 1), ("y", 2, 1)]
    assert percentile([], 50) is None and percentile([7.0], 99) == 7.0
    assert mcnemar_p(0, 0) == 1.0 and mcnemar_p(6, 0) == pytest.approx(2 / 64) and mcnemar_p(3, 3) == 1.0


# --------------------------------------------------------------------------- the verify gate


class TinyLean:
    """A LeanProcess whose only theorem is ``h : P ⊢ P``; ``exact h`` proves it, the final check is honest."""

    process_id = 1
    in_process = True

    def __init__(self) -> None:
        self.closed = False

    def start_proof(self, theorem_with_sorry: str) -> ProofState:
        return ProofState(1, 0, (Goal((Hypothesis("h", "P"),), "P"),))

    def apply_tactic(self, state: ProofState, tactic: str, timeout_ms: int = 1000) -> TacticResult:
        t = tactic.strip()
        if t == "exact h":
            return TacticResult(t, Outcome.PROVED, (), None, 0.002)
        if t == "skip":
            return TacticResult(t, Outcome.PROGRESS, (state,), None, 0.001)
        return TacticResult(t, Outcome.REJECTED, (), f"unknown tactic '{t}'", 0.001)

    def apply_tactics(self, state: ProofState, tactics: Sequence[str], timeout_ms: int = 1000) -> list[TacticResult]:
        return [self.apply_tactic(state, t, timeout_ms) for t in tactics]

    def run_command(self, source: str) -> CommandResult:
        name = re.search(r"#print axioms (\S+)", source).group(1)
        body = source.split(":= by", 1)[1].split("#print", 1)[0]
        lines = [line.strip() for line in body.splitlines() if line.strip() not in ("", "(", ")")]  # (the brackets verify adds)
        if "sorry" in lines:
            return CommandResult((ReplMessage("warning", "declaration uses 'sorry'"),), 1)
        if lines and lines[-1] == "exact h" and set(lines) <= {"exact h", "skip"}:
            line = source[:source.index("#print")].count("\n") + 1  # the REPL reports the command's line
            return CommandResult((ReplMessage("info", f"'{name}' depends on axioms: [propext]", line, 0),))
        return CommandResult((ReplMessage("error", "unsolved goals"),))

    def identity(self) -> ServerIdentity:
        return ServerIdentity("tiny://")

    def close(self) -> None:
        self.closed = True


class Honest:
    def prove(self, theorem, session, budget):
        return [session.apply(session.root, "exact h").tactic]


class ReturnsSorry:
    def prove(self, theorem, session, budget):
        return ["sorry"]


class ReturnsSorryTree:
    def prove(self, theorem, session, budget):
        return ProofTree("skip", (ProofTree("sorry"),), (1,))


class WrongTactics:
    def prove(self, theorem, session, budget):
        session.apply(session.root, "skip")
        return ["skip"]  # the goals are not closed: claims a proof it does not have


class Crashes:
    def prove(self, theorem, session, budget):
        raise ValueError("bug in the prover")


class Greedy:
    def prove(self, theorem, session, budget):
        while True:
            session.apply(session.root, "simp")


class ReturnsJunk:
    def prove(self, theorem, session, budget):
        return 42


@pytest.mark.parametrize("prover, status, why", [
    (Honest(), "proved", None),
    (ReturnsSorry(), "failed", "'sorry' is not allowed"),
    (ReturnsSorryTree(), "failed", "'sorry' is not allowed"),
    (WrongTactics(), "failed", "unsolved goals"),
    (Crashes(), "error", "ValueError: bug in the prover"),
    (Greedy(), "failed", None),
    (ReturnsJunk(), "error", "prover returned int"),
])
def test_only_verified_proofs_count(prover, status: str, why: str | None) -> None:
    theorems = [Theorem("theorem t1 (P : Prop) (h : P) : P := by sorry"),
                Theorem("theorem t2 (P : Prop) (h : P) : P := by sorry")]
    out: list[AttemptResult] = []
    procs: list[TinyLean] = []

    def lease() -> TinyLean:
        procs.append(TinyLean())
        return procs[-1]

    ok = run_tasks([Task(t, 0) for t in theorems], lambda: prover, lease,
                   RunConfig(Budget(max_lean_calls=5), workers=2), out.append)
    assert ok and sorted(r.theorem for r in out) == ["t1", "t2"]
    # a lease per worker, plus one per checked answer (the check runs on a clean process)
    assert all(p.closed for p in procs) and 1 <= len(procs) <= 2 + len(theorems)
    for r in out:
        assert r.status == status and r.solved == (status == "proved")
        assert r.proof == ("exact h" if r.solved else None)
        text = " ".join(filter(None, [r.error, r.verify_error]))
        assert why is None or why in text, text
    if isinstance(prover, Greedy):
        assert all(r.budget_exhausted and r.lean_calls == 5 and len(r.latencies_ms) == 5 for r in out)


# --------------------------------------------------------------------------- agent loading

AGENT_MODULE = '''
from leangym.prover import PolicyProver

class MyProver:
    def __init__(self, width=1):
        self.width = width
    def prove(self, theorem, session, budget):
        return None

def make(width=3):
    return MyProver(width)

class MyPolicy:
    def act(self, observation, info):
        return "exact h"

INSTANCE = MyProver(7)
NOT_AN_AGENT = object()
'''


@pytest.fixture
def agent_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pkg = tmp_path / "mypkg_bench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(textwrap.dedent(AGENT_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for name in [m for m in sys.modules if m.startswith("mypkg_bench")]:
        del sys.modules[name]


def test_load_agent_resolves_class_factory_instance_policy_and_file(agent_pkg: Path) -> None:
    p = load_agent("mypkg_bench.mod:MyProver", {"width": 4})
    assert type(p).__name__ == "MyProver" and p.width == 4
    assert load_agent("mypkg_bench.mod:make").width == 3
    assert load_agent("mypkg_bench.mod.make", {"width": 5}).width == 5
    assert load_agent("mypkg_bench.mod:INSTANCE").width == 7
    assert isinstance(load_agent("mypkg_bench.mod:MyPolicy"), PolicyProver)
    assert load_agent(f"{agent_pkg / 'mod.py'}:MyProver", {"width": 2}).width == 2
    assert type(load_agent("baselines.hammer:HammerProver")).__name__ == "HammerProver"
    for spec, kwargs, msg in [("mypkg_bench.nope:X", None, "cannot import"),
                              ("mypkg_bench.mod:Missing", None, "has no attribute"),
                              ("mypkg_bench.mod:NOT_AN_AGENT", None, "neither prove"),
                              ("mypkg_bench.mod:INSTANCE", {"width": 1}, "takes no kwargs"),
                              ("mypkg_bench.mod:MyProver", {"depth": 1}, "cannot build"),
                              ("justaname", None, "expected 'package.module:Name'")]:
        with pytest.raises(AgentSpecError, match=msg):
            load_agent(spec, kwargs)


def test_a_file_agent_runs_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every worker loads the agent; a module that loads a model at import must not do so per worker."""
    import threading

    log = tmp_path / "executions.log"
    (tmp_path / "heavy_agent_bench.py").write_text(textwrap.dedent(f'''
        with open({str(log)!r}, "a") as f:
            f.write("loaded\\n")

        class Heavy:
            def prove(self, theorem, session, budget):
                return None
    '''))
    monkeypatch.chdir(tmp_path)
    threads = [threading.Thread(target=load_agent, args=("heavy_agent_bench.py:Heavy",)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = load_agent("heavy_agent_bench.py:Heavy")
    second = load_agent(f"{tmp_path}/heavy_agent_bench.py:Heavy")  # the same file by another path
    assert log.read_text().splitlines() == ["loaded"]
    assert first is not second and type(first) is type(second)  # one prover per worker, one module


def test_a_policy_function_is_a_policy_and_other_functions_say_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "pol_bench.py").write_text(textwrap.dedent('''
        def pol_fn(observation, info):
            return "exact h"

        def short_names(o, i):
            return "exact h"
    '''))
    prover = load_agent(f"{tmp_path / 'pol_bench.py'}:pol_fn")
    assert isinstance(prover, PolicyProver)
    out: list[AttemptResult] = []
    run_tasks([Task(Theorem("theorem t (P : Prop) (h : P) : P := by sorry"), 0)], lambda: prover, TinyLean,
              RunConfig(Budget(10)), out.append)
    assert out[0].solved
    with pytest.raises(AgentSpecError, match="is a policy function .* takes no kwargs"):
        load_agent(f"{tmp_path / 'pol_bench.py'}:pol_fn", {"width": 1})
    with pytest.raises(AgentSpecError, match=r"called as a factory .* name a policy function's parameters "
                                             r"\(observation, info\), or wrap it in leangym.prover.PolicyProver"):
        load_agent(f"{tmp_path / 'pol_bench.py'}:short_names")


def test_policy_prover_runs_a_linear_episode() -> None:
    seen = []

    class Policy:
        def act(self, observation: str, info: dict) -> str:
            seen.append((observation, info["step"], info["last_outcome"]))
            return "nope" if info["step"] == 0 else "exact h"

    out: list[AttemptResult] = []
    run_tasks([Task(Theorem("theorem t (P : Prop) (h : P) : P := by sorry"), 0)], lambda: PolicyProver(Policy()),
              TinyLean, RunConfig(Budget(10)), out.append)
    assert out[0].solved and out[0].lean_calls == 2 and out[0].rejected == 1
    assert seen == [("h : P\n⊢ P", 0, None), ("h : P\n⊢ P", 1, "rejected")]


# --------------------------------------------------------------------------- end to end on the simulator

HELDOUT = "proplogic-heldout:8"


def run_cli(tmp_path: Path, out: str, *extra: str) -> int:
    return benchmark.main([*extra, "--dataset", HELDOUT, "--sim", "--out", str(tmp_path / out), "--quiet",
                           "--plot", "none"] if "--agent" in extra else list(extra))


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_end_to_end_hammer_and_random_then_compare(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert run_cli(tmp_path, "hammer.jsonl", "--agent", "hammer", "--budget-calls", "60", "--workers", "2") == 0
    assert run_cli(tmp_path, "random.jsonl", "--agent", "random", "--agent-kwargs", '{"mode": "tree"}',
                   "--budget-calls", "40", "--attempts", "2", "--seed", "3") == 0
    out = capsys.readouterr().out
    assert "pass rate (any attempt)" in out and "| pass@2 |" in out and "| level1 |" in out
    hammer, rand = read_results(tmp_path / "hammer.jsonl"), read_results(tmp_path / "random.jsonl")
    assert len(hammer.results) == 8 and len(rand.results) == 16
    assert hammer.header["server"]["simulated"] is True and hammer.header["agent"] == "hammer"
    assert rand.header["agent_kwargs"] == {"mode": "tree"} and rand.header["count"] == 8
    for r in hammer.attempts + rand.attempts:
        assert r.status in ("proved", "failed") and r.lean_calls <= 60
        assert (r.proof is not None) == r.solved
    assert any(r.solved for r in hammer.attempts)  # level-1 theorems fall to the sweep

    assert benchmark.main(["compare", str(tmp_path / "hammer.jsonl"), str(tmp_path / "random.jsonl"),
                           "--plot", str(tmp_path / "cmp.png")]) == 0
    text = capsys.readouterr().out
    assert "| metric | hammer | random |" in text and "McNemar" in text
    assert (tmp_path / "cmp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert benchmark.main(["summary", str(tmp_path / "hammer.jsonl"), "--plot", str(tmp_path / "h.png")]) == 0
    assert (tmp_path / "h.png").exists()


def test_resume_after_interruption_has_no_duplicates(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    args = ["--agent", "hammer", "--budget-calls", "30", "--attempts", "2"]
    assert run_cli(tmp_path, "r.jsonl", *args, "--limit", "3") == 0
    assert len([r for r in rows(out) if r["type"] == "result"]) == 6
    with open(out, "a") as f:  # a write cut short by the interruption
        f.write('{"type": "result", "theorem": "prop_heldo')
    assert run_cli(tmp_path, "r.jsonl", *args) == 0
    results = [r for r in rows(out) if r["type"] == "result"]
    keys = [(r["theorem"], r["attempt"]) for r in results]
    assert len(keys) == len(set(keys)) == 16
    assert [r["type"] for r in rows(out)].count("resume") == 1
    assert run_cli(tmp_path, "r.jsonl", *args) == 0  # nothing left: no new result rows
    assert len([r for r in rows(out) if r["type"] == "result"]) == 16
    # a different run must not append to this file
    assert run_cli(tmp_path, "r.jsonl", "--agent", "random", "--budget-calls", "30", "--attempts", "2") == 2
    # a run cut short while writing its header starts afresh
    (tmp_path / "h.jsonl").write_text('{"type": "header", "format": 1, "cre', encoding="utf-8")
    assert run_cli(tmp_path, "h.jsonl", *args, "--limit", "1") == 0
    assert [r["type"] for r in rows(tmp_path / "h.jsonl")] == ["header", "result", "result", "run_end"]


def test_unsound_agent_never_counts_end_to_end(tmp_path: Path, agent_pkg: Path) -> None:
    (agent_pkg / "cheat.py").write_text(textwrap.dedent('''
        class Cheater:
            """Closes the goal with a banned tactic, then claims proofs the final check must refuse."""
            def prove(self, theorem, session, budget):
                session.apply(session.root, "sorry")
                return {"prop_heldout_d1_00000": "sorry"}.get(theorem.name, ["exact no_such_hypothesis"])
    '''))
    assert run_cli(tmp_path, "cheat.jsonl", "--agent", "mypkg_bench.cheat:Cheater", "--limit", "4") == 0
    results = read_results(tmp_path / "cheat.jsonl").attempts
    assert len(results) == 4 and not any(r.solved for r in results)
    assert all(r.verify_error and r.candidate for r in results) and all(r.policy_rejected == 1 for r in results)


class CitesItsOwnLemma:
    """Declares a lemma on the process it was handed (through the session's private attribute: Python
    hides nothing), then cites it: no standalone proof."""

    def prove(self, theorem, session, budget):
        session._lean.run_command("theorem helper (P : Prop) (h : P) : P := by\n  exact h")
        return "exact helper P h"


class DeclaresThroughTheGate:
    def prove(self, theorem, session, budget):
        session.process.run_command("theorem helper (P : Prop) (h : P) : P := by\n  exact h")
        return "exact helper P h"


def test_the_check_runs_on_a_clean_process() -> None:
    from leangym.sim.local import LocalProcess
    from leangym.harness.run import run_attempt

    task = Task(Theorem("theorem t (P : Prop) (h : P) : P := by sorry"), 0)
    # the gate refuses a command outright: the prover errs, nothing reaches Lean
    r = run_attempt(DeclaresThroughTheGate(), LocalProcess(), task, Budget(5))
    assert r.status == "error" and "RawAccessRefused" in r.error and r.lean_calls == 0
    # on the prover's own process a lemma it declared behind the gate's back is there, and the proof goes through ...
    assert run_attempt(CitesItsOwnLemma(), LocalProcess(), task, Budget(5)).status == "proved"
    # ... but the harness checks on a process fresh from the pool
    out: list[AttemptResult] = []
    assert run_tasks([task], CitesItsOwnLemma, LocalProcess, RunConfig(Budget(5)), out.append)
    assert out[0].status == "failed" and "unknown identifier 'helper'" in out[0].verify_error


def test_server_trouble_is_infra_error_and_stops_the_run() -> None:
    from leangym.backends.types import ServerUnavailable

    def lease():
        raise ServerUnavailable("nobody home")

    out: list[AttemptResult] = []
    tasks = [Task(Theorem(f"theorem t{i} (P : Prop) (h : P) : P := by sorry"), 0) for i in range(10)]
    config = RunConfig(Budget(5), workers=1, max_consecutive_infra_errors=3)
    assert run_tasks(tasks, Honest, lease, config, out.append) is False
    assert len(out) == 3 and all(r.status == "infra_error" and "nobody home" in r.error for r in out)
    assert summarize(out).infra_errors == 3 and summarize(out).theorems == 0  # retried on resume, not counted


def test_factorized_server_tree_proofs_verify(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "f.jsonl", "--agent", "random", "--agent-kwargs", '{"mode": "tree"}', "--limit", "6",
                   "--sim-factorized", "--budget-calls", "60") == 0
    rs = read_results(tmp_path / "f.jsonl")
    assert rs.header["server"]["generation"] == "factorized"
    assert any(r.solved for r in rs.attempts)
    assert not any(r.verify_error for r in rs.attempts)  # assembled trees (with · bullets) pass the final check


def test_results_files_survive_odd_text_and_odd_runs(tmp_path: Path) -> None:
    from leangym.harness.records import ResultsWriter, mismatches, read_results
    from leangym.harness.stats import summarize

    path = tmp_path / "r.jsonl"
    w = ResultsWriter(path)
    w.write({"type": "header", "agent_resolved": "x", "server": {"simulated": True, "generation": "single-branch"}})
    w.write_result(AttemptResult("t", 0, "c", "failed", error="a\u2028b\x85c"))  # raw in the file
    w.close()
    assert read_results(path).results[("t", 0)].error == "a\u2028b\x85c"
    old = read_results(path).header
    assert mismatches(old, {**old, "server": {"simulated": False, "generation": "single-branch"}}) == [
        "server.simulated: file has True, this run False"]
    # pass@k only up to the fewest attempts a theorem has: a run cut short cannot make pass@2 < pass@1
    cut = [AttemptResult("a", 0, "c", "proved"), AttemptResult("b", 0, "c", "failed"),
           AttemptResult("b", 1, "c", "failed")]
    assert summarize(cut).pass_at == {1: 0.5}
    path.write_text('{"type": "header"}\n["not", "a", "row"]\n{"type": "result"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"r\.jsonl:2: expected a JSON object"):
        read_results(path)


def test_attempts_on_one_process_start_again_however_the_header_and_name() -> None:
    # A proof start declares the statement and its header on the process (as LeanTree's do): a second
    # attempt on the worker's process was "Lean rejected the statement: already declared", never retried
    from leangym.sim.local import LocalProcess

    class Fails:
        def prove(self, theorem, session, budget):
            session.apply(session.root, "exact nonsense")
            return None

    theorems = [Theorem("theorem t (P : Prop) (h : P) : P := by sorry"),
                Theorem("theorem u (q : Prop) (hq : q) : q := by sorry",
                        header="theorem helper (p : Prop) (hp : p) : p := by\n  exact hp\n")]
    out: list[AttemptResult] = []
    assert run_tasks([Task(t, a) for t in theorems for a in range(2)], Fails, LocalProcess,
                     RunConfig(Budget(max_lean_calls=5)), out.append)
    assert [(r.theorem, r.status) for r in out] == [("t", "failed"), ("t", "failed"), ("u", "failed"), ("u", "failed")]


def test_a_worker_gives_its_process_back_now_and_then(monkeypatch) -> None:
    # a process keeps every proof start and state until it is returned (LeanTree's REPL keeps them all)
    import leangym.harness.run as bench_run
    from leangym.sim.local import LocalProcess

    monkeypatch.setattr(bench_run, "ATTEMPTS_PER_PROCESS", 4)
    leased: list[LocalProcess] = []

    def lease() -> LocalProcess:
        leased.append(LocalProcess())
        return leased[-1]

    class Fails:
        def prove(self, theorem, session, budget):
            return None

    out: list[AttemptResult] = []
    thm = Theorem("theorem t (P : Prop) (h : P) : P := by sorry")
    assert run_tasks([Task(thm, a) for a in range(10)], Fails, lease, RunConfig(Budget(max_lean_calls=5)), out.append)
    assert [r.status for r in out] == ["failed"] * 10 and len(leased) == 3  # 4 + 4 + 2 attempts


@pytest.mark.parametrize("factorized", [False, True], ids=["single-branch", "factorized"])
def test_the_results_header_names_the_generation_of_a_server_that_claims_none(sim_server, factorized, monkeypatch):
    # LeanTree's /status says nothing of its generation, and the client learns it only from tactic replies: the
    # header said "unknown", so a resumed run could go on against the other generation unnoticed
    from leangym.backends.leantree import LeanTreeClient
    from leangym.backends.types import ServerIdentity
    from leangym.harness.server import _server_identity, probe_generation

    srv = sim_server(factorized=factorized)
    monkeypatch.setattr(LeanTreeClient, "identity", lambda self, refresh=False: ServerIdentity(self.url, "unknown", {}))
    with LeanTreeClient(srv.url) as client:
        expected = "factorized" if factorized else "single-branch"
        assert probe_generation(client) == expected
        assert _server_identity(client, simulated=False)["generation"] == expected
        assert client.status()["used_processes"] == 0  # the probe's lease went back
