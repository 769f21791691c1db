"""MaskablePPO (sb3-contrib) on ``PropLogic-v0`` through the tactic menu, and its prover.

Train (writes an SB3 zip), optionally scoring it on the held-out set::

    python -m baselines.maskable_ppo --timesteps 50000 --save runs/ppo_proplogic.zip --eval 100

Benchmark the trained policy (one linear episode at a time on the first
open goal, as ``LeanProof-v0`` steps)::

    python -m scripts.benchmark --agent baselines.maskable_ppo:MaskablePPOProver \\
        --agent-kwargs '{"path": "runs/ppo_proplogic.zip"}' --dataset proplogic-heldout --sim

The first episode follows the policy's most probable actions; later ones
(while the Lean-call budget lasts, at most ``episodes``) sample from it.
Within an episode a rejected action is masked until the state changes, as in
training (:class:`baselines.menu_env.TacticMenuEnv`).
"""
from __future__ import annotations

import os
import time
from typing import Any, Sequence

import gymnasium as gym

from baselines.menu_env import TacticMenuEnv, allowed
from baselines.tactic_menu import TacticMenu
from baselines.text_tokens import GoalCodec
from leangym.cli import ArgumentParser, HelpFormatter, run_cli
from leangym.proof import LinearWalk
from leangym.session import Budget, BudgetExhausted, ProofSession
from leangym.theorem import Theorem

# Shaping: a small cost per step (shorter proofs) and per rejected tactic (the sparse +1 stays dominant).
TRAIN_ENV = dict(difficulty=(1, 4), max_steps=24, reward_proved=1.0, reward_step=-0.01, reward_rejected=-0.01)
PPO_KWARGS = dict(n_steps=256, batch_size=256, n_epochs=4, learning_rate=3e-4, gamma=0.99, ent_coef=0.01,
                  policy_kwargs=dict(net_arch=[128, 128]))


def heldout_excluded(n: int) -> dict[str, Any]:
    """Env kwargs that keep ``heldout_set(n)`` out of training (the env excludes only its own
    ``heldout_size`` theorems, 200 by default: scoring on more would score on trained ones)."""
    from leangym.datasets.proplogic import HELDOUT_SIZE

    return {"heldout_size": max(n, HELDOUT_SIZE)}


def make_env(seed: int = 0, **env_kwargs: Any) -> TacticMenuEnv:
    env = TacticMenuEnv(gym.make("PropLogic-v0", **{**TRAIN_ENV, **env_kwargs}))
    env.reset(seed=seed)  # seeds the theorem stream
    return env


def train(timesteps: int, save: str | None = None, *, seed: int = 0, n_envs: int = 8, verbose: int = 0,
          env_kwargs: dict[str, Any] | None = None, **ppo_kwargs: Any):
    """A MaskablePPO ``MlpPolicy`` trained on ``n_envs`` PropLogic streams (in-process, one thread)."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)  # a tiny MLP: more threads only contend with the envs
    venv = DummyVecEnv([lambda i=i: Monitor(make_env(seed * 1000 + i, **(env_kwargs or {})))
                        for i in range(n_envs)])
    model = MaskablePPO("MlpPolicy", venv, seed=seed, verbose=verbose, device="cpu", **{**PPO_KWARGS, **ppo_kwargs})
    # The model seeded env i with seed + i for learn()'s first reset, so env 1 of --seed 0 would be
    # env 0 of --seed 1: seed them apart again (a run's n_envs theorem streams are its own).
    venv.seed(seed * 1000)
    if not verbose and "tensorboard_log" not in ppo_kwargs:
        # SB3's default logger makes an empty /tmp/SB3-<date> folder on every learn(), even when silent
        model.set_logger(Logger(folder=None, output_formats=[]))
    model.learn(total_timesteps=timesteps)
    if save:
        model.save(save)
    venv.close()
    return model


class MaskablePPOProver:
    """``leangym.prover.Prover`` running a trained MaskablePPO policy (see the module docstring)."""

    def __init__(self, path: str | None = None, model: Any = None, max_steps: int = 32, episodes: int = 16,
                 n_slots: int = 8, target_len: int = 64, hyp_len: int = 48) -> None:
        if model is None:
            if path is None:
                raise ValueError("MaskablePPOProver needs a path (or a model)")
            from sb3_contrib import MaskablePPO

            if not os.path.exists(path) and not os.path.exists(path + ".zip"):  # SB3 adds ".zip" itself
                raise FileNotFoundError(f"no MaskablePPO model at {path} "
                                        "(train one: python -m baselines.maskable_ppo --save PATH)")
            model = MaskablePPO.load(path, device="cpu")
        self.model = model
        self.menu, self.codec = TacticMenu(n_slots), GoalCodec(n_slots, target_len, hyp_len)
        if tuple(model.observation_space.shape) != (self.codec.size,) or model.action_space.n != self.menu.size:
            raise ValueError("the model was trained with another menu/codec layout (n_slots, target_len, hyp_len)")
        self.max_steps, self.episodes = max_steps, episodes

    def set_seed(self, seed: int) -> None:
        import torch

        torch.manual_seed(seed)  # the sampled episodes draw from torch

    def prove(self, theorem: Theorem, session: ProofSession, budget: Budget):
        try:
            for episode in range(self.episodes):
                proof = self._episode(session, deterministic=episode == 0)
                if proof is not None:
                    return proof
        except BudgetExhausted:
            pass
        return None

    def _episode(self, session: ProofSession, deterministic: bool):
        walk = LinearWalk(session.root)
        rejected: set[int] = set()
        for _ in range(self.max_steps):
            if walk.done:
                break
            goals = [g for state in walk.states for g in state.goals]
            menu = self.menu.build(goals)
            action, _ = self.model.predict(self.codec.encode(goals), action_masks=allowed(menu, rejected),
                                           deterministic=deterministic)
            a = int(action)
            rejected = set() if session.step_walk(walk, self.menu.tactic(menu, a)).ok else rejected | {a}
        return walk.tree()


def evaluate(prover: Any, n: int = 100, calls: int = 64) -> tuple[int, int]:
    """(solved, n) on ``heldout_set(n)`` with the in-process kernel, each proof re-checked."""
    from leangym.proof import script_of
    from leangym.datasets.proplogic import heldout_set
    from leangym.sim.local import LocalProcess
    from leangym.soundness import SoundnessPolicy, verify

    solved = 0
    for t in heldout_set(n):
        session = ProofSession(LocalProcess(), t.theorem, budget=Budget(calls))
        proof = prover.prove(t.theorem, session, session.budget)
        # judged as the benchmark harness does: the whole proof, on a clean process
        solved += proof is not None and verify(LocalProcess(), t.theorem, script_of(proof), SoundnessPolicy()).ok
    return solved, n


def _save_path(save: str, overwrite: bool) -> str:
    """Where SB3 will write the model (it adds ``.zip``), checked before training: not a directory, in
    one that exists, not over an earlier model unless ``overwrite``."""
    if os.path.isdir(save):
        raise ValueError(f"--save {save} is a directory; pass a file name in it, e.g. {os.path.join(save, 'ppo.zip')}")
    path = save if save.endswith(".zip") else save + ".zip"
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"--save {path}: no directory {parent}; create it first")
    if os.path.exists(path) and not overwrite:
        raise ValueError(f"{path} exists; choose another --save, or pass --overwrite to replace it")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m baselines.maskable_ppo", formatter_class=HelpFormatter,
                       description="Train MaskablePPO on PropLogic-v0 through the tactic menu.")
    p.add_argument("--timesteps", type=int, default=50_000, help="environment steps to train for")
    p.add_argument("--save", required=True, help="where to write the trained model (an SB3 zip; '.zip' is added "
                                                 "when the name lacks it)")
    p.add_argument("--overwrite", action="store_true", help="replace --save if it exists (default: refuse)")
    p.add_argument("--seed", type=int, default=0, help="seeds the policy and the theorem streams")
    p.add_argument("--n-envs", type=int, default=8, help="PropLogic theorem streams trained on at once")
    p.add_argument("--eval", type=int, default=0, help="then score it on heldout_set(N) (0: skip)")
    p.add_argument("--eval-calls", type=int, default=64, help="Lean-call budget per held-out theorem")
    p.add_argument("--verbose", type=int, default=0, help="SB3's output: 0 none, 1 training progress, 2 debug")
    a = p.parse_args(argv)
    for flag, value, lo in (("--timesteps", a.timesteps, 1), ("--n-envs", a.n_envs, 1), ("--eval", a.eval, 0),
                            ("--eval-calls", a.eval_calls, 1)):
        if value < lo:
            raise ValueError(f"{flag} must be at least {lo}, got {value}")
    save = _save_path(a.save, a.overwrite)
    t0 = time.monotonic()
    model = train(a.timesteps, save, seed=a.seed, n_envs=a.n_envs, verbose=a.verbose,
                  env_kwargs=heldout_excluded(a.eval))
    print(f"trained {a.timesteps} steps in {time.monotonic() - t0:.0f}s -> {save}")
    if a.eval:
        solved, n = evaluate(MaskablePPOProver(model=model), a.eval, a.eval_calls)
        print(f"held-out: {solved}/{n} solved at {a.eval_calls} Lean calls each")
    return 0


if __name__ == "__main__":
    run_cli(main)
