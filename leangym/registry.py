"""Registers the env ids listed in ``envs_registry.yaml`` with Gymnasium.

Entries with ``api: pettingzoo`` are multi-agent (PettingZoo AEC) envs: Gymnasium does not hold
them; :func:`make_multi` builds them (``leangym.make_multi("ConjectureProve-v0", attempts=8)``).

``envs_registry.yaml`` is the single list of leangym env ids. It is looked up,
first found wins:

1. ``$LEANGYM_REGISTRY`` (an explicit path),
2. next to the package, at the repository root (source checkout, editable install),
3. inside the package (``leangym/envs_registry.yaml``, when shipped as package data),
4. ``<prefix>/share/leangym/envs_registry.yaml`` (installed as a data file; ``--user`` too).
"""
from __future__ import annotations

import os
import site
import sys
import sysconfig
from importlib import resources
from pathlib import Path
from typing import Any

import gymnasium as gym

__all__ = ["REGISTRY_FILE", "registry_path", "load_registry", "register_envs", "multi_agent_ids", "make_multi"]

REGISTRY_FILE = "envs_registry.yaml"
_FIELDS = {"id", "entry_point", "vector_entry_point", "kwargs", "max_episode_steps", "nondeterministic",
           "reward_threshold", "order_enforce", "disable_env_checker", "api"}
_APIS = ("gymnasium", "pettingzoo")


def _candidates() -> list[Path]:
    out = []
    if os.environ.get("LEANGYM_REGISTRY"):
        out.append(Path(os.environ["LEANGYM_REGISTRY"]))
    package_dir = Path(__file__).resolve().parent
    out.append(package_dir.parent / REGISTRY_FILE)
    try:
        out.append(Path(str(resources.files("leangym").joinpath(REGISTRY_FILE))))
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - zipped or odd installs
        pass
    for prefix in dict.fromkeys((sysconfig.get_path("data"), sys.prefix, site.getuserbase())):
        out.append(Path(prefix) / "share" / "leangym" / REGISTRY_FILE)
    return out


def registry_path() -> Path:
    """Where ``envs_registry.yaml`` is (see the module docstring); FileNotFoundError if nowhere."""
    tried = _candidates()
    for path in tried:
        if path.is_file():
            return path
    raise FileNotFoundError(f"leangym: {REGISTRY_FILE} not found; looked at: " + ", ".join(map(str, tried)))


def load_registry(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The entries of the registry file, validated (unknown fields and duplicate ids are errors)."""
    import yaml

    path = Path(path) if path is not None else registry_path()
    with open(path, encoding="utf-8") as f:
        entries = yaml.safe_load(f) or []
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of env entries, got {type(entries).__name__}")
    seen: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("id") or not entry.get("entry_point"):
            raise ValueError(f"{path}: every entry needs 'id' and 'entry_point': {entry!r}")
        unknown = set(entry) - _FIELDS
        if unknown:
            raise ValueError(f"{path}: {entry['id']}: unknown fields {sorted(unknown)} (known: {sorted(_FIELDS)})")
        if entry.get("api", "gymnasium") not in _APIS:
            raise ValueError(f"{path}: {entry['id']}: api must be one of {_APIS}, got {entry['api']!r}")
        if entry["id"] in seen:
            raise ValueError(f"{path}: duplicate id {entry['id']!r}")
        seen.add(entry["id"])
    return entries


def register_envs(path: str | Path | None = None) -> list[str]:
    """Register every Gymnasium id of the registry file (idempotent). Returns the ids."""
    ids = []
    for entry in load_registry(path):
        entry = dict(entry)
        if entry.pop("api", "gymnasium") != "gymnasium":
            continue
        env_id = entry.pop("id")
        ids.append(env_id)
        if env_id in gym.registry and gym.registry[env_id].entry_point == entry["entry_point"]:
            continue
        entry["kwargs"] = dict(entry.get("kwargs") or {})
        gym.register(env_id, **entry)
    return ids


def multi_agent_ids(path: str | Path | None = None) -> list[str]:
    """The PettingZoo env ids of the registry file (``api: pettingzoo``)."""
    return [e["id"] for e in load_registry(path) if e.get("api") == "pettingzoo"]


def make_multi(env_id: str, **kwargs: Any) -> Any:
    """A PettingZoo env of the registry (``api: pettingzoo``): its entry point with the entry's
    ``kwargs`` overridden by ``kwargs``, in PettingZoo's ``OrderEnforcingWrapper`` (as its ``env()``
    factories build envs). ``env.unwrapped`` is the raw env."""
    import importlib

    from pettingzoo.utils import wrappers

    entries = {e["id"]: e for e in load_registry()}
    entry = entries.get(env_id)
    if entry is None or entry.get("api") != "pettingzoo":
        known = [i for i, e in entries.items() if e.get("api") == "pettingzoo"]
        hint = f"{env_id} is a Gymnasium env: use gymnasium.make" if entry is not None else f"no env {env_id!r}"
        raise ValueError(f"{hint}; the multi-agent ids are {known}")
    module, _, name = entry["entry_point"].partition(":")
    cls = getattr(importlib.import_module(module), name)
    return wrappers.OrderEnforcingWrapper(cls(**{**(entry.get("kwargs") or {}), **kwargs}))
