"""Playing ``ConjectureProve-v0`` rounds in a batch: one env per round, the prover's searches of
attempt j of every round in ONE batched MCTS (the AlphaProof agent's ``run_batched_search``).

An attempt: the search runs on the attempt's session (``env.session``, as a search next to
``LeanProof-v0``'s ``step`` may); a verified proof is then played through ``env.step`` in the
order Lean runs it (first goal first), so the env's own final check decides the reward; an
attempt without one plays empty tactics (refused by the soundness policy without a Lean
call) until its ``max_steps`` end it.
"""
from __future__ import annotations

import dataclasses
import random
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.search import SearchResult, run_batched_search
from agents.alphaproof.mcts import SearchConfig
from agents.stp import conjecturer
from agents.stp.mutate import goal_text, statement
from leangym.envs.conjecture_prove import ConjectureProveEnv, conjecture_key
from leangym.session import VERIFY_CALLS
from leangym.proof import ProofTree
from leangym.theorem import Theorem

MIN_CALLS = VERIFY_CALLS + 2  # an attempt's least Lean calls: its final check's and two tactics'

__all__ = ["Round", "play_rounds", "escalating", "first_goal_order", "choose", "connectives", "prover_values"]


@dataclass
class Round:
    seed_text: str
    seed: Any  # the seed Theorem
    signature: str  # what the conjecturer wrote
    outcome: str  # the env's: invalid | duplicate | trivial | in_band | out_of_band | unproved | server_failure
    reward: float
    pass_rate: float | None
    proofs: list[str]  # verified proof scripts of the conjecture (one per proved attempt)
    conjecture: Any = None  # the Theorem, once accepted
    searches: list[SearchResult] = field(default_factory=list)


def first_goal_order(tree: ProofTree) -> list[str]:
    """The tactics of a proof tree in the order ``LeanProof-v0``'s ``step`` takes them (each on the
    first open goal, a tactic's new goals before the older ones): a pre-order walk."""
    return [tree.tactic] + [t for child in tree.children for t in first_goal_order(child)]


def connectives(text: str) -> int:
    """A conjecture's size: its logical connectives (what a PropLogic proof has to take apart)."""
    return sum(text.count(c) for c in "∧∨→↔¬")


def _seen(env: ConjectureProveEnv, name: str, signature: str) -> bool:
    try:  # the env's own duplicate key; a statement it refuses anyway is not "seen"
        header = env.infos["conjecturer"]["seed"].header
        return conjecture_key(Theorem(statement(name, signature), name=name, header=header)) in env.known
    except Exception:  # noqa: BLE001 -- invalid: the env refuses it (and says why)
        return False


def prover_values(prover: PolicyValueNet, signatures: Sequence[str]) -> dict[str, float]:
    """The prover's value (expected discount of its steps to a proof: low is hard for it) of each
    signature's proof start, in one batch; a signature that does not read as ``(binders) : goal`` gets none."""
    texts = {}
    for s in signatures:
        try:
            texts[s] = goal_text(s)
        except ValueError:
            pass
    evals = prover.evaluate(list(texts.values()), 0) if texts else []
    return {s: ev.value for s, ev in zip(texts, evals)}


def choose(env: ConjectureProveEnv, name: str, options: Sequence[str], rng: random.Random, novel: bool = True,
           prefer: str = "any", values: dict[str, float] | None = None, aim: float = 0.5) -> str:
    """One of the sampled signatures: with ``novel`` those already seen (a seed or an earlier conjecture)
    are dropped first (resampling; all seen: the first is played and penalised); ``prefer`` 'harder' /
    'easier' takes the one with the most / fewest connectives, 'value' the one whose prover value
    (``values``) is nearest ``aim`` (those without a value last), 'any' one at random."""
    if novel:
        options = [s for s in options if not _seen(env, name, s)] or list(options[:1])
    if not options:
        return ""
    if prefer == "value":
        return min(options, key=lambda s: abs((values or {}).get(s, 10.0) - aim))
    if prefer == "harder":
        return max(options, key=connectives)
    if prefer == "easier":
        return min(options, key=connectives)
    return options[int(rng.random() * len(options))]


def escalating(config: SearchConfig, attempts: int) -> list[SearchConfig]:
    """One search per attempt, each with twice the simulations and Lean calls of the one before, the last
    with ``config``'s (never below 1 simulation and ``MIN_CALLS``): MCTS attempts at one budget mostly all
    prove a conjecture or all fail, so a pass rate of 1 in 4 is rare; over doubling budgets it reads how
    much search a proof takes (1/k: mostly, only the largest search proves it)."""
    def half(n: int | None, times: int, low: int) -> int | None:
        return None if n is None else max(min(low, n), n >> times)
    return [dataclasses.replace(config, num_simulations=half(config.num_simulations, attempts - 1 - j, 1),
                                max_lean_calls=half(config.max_lean_calls, attempts - 1 - j, MIN_CALLS))
            for j in range(attempts)]


def _play_attempt(env: ConjectureProveEnv, tactics: Sequence[str]) -> None:
    attempt = env.attempt
    for tactic in [*tactics, *[""] * env.max_steps]:
        if env.attempt != attempt:  # the attempt ended (the next one started, or the round is over)
            return
        env.step(tactic)


def play_rounds(envs: Sequence[ConjectureProveEnv], conj: PolicyValueNet, prover: PolicyValueNet,
                config: SearchConfig | Sequence[SearchConfig], rng: random.Random, tag: str,
                seeds: Sequence[Any] | None = None, candidates: int = 4, novel: bool = True, prefer: str = "any",
                aim: float = 0.5) -> list[Round]:
    """One round per env: conjectures sampled for each seed (one of ``candidates`` distinct ones,
    picked by :func:`choose`; ``prefer='value'``: the prover's value nearest ``aim``), then the prover's
    attempts (``config``: every attempt's search, or one per attempt: :func:`escalating`). ``seeds``: a seed
    per env (``reset`` options), else each env draws its own. Every env's round is finished (dead steps
    taken) on return."""
    attempts = max(env.attempts for env in envs)
    configs = [config] * attempts if isinstance(config, SearchConfig) else list(config)
    if len(configs) != attempts:  # (an attempt without a search would leave its round unfinished)
        raise ValueError(f"play_rounds: {len(configs)} search configs for {attempts} attempts; give one per attempt")
    for i, env in enumerate(envs):
        env.reset(options={"theorem": seeds[i]} if seeds is not None else None)
    texts = [env.observe("conjecturer") for env in envs]
    proposals = conjecturer.propose(conj, [str(t) for t in texts], candidates)
    values = prover_values(prover, [s for options in proposals for s in options]) if prefer == "value" else None
    rounds = []
    for i, (env, options) in enumerate(zip(envs, proposals)):
        name = f"conjecture_{tag}_{i}"
        signature = choose(env, name, options, rng, novel, prefer, values, aim)
        env.step(statement(name, signature))
        rounds.append(Round(str(texts[i]), env.infos["conjecturer"]["seed"], signature, "", 0.0, None, []))
    for attempt_config in configs:
        active = [i for i, env in enumerate(envs) if env.attempt]
        if not active:
            break
        try:
            results = run_batched_search([envs[i].session for i in active], prover, attempt_config)
        except Exception as e:  # noqa: BLE001 -- a search bug costs these attempts (unproved), not the run
            print(f"[rounds] search batch raised {type(e).__name__}: {e}; its attempts count as unproved",
                  file=sys.stderr)
            results = [None] * len(active)
        for i, result in zip(active, results):
            if result is not None:
                rounds[i].searches.append(result)
            tactics = first_goal_order(result.tree.proof()) if result is not None and result.verified else []
            _play_attempt(envs[i], tactics)
    for env, rnd in zip(envs, rounds):
        info = env.infos["conjecturer"]
        rnd.outcome, rnd.pass_rate, rnd.proofs = info["outcome"], info.get("pass_rate"), list(info["proofs"])
        rnd.conjecture = info["conjecture"]
        assert env.agent_selection == "conjecturer"  # (a round ends with its dead steps, conjecturer first)
        rnd.reward = float(env.last()[1])  # its reward for the round
        while env.agents:  # the dead steps that close the round
            env.step(None)
    return rounds
