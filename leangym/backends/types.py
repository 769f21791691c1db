"""Typed values at the boundary between leangym and a Lean backend.

Everything a backend returns is converted into these frozen dataclasses right
where it enters (``parse_*`` below), so no other module ever touches raw
protocol JSON. The same parsers serve the HTTP client and the in-process
simulated backend, so both produce exactly the same values.
"""
from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence


class ServerError(RuntimeError):
    """The backend failed (unreachable, HTTP 5xx, malformed reply, no process free).

    Never raised for a tactic that Lean rejects: that is an ordinary outcome.
    """


class ServerUnavailable(ServerError):
    """No server answers at the given address."""


class NoProcessAvailable(ServerError):
    """Every Lean process of the pool stayed leased until the timeout."""


class ServerTimeout(ServerError):
    """The server did not answer within the client's read timeout (hung, or far too busy)."""


class LeaseLost(ServerError):
    """The server no longer has this lease's process: returned, reclaimed after ``lease_timeout`` idle
    seconds, recycled after a deadline, crashed, or the server restarted. Nothing more may be sent on it
    (its id may name another client's process one day); lease a new one."""


class ServerWarmingUp(ServerUnavailable):
    """The server is still warming up (loading Lean in its processes) after the client's wait bound."""


class LeanError(RuntimeError):
    """Lean rejected a theorem statement (it does not elaborate, or has no ``sorry``)."""


@dataclass(frozen=True)
class Hypothesis:
    name: str
    type: str
    value: str | None = None  # only for let-bound hypotheses


@dataclass(frozen=True)
class Goal:
    hypotheses: tuple[Hypothesis, ...]
    target: str
    tag: str | None = None

    def to_text(self) -> str:
        """The goal as Lean prints it: ``case``, grouped hypotheses, ``⊢``."""
        return render_goal(self.tag, [(h.name, h.type, h.value) for h in self.hypotheses], self.target)


def render_goal(tag: str | None, hypotheses: Sequence[tuple[str, str, str | None]], target: str) -> str:
    """Lean's text of one goal from its parts, (name, type, let-value or None) per hypothesis: the one
    rendering the client and the simulator share (an observation must not depend on which one made it)."""
    lines = [f"case {tag}"] if tag else []
    names: list[str] = []
    for i, (name, type_, value) in enumerate(hypotheses):
        names.append(name)
        nxt = hypotheses[i + 1] if i + 1 < len(hypotheses) else None
        # Lean groups consecutive hypotheses of equal type (never let-bound ones).
        if value is None and nxt is not None and nxt[2] is None and nxt[1] == type_:
            continue
        lines.append(f"{' '.join(names)} : {type_}" + (f" := {value}" if value is not None else ""))
        names = []
    lines.append(f"⊢ {target}")
    return "\n".join(lines)


def goals_to_text(goals: Sequence[Goal]) -> str:
    """All goals, separated by a blank line; ``no goals`` when there are none (as Lean says)."""
    return "\n\n".join(g.to_text() for g in goals) if goals else "no goals"


@dataclass(frozen=True)
class ProofState:
    """An immutable proof state: valid as long as the lease of ``process_id`` is held."""

    process_id: int
    proof_state_id: int
    goals: tuple[Goal, ...]

    @property
    def text(self) -> str:
        return goals_to_text(self.goals)

    @property
    def is_solved(self) -> bool:
        return not self.goals


class Outcome(enum.Enum):
    PROGRESS = "progress"  # the tactic ran; ``states`` holds the open branches
    PROVED = "proved"  # the tactic closed every goal it was applied to
    REJECTED = "rejected"  # Lean (or leangym's soundness policy) rejected the tactic
    TIMEOUT = "timeout"  # the tactic ran out of time
    SERVER_FAILURE = "server_failure"  # unreachable, 5xx, malformed reply, no process


@dataclass(frozen=True)
class TacticResult:
    """What applying one tactic to one state gave.

    ``states`` are the open branches after the tactic: one branch holding all
    goals on single-branch servers, one per independent goal on factorized
    servers. Branches without goals are dropped, so ``PROVED`` has ``()``.
    """

    tactic: str
    outcome: Outcome
    states: tuple[ProofState, ...] = ()
    error: str | None = None
    elapsed_s: float = 0.0
    # SERVER_FAILURE only: the ServerError class behind it when there was one ("ServerTimeout":
    # the server hung; "ServerUnavailable": nobody answers; "LeaseLost": the server no longer has the
    # lease's process, lease a new one), so callers need not read `error`
    cause: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome in (Outcome.PROGRESS, Outcome.PROVED)

    @property
    def goals(self) -> tuple[Goal, ...]:
        return tuple(g for s in self.states for g in s.goals)


@dataclass(frozen=True)
class ReplMessage:
    severity: str  # "error" | "warning" | "info"
    text: str
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True)
class CommandResult:
    """The Lean REPL's answer to a whole command (``/command``)."""

    messages: tuple[ReplMessage, ...]
    sorries: int = 0
    env: int | None = None

    @property
    def errors(self) -> tuple[ReplMessage, ...]:
        return tuple(m for m in self.messages if m.severity == "error")

    @property
    def uses_sorry(self) -> bool:
        return self.sorries > 0 or any("declaration uses 'sorry'" in m.text for m in self.messages)


# The three server generations (leantree-protocol.md), by the name ``ServerIdentity.generation`` gives them.
GENERATIONS = {"single-branch": 1, "factorized": 2, "branch-api": 3}


@dataclass(frozen=True)
class ServerIdentity:
    url: str
    generation: str = "unknown"  # "single-branch" (1) | "factorized" (2) | "branch-api" (3) | "unknown"
    info: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the whole /status: long, not printed

    @property
    def generation_number(self) -> int | None:
        """1, 2 or 3 (see :data:`GENERATIONS`); None while unknown."""
        return GENERATIONS.get(self.generation)


# --------------------------------------------------------------------------- parsers


def _require(cond: bool, what: str, payload: Any) -> None:
    if not cond:
        raise ServerError(f"malformed server reply: expected {what}, got {str(payload)[:300]!r}")


def parse_goal(payload: Any) -> Goal:
    _require(isinstance(payload, Mapping) and isinstance(payload.get("type"), str), "a goal object", payload)
    hyps_raw = payload.get("hypotheses") or []
    _require(isinstance(hyps_raw, list), "a hypotheses list", payload)
    hyps = []
    for h in hyps_raw:
        _require(isinstance(h, Mapping) and isinstance(h.get("type"), str), "a hypothesis object", h)
        value = h.get("value")
        hyps.append(Hypothesis(str(h.get("user_name", "")), h["type"], None if value is None else str(value)))
    tag = payload.get("tag")
    return Goal(tuple(hyps), payload["type"], str(tag) if tag else None)


def parse_proof_state(process_id: int, payload: Any) -> ProofState:
    """A state of generations 1-2 (``proof_state_id``) or a branch of generation 3 (``branch_id``, kept
    in the same field: the id the next tactic names)."""
    psid = payload.get("proof_state_id", payload.get("branch_id")) if isinstance(payload, Mapping) else None
    _require(isinstance(psid, int) and not isinstance(psid, bool), "a proof state", payload)  # (JSON true is no id)
    goals = payload.get("goals")  # required: a state without it must not read as a closed proof
    _require(isinstance(goals, list), "a goal list", payload)
    return ProofState(process_id, psid, tuple(parse_goal(g) for g in goals))


def parse_start(process_id: int, payload: Any) -> ProofState:
    """``/proof_from_sorry`` reply -> root state; Lean errors raise :class:`LeanError`."""
    _require(isinstance(payload, Mapping), "a JSON object", payload)
    if "error" in payload:
        raise LeanError(str(payload["error"]))
    _require("value" in payload, "'value' or 'error'", payload)
    return parse_proof_state(process_id, payload["value"])


TIMEOUT_TEXT = "Tactic application timed out."
# Texts with which Lean (not the server) rejects a tactic; see the protocol doc, "Errors" ("REPL returned
# error" covers LeanTree's `REPL returned error messages: [...]` and `REPL returned error: Lean error: ...`)
LEAN_VERDICT_PREFIXES = ("REPL returned error", "Step verification error", "Could not apply tactic in REPL",
                         TIMEOUT_TEXT)
_PROCESS_GONE = re.compile(r"Process (\d+) not found")


def process_gone(error: str, process_id: int) -> bool:
    """Whether a server's error text says that it no longer has ``process_id`` (the lease is gone).
    Older servers answer it on ``try_apply_tactic`` as HTTP 200 ``{"error": ...}``, like a rejected tactic;
    the whole text must be exactly that, for this very process (Lean's own errors never are)."""
    m = _PROCESS_GONE.fullmatch(error.strip())
    return m is not None and int(m.group(1)) == process_id


def lean_verdict(error: str) -> "Outcome | None":
    """Lean's verdict in a server's error text (``TIMEOUT`` or ``REJECTED``); None when the text is not Lean's."""
    if error.startswith(TIMEOUT_TEXT):
        return Outcome.TIMEOUT
    return Outcome.REJECTED if error.startswith(LEAN_VERDICT_PREFIXES) else None


def parse_tactic_reply(process_id: int, tactic: str, payload: Any, elapsed_s: float = 0.0,
                       wraps_failures: bool = False) -> TacticResult:
    """``/try_apply_tactic`` reply (any server generation) -> :class:`TacticResult`. ``wraps_failures``: the
    server answers its own failures there as HTTP 200 ``{"error": ...}`` too (generations 1-2), so only
    Lean's texts (:data:`LEAN_VERDICT_PREFIXES`) are a verdict; any other text is the server failing."""
    try:
        _require(isinstance(payload, Mapping), "a JSON object", payload)
        if "error" in payload:
            err = str(payload["error"])
            if process_gone(err, process_id):  # not Lean's verdict: the server lost the lease
                return TacticResult(tactic, Outcome.SERVER_FAILURE, (), f"the server no longer has this lease: {err}",
                                    elapsed_s, "LeaseLost")
            outcome = lean_verdict(err)
            if outcome is None and wraps_failures:  # (a dead REPL, "Server not started")
                return TacticResult(tactic, Outcome.SERVER_FAILURE, (), f"the server failed, not Lean: {err}",
                                    elapsed_s)
            outcome = outcome or Outcome.REJECTED  # (generation 3: every HTTP 200 error text is Lean's)
            lean = reported_lean_errors(err) if outcome is Outcome.REJECTED else None
            if lean is not None:  # `REPL returned error messages: [{...}]`: Lean's own messages, as Lean says them
                err = "; ".join(m.text for m in lean.errors)
            return TacticResult(tactic, outcome, (), err, elapsed_s)
        branches = payload.get("value")
        _require(isinstance(branches, list), "a branch list in 'value'", payload)
        states = tuple(parse_proof_state(process_id, b) for b in branches)
    except ServerError as e:
        return TacticResult(tactic, Outcome.SERVER_FAILURE, (), str(e), elapsed_s)
    open_states = tuple(s for s in states if s.goals)
    outcome = Outcome.PROGRESS if open_states else Outcome.PROVED
    return TacticResult(tactic, outcome, open_states, None, elapsed_s)


def _position(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_command(payload: Any) -> CommandResult:
    """``/command`` reply (the REPL's JSON) -> :class:`CommandResult`; a wrong shape is a :class:`ServerError`.

    A command the REPL ran answers with its ``env``. Without one the command was not run (the
    REPL's own failure shape is ``{"message": ...}``), so there is no verdict: a
    :class:`ServerError`, never an empty, error-free result.
    """
    _require(isinstance(payload, Mapping), "a REPL response object", payload)
    env = payload.get("env")
    if not isinstance(env, int) or isinstance(env, bool):
        why = payload.get("message", payload.get("error"))
        if isinstance(why, str):
            raise ServerError(f"the Lean REPL did not run the command: {why[:300]}")
        _require(False, "a REPL response with an integer 'env'", payload)
    raw_messages, sorries = payload.get("messages") or [], payload.get("sorries") or []
    _require(isinstance(raw_messages, list), "a message list", payload)
    _require(isinstance(sorries, list), "a list of sorries", payload)
    msgs = _messages(raw_messages)
    if "error" in payload:  # an error next to a result still fails the command
        msgs.append(ReplMessage("error", str(payload["error"])))
    return CommandResult(tuple(msgs), len(sorries), env)


def _messages(raw: list) -> list[ReplMessage]:
    msgs = []
    for m in raw:
        _require(isinstance(m, Mapping), "a message object", m)
        pos = m.get("pos") or {}
        _require(isinstance(pos, Mapping), "a position object", m)
        # a position that is not a number counts as none (a message of the whole command)
        msgs.append(ReplMessage(str(m.get("severity", "error")), str(m.get("data", "")),
                                _position(pos.get("line")), _position(pos.get("column"))))
    return msgs


LEAN_ERRORS_TEXT = "REPL returned error messages: "  # LeanTree's text for errors Lean reported


def reported_lean_errors(error: str) -> CommandResult | None:
    """A server's error text that carries Lean's own error messages, as a failed command; else None.

    LeanTree's server answers a ``/command`` that Lean reported errors on with HTTP 500 and
    ``REPL returned error messages: [...]`` (the messages as JSON), not with the REPL's response:
    that is Lean's verdict on the command, not a server failure. Only a text that holds at least
    one error message counts; anything else stays a failure (no verdict).
    """
    if not error.startswith(LEAN_ERRORS_TEXT):
        return None
    try:
        raw = json.loads(error[len(LEAN_ERRORS_TEXT):])
        msgs = _messages(raw) if isinstance(raw, list) else []
    except (ValueError, RecursionError, ServerError):
        return None
    result = CommandResult(tuple(msgs))
    return result if result.errors else None


# --------------------------------------------------------------------------- the backend seam


class LeanProcess(Protocol):
    """One leased Lean process. The HTTP lease and the in-process simulator both implement it.

    ``apply_tactic`` never raises: server failures come back as
    ``Outcome.SERVER_FAILURE``. ``start_proof`` raises :class:`LeanError` when
    Lean rejects the statement and :class:`ServerError` when the server fails;
    ``run_command`` raises :class:`ServerError`.
    """

    process_id: int
    # True when calls run in this interpreter (the simulated kernel): they hold the GIL while they
    # work, so a caller gains nothing by threads and runs them inline. False when they wait on a server.
    in_process: bool

    def start_proof(self, theorem_with_sorry: str) -> ProofState: ...

    def apply_tactic(self, state: ProofState, tactic: str, timeout_ms: int = 1000) -> TacticResult: ...

    def apply_tactics(self, state: ProofState, tactics: Sequence[str], timeout_ms: int = 1000) -> list[TacticResult]: ...

    def run_command(self, source: str) -> CommandResult: ...

    def identity(self) -> ServerIdentity: ...

    def close(self) -> None: ...
