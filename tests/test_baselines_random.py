"""The random-tactic baseline (baselines/random_prover.py)."""
from __future__ import annotations

import pytest

from baselines.random_prover import RandomProver
from leangym.session import Budget, BudgetExhausted, ProofSession
from leangym.sim.local import LocalProcess

FALSE = "theorem t (p q : Prop) (hq : q) : p := by sorry"  # unprovable: the prover can only run out


@pytest.mark.parametrize("mode", ["linear", "tree"])
def test_an_unprovable_theorem_ends_with_the_budget(mode):
    """With a Lean-call cap the attempt runs until the budget is spent (max_tactics does not apply), then ends."""
    session = ProofSession(LocalProcess(), FALSE, budget=Budget(50))
    with pytest.raises(BudgetExhausted):
        RandomProver(mode=mode, max_tactics=10).prove(session.theorem, session, Budget(50))
    assert session.stats.lean_calls == 50


@pytest.mark.parametrize("mode", ["linear", "tree"])
def test_without_a_call_cap_max_tactics_ends_it(mode):
    """Exactly max_tactics tries, also in tree mode (whose searches used to run past it to their end)."""
    session = ProofSession(LocalProcess(), "theorem g (p q r : Prop) (h : p ∨ q) : (p → r) → q ∨ r := by sorry")
    assert RandomProver(seed=3, mode=mode, max_tactics=30).prove(session.theorem, session, Budget()) is None
    assert session.stats.lean_calls + session.stats.policy_rejected == 30


PROVABLE = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"


@pytest.mark.parametrize("mode", ["linear", "tree"])
def test_a_provable_theorem_is_proved_and_the_seed_fixes_the_attempt(mode):
    from leangym.proof import assemble

    def attempt():
        session = ProofSession(LocalProcess(), PROVABLE, budget=Budget(200))
        prover = RandomProver(seed=0, mode=mode)
        prover.set_seed(0)  # as the harness does per attempt
        proof = prover.prove(session.theorem, session, session.budget)
        assert proof is not None, mode
        check = session.verify(proof)
        assert check.ok, check.error
        assert 0 < session.stats.lean_calls <= 200
        return assemble(proof), session.stats.lean_calls

    first = attempt()
    assert attempt() == first  # the same seeds draw the same tactics: the same proof after as many calls


def test_a_linear_walk_into_a_dead_end_restarts():
    """`left` on `p ∨ q` with only `hq : q` is a dead end where every tactic fails: the walk must give up on
    it after max_walk_tries and restart (it used to spend the whole budget there)."""
    theorem = "theorem t (p q : Prop) (hq : q) : p ∨ q := by sorry"
    for seed in range(10):
        session = ProofSession(LocalProcess(), theorem, budget=Budget(400))
        prover = RandomProver(seed=seed, mode="linear", vocabulary=("left", "right"))
        prover.set_seed(seed)
        proof = prover.prove(session.theorem, session, session.budget)
        assert proof is not None and session.verify(proof).ok, seed
