"""leangym: Gymnasium environments for Lean 4 theorem proving.

``import leangym`` registers every env id of ``envs_registry.yaml``
(``LeanProof-v0``, ``PropLogic-v0``); ``gym.make("leangym:LeanProof-v0", ...)``
does the same without a prior import. The env classes and
:func:`open_session` load lazily, so importing leangym stays cheap.
"""
from __future__ import annotations

from typing import Any

from leangym.registry import register_envs

__all__ = ["LeanProofEnv", "PropLogicEnv", "LeanVectorEnv", "open_session", "register_envs", "ENV_IDS"]

try:
    ENV_IDS: tuple[str, ...] = tuple(register_envs())
except FileNotFoundError as _e:  # keep the rest of leangym (client, simulator) importable
    import warnings

    warnings.warn(f"{_e}; no leangym env ids are registered", RuntimeWarning, stacklevel=2)
    ENV_IDS = ()

_LAZY = {
    "LeanProofEnv": "leangym.envs.lean_proof",
    "open_session": "leangym.envs.lean_proof",
    "PropLogicEnv": "leangym.envs.prop_logic",
    "LeanVectorEnv": "leangym.envs.vector",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'leangym' has no attribute {name!r}")
