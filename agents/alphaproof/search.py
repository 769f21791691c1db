"""One actor running B proof searches at once (AlphaZero-style MCTS over AND-OR trees).

Each round, for all B trees together:

1. select up to ``leaves_per_round`` leaves per tree (virtual loss keeps them apart);
2. evaluate every leaf state in ONE ``evaluator.evaluate`` call;
3. send each leaf's new tactics to Lean (``session.apply_many``), one thread
   per session, all sessions concurrently (an in-process kernel runs inline:
   its calls hold the interpreter, so threads would only add switching);
4. add the results to the trees and back the values up.

A search leaves the batch when its root is solved or dead, or a budget
(simulations, Lean calls, seconds) is spent. A solved root counts only once
``session.verify`` has re-checked the assembled proof. ``run_search`` is the
same code with B = 1.

A search is also cut short from outside (:data:`CUT_SHORT`): when a Lean call
found the server hung (read timeout) or gone, or at the caller's ``deadline``.
Such a search says nothing about its theorem: it did not spend its budget. Nor
does an unsolved search some of whose Lean calls the server failed (HTTP 5xx ...):
they were charged but tried nothing (:func:`gives_verdict`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from agents.alphaproof.interfaces import Evaluation, Evaluator
from agents.alphaproof.mcts import Leaf, SearchConfig, SearchTree, Target
from leangym.backends.types import Outcome, ServerTimeout, ServerUnavailable, TacticResult
from leangym.daemon_pool import DaemonPool
from leangym.proof import assemble
from leangym.session import VERIFY_CALLS, BudgetExhausted, ProofSession

__all__ = ["SearchConfig", "SearchResult", "run_search", "run_batched_search", "CUT_SHORT", "SERVER_STOPS",
           "gives_verdict"]

# Stop reasons of a search cut short before its budget was spent: by a hung or vanished server,
# or by the caller's deadline. Its unsolved nodes are not "unprovable within budget".
SERVER_STOPS = ("server_timeout", "server_unavailable")
# "lease_lost": the server no longer has this search's process (reclaimed, recycled): that theorem stops
CUT_SHORT = SERVER_STOPS + ("lease_lost", "deadline")


def gives_verdict(result: "SearchResult") -> bool:
    """Whether a finished search says anything about its theorem: solved and verified, or unsolved
    after a search that really spent its budget.

    An unsolved search says nothing when it was cut short (:data:`CUT_SHORT`), or when some of
    its Lean calls were server failures: those are charged to the budget (a session's budget is
    the same whatever the server does) but tried nothing, so the budget was not spent on proving.
    """
    return result.verified or (result.stop_reason not in CUT_SHORT and not result.server_failures)


def server_gone(results: Sequence[TacticResult]) -> str | None:
    """``"server_timeout"`` / ``"server_unavailable"`` / ``"lease_lost"`` when a Lean call failed because the
    server hung (the client's read timeout), nobody answers any more, or the server no longer has this
    search's process; None otherwise.

    A client turns these into ``SERVER_FAILURE`` results (it never raises), which the tree treats as
    transient; against a hung server every later call would wait a whole read timeout as well.
    """
    for r in results:
        if r.outcome is Outcome.SERVER_FAILURE and r.cause in _GONE:
            return _GONE[r.cause]
    return None


_GONE = {"ServerTimeout": "server_timeout", "ServerUnavailable": "server_unavailable", "LeaseLost": "lease_lost"}


@dataclass
class SearchResult:
    theorem: str
    solved: bool  # the search closed the root
    verified: bool  # ... and session.verify accepted the proof: the only success that counts
    proof: str | None  # the assembled tactic script of a solved root
    simulations: int
    lean_calls: int
    wall_s: float
    stop_reason: str  # "solved" | "exhausted" (the root is dead: every tactic the policy proposed, in
    # max_empty_evaluations tries, failed, led nowhere, or led back to a state still open above it: see
    # mcts.py's known limits) | "simulations" | "lean_calls" | "time"
    # ... or one of CUT_SHORT: "server_timeout" | "server_unavailable" | "lease_lost" | "deadline"
    targets: list[Target]  # one per expanded OR node (training data)
    verify_error: str | None = None
    # Lean calls of this search that the server failed (HTTP 5xx, a dropped connection ...): charged to the
    # budget like any call, but they tried nothing, so an unsolved search that met one has no verdict
    # (see gives_verdict)
    server_failures: int = 0
    tree: SearchTree | None = field(default=None, repr=False, compare=False)


class _Search:
    """One theorem's search inside the batch: its tree, session and counters."""

    def __init__(self, session: ProofSession, config: SearchConfig, deadline: float | None = None):
        self.session, self.config, self.deadline = session, config, deadline
        self.tree = SearchTree(session.root, config)
        self.calls_at_start = session.lean_calls
        self.failures_at_start = session.stats.server_failures
        self.started = time.monotonic()
        self.simulations = 0
        self.stop_reason: str | None = None
        self.stopped_at = 0.0
        self.server_gone: str | None = None  # set by a worker thread: the server hung or vanished
        self.cancelled = False  # the caller is unwinding (Ctrl-C ...): send nothing more

    @property
    def lean_calls(self) -> int:
        return self.session.lean_calls - self.calls_at_start

    def calls_left(self) -> int | None:
        """Lean calls tactics may still use. Both budgets, the session's (a hard cap: the harness's)
        and ``max_lean_calls``, keep what the final check of a proof costs (``VERIFY_CALLS``: the
        whole script in tactic mode, then the command)."""
        session_left = self.session.remaining_calls()
        check = VERIFY_CALLS if self.config.self_check else 0
        caps = [c for c in (None if session_left is None else session_left - check,
                            None if self.config.max_lean_calls is None
                            else self.config.max_lean_calls - check - self.lean_calls) if c is not None]
        return max(0, min(caps)) if caps else None

    def out_of_time(self) -> str | None:
        """``"deadline"`` (the caller's) or ``"time"`` (``max_seconds``) once passed, else None."""
        now = time.monotonic()
        if self.deadline is not None and now >= self.deadline:
            return "deadline"
        if self.config.max_seconds is not None and now - self.started > self.config.max_seconds:
            return "time"
        return None

    def stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason, self.stopped_at = reason, time.monotonic()

    def check_budgets(self) -> None:
        cfg, root, late = self.config, self.tree.root, self.out_of_time()
        if root.steps is not None:
            self.stop("solved")
        elif self.server_gone:  # (before "exhausted": tactics the server never answered leave a node dead)
            self.stop(self.server_gone)
        elif root.dead:
            self.stop("exhausted")
        elif late == "deadline":
            self.stop("deadline")
        elif self.simulations >= cfg.num_simulations:
            self.stop("simulations")
        elif self.calls_left() == 0:
            self.stop("lean_calls")
        elif late:
            self.stop("time")

    def select_leaves(self) -> list[Leaf]:
        leaves = []
        for _ in range(min(self.config.leaves_per_round, self.config.num_simulations - self.simulations)):
            leaf = self.tree.select()
            if leaf is None:  # ran into a leaf of this round: the tree is narrow here, stop early
                break
            leaves.append(leaf)
        return leaves

    def apply(self, jobs: list[tuple[Leaf, list[tuple[str, float]]]]):
        """Lean work of one round (runs in a worker thread): the tactics sent and the results per leaf.

        ``None`` results: the budget ran out before this leaf's tactics could be sent, or the
        server was found hung or gone (no further leaf is sent: each would wait as long).
        """
        out = []
        for leaf, tactics in jobs:
            # time is checked per leaf too: one round's Lean work must not run far past a time limit
            if self.cancelled or self.server_gone or self.out_of_time():
                out.append(([], None))
                continue
            left = self.calls_left()
            sent = tactics if left is None else tactics[:left]
            if len(sent) < len(tactics):
                # The budget cut this node's tactics: it is not exhausted (the rest were never tried),
                # so running out of calls here is "lean_calls", not a dead end.
                leaf.node.exhausted = False
            if tactics and not sent:
                out.append((sent, None))
                continue
            try:
                results = self.session.apply_many(leaf.node.state, [t for t, _ in sent]) if sent else []
                self.server_gone = server_gone(results)
            except BudgetExhausted:
                results = None
            except (ServerTimeout, ServerUnavailable) as e:  # a backend that raises them after all
                self.server_gone = "server_timeout" if isinstance(e, ServerTimeout) else "server_unavailable"
                results = None
            except Exception:  # noqa: BLE001 -- a backend broke its no-raise contract
                results = [self._apply_alone(leaf.node.state, t) for t, _ in sent]
            out.append((sent, results))
        return out

    def _apply_alone(self, state, tactic: str) -> TacticResult:
        """One tactic by itself, after a batch raised: a tactic that crashes the backend counts as
        rejected (so it is cached and never sent again), and the other B - 1 searches go on.

        The batch that raised was charged whole, though some of it may never have reached Lean;
        these retries are charged too, and stop where ``max_lean_calls`` does (what was not
        retried counts as a transient failure, so it may be proposed again).
        """
        if self.calls_left() == 0:
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), "Lean-call budget spent")
        try:
            return self.session.apply(state, tactic)
        except BudgetExhausted as e:
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), str(e))
        except Exception as e:  # noqa: BLE001
            return TacticResult(tactic, Outcome.REJECTED, (), f"backend raised {e!r}")

    def _verify(self, proof: str) -> tuple[bool, str | None]:
        try:
            check = self.session.verify(proof)  # one Lean call of the session's budget
        except BudgetExhausted as e:  # the root was solved with the budget's last call
            return False, f"no Lean call left for the final check ({e}); the proof was not checked"
        if check.server_failure:  # no verdict on the proof: a search the server cut short
            self.stop_reason = "server_unavailable"
        if check.ok and not check.isolated:  # a verdict rests only on a process no other session touched
            return False, "the check ran on a process other sessions had used: no verdict (open each on a fresh one)"
        return check.ok, check.error

    def finish(self) -> SearchResult:
        """The final check of a solved root (runs in a worker thread)."""
        tree, proof, verified, error = self.tree, None, False, None
        checked_at = time.monotonic()
        if tree.root.steps is not None:
            try:
                proof_tree = tree.proof()
                proof = assemble(proof_tree)
            except RecursionError:  # proofs are built recursively: one of ~1000 nested steps is too deep
                error = f"a proof of {tree.root.steps} tactics is nested too deeply to assemble; it was not checked"
            else:
                if self.config.self_check:  # (else the caller checks it: verified stays False)
                    verified, error = self._verify(proof)  # (the script: the tree would be assembled again, deeper)
        # own time only: until this search stopped, plus its final check (not the batch's tail)
        wall_s = (self.stopped_at or checked_at) - self.started + time.monotonic() - checked_at
        return SearchResult(
            theorem=self.session.theorem.name, solved=tree.root.steps is not None, verified=verified,
            proof=proof, simulations=self.simulations, lean_calls=self.lean_calls,
            wall_s=wall_s, stop_reason=self.stop_reason or "simulations",
            targets=tree.targets(), verify_error=error, tree=tree,
            server_failures=self.session.stats.server_failures - self.failures_at_start)


class _Inline:
    """``map`` in the calling thread, for in-process Lean."""

    def map(self, fn, items):
        return [fn(x) for x in items]

    def close(self) -> None:
        pass


def search_round(searches: list[_Search], evaluator: Evaluator, pool: DaemonPool | _Inline) -> int:
    """One round over the active searches: select, evaluate (one call), Lean (concurrent), back up.

    Returns the number of simulations completed.
    """
    picked = [(s, leaf) for s in searches for leaf in s.select_leaves()]
    if not picked:
        raise RuntimeError("no leaf selected in an active search: nothing should be pending between rounds")
    # each leaf asks for its own k: one widened node must not make every state of the batch sample more
    evals: list[Evaluation] = list(evaluator.evaluate([leaf.node.text for _, leaf in picked],
                                                      [leaf.ask for _, leaf in picked]))
    if len(evals) != len(picked):  # a leaf left unanswered would keep its virtual loss for ever
        raise ValueError(f"the evaluator returned {len(evals)} evaluations for {len(picked)} states: "
                         "it must return one per state, in order")
    jobs: dict[_Search, list] = {}
    for (s, leaf), ev in zip(picked, evals):
        jobs.setdefault(s, []).append((leaf, s.tree.new_tactics(leaf, ev)))
    answer_of = {s: iter(a) for s, a in zip(jobs, pool.map(lambda s: s.apply(jobs[s]), jobs))}
    completed = 0
    for (s, leaf), ev in zip(picked, evals):
        sent, results = next(answer_of[s])
        if results is None:  # out of Lean calls or time, or no server: drop the simulation, the search ends
            s.tree.abandon(leaf)
            s.stop(s.server_gone or s.out_of_time() or ("time" if s.calls_left() != 0 else "lean_calls"))
            continue
        value = s.tree.integrate(leaf, ev, sent, results)
        s.tree.backup(leaf, value)
        s.simulations += 1
        completed += 1
    for s in searches:
        s.check_budgets()
    return completed


def run_batched_search(sessions: Sequence[ProofSession], evaluator: Evaluator,
                       config: SearchConfig = SearchConfig(), progress: Any = None,
                       deadline: float | None = None) -> list[SearchResult]:
    """Search a proof for each session's theorem, all at once; results in input order.

    ``progress``: anything with ``update(n)`` (a tqdm bar), told the simulations of each round.
    ``deadline``: a ``time.monotonic()`` time after which no new round starts (stop reason
    "deadline"), e.g. a training run's time limit.
    """
    searches = [_Search(s, config, deadline) for s in sessions]
    threads = len(searches) if config.lean_threads is None else min(config.lean_threads, len(searches))
    # (a LeanProcess written before ``in_process`` existed counts as a server: threads, as before)
    if all(getattr(s.process, "in_process", False) for s in sessions):
        threads = 0
    pool = DaemonPool(threads, name="lean-search") if threads else _Inline()
    try:
        for s in searches:
            s.check_budgets()
        while active := [s for s in searches if s.stop_reason is None]:
            done = search_round(active, evaluator, pool)
            if progress is not None:
                progress.update(done)
        return pool.map(_Search.finish, searches)
    except BaseException:
        for s in searches:  # a thread still waiting on Lean sends nothing after its current call
            s.cancelled = True
        raise
    finally:
        pool.close()


def run_search(session: ProofSession, evaluator: Evaluator, config: SearchConfig = SearchConfig(),
               progress: Any = None) -> SearchResult:
    """A single proof search: the batched search with B = 1."""
    return run_batched_search([session], evaluator, config, progress)[0]
