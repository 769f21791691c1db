"""The AlphaProof search against its Lean backends, on the toy Lean of test_alphaproof_mcts: batched
searches sharing evaluator calls, the simulated kernel, in-process calls inline and a server's on
threads, backends that raise, and the Lean-call budget."""
from __future__ import annotations

import pytest

from agents.alphaproof.interfaces import GAMMA, Evaluation, per_state
from agents.alphaproof.mcts import SearchConfig
from agents.alphaproof.search import run_batched_search, run_search
from leangym.session import VERIFY_CALLS, Budget, ProofSession

from test_alphaproof_mcts import ENDLESS, PQ, VOCAB, FakeEvaluator, FakeLean, NamesEvaluator, session, thm


def test_lean_call_budget_is_never_exceeded():
    lean = FakeLean()
    res = run_search(ProofSession(lean, ENDLESS), NamesEvaluator(),
                     SearchConfig(num_simulations=1000, max_lean_calls=13, num_tactics=4))
    assert sum(lean.sent.values()) == res.lean_calls <= 13
    assert res.stop_reason == "lean_calls" and res.simulations == res.tree.root.visits
    # the session's own budget is honoured too (no BudgetExhausted escapes)
    lean = FakeLean()
    res = run_search(ProofSession(lean, ENDLESS, budget=Budget(max_lean_calls=6)), NamesEvaluator(),
                     SearchConfig(num_simulations=1000, max_lean_calls=None, num_tactics=4))
    assert sum(lean.sent.values()) == res.lean_calls <= 6 and res.stop_reason == "lean_calls"


def test_batched_search_solves_what_single_searches_solve():
    targets = ["p ∧ q", "(p ∧ q) ∧ (q ∨ r)", "p ∧ r", "q → p ∧ q"]
    cfg = SearchConfig(num_simulations=60)
    single = [run_search(session(t), FakeEvaluator(), cfg) for t in targets]
    ev = FakeEvaluator()
    batched = run_batched_search([session(t) for t in targets], ev, cfg)
    assert [r.solved for r in batched] == [r.solved for r in single] == [True, True, False, True]
    assert all(r.verified == r.solved for r in batched)
    assert max(ev.batch_sizes) > 1 and ev.calls < sum(r.simulations for r in batched)


def test_each_leaf_asks_for_its_own_k():
    """A widened node asks for more tactics than a fresh leaf, in the same evaluate call."""
    seen: list[list[int]] = []

    class Recording(FakeEvaluator):
        def evaluate(self, states, k):
            seen.append(per_state(k, len(states)))
            return super().evaluate(states, k)

    cfg = SearchConfig(num_simulations=40, num_tactics=1, widen_tactics=1, widen_c=1.0, leaves_per_round=2)
    results = run_batched_search([session("(p ∧ q) ∧ (q ∨ r)") for _ in range(2)], Recording(), cfg)
    assert all(r.verified for r in results)
    assert any(len(set(ks)) > 1 for ks in seen)  # fresh leaves (k=1) next to widened ones (k>1)
    assert all(x >= cfg.num_tactics for ks in seen for x in ks)


def test_on_the_simulated_kernel():
    from leangym.sim.local import LocalProcess

    sess = ProofSession(LocalProcess(factorized=True),
                        "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry")
    res = run_search(sess, FakeEvaluator(), SearchConfig(num_simulations=30))
    assert res.solved and res.verified, res
    assert res.tree.root.steps == 3 and GAMMA ** 3 == pytest.approx(res.tree.root.estimate())


def test_a_tactic_that_names_a_hypothesis_is_no_repeat_of_one_that_cannot():
    """`intro` leaves `a✝`, which no tactic can cite: `intro h` is progress beyond it (it was refused as the same
    tactic up to names, and `rename_i h` as one back to its own state: a two-line proof was lost)."""
    from leangym.sim.local import LocalProcess

    for vocab in (["intro", "intro h", "intro g", "exact g h"], ["intro", "rename_i h g", "exact g h"]):
        sess = ProofSession(LocalProcess(factorized=True), "theorem t (p q : Prop) : p → (p → q) → q := by sorry")
        res = run_search(sess, FakeEvaluator(vocab), SearchConfig(num_simulations=40))
        assert res.verified, (vocab, res.proof, res.verify_error)


def test_a_tactic_that_picks_its_goal_by_tag_is_never_tried():
    """Both branches of `constructor` (`case left`, `case right`) are one node: `case left => exact hp` would
    prove it on the one and fail on the other, and the proof found would not check (nor `exact hp` be tried)."""
    from leangym.sim.local import LocalProcess

    sess = ProofSession(LocalProcess(factorized=True), "theorem t (p : Prop) (hp : p) : p ∧ p := by sorry")
    res = run_search(sess, FakeEvaluator(["constructor", "case left => exact hp", "exact hp"]),
                     SearchConfig(num_simulations=20))
    assert res.verified and res.proof == "constructor\n· exact hp\n· exact hp", (res.proof, res.verify_error)
    assert not any(t.startswith("case") for n in res.tree.table.values() for t in n.tried)
    # where a state holds both goals (one branch for all), tags stay in its key and `case` picks one
    sess = ProofSession(LocalProcess(factorized=False), "theorem t (p : Prop) (hp : p) : p ∧ p := by sorry")
    res = run_search(sess, FakeEvaluator(["constructor", "case right => exact hp", "exact hp"]),
                     SearchConfig(num_simulations=20))
    both = [n for n in res.tree.table.values() if len(n.state.goals) == 2]
    assert res.verified and both and "case right => exact hp" in both[0].tried


def test_a_raising_backend_fails_its_tactics_not_the_batch():
    class Raising(FakeLean):
        def apply_tactic(self, state, tactic, timeout_ms=1000):
            if tactic == "boom":
                raise ValueError("kernel bug")
            return super().apply_tactic(state, tactic, timeout_ms)

    sessions = [ProofSession(Raising(), thm(PQ, "p ∧ q")), session("q ∧ p")]
    results = run_batched_search(sessions, FakeEvaluator(["boom"] + VOCAB), SearchConfig(num_simulations=20))
    assert all(r.verified for r in results)


def test_in_process_lean_runs_inline():
    """An in-process kernel holds the interpreter while it works: its calls run in the search's
    own thread (threads would only add switching). A server's calls get threads (below)."""
    import threading

    threads = set()

    class Recording(FakeLean):
        def apply_tactic(self, state, tactic, timeout_ms=1000):
            threads.add(threading.get_ident())
            return super().apply_tactic(state, tactic, timeout_ms)

    sessions = [ProofSession(Recording(), thm(PQ, "p ∧ q")) for _ in range(4)]
    results = run_batched_search(sessions, FakeEvaluator(), SearchConfig(num_simulations=30))
    assert all(r.verified for r in results)
    assert threads == {threading.get_ident()}


def test_batched_search_keeps_every_lean_process_busy(sim_server):
    """B searches over a LeanTree server have B Lean calls in flight at once: a REPL serves one
    request at a time, so any fewer leaves processes idle. Each process's first call waits at a
    B-party barrier, which only opens if all B are in flight together."""
    import threading

    from conftest import ScriptedProcess
    from leangym.backends.leantree import LeanTreeClient

    searches = 12  # more than the shared tactic threads (8) and lean_threads (8) this once had
    barrier = threading.Barrier(searches, timeout=60)

    class Waiting(ScriptedProcess):
        waited = False

        def try_apply_tactic(self, proof_state_id, tactic, timeout_ms=1000):
            if not self.waited:
                self.waited = True
                barrier.wait()
            return super().try_apply_tactic(proof_state_id, tactic, timeout_ms)

    srv = sim_server(process_factory=Waiting, max_processes=searches, factorized=True)
    client = LeanTreeClient(srv.url)
    leases = [client.lease() for _ in range(searches)]
    sessions = [ProofSession(lease, thm("(p q : Prop) (hp : p) (hq : q)", "p ∧ q")) for lease in leases]
    try:
        results = run_batched_search(sessions, FakeEvaluator(["split", "done"]), SearchConfig(num_simulations=4))
    finally:
        for lease in leases:
            lease.close()
    assert not barrier.broken
    assert all(r.solved for r in results)


class _Listed:
    """An evaluator that proposes the same tactics, in order, for every state."""

    def __init__(self, tactics):
        self.tactics = tactics

    def evaluate(self, states, k):
        return [Evaluation(tuple(self.tactics[:n]), (0.0,) * len(self.tactics[:n]), 0.5)
                for n in per_state(k, len(states))]


@pytest.mark.parametrize("budget, attempts", [
    # (max_lean_calls keeps VERIFY_CALLS = 2 for a proof's final check: tactics get budget - 2)
    # the batch of 4 is charged whole (4 calls), though `constructor` never reached Lean: it came after
    # the raise; so at budget 6 nothing is retried
    (6, ["left", "right", "boom"]),
    # the retries, one tactic at a time, are charged too and stop where max_lean_calls does
    (8, ["left", "right", "boom", "left", "right"]),
    (10, ["left", "right", "boom", "left", "right", "boom", "constructor"]),
])
def test_a_raising_backend_does_not_overspend_the_lean_budget(budget, attempts):
    """A batch that raised is retried one tactic at a time, but never past max_lean_calls."""
    from leangym.sim.local import LocalProcess

    class Boom(LocalProcess):
        """Records every tactic that reaches it, the raising ones included."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.attempts: list[str] = []

        def apply_tactic(self, state, tactic, timeout_ms=1000):
            self.attempts.append(tactic)
            if tactic == "boom":
                raise ValueError("kernel bug")
            return super().apply_tactic(state, tactic, timeout_ms)

    process = Boom(factorized=True)
    session = ProofSession(process, "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry")
    result = run_search(session, _Listed(["left", "right", "boom", "constructor"]),
                        SearchConfig(num_simulations=10, num_tactics=4, max_lean_calls=budget, leaves_per_round=1))
    assert result.stop_reason == "lean_calls" and not result.solved
    # what really reached the backend (raising calls included) never exceeds what was charged,
    # and what was charged never exceeds the budget
    assert len(process.attempts) <= result.lean_calls == session.stats.lean_calls == budget - VERIFY_CALLS
    assert process.attempts == attempts


def test_a_budget_cut_is_not_a_dead_end():
    """Tactics the budget kept from Lean were never tried: the stop is "lean_calls", not "exhausted"."""
    from leangym.sim.local import LocalProcess

    session = ProofSession(LocalProcess(factorized=True), "theorem t (p q : Prop) (hp : p) : p := by sorry")
    result = run_search(session, _Listed(["left", "right", "exact hq", "exact hp"]),
                        SearchConfig(num_simulations=10, num_tactics=4, max_tactics=4, max_lean_calls=4))
    # (VERIFY_CALLS = 2 of the 4 calls are kept for a proof's final check: tactic mode, then the command)
    assert result.lean_calls == 2 and result.stop_reason == "lean_calls" and not result.tree.root.dead


@pytest.mark.parametrize("budget, solved, calls", [(11, True, 11), (10, False, 8)])
def test_the_session_budget_keeps_what_the_final_check_costs(budget, solved, calls):
    """The final check costs Lean calls like any other (VERIFY_CALLS: the whole script in tactic mode, then
    the command): with the session's budget as a hard cap, tactics stop that many calls short of it, so a
    proof found with the last tactic call can still be checked."""
    from leangym.sim.local import LocalProcess

    session = ProofSession(LocalProcess(factorized=True), "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry",
                           budget=Budget(max_lean_calls=budget))
    result = run_search(session, _Listed(["constructor", "exact hp", "exact hq"]),
                        SearchConfig(num_simulations=20, num_tactics=3, leaves_per_round=1))
    assert (result.solved, result.verified) == (solved, solved) and result.verify_error is None
    assert session.stats.lean_calls == result.lean_calls == calls <= budget
