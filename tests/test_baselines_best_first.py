"""BestFirstProver: proofs that verify (split goals on both server generations), dedupe, budget, the net."""
from __future__ import annotations

from typing import Sequence

import pytest

from agents.alphaproof.interfaces import Evaluation
from baselines.best_first import BestFirstProver
from leangym.prover import load_agent
from leangym.session import Budget, ProofSession
from leangym.datasets.proplogic import heldout_set
from leangym.sim.local import LocalProcess
from leangym.harness.run import Task, run_attempt

SPLIT = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ (q ∧ p) := by sorry"


class MenuEvaluator:
    """Offers the same tactics, best first, for every state (a stand-in for a trained policy)."""

    def __init__(self, tactics: Sequence[str]) -> None:
        self.tactics = tuple(tactics)
        self.calls = 0

    def evaluate(self, states: Sequence[str], k: int) -> list[Evaluation]:
        self.calls += 1
        tactics = self.tactics[:k]
        return [Evaluation(tactics, tuple(-1.0 - i for i in range(len(tactics))), 0.5) for _ in states]


def _session(theorem: str, factorized: bool = False, calls: int | None = None) -> ProofSession:
    return ProofSession(LocalProcess(factorized=factorized), theorem, budget=Budget(calls))


@pytest.mark.parametrize("factorized", [False, True])
def test_split_goals_give_a_verified_proof(factorized: bool) -> None:
    session = _session(SPLIT, factorized)
    prover = BestFirstProver(MenuEvaluator(["constructor", "exact hq", "exact hp"]))
    proof = prover.prove(None, session, session.budget)
    assert proof is not None and session.verify(proof).ok


def test_reference_tactics_prove_heldout_theorems() -> None:
    for t in [t for t in heldout_set(15) if t.difficulty <= 3]:  # deeper ones: the menu's tree explodes
        session = _session(t.theorem.source_with_sorry)
        proof = BestFirstProver(MenuEvaluator(t.proof), k=len(t.proof)).prove(t.theorem, session, session.budget)
        assert proof is not None and session.verify(proof).ok, t.theorem.name


def test_duplicate_states_are_not_expanded_again() -> None:
    session = _session(SPLIT)
    prover = BestFirstProver(MenuEvaluator(["skip", "exfalso"]), batch=1)  # skip: the same goal again
    assert prover.prove(None, session, session.budget) is None
    # root, then `exfalso` (⊢ False), then nothing new: exfalso on False and skip repeat known states
    assert prover.expansions == 2


def test_budget_ends_the_search_without_an_error() -> None:
    session = _session(SPLIT, calls=2)
    prover = BestFirstProver(MenuEvaluator(["skip", "exfalso", "constructor", "exact hp"]))
    assert prover.prove(None, session, session.budget) is None
    assert session.stats.lean_calls <= 2


def test_through_the_harness_the_answer_is_verified() -> None:
    t = heldout_set(1)[0]
    prover = BestFirstProver(MenuEvaluator(t.proof))
    r = run_attempt(prover, LocalProcess(), Task(t.theorem, 0), Budget(32))
    assert r.status == "proved" and r.lean_calls <= 32


def test_untrained_net_and_checkpoint_load(tmp_path) -> None:
    from agents.alphaproof.policy import PolicyValueNet

    import torch

    def same_weights(a, b) -> bool:
        sa, sb = a.model.state_dict(), b.model.state_dict()
        return sa.keys() == sb.keys() and all(torch.equal(sa[k].cpu(), sb[k].cpu()) for k in sa)

    path = tmp_path / "net.pt"
    saved = PolicyValueNet.create("tiny", seed=1)
    saved.save(str(path))
    prover = load_agent("baselines.best_first:BestFirstProver",
                        {"checkpoint": str(path), "max_expansions": 2, "batch": 2, "k": 2})
    assert isinstance(prover, BestFirstProver) and isinstance(prover.evaluator, PolicyValueNet)
    assert (prover.k, prover.batch, prover.max_expansions) == (2, 2, 2)
    assert same_weights(prover.evaluator, saved)  # the checkpoint's net, not a fresh one
    session = _session(SPLIT, calls=8)
    proof = prover.prove(None, session, session.budget)
    assert proof is None or session.verify(proof).ok
    assert 1 <= prover.expansions <= 2 and session.stats.lean_calls <= 8
    run_dir = tmp_path / "run"  # a training run's directory means its latest.pt, as for prove --checkpoint
    run_dir.mkdir()
    with pytest.raises(ValueError, match="without a latest.pt"):
        BestFirstProver(checkpoint=str(run_dir))
    saved.save(str(run_dir / "latest.pt"))
    assert same_weights(BestFirstProver(checkpoint=str(run_dir)).evaluator, saved)
    untrained = BestFirstProver(seed=0, max_expansions=1, k=2)
    assert isinstance(untrained.evaluator, PolicyValueNet)
    assert same_weights(untrained.evaluator, PolicyValueNet.create("tiny", seed=0))  # seeded: reproducible
    assert not same_weights(untrained.evaluator, saved)  # and a different seed is a different net
