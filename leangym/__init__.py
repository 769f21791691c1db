"""leangym: Gymnasium environments for Lean 4 theorem proving.

``import leangym`` registers every env id of ``envs_registry.yaml``
(``LeanProof-v0``, ``PropLogic-v0``); ``gym.make("leangym:LeanProof-v0", ...)``
does the same without a prior import. ``leangym.make_multi("ConjectureProve-v0")`` builds the
multi-agent (PettingZoo) envs of the registry. The env classes and
:func:`open_session` load lazily, so importing leangym stays cheap.
"""
from __future__ import annotations

from typing import Any

from leangym.registry import make_multi, register_envs

__all__ = ["LeanProofEnv", "PropLogicEnv", "LeanVectorEnv", "open_session", "register_envs", "make_multi", "ENV_IDS"]

try:
    ENV_IDS: tuple[str, ...] = tuple(register_envs())
except FileNotFoundError as _e:  # keep the rest of leangym (client, simulator) importable
    import warnings

    warnings.warn(f"{_e}; no leangym env ids are registered", RuntimeWarning, stacklevel=2)
    ENV_IDS = ()

def __getattr__(name: str) -> Any:
    # The env classes live in leangym.envs, which loads them lazily too.
    if name in ("LeanProofEnv", "PropLogicEnv", "LeanVectorEnv", "open_session"):
        import leangym.envs

        return getattr(leangym.envs, name)
    raise AttributeError(f"module 'leangym' has no attribute {name!r}")
