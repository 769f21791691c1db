"""The AND-OR MCTS on scripted goal graphs: a Lean whose goals are names and whose tactics are
edges of a graph, so that transpositions, dead ends and widening happen exactly where a test puts
them (found by an audit that fuzzed ~11,000 searches on random graphs against a recomputation)."""
from __future__ import annotations

import re
from collections import Counter

import pytest

from agents.alphaproof.interfaces import Evaluation, per_state
from agents.alphaproof.mcts import SearchConfig
from agents.alphaproof.search import run_search
from leangym.backends.types import CommandResult, Goal, Outcome, ProofState, ReplMessage, ServerIdentity, TacticResult
from leangym.session import ProofSession


class GraphLean:
    """``graph[goal][tactic] = [goal, ...]`` ([] closes the goal); any other tactic is rejected.
    One branch per open goal (factorized). ``sent`` counts the (state text, tactic) pairs sent."""

    process_id, in_process = 7, True

    def __init__(self, graph):
        self.graph, self.states, self.sent = graph, {}, Counter()

    def _state(self, goals):
        self.states[len(self.states)] = tuple(goals)
        return ProofState(self.process_id, len(self.states) - 1, tuple(goals))

    def start_proof(self, source):
        return self._state([Goal((), re.search(r":\s*(\w+)\s*:= by", source)[1])])

    def apply_tactic(self, state, tactic, timeout_ms=1000):
        goals = self.states[state.proof_state_id]
        self.sent[(state.text, tactic)] += 1
        new = self.graph.get(goals[0].target, {}).get(tactic)
        if new is None:
            return TacticResult(tactic, Outcome.REJECTED, (), "no such edge")
        left = [Goal((), g) for g in new] + list(goals[1:])
        return (TacticResult(tactic, Outcome.PROGRESS, tuple(self._state([g]) for g in left)) if left
                else TacticResult(tactic, Outcome.PROVED))

    def apply_tactics(self, state, tactics, timeout_ms=1000):
        return [self.apply_tactic(state, t, timeout_ms) for t in tactics]

    def run_command(self, source):  # the final check: replay the script on the graph
        head, body = source.split(":= by\n")
        goals = [re.search(r":\s*(\w+)\s*$", head)[1]]
        for line in body.split("\n#print")[0].splitlines():
            tactic = line.strip().removeprefix("· ").strip()
            new = self.graph.get(goals[0], {}).get(tactic) if goals and tactic else None
            if tactic and new is None:
                return CommandResult((ReplMessage("error", f"{tactic!r} failed"),))
            goals = (new or []) + goals[1:] if tactic else goals
        if goals:
            return CommandResult((ReplMessage("error", "unsolved goals"),))
        name = source[source.index("#print axioms "):].split()[2]
        return CommandResult((ReplMessage("info", f"'{name}' does not depend on any axioms",
                                          source[:source.index("#print")].count("\n") + 1, 0),))

    def identity(self):
        return ServerIdentity("graph://", "factorized")

    def close(self):
        pass


class TableEval:
    """``table[state text] = ([(tactic, log-prior), ...], value)``; answers the first k of them."""

    def __init__(self, table):
        self.table = table

    def evaluate(self, states, k):
        out = []
        for s, n in zip(states, per_state(k, len(states))):
            tactics, value = self.table.get(s, ([], 0.5))
            out.append(Evaluation(tuple(t for t, _ in tactics[:n]), tuple(lp for _, lp in tactics[:n]), value))
        return out


def test_a_node_whose_new_tactics_are_on_their_way_is_not_declared_dead():
    """R -a-> X, R -b-> Y, X -c-> K, Y -d-> K (K a dead end); widening X finds e -> X2 -z-> proved.
    X is widened to max_tactics (so `exhausted`) in the round in which Y's answer kills K, X's
    last live edge: X was declared dead before its own new tactics came back, and the root with it."""
    graph = {"R": {"a": ["X"], "b": ["Y"]}, "X": {"c": ["K"], "e": ["X2"]}, "Y": {"d": ["K"]}, "X2": {"z": []}}
    table = {"⊢ R": ([("b", 0.0), ("a", 0.0)] + [(f"r{i}", -1.0) for i in range(4)], 0.5),
             "⊢ X": ([("c", 0.0), ("e", -0.5)] + [(f"x{i}", -1.0) for i in range(4)], 0.5),
             "⊢ Y": ([("d", 0.0)] + [(f"y{i}", -1.0) for i in range(4)], 0.9),
             "⊢ X2": ([("z", 0.0)], 0.5)}

    class FirstAnswerShort(TableEval):  # X's first answer holds one tactic, as a sampling policy's may
        x_seen = False

        def evaluate(self, states, k):
            out = super().evaluate(states, k)
            for i, s in enumerate(states):
                if s == "⊢ X" and not self.x_seen:
                    self.x_seen = True
                    out[i] = Evaluation(out[i].tactics[:1], out[i].log_priors[:1], out[i].value)
            return out

    cfg = SearchConfig(num_simulations=50, max_lean_calls=None, num_tactics=6, widen_tactics=5, max_tactics=6,
                       max_empty_evaluations=1, widen_c=0.5, leaves_per_round=2)
    res = run_search(ProofSession(GraphLean(graph), "theorem t : R := by sorry"), FirstAnswerShort(table), cfg)
    assert res.stop_reason == "solved" and res.verified and res.proof.split("\n") == ["a", "e", "z"]
    x = res.tree.table["⊢ X"]
    assert not x.dead and x.steps == 2


def test_tactics_are_compared_and_recorded_as_lean_runs_them():
    """Two spellings of one tactic are one tactic, sent once; the proof holds the text Lean checked
    (an indented proposal, recorded as proposed, made the assembled proof fail the final check)."""
    graph = {"R": {"a": ["X"]}, "X": {"z": []}}
    lean = GraphLean(graph)
    table = {"⊢ R": ([("\n  a", 0.0), ("a ", -0.1), ("a", -0.2)], 0.5), "⊢ X": ([("z\r\n", 0.0)], 0.5)}
    res = run_search(ProofSession(lean, "theorem t : R := by sorry"), TableEval(table),
                     SearchConfig(num_simulations=8, num_tactics=3, max_lean_calls=None))
    assert res.verified and res.proof == "a\nz"
    assert lean.sent[("⊢ R", "a")] == 1 and max(lean.sent.values()) == 1
    assert res.tree.root.tactics == ["a"]


def test_a_new_leaf_asks_for_at_most_max_tactics_and_zero_limits_are_refused():
    lean = GraphLean({"R": {}})
    table = {"⊢ R": ([(f"r{i}", -float(i)) for i in range(8)], 0.5)}
    run_search(ProofSession(lean, "theorem t : R := by sorry"), TableEval(table),
               SearchConfig(num_simulations=1, num_tactics=8, max_tactics=4, max_lean_calls=None))
    assert sum(lean.sent.values()) == 4
    for field in ("leaves_per_round", "num_tactics", "widen_tactics", "max_tactics", "max_empty_evaluations"):
        with pytest.raises(ValueError, match=f"SearchConfig.{field} must be at least 1"):
            SearchConfig(**{field: 0})
