"""``TacticMenuEnv``: a text-in/text-out leangym env as Box observations and masked ``Discrete(K)`` actions.

Wraps ``PropLogic-v0`` / ``LeanProof-v0`` (or anything whose ``info`` carries
``goals``) for off-the-shelf RL: the observation is :class:`GoalCodec`'s
array, the action an index into :class:`TacticMenu`, and ``action_masks()``
(what sb3-contrib's MaskablePPO calls) the menu's syntax mask. With
``mask_rejected`` an action Lean rejected is also masked until the state
changes: the wrapped env leaves the state unchanged on a rejection, so
trying it again can only waste a step. When that would mask everything,
the syntax mask alone is returned (never all false).

Rewards, termination and ``info`` are the wrapped env's; ``info`` gains
``tactic`` (what was sent) and ``candidates`` (the menu of the new state).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from baselines.tactic_menu import Menu, TacticMenu
from baselines.text_tokens import GoalCodec


def allowed(menu: Menu, rejected: set[int]) -> np.ndarray:
    """The syntax mask minus the rejected actions, unless that leaves nothing."""
    mask = menu.mask.copy()
    if rejected:
        mask[list(rejected)] = False
        if not mask.any():
            return menu.mask.copy()
    return mask


def menu_index(action: Any, size: int) -> int:
    """An action of ``Discrete(size)`` as an int; anything else is refused here, not at a later mask."""
    arr = np.asarray(action)
    if arr.size != 1 or arr.dtype.kind not in "iu" or not 0 <= int(arr.reshape(-1)[0]) < size:
        raise ValueError(f"action {action!r} is not in Discrete({size}): pass an integer index 0..{size - 1} "
                         "into the tactic menu (info['candidates'] lists the tactics)")
    return int(arr.reshape(-1)[0])


class TacticMenuEnv(gym.Wrapper, gym.utils.RecordConstructorArgs):
    def __init__(self, env: gym.Env, n_slots: int = 8, target_len: int = 64, hyp_len: int = 48,
                 mask_rejected: bool = True) -> None:
        # recorded so that env.spec rebuilds this wrapper too (gym.make(env.spec), check_env)
        gym.utils.RecordConstructorArgs.__init__(self, n_slots=n_slots, target_len=target_len, hyp_len=hyp_len,
                                                 mask_rejected=mask_rejected)
        super().__init__(env)
        self.menu_spec = TacticMenu(n_slots)
        self.codec = GoalCodec(n_slots, target_len, hyp_len)
        self.observation_space = self.codec.space()
        self.action_space = spaces.Discrete(self.menu_spec.size)
        self.mask_rejected = mask_rejected
        self._menu = self.menu_spec.build(())
        self._rejected: set[int] = set()

    def _observe(self, info: dict[str, Any]) -> np.ndarray:
        goals = info.get("goals", ())
        self._menu = self.menu_spec.build(goals)
        info["candidates"] = self._menu.tactics
        return self.codec.encode(goals)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        _, info = self.env.reset(seed=seed, options=options)
        self._rejected = set()
        return self._observe(info), info

    def step(self, action: Any):
        a = menu_index(action, self.menu_spec.size)
        tactic = self.menu_spec.tactic(self._menu, a)
        _, reward, terminated, truncated, info = self.env.step(tactic)
        info["tactic"] = tactic
        if info.get("outcome") in ("rejected", "timeout"):
            self._rejected.add(a)
        else:
            self._rejected = set()
        return self._observe(info), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return allowed(self._menu, self._rejected if self.mask_rejected else set())
