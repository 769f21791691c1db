"""``LeanProof-v0``: prove one Lean 4 theorem, one tactic per step, over a LeanTree server.

Observation: the open goals as Lean prints them (``types.goals_to_text``).
Action: a tactic (text); it runs on the FIRST open goal, as in Lean. It is sent as
``soundness.normalise_tactic`` makes it (no leading blank lines or common indentation).

The env keeps the open goals as an ordered list of branches (proof states).
A tactic applied to the first branch replaces it with its child branches, in
order; this mirrors Lean's goal list on both server generations (one branch
holding every goal, or one branch per goal). A tactic sees what its branch
holds: on a single-branch server every open goal, so ``all_goals t`` or
``case inr => t`` may reach goals after the first; on a factorized server only
the first goal (there ``all_goals`` acts on that goal alone, and a ``case`` tag
of a later goal is not found). The applied tactics form a
:class:`~leangym.proof.ProofTree`, so the finished proof is assembled with
correct focusing and checked again as one command (:func:`leangym.soundness.verify`, as
``ProofSession.verify`` does, but not charged to the episode's budget), on a fresh lease: the
episode's process goes back to the server (which rolls it back) and the check runs on a process
that nothing earlier touched (no earlier episode, check or command), so a proof cannot cite what
an earlier check declared, whatever it searches. The tactic path is env -> session -> Lean process.

Outcomes of ``step``, by ``info["outcome"]``:

* ``"rejected"`` / ``"timeout"``: Lean (or the soundness policy: ``sorry``,
  ``admit``, ``native_decide``, ``exact?``, a new command such as ``theorem``
  or ``#exit``) rejected the tactic, or it ran out of time. The state is
  unchanged, ``reward = reward_rejected + reward_step``, ``info["error"]``
  says why; the episode goes on.
* ``"progress"``: the tactic ran and goals remain; ``reward = reward_step``.
* ``"proved"``: every goal is closed AND the assembled proof passed the
  re-check: ``terminated=True``, ``reward = reward_proved + reward_step``,
  ``info["verified"] = True``, ``info["proof"]`` the complete Lean source,
  ``info["proof_script"]`` the tactic block.
* ``"check_failed"``: every goal is closed but the re-check failed:
  ``terminated=True`` (nothing is left to try from "no goals") with NO
  ``reward_proved``, ``info["verified"] = False``, ``info["error"]`` says why.
* ``"server_failure"`` (unreachable, HTTP 5xx, dead process, a lease the server no longer
  has: reclaimed when idle, recycled, restarted; also during the re-check) and ``"budget"`` (the session ``budget`` is spent):
  ``truncated=True`` with ``info["error"]``. A server failure never raises
  from ``step``; the next ``reset`` leases a fresh process. ``max_steps``
  truncates too (``info["truncated_by"] = "max_steps"``), as does the step that
  spends the budget's last Lean call (``"budget"``). The registry's
  ``TimeLimit`` (``max_episode_steps``, 64) is Gymnasium's wrapper and adds
  nothing to ``info``: pass ``max_steps=`` of at most that many steps to have
  every step-limit truncation say so.

Every ``info`` also has ``goals`` (tuple of :class:`Goal`), ``states`` (the
open branches, :class:`ProofState` handles), ``theorem``, ``steps`` and
``server`` (:class:`ServerIdentity`).

``env.unwrapped.session`` is the episode's :class:`~leangym.session.ProofSession`:
a search may ``apply`` tactics to any state it has seen, next to ``step``. ``env.process`` is the
session's gated process (tactics only, charged: :class:`~leangym.session.MeteredProcess`).
``LeanProofEnv(..., allow_raw_process=True)`` then ``env.raw_process()`` is the documented opt-in to
unfiltered access; the episode that uses it is not rewarded (``"check_failed"``, ``info["error"]``
says why) and its lease goes back at the next reset.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any, Callable, Iterable, Mapping

import gymnasium as gym

from leangym.backends.types import (
    Goal, LeanProcess, NoProcessAvailable, Outcome, ProofState, ServerError, ServerIdentity, ServerTimeout,
    ServerUnavailable, goals_to_text,
)
from leangym.backends.select import open_backend
from leangym.envs.server_lease import (DEFAULT_SERVER, SERVER_ENV_VAR, ServerLeaser, default_server_url,
                                      open_session)
from leangym.envs.spaces import LEAN_CHARSET, TACTIC_SAMPLE_CHARSET, TRUNCATION_MARKER, LeanText, clip_text
from leangym.envs.theorem_spec import TheoremSpec, resolve_theorems, theorem_index
from leangym.proof import LinearWalk, ProofTree, assemble
from leangym.session import Budget, BudgetExhausted, MeteredProcess, ProofSession, RawAccessRefused, process_record
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem

__all__ = ["LeanProofEnv", "LeanText", "LEAN_CHARSET", "open_session", "resolve_theorems", "default_server_url",
           "DEFAULT_SERVER", "SERVER_ENV_VAR"]


class UnsupportedRenderMode(ValueError, TypeError):
    """A ``render_mode`` the env does not have (it renders text: ``"ansi"``, ``"human"``).

    Also a TypeError so that tools which try a default mode and fall back when the constructor
    says TypeError, as stable-baselines3's ``make_vec_env`` does with ``"rgb_array"``, go on.
    """


# --------------------------------------------------------------------------- the env

class LeanProofEnv(gym.Env[str, str]):
    """Prove a Lean 4 theorem one tactic at a time (see the module docstring for the outcomes).

    Args:
        theorem: a statement ending in ``:= by sorry``, a :class:`Theorem`, a
            ``{name, header, formal_statement}`` row, a theorem set (a JSONL path of
            such rows, ``"minif2f"``, ``"proplogic-heldout:N"``, a ``.lean`` directory:
            :func:`leangym.datasets.load_theorems`), or a list of these; each
            ``reset`` draws one (seeded by its ``seed``).
            ``reset(options={"theorem": ...})`` or ``options={"index": i}`` overrides the draw.
        header: Lean commands run before the theorem (``open ...``); ``import`` lines are skipped.
        server: LeanTree URL (default ``$LEANGYM_SERVER`` or ``http://127.0.0.1:8000``).
        process_factory: a callable returning a :class:`LeanProcess`; replaces ``server``
            (e.g. the in-process simulator).
        max_steps: truncate after this many steps (``None``: only the TimeLimit of the registry).
        tactic_timeout_ms: Lean's time limit per tactic.
        reward_proved / reward_rejected / reward_step: see the module docstring
            (``reward_rejected`` is added as given: pass a negative number for a penalty).
        policy / allowed_axioms: the :class:`SoundnessPolicy` (``allowed_axioms`` replaces its axiom set).
        budget: a :class:`Budget` for each episode's session (Lean calls, seconds).
        render_mode: ``"ansi"`` (``render()`` returns text) or ``"human"`` (prints it).
        max_text_length: longest observation; longer goal text is cut with a ``… [truncated]`` marker.
        lease_timeout_s: how long to wait for a free Lean process at ``reset``.
        read_timeout_s: how long to wait for any answer of the server (beyond the lease wait);
            a server that takes longer counts as hung: ``step`` truncates, ``reset`` raises
            :class:`ServerTimeout` at once instead of trying again.
        warmup_wait_s: how long ``reset`` waits for a server that is warming up (HTTP 503 on
            ``/process/get``), saying so in one log line (default ``$LEANGYM_WARMUP_WAIT_S``, else 600).
        fresh_process: lease a new process at every ``reset`` (returning the previous one,
            which ends the previous session) instead of keeping one across episodes.
        episodes_per_lease: otherwise, how many episodes one lease serves before it is given
            back (the server rolls it back) and a fresh one leased: a Lean process keeps every
            proof state and checked proof until it is returned, so a kept lease would grow
            without bound over a long run. A proof start declares its statement (under a name of
            its own) and header on the process (LeanTree's processes keep what they ran), so a
            theorem whose header declares something gets a fresh lease at every reset. Every final
            check runs on a fresh lease of its own (isolation: see the module docstring), which then
            serves the next episodes.
        reset_attempts: how often ``reset`` tries to start the proof when the server fails
            (HTTP 5xx, a dropped connection, a dead process), each time on a new lease, before
            it raises. A server nobody answers at, no free process, and a statement Lean
            rejects are raised at once.
        allow_raw_process: ``raw_process()`` may hand out the unfiltered lease (for trusted code); the
            episode that takes it is never rewarded.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(
        self,
        theorem: TheoremSpec = None,
        header: str = "",
        server: str | None = None,
        *,
        process_factory: Callable[[], LeanProcess] | None = None,
        max_steps: int | None = None,
        tactic_timeout_ms: int = 1000,
        reward_proved: float = 1.0,
        reward_rejected: float = 0.0,
        reward_step: float = 0.0,
        policy: SoundnessPolicy | None = None,
        allowed_axioms: Iterable[str] | None = None,
        budget: Budget | None = None,
        render_mode: str | None = None,
        max_text_length: int = 8192,
        lease_timeout_s: float = 60.0,
        read_timeout_s: float = 120.0,
        warmup_wait_s: float | None = None,
        fresh_process: bool = False,
        episodes_per_lease: int = 256,
        reset_attempts: int = 4,
        allow_raw_process: bool = False,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UnsupportedRenderMode(f"render_mode must be one of {self.metadata['render_modes']} or None, "
                                        f"got {render_mode!r}")
        if max_steps is not None and int(max_steps) < 1:
            raise ValueError(f"max_steps must be at least 1 (None: no limit), got {max_steps}")
        if int(tactic_timeout_ms) < 1:
            raise ValueError(f"tactic_timeout_ms must be at least 1 (Lean's time per tactic), got {tactic_timeout_ms}")
        if int(max_text_length) < len(TRUNCATION_MARKER) + 16:  # (room for some goal text beside the marker)
            raise ValueError(f"max_text_length must be at least {len(TRUNCATION_MARKER) + 16}, got {max_text_length}")
        self.theorems = resolve_theorems(theorem, header)
        self.header = header
        self.server_url = None if process_factory is not None else (server or default_server_url())
        self._process_factory = process_factory or open_backend(
            self.server_url, lease_timeout_s=lease_timeout_s, read_timeout_s=read_timeout_s, warmup_wait_s=warmup_wait_s)
        self.max_steps = max_steps
        self.tactic_timeout_ms = int(tactic_timeout_ms)
        self._reward_proved, self._reward_rejected = float(reward_proved), float(reward_rejected)
        self._reward_step = float(reward_step)
        policy = policy or SoundnessPolicy()
        if allowed_axioms is not None:
            policy = dataclasses.replace(policy, allowed_axioms=frozenset(allowed_axioms))
        self._policy = policy
        self.budget = budget
        self.render_mode = render_mode
        self.max_text_length = int(max_text_length)
        self.observation_space = LeanText(self.max_text_length, min_length=0, charset=LEAN_CHARSET)
        self.action_space = LeanText(policy.max_tactic_chars, min_length=1, charset=TACTIC_SAMPLE_CHARSET)

        self.fresh_process = fresh_process
        if int(episodes_per_lease) < 1:
            raise ValueError(f"episodes_per_lease must be at least 1, got {episodes_per_lease}")
        self.episodes_per_lease = int(episodes_per_lease)
        self._lease_episodes = 0  # episodes started on the current lease
        self._lease_preambles: set[str] = set()  # the headers (preamble_key) its proof starts and checks ran
        self.allow_raw_process = bool(allow_raw_process)
        self.reset_attempts = max(1, int(reset_attempts))
        self._process: LeanProcess | None = None  # the lease (agents reach it through the session's gate)
        self._process_broken = False
        self._identity: ServerIdentity | None = None
        self._session: ProofSession | None = None
        self._theorem: Theorem | None = None
        self._walk: LinearWalk | None = None
        self._states: tuple[ProofState, ...] = ()
        self._goals: tuple[Goal, ...] = ()
        self._text = ""
        self._steps = 0
        self._done = False
        self._last: dict[str, Any] = {}

    # ------------------------------------------------------------------ public views
    # Read-only: the final check runs on the env's own lease, with the episode's session, so an agent
    # must not swap either (a session of an easier theorem, a process that answers "no errors"),
    # nor set the rewards (reward_step = 1 pays for any step).
    @property
    def session(self) -> ProofSession | None:
        """The episode's :class:`~leangym.session.ProofSession` (search API next to ``step``)."""
        return self._session

    @property
    def process(self) -> MeteredProcess | None:
        """The episode's process behind the session's gate (tactics only, charged; None between episodes)."""
        return self._session.process if self._session is not None else None

    def raw_process(self) -> LeanProcess:
        """The unfiltered lease: an opt-in (``allow_raw_process=True``) that makes this episode unrewardable
        (see :meth:`leangym.session.ProofSession.raw_process`)."""
        if self._session is None:
            raise RuntimeError("LeanProofEnv: call reset() first")
        if not self.allow_raw_process:
            raise RawAccessRefused("raw_process() needs LeanProofEnv(..., allow_raw_process=True); the episode that "
                                   "uses it is not rewarded")
        return self._session.raw_process()

    @property
    def theorem(self) -> Theorem | None:
        """The episode's theorem (None before the first reset, or after a reset that failed)."""
        return self._theorem

    @property
    def reward_proved(self) -> float:
        return self._reward_proved

    @property
    def reward_rejected(self) -> float:
        return self._reward_rejected

    @property
    def reward_step(self) -> float:
        return self._reward_step

    @property
    def policy(self) -> SoundnessPolicy:
        """The soundness policy of every episode (sessions keep their own copies)."""
        return self._policy

    @property
    def states(self) -> tuple[ProofState, ...]:
        """The open branches, in Lean's goal order; ``step`` acts on the first."""
        return self._states

    @property
    def state(self) -> ProofState | None:
        return self._states[0] if self._states else None

    @property
    def goals(self) -> tuple[Goal, ...]:
        """All open goals, in Lean's order."""
        return self._goals

    @property
    def goals_text(self) -> str:
        """The open goals as Lean prints them (the observation, before any length cut)."""
        return self._text

    def _set_open(self, walk: LinearWalk | None) -> None:
        self._walk = walk
        self._states = walk.states if walk is not None else ()
        self._goals = tuple(g for s in self._states for g in s.goals)
        self._text = goals_to_text(self._goals)

    def proof_tree(self) -> ProofTree | None:
        """The applied tactics as a tree, once every goal is closed (else ``None``)."""
        return self._walk.tree() if self._walk is not None else None

    # ------------------------------------------------------------------ leases
    def _lease(self) -> LeanProcess:
        if self._process is not None and self._process_broken:
            self._release()
        if self._process is None:
            self._process = self._process_factory()
            self._lease_episodes = 0
            self._lease_preambles = set()
            self._process_broken = False
            self._identity = None
        return self._process

    def _changed(self) -> bool:
        """Whether anyone took unfiltered access to the current lease (through any session on it, this
        episode's or an earlier one's: :func:`leangym.session.process_record`)."""
        record = process_record(self._process) if self._process is not None else None
        return record is not None and record.raw

    def _release(self) -> None:
        process, self._process, self._session = self._process, None, None
        if process is not None:
            with contextlib.suppress(Exception):
                process.close()

    def _server_identity(self) -> ServerIdentity:
        # asked again while the generation is unknown: a client learns it from tactic replies
        if self._identity is None or self._identity.generation == "unknown":
            try:
                self._identity = self._process.identity()
            except ServerError:
                return ServerIdentity(self.server_url or "local")
        return self._identity

    def _start(self, theorem: Theorem) -> ProofSession:
        kw = dict(policy=self._policy, timeout_ms=self.tactic_timeout_ms, budget=self.budget,
                  allow_raw=self.allow_raw_process)
        # a lease that ran commands the env did not send goes back (rolled back by the server) however
        # that episode ended: what they declared would stay for this one
        # and so does one that ran another header (its declarations, `open`s and options would stay for
        # this theorem's statement and check) or a header that declares (this start would declare it again)
        ran = self._lease_preambles
        if self._changed() or self.fresh_process or self._lease_episodes >= self.episodes_per_lease or (
                ran and (ran != {theorem.preamble_key} or theorem.header_declares)):
            self._release()
        for attempt in range(self.reset_attempts):
            try:
                process = self._lease()
                self._lease_preambles.add(theorem.preamble_key)  # (a start Lean rejects may have run it too)
                session = ProofSession(process, theorem, **kw)
                self._lease_episodes += 1
                return session
            except (ServerUnavailable, NoProcessAvailable, ServerTimeout):
                raise  # nothing a retry can mend soon (a hung server would hang again); the message says what to do
            except ServerError:
                # A transient failure, or the kept lease went stale (server restarted,
                # process died): lease again. Inside a vector env's autoreset, raising here
                # would end the whole run, so one flaky answer must not.
                if attempt + 1 == self.reset_attempts:
                    raise
                self._process_broken = True
                time.sleep(0.05 * attempt)
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ gym API
    def _draw_theorem(self, options: Mapping[str, Any]) -> Theorem:
        if options.get("theorem") is not None:
            return resolve_theorems(options["theorem"], self.header)[0]
        if options.get("index") is not None:
            return self.theorems[theorem_index(options["index"], len(self.theorems))]
        if not self.theorems:
            raise ValueError("no theorem: pass theorem=... to the env or reset(options={'theorem': ...})")
        return self.theorems[int(self.np_random.integers(len(self.theorems)))]

    def _episode_info(self) -> dict[str, Any]:
        """Extra per-episode entries of ``info`` (subclasses add theirs)."""
        return {}

    RESET_OPTIONS = ("theorem", "index")  # what reset(options=...) understands

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        # the old episode ends here, whatever happens next: a reset that raises (a bad option, a
        # statement Lean rejects, a server that is down) leaves no episode to step, not the old one
        self._session, self._done, self._theorem = None, True, None
        self._set_open(None)
        options = dict(options or {})
        unknown = sorted(map(str, set(options) - set(self.RESET_OPTIONS)))
        if unknown:  # a misspelt option would otherwise draw a theorem nobody asked for
            raise ValueError(f"unknown reset option(s) {', '.join(unknown)}; known: {', '.join(self.RESET_OPTIONS)}")
        super().reset(seed=seed)
        theorem = self._draw_theorem(options)
        self._session = self._start(theorem)
        self._theorem = theorem
        self._set_open(LinearWalk(self._session.root))
        self._steps, self._done = 0, False
        info = self._info("reset")
        self._last = {"outcome": "reset"}
        if self.render_mode == "human":  # Gymnasium: "human" renders during reset and step, unasked
            self.render()
        return self._obs(), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        if self._session is None or self._done:
            raise RuntimeError("LeanProofEnv: call reset() first" if self._session is None
                               else "LeanProofEnv: the episode is over; call reset()")
        if not isinstance(action, str):  # e.g. a Discrete index or bytes: str() would send "5" to Lean
            raise TypeError(f"LeanProofEnv: an action is a tactic string, got {type(action).__name__} {action!r}")
        tactic = action
        self._steps += 1
        reward, terminated, truncated, extra = self._reward_step, False, False, {"tactic": tactic}
        walk = self._walk
        try:
            result = self._session.step_walk(walk, tactic)  # env -> session -> Lean process
        except BudgetExhausted as e:
            outcome, truncated, extra["error"], extra["truncated_by"] = "budget", True, str(e), "budget"
        else:
            extra["tactic"] = result.tactic  # as sent: normalised (see soundness.normalise_tactic)
            outcome = result.outcome.value
            if result.outcome in (Outcome.REJECTED, Outcome.TIMEOUT):
                reward += self._reward_rejected
                extra["error"] = result.error
            elif result.outcome is Outcome.SERVER_FAILURE:
                self._process_broken = True
                truncated, extra["error"] = True, f"server failure: {result.error}"
                if result.cause == "LeaseLost":  # reclaimed, recycled, restarted: not this env's to mend
                    extra["error"] += "; the next reset() leases a new process"
            else:
                outcome = "progress"
                self._set_open(walk)
                if walk.done:
                    outcome, terminated, truncated, bonus = self._finish(extra)
                    reward += bonus
        if not (terminated or truncated) and self._session.remaining_calls() == 0:  # no next step could run
            truncated, extra["truncated_by"] = True, "budget"
        if not (terminated or truncated) and self.max_steps is not None and self._steps >= self.max_steps:
            truncated, extra["truncated_by"] = True, "max_steps"
        self._done = terminated or truncated
        self._last = {"outcome": outcome, **extra}
        if self.render_mode == "human":
            self.render()
        return self._obs(), reward, terminated, truncated, self._info(outcome, **extra)

    def _finish(self, extra: dict[str, Any]) -> tuple[str, bool, bool, float]:
        """Every goal is closed: re-check the whole proof. -> (outcome, terminated, truncated, reward bonus)."""
        tree = self._walk.tree()
        session = self._session
        extra.update(proof_script=assemble(tree))
        if session.raw_used or self._changed():
            extra.update(verified=False, axioms=(), error="leangym: raw_process() was used on this episode's process "
                         "(unfiltered Lean access): the episode is not rewarded")
            return "check_failed", True, False, 0.0
        # Isolation: the episode's process goes back to the server (rolled back) and the proof is checked
        # on a fresh lease that nothing earlier touched (no earlier episode, check, or header declared there).
        self._release()
        try:
            self._lease()
        except ServerError as e:
            extra.update(verified=False, error=f"server failure: no clean process for the final check: {e}")
            return Outcome.SERVER_FAILURE.value, False, True, 0.0
        finally:
            self._session = session  # the episode's record (its states died with the process)
        self._lease_episodes = 1  # the check declares the theorem (and its header) there
        self._lease_preambles = {self._theorem.preamble_key}
        # the reward's check, not charged: the whole proof in tactic mode on this lease, then the command
        check = verify(self._process, self._theorem, assemble(tree), self._policy, spare=self._process_factory)
        extra.update(verified=check.ok, axioms=check.axioms)
        if check.ok:
            extra["proof"] = check.source
            return "proved", True, False, self._reward_proved
        extra["error"] = check.error
        if check.server_failure:
            # The check could not run: no proof, but not the agent's fault either.
            self._process_broken = True
            return Outcome.SERVER_FAILURE.value, False, True, 0.0
        return "check_failed", True, False, 0.0

    def _obs(self) -> str:
        return clip_text(self.goals_text, self.max_text_length)

    def _info(self, outcome: str, **extra: Any) -> dict[str, Any]:
        return {
            "outcome": outcome,
            "goals": self._goals,
            "states": self.states,
            "theorem": self._theorem,
            "steps": self._steps,
            "server": self._server_identity(),
            **self._episode_info(),
            **extra,
        }

    def render(self) -> str | None:
        if self.render_mode is None:
            gym.logger.warn("LeanProofEnv.render() called without a render_mode (use 'ansi' or 'human')")
            return None
        name = self._theorem.name if self._theorem else "-"
        lines = [f"[{name}] step {self._steps}: {self._last.get('outcome', 'not started')}"]
        if self._last.get("tactic") is not None:
            lines.append(f"tactic: {self._last['tactic']}")
        if self._last.get("error"):
            lines.append(f"error: {self._last['error']}")
        lines.append(self._obs() if self._session is not None else "(no proof started)")
        text = "\n".join(lines) + "\n"
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def __getstate__(self) -> dict[str, Any]:
        if isinstance(self._process_factory, ServerLeaser):
            raise TypeError("a LeanProof-v0 env over a server holds an HTTP connection and a Lean lease, which cannot "
                            "be copied or pickled: make another with gym.make(env.spec) (Gymnasium's async vector env "
                            "builds each env in its own process from the env id)")
        return self.__dict__

    def close(self) -> None:
        """Return the lease (idempotent). An env dropped without ``close`` returns it via the lease's finalizer."""
        self._release()
        if isinstance(self._process_factory, ServerLeaser):
            self._process_factory.close()
        self._set_open(None)
        self._done = True
        super().close()
