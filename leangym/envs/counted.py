"""The env's leased process as agents can reach it: Lean calls only, the ones that change it counted.

A command (``run_command``) or a proof start (``start_proof``, whose text may hold commands
before the theorem) can declare things that stay on the process: a lemma a later proof cites,
a macro, an elaborator that rewrites ``#print axioms``. The env checks a proof on a process
that nothing but its own sessions touched since, so it counts every such call, whoever makes
it: ``env.process``, any session's ``session.process``, a session kept from an earlier episode.
Nothing else of the lease shows (its HTTP client, the simulator behind it): no call can
bypass the count.
"""
from __future__ import annotations

from typing import Sequence

from leangym.backends.types import CommandResult, LeanProcess, ProofState, ServerIdentity, TacticResult


class CountedProcess:
    """A :class:`~leangym.backends.types.LeanProcess` over ``process``; ``changes`` counts the calls
    that may have declared something on it."""

    def __init__(self, process: LeanProcess) -> None:
        self._process = process
        self.changes = 0

    @property
    def process_id(self) -> int:
        return self._process.process_id

    @property
    def in_process(self) -> bool:
        return self._process.in_process

    def start_proof(self, theorem_with_sorry: str) -> ProofState:
        self.changes += 1
        return self._process.start_proof(theorem_with_sorry)

    def run_command(self, source: str) -> CommandResult:
        self.changes += 1
        return self._process.run_command(source)

    def apply_tactic(self, state: ProofState, tactic: str, timeout_ms: int = 1000) -> TacticResult:
        return self._process.apply_tactic(state, tactic, timeout_ms)

    def apply_tactics(self, state: ProofState, tactics: Sequence[str], timeout_ms: int = 1000) -> list[TacticResult]:
        return self._process.apply_tactics(state, tactics, timeout_ms)

    def identity(self) -> ServerIdentity:
        return self._process.identity()

    def close(self) -> None:
        self._process.close()

    def __repr__(self) -> str:
        return f"CountedProcess({self._process!r}, changes={self.changes})"
