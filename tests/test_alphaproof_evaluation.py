"""Train's held-out evaluation searches as the harness does, so its solve rate and budget curve are the harness's."""
from __future__ import annotations

import dataclasses

from agents.alphaproof import train as train_mod
from agents.alphaproof.actors import eval_search_config
from agents.alphaproof.iteration import first_and_last
from agents.alphaproof.prove import AlphaProofProver, prove_config
from agents.alphaproof.theorem_source import Task
from leangym.session import VERIFY_CALLS, Budget, ProofSession
from leangym.sim.local import LocalProcess
from leangym.theorem import Theorem
from tests.test_alphaproof_faults import Proposes, tiny_args

STATEMENTS = ["theorem a (p : Prop) (hp : p) : p := by sorry",
              "theorem b (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry",
              "theorem c (p q : Prop) (hp : p) (hq : q) : (p ∧ q) ∧ p := by sorry",
              "theorem d (p q : Prop) (hq : q) : p := by sorry"]  # (unprovable)
NET = Proposes("constructor", "exact hp", "exact hq")  # the same tactics everywhere, no sampling: one search each


def test_the_evaluation_counts_what_the_harness_counts_for_the_same_net(tmp_path):
    args = tiny_args(tmp_path, "ev", eval_lean_calls=24)
    tasks = [Task(Theorem(s), s, 1) for s in STATEMENTS]
    ev = train_mod.evaluate(NET, tasks, lambda: LocalProcess(factorized=True), args)

    prover, calls = AlphaProofProver(net=NET), []  # the harness's agent, its budget and its session
    for t in tasks:
        session = ProofSession(LocalProcess(factorized=True), t.theorem, budget=Budget(24))
        if prover.prove(t.theorem, session, Budget(24)) is not None and session.verify(prover.last.proof).ok:
            calls.append(prover.last.lean_calls)
    assert len(calls) == 3 and len(set(calls)) > 1  # (theorems that take different numbers of calls)
    assert ev["solve_rate"] == len(calls) / 4
    assert {k: ev[f"within_{k}_calls"] for k in (1, 2, 4, 8, 16)} == {k: sum(c <= k for c in calls)
                                                                      for k in (1, 2, 4, 8, 16)}
    assert "within_32_calls" not in ev  # (past the budget)


def test_the_evaluation_is_the_harness_search_with_its_own_final_check_on_top():
    harness = prove_config(None, 1, 64, None, self_check=False)  # what AlphaProofProver.prove searches with
    cfg = eval_search_config(train_mod.Args(lean_calls=8, eval_lean_calls=64))
    assert cfg == dataclasses.replace(harness, max_lean_calls=64 + VERIFY_CALLS, self_check=True)


def test_a_run_resumed_from_an_older_version_compares_only_the_evaluations_of_this_search():
    older = [{"iteration": 0, "solve_rate": 0.5}, {"iteration": 25, "solve_rate": 0.6}]  # (the training search's)
    new = [{"iteration": 50, "eval_lean_calls": 64, "solve_rate": 0.8}, {"iteration": 100, "eval_lean_calls": 64}]
    assert first_and_last(older + new) == (new[0], new[1])
    assert first_and_last(older) == (older[0], older[1])


def test_the_run_prints_the_budget_curve_of_its_first_and_last_evaluation(tmp_path, capsys):
    train_mod.main(["--model-size", "tiny", "--actors", "2", "--iterations", "1", "--sims", "2", "--lean-calls", "8",
                    "--eval-lean-calls", "8", "--eval-size", "4", "--warmup-steps", "2", "--warmup-theorems", "8",
                    "--batch-size", "4", "--learn-steps", "1", "--max-tactic-tokens", "8", "--no-progress",
                    "--logdir", "", "--checkpoint-dir", str(tmp_path / "ck")])
    out = capsys.readouterr().out
    assert "held-out solve rate: " in out
    line = next(x for x in out.splitlines() if "solved within" in x)
    assert line.startswith("  solved within 1/2/4/8 Lean calls: ") and " of 4 (after warm start) -> " in line
