"""One simulated Lean REPL process, answering with LeanTree protocol bodies.

:class:`SimProcess` is what the simulated LeanTree server (``leangym.sim.server``)
keeps per pool slot and what :class:`leangym.sim.local.LocalProcess` wraps
in-process. Its replies are exactly the JSON bodies of the protocol
(see :mod:`leangym.backends.leantree`): ``command`` returns the Lean REPL
response, ``proof_from_sorry`` and ``try_apply_tactic`` the ``value``/``error``
envelopes. Proof states are immutable and numbered per process.
"""
from __future__ import annotations

import json
import time

from leangym.sim.kernel import Kernel
from leangym.sim.tokens import LeanSyntaxError
from leangym.sim.tactic_syntax import parse_tactic_block
from leangym.sim.tactics import Engine, State, TacticError, Timeout

TIMEOUT_TEXT = "Tactic application timed out."
STEPS_PER_MS = 100  # deterministic step budget per millisecond of the caller's timeout
MIN_STEPS = 2_000


def _error_reply(msg: str, span) -> dict:
    l1, c1, l2, c2 = span if span else (1, 0, 1, 0)
    m = {"severity": "error", "pos": {"line": l1, "column": c1}, "endPos": {"line": l2, "column": c2}, "data": msg}
    return {"error": "REPL returned error messages: " + json.dumps([m], ensure_ascii=False)}


def _message(text: str) -> dict:
    return {"severity": "error", "pos": {"line": 1, "column": 0}, "endPos": None, "data": text}


class SimProcess:
    """One simulated Lean REPL process, answering with protocol-shaped dicts (exactly the JSON bodies of the LeanTree protocol)."""

    def __init__(self, factorized: bool = False):
        self.factorized = factorized
        self.kernel = Kernel()
        self._states: list[tuple] = []  # proof_state_id -> goals (tuple of Goal)
        self._envs: list[dict] = []  # proof_state_id -> the environment its tactics see
        self._env = 0

    # ----------------------------------------------------------------- lifecycle
    def reset(self) -> None:
        """Roll back to the post-import state: forget proof states and declarations."""
        self.kernel.reset()
        self._states, self._envs = [], []
        self._env = 0

    def _register(self, goals: tuple, env: dict) -> int:
        self._states.append(goals)
        self._envs.append(env)
        return len(self._states) - 1

    def goals_of(self, proof_state_id: int) -> tuple:
        """The goals (``leangym.sim.goals.Goal``) of a state; KeyError if unknown."""
        if not isinstance(proof_state_id, int) or not 0 <= proof_state_id < len(self._states):
            raise KeyError(f"unknown proof state id {proof_state_id!r}")
        return self._states[proof_state_id]

    # ----------------------------------------------------------------- endpoints
    def command(self, source: str) -> dict:
        """``/command``: the Lean REPL response ``{"env", "messages", "sorries"}``."""
        try:
            messages, sorries = self.kernel.run_command(source)
        except RecursionError:
            messages, sorries = [_message("maximum recursion depth has been reached")], []
        except Exception as e:  # a kernel bug is an error in the checked source, never an accepted proof
            messages, sorries = [_message(f"(sim) internal error: {type(e).__name__}: {e}")], []
        out_sorries = []
        for goal, (l1, c1, l2, c2), env in sorries:
            out_sorries.append({"proofState": self._register((goal,), env), "pos": {"line": l1, "column": c1},
                                "endPos": {"line": l2, "column": c2}, "goal": goal.text()})
        env, self._env = self._env, self._env + 1
        return {"env": env, "messages": messages, "sorries": out_sorries}

    def proof_from_sorry(self, theorem_with_sorry: str) -> dict:
        """``/proof_from_sorry``: the goal at the first ``sorry`` of the statement."""
        # Declared, as by LeanTree's REPL (each command runs in the environment the last one left):
        # the statement (with its sorry) and its header stay on the process until it is returned.
        # A start that Lean rejects leaves the environment as it was (LeanTree raises before
        # taking the new one).
        kept = dict(self.kernel.env)
        try:
            messages, sorries = self.kernel.run_command(theorem_with_sorry)
            errors = [m for m in messages if m["severity"] == "error"]
            if errors:
                self.kernel.env = kept
                return {"error": "\n".join(f"{m['pos']['line']}:{m['pos']['column']}: {m['data']}" for m in errors)}
            if not sorries:
                return {"error": "No sorries found in theorem"}
            goal, _, env = sorries[0]  # (the header's declarations are in env: its tactics may cite them)
            goals = [goal.to_json()]
        except RecursionError:
            self.kernel.env = kept
            return {"error": "maximum recursion depth has been reached"}
        except Exception as e:  # a kernel bug rejects the theorem (HTTP 200), never fails the server (500)
            self.kernel.env = kept
            return {"error": f"(sim) internal error: {type(e).__name__}: {e}"}
        return {"value": {"proof_state_id": self._register((goal,), env), "goals": goals}}

    def try_apply_tactic(self, proof_state_id: int, tactic: str, timeout_ms: int = 1000) -> dict:
        """``/try_apply_tactic``: ``{"value": [BRANCH, ...]}`` or ``{"error": ...}``; KeyError for an unknown id."""
        goals, env = self.goals_of(proof_state_id), self._envs[proof_state_id]
        try:
            seq = parse_tactic_block(tactic)
        except LeanSyntaxError as e:
            return _error_reply(e.msg, (e.line, e.col, e.line, e.col))
        except RecursionError:
            return _error_reply("maximum recursion depth has been reached", None)
        except Exception as e:  # a parser bug rejects the tactic (HTTP 200), never fails the server (500)
            return _error_reply(f"(sim) internal error: {type(e).__name__}: {e}", None)
        budget = max(MIN_STEPS, int(timeout_ms * STEPS_PER_MS))
        # wall clock only as a safety net (generous), the step budget decides deterministically
        deadline = time.monotonic() + max(timeout_ms, 1) / 1000.0 * 2 + 0.05
        engine = Engine(env, tactic, max_steps=budget, deadline=deadline)
        try:
            st = engine.run(seq, State(goals))
            goals_json = [g.to_json() for g in st.goals]  # rendered here: a goal that cannot be is an error too
        except TacticError as e:
            return _error_reply(e.msg, e.span)
        except Timeout:
            return {"error": TIMEOUT_TEXT}
        except RecursionError:
            return _error_reply("maximum recursion depth has been reached", seq[1])
        except Exception as e:  # a kernel bug must reject the tactic, never crash a training run
            return _error_reply(f"(sim) internal error: {type(e).__name__}: {e}", None)
        return {"value": self._branches(st.goals, goals_json, env)}

    def apply_tactic(self, proof_state_id: int, tactic: str, timeout_ms: int = 1000) -> dict:
        """``/apply_tactic`` (no error wrapping): ``{"proof_state_id", "goals"}``; raises RuntimeError on failure."""
        reply = self.try_apply_tactic(proof_state_id, tactic, timeout_ms)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        goals = tuple(g for b in reply["value"] for g in self._states[b["proof_state_id"]])
        if not self.factorized:
            return reply["value"][0]
        env = self._envs[proof_state_id]
        return {"proof_state_id": self._register(goals, env), "goals": [g.to_json() for g in goals]}

    def _branches(self, goals: tuple, goals_json: list, env: dict) -> list:
        """The branches of ``goals`` (rendered: ``goals_json``)."""
        if not self.factorized:
            return [{"proof_state_id": self._register(goals, env), "goals": goals_json}]
        # Factorized servers: one branch per independent goal. Goals of this fragment never
        # share metavariables, so every goal is its own branch; `[]` when all are closed.
        return [{"proof_state_id": self._register((g,), env), "goals": [j]} for g, j in zip(goals, goals_json)]
