"""``ConjectureProve-v0``: STP-style self-play (Dong & Ma, 2025) as a PettingZoo AEC env.

Two agents, ``conjecturer`` and ``prover``. One round (one episode):

1. the conjecturer sees a seed theorem (and its reference proof when one is known) and emits
   a statement (``theorem NAME ... := by sorry``); it is read as the seed's header would read it;
2. the env refuses, as an ordinary move that ends the round with ``reward_refused``:
   ``"invalid"`` (what :class:`leangym.theorem.Theorem` refuses in any statement: no
   ``#command``, no code-running word, no second declaration such as an ``axiom``, no
   ``sorry``; or a statement Lean cannot elaborate), ``"duplicate"`` (a seed, or a conjecture
   seen before by this env, up to the theorem's name, binder names and whitespace:
   :func:`conjecture_key`), ``"trivial"`` (one of ``trivial_tactics`` closes it in one step);
3. otherwise the prover takes ``attempts`` (k) attempts of at most ``max_steps`` (N) tactics
   each, on an inner ``LeanProof-v0`` env (:class:`~leangym.envs.lean_proof.LeanProofEnv`:
   its observations, outcomes, rewards and sound final check, on its own leases). A search may
   use ``env.unwrapped.session`` between steps, as with ``LeanProof-v0``;
4. the conjecturer gets ``conjecturer_reward(pass_rate)``: STP's band rule by default,
   ``reward_in_band`` when ``band[0] < proved / k <= band[1]``, else 0. The prover gets
   ``reward_proved`` per verified proof (at the step that proves).

``infos["conjecturer"]`` carries the round (``seed``, ``seed_proof``, ``conjecture``,
``outcome``, ``pass_rate``, ``proofs``), ``infos["prover"]`` the inner env's ``info`` of the last
step plus ``attempt`` (and ``next_attempt`` when that step ended an attempt and the observation
is already the next attempt's start). A server failure truncates the round (outcome
``"server_failure"``, no reward, leases given back). Observations and actions are text
(:class:`~leangym.envs.spaces.LeanText`); ``leangym.make_multi("ConjectureProve-v0")`` or
:func:`env` builds it the PettingZoo way.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from leangym.backends.select import open_backend
from leangym.backends.types import LeanError, LeanProcess, ServerError
from leangym.envs.lean_proof import LeanProofEnv
from leangym.envs.spaces import TACTIC_SAMPLE_CHARSET, LeanText, clip_text
from leangym.envs.theorem_spec import TheoremSpec, resolve_theorems, theorem_index
from leangym.lexer import ID_FIRST, ID_REST, strip_comments
from leangym.session import Budget, BudgetExhausted
from leangym.soundness import SoundnessPolicy
from leangym.theorem import Theorem, TheoremError

__all__ = ["ConjectureProveEnv", "raw_env", "env", "conjecture_key", "band_reward", "TextObservation", "AGENTS"]

AGENTS = ("conjecturer", "prover")
TRIVIAL_TACTICS = ("trivial", "assumption", "contradiction", "rfl", "decide", "norm_num", "simp")
REFUSED = ("invalid", "duplicate", "trivial")


class TextObservation(str):
    """An observation: a ``str`` that also states NumPy's string dtype, which PettingZoo's ``api_test``
    compares with the space's (it assumes NumPy observations)."""

    dtype = np.dtype(str)


def band_reward(pass_rate: float, band: tuple[float, float] = (0.0, 0.25), reward_in_band: float = 1.0) -> float:
    """STP's rule: reward a conjecture the prover proves sometimes, but rarely (``lo < rate <= hi``)."""
    return reward_in_band if band[0] < pass_rate <= band[1] else 0.0


_IDENT = re.compile(f"[{ID_FIRST}][{ID_REST}]*")
_BINDER_NAMES = re.compile(r"[(\[{⦃]([^:()\[\]{}⦃⦄]*):")  # `(p q : Prop)`, `{n : ℕ}`, `[inst : Foo]`
_NAME = re.compile(r"^((?:theorem|lemma)\s+)\S+")


def conjecture_key(theorem: Theorem) -> str:
    """The statement as duplicates share it: header (as Lean reads it), no theorem name, the names
    of its binders renamed in order of appearance, whitespace collapsed. (Names bound inside
    the statement, ``∀ x,``, are kept: a renamed one counts as new.)"""
    code = " ".join(strip_comments(theorem.formal_statement, strings=True).split())
    code = _NAME.sub(r"\1_", code, count=1)
    bound: dict[str, str] = {}
    for group in _BINDER_NAMES.findall(code):
        for name in group.split():
            bound.setdefault(name, f"x{len(bound)}")
    body = _IDENT.sub(lambda m: bound.get(m.group(0), m.group(0)), code)
    return theorem.preamble_key + "\n" + body


def _default_seeds(num: int, seed: int, difficulty: Any) -> list[tuple[Theorem, tuple[str, ...]]]:
    from leangym.datasets import proplogic as generator

    pts = generator.generate(num, seed, difficulty, exclude=generator.heldout_set(), prefix="seed")
    return [(pt.theorem, pt.proof) for pt in pts]


def _seed_pairs(spec: Any, header: str) -> list[tuple[Theorem, tuple[str, ...]]]:
    """Seeds with their proofs: generator theorems (``.theorem``/``.proof``), or what ``LeanProof-v0``
    takes (a row's ``proof`` list becomes the seed's proof)."""
    items = spec if isinstance(spec, (list, tuple)) else [spec]
    out = []
    for item in items:
        if hasattr(item, "theorem") and hasattr(item, "proof"):  # a generator PropTheorem
            out.append((item.theorem, tuple(item.proof)))
            continue
        for t in resolve_theorems(item, header):
            proof = t.extra.get("proof") or ()
            out.append((t, tuple(proof.splitlines() if isinstance(proof, str) else proof)))
    return out


class ConjectureProveEnv(AECEnv):
    """STP's conjecture-and-prove round as a PettingZoo AEC env (see the module docstring).

    Args:
        theorem: the seed theorems: anything ``LeanProof-v0`` takes (a statement, rows, a theorem set
            such as ``"minif2f"``, a JSONL file, a list), or generator theorems; default ``num_seeds``
            PropLogic theorems at ``seed_difficulty`` (none held out), with their reference proofs.
        header / server / process_factory / tactic_timeout_ms / policy / lease_timeout_s /
            read_timeout_s / max_text_length / rewards of the prover: as ``LeanProof-v0``; with neither
            ``server`` nor ``process_factory`` the in-process simulator (``factorized``: one branch per goal).
        attempts: the prover's attempts per conjecture (k); max_steps: tactics per attempt (N).
        budget: Lean calls / seconds of each attempt's session (what a search next to ``step`` may spend).
        band / reward_in_band: the default conjecturer reward (:func:`band_reward`);
            ``conjecturer_reward`` (a function of the pass rate) replaces it.
        reward_refused: the conjecturer's reward for an invalid, duplicate or trivial statement.
        trivial_tactics: a conjecture one of these proves in one step is trivial.
        max_statement_chars: the longest conjecture (the action space).
    """

    metadata = {"name": "ConjectureProve-v0", "render_modes": ["ansi", "human"], "is_parallelizable": False}

    def __init__(
        self,
        theorem: TheoremSpec = None,
        header: str = "",
        server: str | None = None,
        *,
        process_factory: Callable[[], LeanProcess] | None = None,
        num_seeds: int = 64,
        seed_difficulty: Any = (1, 3),
        attempts: int = 4,
        max_steps: int = 16,
        band: tuple[float, float] = (0.0, 0.25),
        reward_in_band: float = 1.0,
        conjecturer_reward: Callable[[float], float] | None = None,
        reward_refused: float = -1.0,
        reward_proved: float = 1.0,
        reward_rejected: float = 0.0,
        reward_step: float = 0.0,
        trivial_tactics: Sequence[str] = TRIVIAL_TACTICS,
        tactic_timeout_ms: int = 1000,
        policy: SoundnessPolicy | None = None,
        budget: Budget | None = None,
        max_text_length: int = 8192,
        max_statement_chars: int = 2048,
        lease_timeout_s: float = 60.0,
        read_timeout_s: float = 120.0,
        factorized: bool = False,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if attempts < 1 or max_steps < 1:
            raise ValueError(f"attempts and max_steps must be at least 1, got {attempts} and {max_steps}")
        self.seeds = (_seed_pairs(theorem, header) if theorem is not None
                      else _default_seeds(num_seeds, 0, seed_difficulty))
        if not self.seeds:
            raise ValueError("no seed theorem: pass theorem=... (a statement, rows, a theorem set)")
        if not (len(tuple(band)) == 2 and 0.0 <= band[0] < band[1] <= 1.0):
            raise ValueError(f"band must be (low, high) with 0 <= low < high <= 1 (pass rates), got {band}")
        self.attempts, self.max_steps = int(attempts), int(max_steps)
        self.band, self.reward_in_band, self.reward_refused = tuple(band), reward_in_band, reward_refused
        self._conjecturer_reward = conjecturer_reward
        self.trivial_tactics = tuple(trivial_tactics)
        self.max_text_length, self.render_mode = max_text_length, render_mode
        local = server is None and process_factory is None
        # the prover's attempts: LeanProof-v0 itself (its leases, outcomes, rewards and final check)
        self.prover_env = LeanProofEnv(
            None, header, server, process_factory=open_backend(None, factorized=factorized) if local else process_factory,
            max_steps=self.max_steps, tactic_timeout_ms=tactic_timeout_ms, reward_proved=reward_proved,
            reward_rejected=reward_rejected, reward_step=reward_step, policy=policy, budget=budget,
            max_text_length=max_text_length, lease_timeout_s=lease_timeout_s, read_timeout_s=read_timeout_s,
            fresh_process=local)
        self.possible_agents = list(AGENTS)
        self.observation_spaces = {a: LeanText(max_text_length, min_length=0) for a in AGENTS}
        self.action_spaces = {"conjecturer": LeanText(max_statement_chars, min_length=0, charset=TACTIC_SAMPLE_CHARSET),
                              "prover": self.prover_env.action_space}
        self.known: set[str] = {conjecture_key(t) for t, _ in self.seeds}  # what a duplicate repeats
        self.np_random, _ = seeding.np_random(None)
        self.rounds = 0
        self.agents: list[str] = []
        self._round: dict[str, Any] = {}

    # ------------------------------------------------------------------ PettingZoo API
    def observation_space(self, agent: str) -> LeanText:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> LeanText:
        return self.action_spaces[agent]

    @property
    def attempt(self) -> int:
        """The prover's attempt under way (1..``attempts``); 0 before the conjecture is accepted."""
        return self._round.get("attempt", 0) if self._round.get("phase") == "prove" else 0

    @property
    def session(self):
        """The prover's current attempt's :class:`~leangym.session.ProofSession` (search API), else None."""
        return self.prover_env.session if self._round.get("phase") == "prove" else None

    RESET_OPTIONS = ("theorem", "index")

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new round on a seed drawn at random (``options={"index": i}`` picks one of ``seeds``,
        ``options={"theorem": spec}`` gives one; other options are ignored, as PettingZoo's API test
        passes some)."""
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
            for i, agent in enumerate(AGENTS):
                self.action_spaces[agent].seed(seed + i)
        options = dict(options or {})
        if options.get("theorem") is not None:
            seed_theorem, proof = _seed_pairs(options["theorem"], self.prover_env.header)[0]
        elif options.get("index") is not None:
            seed_theorem, proof = self.seeds[theorem_index(options["index"], len(self.seeds))]
        else:
            seed_theorem, proof = self.seeds[int(self.np_random.integers(len(self.seeds)))]
        self.rounds += 1
        self.agents = list(AGENTS)
        self.rewards = {a: 0.0 for a in AGENTS}
        self._cumulative_rewards = {a: 0.0 for a in AGENTS}
        self.terminations = {a: False for a in AGENTS}
        self.truncations = {a: False for a in AGENTS}
        self._round = {"phase": "conjecture", "seed": seed_theorem, "seed_proof": proof, "conjecture": None,
                       "outcome": None, "proofs": [], "attempt": 0, "prover_obs": ""}
        self.infos = {"conjecturer": self._conjecturer_info(), "prover": {}}
        self.agent_selection = "conjecturer"

    def observe(self, agent: str) -> TextObservation:
        if agent == "conjecturer":
            return TextObservation(clip_text(self.seed_text(), self.max_text_length))
        return TextObservation(self._round.get("prover_obs", ""))

    def seed_text(self) -> str:
        """What the conjecturer sees: the seed statement, then its proof when one is known."""
        seed, proof = self._round.get("seed"), self._round.get("seed_proof") or ()
        if seed is None:
            return ""
        return seed.formal_statement + ("\n-- proof:" + "".join(f"\n  {t}" for t in proof) if proof else "")

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if not isinstance(action, str):
            raise TypeError(f"ConjectureProve-v0: the {agent}'s action is text, got {type(action).__name__} {action!r}")
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        if agent == "conjecturer":
            self._conjecture(action)
        else:
            self._prove(action)
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    # ------------------------------------------------------------------ the conjecture
    def _conjecture(self, text: str) -> None:
        r = self._round
        limit = self.action_spaces["conjecturer"].max_length
        if len(text) > limit:  # refused before Lean would spend its time elaborating it
            return self._refuse("invalid", f"the statement has {len(text)} characters, more than max_statement_chars="
                                           f"{limit}")
        try:
            conjecture = Theorem(text, name=f"conjecture_{self.rounds}", header=r["seed"].header)
        except (TheoremError, ValueError) as e:
            return self._refuse("invalid", f"{e}")
        r["conjecture"] = conjecture
        key = conjecture_key(conjecture)
        if key in self.known:
            return self._refuse("duplicate", "the statement is a seed or an earlier conjecture "
                                             "(up to its name, binder names and whitespace)")
        try:
            obs, _ = self.prover_env.reset(options={"theorem": conjecture})  # Lean elaborates it: a proof start
        except LeanError as e:
            return self._refuse("invalid", f"Lean rejected the statement: {e}")
        except ServerError as e:
            return self._server_failure(f"server failure while starting the conjecture: {e}")
        self.known.add(key)
        closer = self._trivial_closer()
        if closer is not None:
            return self._refuse("trivial", f"'{closer}' proves it in one step")
        r.update(phase="prove", attempt=1, prover_obs=obs)
        self.agent_selection = "prover"
        self.infos = {"conjecturer": self._conjecturer_info(), "prover": self._prover_info({"outcome": "reset"})}

    def _trivial_closer(self) -> str | None:
        """The first of ``trivial_tactics`` that closes every goal at once (one Lean call for them all)."""
        if not self.trivial_tactics:
            return None
        session = self.prover_env.session
        try:
            results = session.apply_many(session.root, list(self.trivial_tactics))
        except BudgetExhausted:  # a budget smaller than the check: the prover's attempts will tell
            return None
        for result in results:
            if result.ok and not result.states:
                return result.tactic
        return None

    def _refuse(self, outcome: str, why: str) -> None:
        self.rewards["conjecturer"] = float(self.reward_refused)
        self._end_round(outcome, error=why)

    # ------------------------------------------------------------------ the prover's attempts
    def _prove(self, tactic: str) -> None:
        r = self._round
        obs, reward, terminated, truncated, info = self.prover_env.step(tactic)
        self.rewards["prover"] = float(reward)
        r["prover_obs"] = obs
        if info.get("outcome") == "proved":
            r["proofs"].append(info["proof_script"])
        self.infos["prover"] = self._prover_info(info)
        if info.get("outcome") == "server_failure":
            return self._server_failure(info.get("error", "server failure"))
        if not (terminated or truncated):
            return
        if r["attempt"] < self.attempts:
            try:
                r["prover_obs"], _ = self.prover_env.reset(options={"theorem": r["conjecture"]})
            except (LeanError, ServerError) as e:  # (it started before: a failing server now)
                return self._server_failure(f"server failure while restarting the conjecture: {e}")
            r["attempt"] += 1  # (the info stays the step's, which ended the attempt before it)
            self.infos["prover"]["next_attempt"] = r["attempt"]
            return
        rate = len(r["proofs"]) / self.attempts
        r["pass_rate"] = rate
        self.rewards["conjecturer"] = float(self.conjecturer_reward(rate))
        outcome = ("unproved" if rate == 0 else "in_band" if self.band[0] < rate <= self.band[1] else "out_of_band")
        self._end_round(outcome)

    def conjecturer_reward(self, pass_rate: float) -> float:
        if self._conjecturer_reward is not None:
            return self._conjecturer_reward(pass_rate)
        return band_reward(pass_rate, self.band, self.reward_in_band)

    # ------------------------------------------------------------------ round end
    def _end_round(self, outcome: str, *, truncate: bool = False, error: str | None = None) -> None:
        r = self._round
        r.update(phase="over", outcome=outcome, prover_obs="")
        if error is not None:
            r["error"] = error
        for a in self.agents:
            (self.truncations if truncate else self.terminations)[a] = True
        self.infos["conjecturer"] = self._conjecturer_info()
        self.infos.setdefault("prover", {})
        self.agent_selection = self.agents[0]  # each agent now takes its dead step (action None)

    def _server_failure(self, why: str) -> None:
        self.prover_env.close()  # every lease goes back; the next round leases afresh
        self._end_round("server_failure", truncate=True, error=why)

    def _conjecturer_info(self) -> dict[str, Any]:
        r = self._round
        info = {k: r.get(k) for k in ("seed", "seed_proof", "conjecture", "outcome")}
        info["proofs"] = list(r.get("proofs", ()))
        if "pass_rate" in r:
            info["pass_rate"] = r["pass_rate"]
        if "error" in r:
            info["error"] = r["error"]
        return info

    def _prover_info(self, inner: Mapping[str, Any]) -> dict[str, Any]:
        return {**inner, "attempt": self._round["attempt"], "attempts": self.attempts,
                "conjecture": self._round["conjecture"]}

    # ------------------------------------------------------------------ the rest
    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        r = self._round
        lines = [f"round {self.rounds}: {r.get('phase', 'not started')}"
                 + (f", outcome {r['outcome']}" if r.get("outcome") else ""),
                 "seed: " + (r["seed"].formal_statement if r.get("seed") else "-")]
        if r.get("conjecture") is not None:
            lines.append("conjecture: " + r["conjecture"].formal_statement)
        if r.get("phase") == "prove":
            lines.append(f"attempt {r['attempt']}/{self.attempts}:\n{r['prover_obs']}")
        text = "\n".join(lines) + "\n"
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Give every Lean lease back (idempotent)."""
        self.prover_env.close()


raw_env = ConjectureProveEnv


def env(**kwargs: Any) -> AECEnv:
    """``ConjectureProve-v0`` as PettingZoo builds its envs: the raw env in ``OrderEnforcingWrapper``."""
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))
