"""``LocalProcess``: the :class:`leangym.backends.types.LeanProcess` seam over an in-process SimProcess.

No HTTP, no threads: every call goes straight to a :class:`SimProcess` and its
reply is converted by the same ``parse_*`` functions the HTTP client uses, so
both backends produce identical values.
"""
from __future__ import annotations

import time
from typing import Sequence

from leangym.backends.types import (CommandResult, Outcome, ProofState, ServerError, ServerIdentity, TacticResult,
                                    parse_command, parse_start, parse_tactic_reply)
from leangym.sim.process import SimProcess


class LocalProcess:
    """One simulated Lean process used in-process (implements ``LeanProcess``)."""

    in_process = True

    def __init__(self, factorized: bool = False, process_id: int = 0):
        self.process_id = process_id
        self.factorized = factorized
        self.sim = SimProcess(factorized=factorized)
        self._closed = False

    def start_proof(self, theorem_with_sorry: str) -> ProofState:
        return parse_start(self.process_id, self.sim.proof_from_sorry(theorem_with_sorry))

    def apply_tactic(self, state: ProofState, tactic: str, timeout_ms: int = 1000) -> TacticResult:
        t0 = time.perf_counter()
        try:
            reply = self.sim.try_apply_tactic(state.proof_state_id, tactic, timeout_ms)
        except KeyError as e:  # what the server reports as HTTP 500
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), f"unknown proof state: {e}", time.perf_counter() - t0)
        return parse_tactic_reply(self.process_id, tactic, reply, time.perf_counter() - t0)

    def apply_tactics(self, state: ProofState, tactics: Sequence[str], timeout_ms: int = 1000) -> list[TacticResult]:
        return [self.apply_tactic(state, t, timeout_ms) for t in tactics]

    def run_command(self, source: str) -> CommandResult:
        try:
            return parse_command(self.sim.command(source))
        except ServerError:
            raise
        except Exception as e:  # the kernel must never take the caller down
            raise ServerError(f"simulated kernel failed: {e!r}") from e

    def identity(self) -> ServerIdentity:
        generation = "factorized" if self.factorized else "single-branch"
        return ServerIdentity("inprocess://leangym.sim", generation, {"backend": "leangym.sim"})

    def close(self) -> None:
        if not self._closed:
            self._closed = True
        self.sim.reset()
