"""N Lean envs whose Lean calls run concurrently in threads (the work is waiting on Lean: I/O).

:class:`LeanVectorEnv` is a :class:`gymnasium.vector.SyncVectorEnv` whose
``reset`` and ``step`` call the sub-envs from a thread pool, one thread per
env. Each sub-env holds its own lease. Semantics are Gymnasium's: autoreset
``NEXT_STEP`` by default (``SAME_STEP`` and ``DISABLED`` too), seeds
``seed + i``, ``options["reset_mask"]``, infos batched with ``_key`` masks.
An autoreset that meets a server failure does not raise from ``step``: that
sub-env returns an empty observation with ``truncated=True`` and
``info["error"]``, and tries again at its next step. The empty observation is
a stand-in, not an episode: each step that tries again ends it (``truncated``;
under ``SAME_STEP`` with ``final_obs=""``), and the action given for it is not
sent. Such steps have ``info["outcome"]`` ``"server_failure"`` (a failed try)
or ``"reset"``, so episode loggers can leave them out. (Gymnasium's own
sync/async vector envs raise from ``step`` here instead.)
Observations are a tuple of strings (the batched ``Text`` space is a ``Tuple``).

``envs.sessions`` lists the sub-envs' current :class:`~leangym.session.ProofSession`
objects, for batched search next to ``step``.

Made by ``gym.make_vec("LeanProof-v0", num_envs=16, server=URL, ...)`` (the
registered ``vector_entry_point``); ``vectorization_mode="sync"`` gives a plain
``SyncVectorEnv`` of the same envs instead.
"""
from __future__ import annotations

from copy import deepcopy
from functools import partial
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import concatenate, iterate

from leangym.backends.types import LeanError, ServerError
from leangym.daemon_pool import DaemonPool
from leangym.session import ProofSession

__all__ = ["LeanVectorEnv", "make_lean_proof_vector", "make_prop_logic_vector"]


class LeanVectorEnv(SyncVectorEnv):
    """A ``SyncVectorEnv`` that runs the sub-envs' ``reset``/``step`` concurrently in threads.

    Args:
        env_fns: callables building the sub-envs (built in order, in the caller's thread).
        autoreset_mode: Gymnasium's autoreset mode (default ``NEXT_STEP``).
        max_workers: threads (default: one per env).
        copy: return copies of the batched observations (strings are immutable: off by default).
    """

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], *, copy: bool = False,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                 max_workers: int | None = None) -> None:
        super().__init__(env_fns, copy=copy, autoreset_mode=autoreset_mode)
        # daemon threads: a sub-env waiting on a hung server never holds up Ctrl-C or exit
        self._pool = DaemonPool(max_workers or self.num_envs, name="leangym-vec")
        # per sub-env: the info of its failed autoreset (server failure, statement rejected), or None
        self._reset_failure: list[dict | None] = [None] * self.num_envs

    @property
    def sessions(self) -> list[ProofSession | None]:
        """The sub-envs' current proof sessions (``None`` before their first reset)."""
        return [env.unwrapped.session for env in self.envs]

    def _map(self, fn: Callable[[int], Any], indices: Sequence[int]) -> list[Any]:
        """``fn(i)`` for each index, concurrently; results in order; the first exception is raised
        (after the calls still running have ended).

        First it waits for the sub-env calls a Ctrl-C left running: a ``reset()`` right after an
        interrupted ``step()`` must not reset a sub-env (and give its lease back) while another thread
        is still inside that sub-env's step.
        """
        self._pool.settle()
        if len(indices) <= 1:
            return [fn(i) for i in indices]
        return self._pool.map(fn, indices)

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[tuple[str, ...], dict[str, Any]]:
        if seed is None:
            seed = [None] * self.num_envs
        elif isinstance(seed, int):
            seed = [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(f"If seeds are passed as a list the length must match num_envs={self.num_envs} "
                             f"but got length={len(seed)}.")
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, dtype=np.bool_)
        elif not (isinstance(mask, np.ndarray) and mask.shape == (self.num_envs,) and mask.dtype == np.bool_
                  and mask.any()):
            raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},) "
                             f"with at least one True value, got {mask!r}")
        indices = [i for i in range(self.num_envs) if mask[i]]
        results = self._map(lambda i: self.envs[i].reset(seed=seed[i], options=options or None), indices)
        infos: dict[str, Any] = {}
        for i, (obs, info) in zip(indices, results):
            self._env_obs[i] = obs
            infos = self._add_info(infos, info, i)
        self._terminations[mask] = False
        self._truncations[mask] = False
        self._autoreset_envs[mask] = False
        for i in indices:
            self._reset_failure[i] = None
        return self._batch(), infos

    def _step_one(self, i: int, action: Any) -> tuple[Any, float, bool, bool, dict, dict | None]:
        env, mode = self.envs[i], self.autoreset_mode
        stand_in = self._reset_failure[i]
        if stand_in is not None or (mode == AutoresetMode.NEXT_STEP and self._autoreset_envs[i]):
            obs, info, ok = self._autoreset(i)
            if mode == AutoresetMode.SAME_STEP and stand_in is not None:
                # SAME_STEP resets inside a done step: the empty stand-in observation ends here, as in
                # Gymnasium's contract, so the episode that follows starts with its own first action
                return obs, 0.0, False, True, info, {"final_obs": "", "final_info": stand_in}
            return obs, 0.0, False, not ok, info, None
        if mode == AutoresetMode.DISABLED:
            assert not self._autoreset_envs[i], f"sub-env {i} needs a reset (autoreset_mode=DISABLED)"
        obs, reward, terminated, truncated, info = env.step(action)
        final = None
        if mode == AutoresetMode.SAME_STEP and (terminated or truncated):
            final = {"final_obs": obs, "final_info": info}
            obs, info, _ = self._autoreset(i)
        return obs, reward, terminated, truncated, info, final

    def _autoreset(self, i: int) -> tuple[Any, dict, bool]:
        """Reset sub-env ``i`` inside ``step``: (obs, info, whether it worked).

        A server failure does not escape ``step`` here either: the sub-env reports it
        (empty observation, ``info["error"]``, and ``truncated=True`` in the step that
        tried) and tries to reset again at its next step, so a vector env outlives a
        server that is down for a while. So does a drawn statement that Lean rejects
        (outcome ``statement_rejected``): the next reset draws again.
        """
        try:
            obs, info = self.envs[i].reset()
        except ServerError as e:
            info = {"outcome": "server_failure", "error": f"reset failed: {e}"}
        except LeanError as e:
            info = {"outcome": "statement_rejected", "error": f"reset failed: Lean rejected the statement: {e}"}
        else:
            self._reset_failure[i] = None
            return obs, info, True
        self._reset_failure[i] = info
        return "", dict(info), False

    def step(self, actions: Any) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = list(iterate(self.action_space, actions))
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")
        results = self._map(lambda i: self._step_one(i, actions[i]), range(self.num_envs))
        infos: dict[str, Any] = {}
        for i, (obs, reward, terminated, truncated, info, final) in enumerate(results):
            self._env_obs[i] = obs
            self._rewards[i], self._terminations[i], self._truncations[i] = reward, terminated, truncated
            if final is not None:
                infos = self._add_info(infos, final, i)
            infos = self._add_info(infos, info, i)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (self._batch(), np.copy(self._rewards), np.copy(self._terminations),
                np.copy(self._truncations), infos)

    def _batch(self) -> tuple[str, ...]:
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        return deepcopy(self._observations) if self.copy else self._observations

    def close_extras(self, **kwargs: Any) -> None:
        # Close the sub-envs concurrently too: each returns its lease over HTTP. Not after the calls a
        # Ctrl-C left running (no settle): closing on the way out must not wait on a hung server.
        if hasattr(self, "_pool"):
            if hasattr(self, "envs"):
                self._pool.map(lambda i: self.envs[i].close(), range(self.num_envs))
            self._pool.close()


def _vector(env_id: str, num_envs: int, max_episode_steps: int | None, autoreset_mode: Any,
            max_workers: int | None, kwargs: dict[str, Any]) -> LeanVectorEnv:
    # each sub-env exactly as gym.make and make_vec's "sync" mode build it (spec, order checks,
    # TimeLimit): max_episode_steps None is the registry's limit, -1 none
    fn = partial(gym.make, env_id, max_episode_steps=max_episode_steps, **kwargs)
    return LeanVectorEnv([fn] * int(num_envs), autoreset_mode=autoreset_mode, max_workers=max_workers)


def make_lean_proof_vector(num_envs: int = 1, *, max_episode_steps: int | None = None,
                           autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                           max_workers: int | None = None, **kwargs: Any) -> LeanVectorEnv:
    """``vector_entry_point`` of ``LeanProof-v0``: ``num_envs`` envs ``gym.make("LeanProof-v0", **kwargs)``,
    each with its own lease. ``max_episode_steps`` as in ``gym.make``: None the registry's limit, -1 none.

    A server with fewer processes than ``num_envs`` is a ValueError at once: the envs beyond its
    pool would each wait ``lease_timeout_s`` at their first reset, then fail.
    """
    if kwargs.get("process_factory") is None:
        _check_pool_size(int(num_envs), kwargs.get("server"))
    return _vector("LeanProof-v0", num_envs, max_episode_steps, autoreset_mode,
                   max_workers, kwargs)


def _check_pool_size(num_envs: int, server: str | None) -> None:
    from leangym.backends.leantree import LeanTreeClient
    from leangym.envs.lean_proof import default_server_url

    url = server or default_server_url()
    client = LeanTreeClient(url, read_timeout=10.0, retries=0)
    try:
        size = client.max_processes()
    except ServerError:
        return  # not up (yet): the first reset says so, and may find it up by then
    finally:
        client.close()
    if size is not None and num_envs > size:
        raise ValueError(f"num_envs={num_envs} envs hold a Lean process each, but the server at {url} runs at most "
                         f"{size}: restart it with --max-processes {num_envs} (or more), or make {size} envs")


def make_prop_logic_vector(num_envs: int = 1, *, max_episode_steps: int | None = None,
                           autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                           max_workers: int | None = None, **kwargs: Any) -> LeanVectorEnv:
    """``vector_entry_point`` of ``PropLogic-v0`` (``max_episode_steps`` as for ``LeanProof-v0``)."""
    return _vector("PropLogic-v0", num_envs, max_episode_steps, autoreset_mode,
                   max_workers, kwargs)
