"""The search API: one proof attempt on one leased Lean process.

States are immutable, so a search may apply any tactic to any state it has
seen, in any order, and several tactics to one state in one call
(:meth:`ProofSession.apply_many`). This
is what MCTS and best-first search are built on; the Gymnasium env is a thin
linear walk over the same object (env -> session -> Lean process, one way).

Every tactic passes the :class:`~leangym.soundness.SoundnessPolicy` before it
is sent; a banned one is an ordinary ``REJECTED`` result that costs no Lean
call. :func:`leangym.soundness.verify` is the only way to call a proof correct (a prover calls it as
:meth:`ProofSession.verify`, charged to its budget: two calls, tactic mode then the command; the env's reward and the benchmark, uncharged,
on fresh leases).

``session.process`` is the leased process behind the gate (:class:`MeteredProcess`): tactics go
through the same policy, budget and statistics as :meth:`ProofSession.apply_many`; commands and
proof starts are refused (:class:`RawAccessRefused`). Unfiltered access is an explicit opt-in,
``ProofSession(..., allow_raw=True)`` then :meth:`ProofSession.raw_process`, and its use makes the
session unverifiable (``verify`` says no) and marks the process (:func:`process_record`), so that
whoever holds it (the env) gives it back rather than rewarding anything checked there.
The session's ``theorem``, ``policy``, ``budget`` and ``stats`` are read-only and handed out as copies.
:meth:`ProofSession.end` refuses every later call (the benchmark ends an abandoned attempt's session,
then gives its process back).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

from leangym.backends.types import CommandResult, LeanProcess, Outcome, ProofState, TacticResult
from leangym.proof import LinearWalk, ProofTree, script_of
from leangym.soundness import SoundnessPolicy, Verification, normalise_tactic, verify
from leangym.theorem import Theorem


# Lean calls one session.verify costs: the tactic-mode pass of the whole script, then the command.
VERIFY_CALLS = 2


class BudgetExhausted(RuntimeError):
    """The session's Lean-call or wall-time budget is spent."""


class RawAccessRefused(PermissionError):
    """A command or proof start through the gated ``session.process``/``env.process``, or
    ``raw_process()`` on a session or env not built with ``allow_raw=True``."""


@dataclass
class ProcessRecord:
    """What sessions did to one Lean process object (the change-tracking the env reads): how many
    sessions started a proof on it, and whether anyone took unfiltered access to it."""

    sessions: int = 0
    raw: bool = False


_RECORDS: "weakref.WeakKeyDictionary[Any, ProcessRecord]" = weakref.WeakKeyDictionary()


def process_record(process: Any) -> ProcessRecord | None:
    """The :class:`ProcessRecord` of ``process`` (None: no session has used it, or it takes no weak reference)."""
    try:
        return _RECORDS.get(process)
    except TypeError:
        return None


def _record_for(process: Any) -> ProcessRecord | None:
    try:
        return _RECORDS.setdefault(process, ProcessRecord())
    except TypeError:  # a process object that takes no weak reference: its history is unknown
        return None


@dataclass(frozen=True)
class SessionStats:
    """What a session spent and met. The budget and the benchmark's records are these counters, so a
    prover must not be able to set them: the session counts on its own copy and hands out snapshots."""

    lean_calls: int = 0
    rejected: int = 0  # by Lean or by the soundness policy
    policy_rejected: int = 0  # by the soundness policy alone (no Lean call)
    timeouts: int = 0
    server_failures: int = 0
    latencies_s: list[float] = field(default_factory=list)

    def _add(self, **counts: int) -> None:
        for name, n in counts.items():
            object.__setattr__(self, name, getattr(self, name) + n)

    def record(self, result: TacticResult) -> None:
        self._add(rejected=result.outcome is Outcome.REJECTED, timeouts=result.outcome is Outcome.TIMEOUT,
                  server_failures=result.outcome is Outcome.SERVER_FAILURE)


@dataclass(frozen=True)
class Budget:
    max_lean_calls: int | None = None
    max_seconds: float | None = None


class _CallGate:
    """Counts a session's Lean calls under way; once ended, refuses new ones. Shared by shallow copies
    of the session; a pickle or deep copy gets a gate of its own (still ended, if this one was)."""

    def __init__(self, ended: str | None = None) -> None:
        self._cond, self._in_flight, self._ended = threading.Condition(), 0, ended

    def __reduce__(self):
        return _CallGate, (self._ended,)

    @contextlib.contextmanager
    def call(self):
        with self._cond:
            if self._ended:
                raise BudgetExhausted(f"this session was ended: {self._ended}")
            self._in_flight += 1
        try:
            yield
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def end(self, why: str, timeout: float | None) -> bool:
        with self._cond:
            self._ended = self._ended or why
            return self._cond.wait_for(lambda: self._in_flight == 0, timeout)


class ProofSession:
    """Start proving ``theorem`` on ``process``; raises LeanError / ServerError if it cannot start.

    ``allow_raw``: :meth:`raw_process` may hand out the unfiltered process (an opt-in for trusted
    code; using it makes the session unverifiable). The benchmark harness never sets it.
    """

    def __init__(
        self,
        process: LeanProcess,
        theorem: Theorem | str,
        *,
        policy: SoundnessPolicy | None = None,
        timeout_ms: int = 1000,
        budget: Budget | None = None,
        allow_raw: bool = False,
    ) -> None:
        self._lean = process  # the session's own calls; others go through the meter
        self.process = MeteredProcess(process, self)
        # Private copies, read through properties that hand out copies: a prover holding the session
        # can neither point the final check at another statement or policy nor edit these in place
        # (frozen dataclasses still yield to object.__setattr__).
        self._theorem = copy.deepcopy(theorem) if isinstance(theorem, Theorem) else Theorem(theorem)
        self._policy = copy.copy(policy) if policy is not None else SoundnessPolicy()
        # read-only (properties): what the budget and the records rest on is not the prover's to set
        self._timeout_ms = timeout_ms
        self._budget = dataclasses.replace(budget) if budget is not None else Budget()  # (the caller's stays theirs)
        self._stats = SessionStats()
        self._started_at = time.monotonic()
        self._gate = _CallGate()  # (shared by shallow copies of the session: end() ends them all)
        self._allow_raw, self._raw_used = bool(allow_raw), False
        record = self._record = _record_for(process)
        # isolated: nothing but this session has started a proof on this process object (its own checks
        # then see nothing an earlier episode, check or agent put there; see verify)
        self._first_on_process = record is not None and record.sessions == 0 and not record.raw
        if record is not None:
            record.sessions += 1
        # under a name of its own (Theorem.start_source): a second start of `t` on a process that kept
        # the first (LeanTree's keep what they ran) would be "already declared"
        self.root: ProofState = process.start_proof(self._theorem.start_source())

    @property
    def theorem(self) -> Theorem:
        """The statement being proved (a copy, ``extra`` included; proofs are checked against the session's own)."""
        return copy.deepcopy(self._theorem)

    @property
    def policy(self) -> SoundnessPolicy:
        """The soundness policy every tactic and the final check pass (a copy, as for ``theorem``)."""
        return copy.copy(self._policy)

    @property
    def budget(self) -> Budget:
        """The budget (a copy: the session holds to its own, whatever a holder does to this one)."""
        return dataclasses.replace(self._budget)

    @property
    def lean_calls(self) -> int:
        """Lean calls spent so far (``stats.lean_calls`` without copying the rest)."""
        return self._stats.lean_calls

    @property
    def stats(self) -> SessionStats:
        """What the session has spent so far (a snapshot: the session counts on its own copy)."""
        return dataclasses.replace(self._stats, latencies_s=list(self._stats.latencies_s))

    @property
    def timeout_ms(self) -> int:
        """Lean's time limit per tactic, whatever a caller of ``session.process`` asks for."""
        return self._timeout_ms

    @property
    def started_at(self) -> float:
        """When the time budget started (``time.monotonic()``); read-only, as the budget rests on it."""
        return self._started_at

    # ------------------------------------------------------------------ budget
    def remaining_calls(self) -> int | None:
        cap = self._budget.max_lean_calls
        return None if cap is None else max(0, cap - self._stats.lean_calls)

    def affordable(self, tactics: Sequence[str]) -> list[str]:
        """The first of ``tactics`` the Lean-call budget still pays for (:meth:`apply_many` is
        all-or-nothing), and at least one, so that sending them on a spent budget raises
        :class:`BudgetExhausted`."""
        left = self.remaining_calls()
        return list(tactics) if left is None else list(tactics)[:max(left, 1)]

    def _charge(self, n: int) -> None:
        left = self.remaining_calls()
        if left is not None and left < n:
            raise BudgetExhausted(f"Lean-call budget of {self._budget.max_lean_calls} spent")
        cap = self._budget.max_seconds
        if cap is not None and time.monotonic() - self._started_at > cap:
            raise BudgetExhausted(f"time budget of {cap:.1f}s spent")
        self._stats._add(lean_calls=n)

    # ------------------------------------------------------------------ tactics
    def apply(self, state: ProofState, tactic: str) -> TacticResult:
        """Apply ``tactic`` to the first goal of ``state``. Never raises for Lean or server errors."""
        return self.apply_many(state, [tactic])[0]

    def apply_many(self, state: ProofState, tactics: Sequence[str]) -> list[TacticResult]:
        """Apply each tactic to ``state`` independently; results in input order.

        Raises :class:`BudgetExhausted` (before any call) if the budget cannot pay for them all, and
        ValueError for a state another Lean process made (its id means nothing to this one). Server
        processes have distinct ids; in-process ones share id 0 unless given their own
        (``LocalProcess(process_id=...)``), so this check cannot tell them apart.
        """
        if type(state) is not ProofState:  # a prover's subclass: its code must not run inside the Lean call
            state = ProofState(int(state.process_id), int(state.proof_state_id), tuple(state.goals))
        owner = getattr(self._lean, "process_id", None)
        if owner is not None and state.process_id != owner:
            # Ids are only meaningful with the process that made them (the protocol), and die with it:
            # sent here, the id would silently name some unrelated state of this process.
            raise ValueError(f"this proof state was made by Lean process {state.process_id}, not by this session's "
                             f"process {owner}; states die with their process (a reset may have given it back): "
                             "apply tactics to states of the current episode")
        tactics = [normalise_tactic(t) for t in tactics]  # what is sent is what a proof records
        results: list[TacticResult | None] = [None] * len(tactics)
        to_send: list[int] = []
        for i, tactic in enumerate(tactics):
            why = self._policy.check_tactic(tactic)
            if why is None:
                to_send.append(i)
            else:
                results[i] = TacticResult(tactic, Outcome.REJECTED, (), why)
                self._stats._add(policy_rejected=1)
        with self._lean_call():
            self._charge(len(to_send))
            if to_send:
                sent = [tactics[i] for i in to_send]
                replies = (self._lean.apply_tactics(state, sent, self.timeout_ms) if len(sent) > 1
                           else [self._lean.apply_tactic(state, sent[0], self.timeout_ms)])
                for i, reply in zip(to_send, replies):
                    results[i] = reply
                    self._stats.latencies_s.append(reply.elapsed_s)
        for r in results:
            self._stats.record(r)
        return results  # type: ignore[return-value]

    def step_walk(self, walk: LinearWalk, tactic: str) -> TacticResult:
        """Apply ``tactic`` to the first open branch of ``walk`` (a linear proof, as Lean runs a ``by``
        block) and advance it if the tactic ran: the env's ``step`` and linear provers use this."""
        result = self.apply(walk.current, tactic)
        if result.ok:
            walk.advance(result.tactic, result.states)  # as sent (normalised): the text the proof must hold
        return result

    # ------------------------------------------------------------------ the check
    def verify(self, proof: ProofTree | str | Sequence[str]) -> Verification:
        """Re-check a complete proof (a tree, a script, or a linear list of tactics) as one command.

        Costs two Lean calls of the budget (:class:`BudgetExhausted` when fewer are left): the whole script
        in tactic mode on the session's root, then, only if that closed every goal, the command with
        ``#print axioms`` (:func:`leangym.soundness.verify`); else a prover could try whole candidate
        proofs for free. The verdict's
        ``isolated`` says whether this process served no other session and no raw access: only then
        does the check see nothing an earlier episode, check or command put there (a trainer that
        opens each session on a fresh process, as agents.alphaproof does, gets isolated verdicts).
        """
        script = script_of(proof)  # (the prover's object, read before the call)
        with self._lean_call():
            self._charge(VERIFY_CALLS)
            if self._raw_used or (self._record is not None and self._record.raw):
                return Verification(False, "", error="leangym: raw_process() was used on this process (unfiltered "
                                    "Lean access): its checks are no verdict; check the proof on a fresh process",
                                    isolated=False)
            return dataclasses.replace(self._check(script), isolated=self._first_on_process)

    def end(self, why: str, timeout: float | None = None) -> bool:
        """No Lean call after this: each raises :class:`BudgetExhausted` (``why``). Waits (``timeout``: at most
        that long) for a call under way; True once none is, when the process may go to someone else."""
        return self._gate.end(why, timeout)

    def _lean_call(self):
        """Around every Lean call (only the session's own code runs inside: a prover's objects are
        read before, so no prover code can hold a call open)."""
        return self._gate.call()

    def raw_process(self) -> LeanProcess:
        """The unfiltered Lean process: an explicit opt-in (``ProofSession(..., allow_raw=True)``) for
        trusted code (debugging, your own experiments). Nothing it sends passes the policy or the budget,
        so once it is taken this session's ``verify`` says no, and the process is marked
        (:func:`process_record`): the env gives it back instead of rewarding anything on it."""
        if not self._allow_raw:
            raise RawAccessRefused("raw_process() needs ProofSession(..., allow_raw=True) (or LeanProofEnv(..., "
                                   "allow_raw_process=True)); its use makes the attempt unrewardable")
        self._raw_used = True
        if self._record is not None:
            self._record.raw = True
        return self._lean

    @property
    def raw_used(self) -> bool:
        """Whether :meth:`raw_process` was called (the session can no longer be verified)."""
        return self._raw_used

    def _check(self, script: str) -> Verification:
        """The check on the session's own process, for :meth:`verify` (which charges it): the whole script in
        tactic mode on the session's root state, then the command (:func:`leangym.soundness.verify`)."""
        return verify(self._lean, self._theorem, script, self._policy, root=self.root)


class MeteredProcess:
    """``session.process`` (and ``env.process``): the session's Lean process behind the gate.

    Tactics go through :meth:`ProofSession.apply_many` (soundness policy, budget, statistics,
    the session's tactic time limit whatever ``timeout_ms`` the caller passes). ``start_proof`` and
    ``run_command`` raise :class:`RawAccessRefused`: a command is not a tactic, and what it declares
    or runs stays on the server (see :meth:`ProofSession.raw_process` for the opt-in). Of the
    process itself only ``process_id``, ``in_process``, ``identity()`` and ``close()`` show through:
    nothing that could reach Lean unfiltered (the lease's HTTP client, the simulator behind it).
    """

    _SHOWN = frozenset({"process_id", "in_process", "identity", "close"})

    def __init__(self, process: LeanProcess, session: ProofSession) -> None:
        # A weak reference: session <-> meter would be a cycle, and a lease in a cycle goes back to
        # its server only when the cycle collector runs (an env dropped without close() kept its
        # process while the next one waited for a free one).
        self._process, self._session_ref = process, weakref.ref(session)

    # copies (copy.deepcopy, pickle of an env) hold the session itself, and point back at the copy of it
    def __getstate__(self) -> dict[str, Any]:
        return {"_process": self._process, "session": self._session}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._process, self._session_ref = state["_process"], weakref.ref(state["session"])

    @property
    def _session(self) -> ProofSession:
        session = self._session_ref()
        if session is None:
            raise RuntimeError("session.process outlived its ProofSession; keep the session while you use it")
        return session

    def apply_tactic(self, state: ProofState, tactic: str, timeout_ms: int = 1000) -> TacticResult:
        return self._session.apply(state, tactic)

    def apply_tactics(self, state: ProofState, tactics: Sequence[str], timeout_ms: int = 1000) -> list[TacticResult]:
        return self._session.apply_many(state, tactics)

    def start_proof(self, theorem_with_sorry: str) -> ProofState:
        raise RawAccessRefused("session.process / env.process sends tactics only: a proof start runs its text as "
                               "commands. Start another ProofSession for another theorem (or see raw_process())")

    def run_command(self, source: str) -> CommandResult:
        raise RawAccessRefused("session.process / env.process sends tactics only: a command can run code and declare "
                               "what later checks would see. Check a proof with session.verify(); for unfiltered "
                               "access see ProofSession(..., allow_raw=True).raw_process() (the attempt is then "
                               "unrewardable)")

    def __getattr__(self, name: str) -> Any:  # process_id, in_process, identity, close
        process = self.__dict__.get("_process")  # absent while a copy is being built (copy, pickle)
        if process is None or name not in self._SHOWN:
            raise AttributeError(f"session.process has no {name!r}: it shows process_id, in_process, identity() and "
                                 "close() of the process, and every Lean call goes through the session's gate")
        return getattr(process, name)

    def __repr__(self) -> str:
        return f"MeteredProcess({self._process!r})"
