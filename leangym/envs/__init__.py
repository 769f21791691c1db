"""The Gymnasium environments (ids and defaults: ``envs_registry.yaml``).

* :class:`~leangym.envs.lean_proof.LeanProofEnv` (``LeanProof-v0``): a theorem over a LeanTree server.
* :class:`~leangym.envs.prop_logic.PropLogicEnv` (``PropLogic-v0``): generated propositional
  theorems on the in-process simulated kernel.
* :class:`~leangym.envs.vector.LeanVectorEnv`: N envs whose Lean calls run concurrently in threads.

Submodules load lazily (``from leangym.envs import LeanProofEnv`` imports only what it needs).
"""
from __future__ import annotations

from typing import Any

__all__ = ["LeanProofEnv", "PropLogicEnv", "LeanVectorEnv", "open_session"]

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
    raise AttributeError(f"module 'leangym.envs' has no attribute {name!r}")
