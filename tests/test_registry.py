"""envs_registry.yaml is the single list of env ids; `import leangym` registers it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

import leangym
from leangym import registry

REPO = Path(__file__).resolve().parent.parent
YAML = REPO / "envs_registry.yaml"


def _entries() -> list[dict]:
    return yaml.safe_load(YAML.read_text(encoding="utf-8"))


def test_every_yaml_entry_is_registered_as_written():
    entries = [e for e in _entries() if e.get("api", "gymnasium") == "gymnasium"]  # (PettingZoo ones: make_multi)
    assert [e["id"] for e in entries] == list(leangym.ENV_IDS)
    assert {"LeanProof-v0", "PropLogic-v0"} <= set(leangym.ENV_IDS)
    for e in entries:
        spec = gym.spec(e["id"])
        assert spec.entry_point == e["entry_point"]
        assert spec.max_episode_steps == e.get("max_episode_steps")
        assert spec.nondeterministic == e.get("nondeterministic", False)
        assert spec.vector_entry_point == e.get("vector_entry_point")
        assert spec.kwargs == (e.get("kwargs") or {})


def test_registry_path_is_the_repo_file_and_registration_is_idempotent():
    assert registry.registry_path() == YAML
    assert registry.register_envs() == list(leangym.ENV_IDS)  # again: no error, no duplicate


def test_entry_points_resolve():
    for e in _entries():
        for key in ("entry_point", "vector_entry_point"):
            if e.get(key):
                module, _, name = e[key].partition(":")
                mod = __import__(module, fromlist=[name])
                assert callable(getattr(mod, name)), e[key]


def test_yaml_kwargs_are_the_constructors_own_defaults():
    """The YAML states gym.make's defaults for readers; the constructors hold them too, so the two must agree
    (else `gym.make` and a direct `LeanProofEnv()` would build different envs)."""
    import inspect

    for e in _entries():
        module, _, name = e["entry_point"].partition(":")
        cls = getattr(__import__(module, fromlist=[name]), name)
        defaults: dict = {}
        for klass in reversed(cls.__mro__):  # a subclass's default wins over its base's
            init = klass.__dict__.get("__init__")
            if init is not None:
                defaults.update({k: p.default for k, p in inspect.signature(init).parameters.items()
                                 if p.default is not inspect.Parameter.empty})
        for key, value in (e.get("kwargs") or {}).items():
            assert key in defaults, f"{e['id']}: {key} is no constructor parameter"
            default = list(defaults[key]) if isinstance(defaults[key], tuple) else defaults[key]
            assert value == default, f"{e['id']}: {key}: YAML {value!r}, constructor {defaults[key]!r}"


def test_bad_registry_files_are_rejected(tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_text("- id: X-v0\n  entry_point: a:b\n  max_steps: 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown fields"):
        registry.load_registry(bad)
    bad.write_text("- id: X-v0\n  entry_point: a:b\n- id: X-v0\n  entry_point: a:c\n", encoding="utf-8")
    with pytest.raises(ValueError, match="duplicate"):
        registry.load_registry(bad)


def _run(code: str, env: dict | None = None, cwd: Path | None = None) -> str:
    # The child imports this checkout's leangym (PYTHONPATH first), not whichever one is installed,
    # unless `env` sets a PYTHONPATH of its own.
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": pythonpath, **(env or {})}, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_gym_make_with_module_prefix_needs_no_prior_import():
    code = (
        "import sys, gymnasium as gym\n"
        "assert 'leangym' not in sys.modules\n"
        "env = gym.make('leangym:LeanProof-v0', theorem='theorem t : True := by sorry',"
        " server='http://127.0.0.1:9')\n"
        "print(type(env.unwrapped).__name__, env.spec.id, env.spec.max_episode_steps)\n"
        "env.close()\n"
        "env = gym.make('leangym:PropLogic-v0')\n"
        "print(type(env.unwrapped).__name__)\n"
        "assert not any(m.split('.')[0] in ('agents', 'baselines') for m in sys.modules), 'leangym imported agents'\n"
        "print(sys.modules['leangym'].__file__)\n"
    )
    out = _run(code, cwd=REPO.parent)  # outside the checkout: found through PYTHONPATH (see _run)
    assert out.splitlines() == ["LeanProofEnv LeanProof-v0 64", "PropLogicEnv", str(REPO / "leangym" / "__init__.py")]


def test_non_editable_install_finds_the_registry_shipped_with_the_package(tmp_path):
    # A copy of the package without the repo around it: only the package-data copy exists.
    site = tmp_path / "site"
    shutil.copytree(REPO / "leangym", site / "leangym", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(YAML, site / "leangym" / "envs_registry.yaml")
    code = ("import leangym, leangym.registry as r, gymnasium as gym\n"
            "print(r.registry_path()); print(leangym.__file__); print(gym.spec('LeanProof-v0').id)")
    lines = _run(code, env={"PYTHONPATH": str(site)}, cwd=tmp_path).split()
    assert lines == [str(site / "leangym" / "envs_registry.yaml"), str(site / "leangym" / "__init__.py"),
                     "LeanProof-v0"]


def test_registry_env_var_overrides(tmp_path):
    alt = tmp_path / "alt.yaml"
    alt.write_text("- id: Alt-v0\n  entry_point: leangym.envs.lean_proof:LeanProofEnv\n", encoding="utf-8")
    out = _run("import leangym; print(leangym.ENV_IDS); print(leangym.__file__)", env={"LEANGYM_REGISTRY": str(alt)},
               cwd=tmp_path)
    assert out.splitlines() == ["('Alt-v0',)", str(REPO / "leangym" / "__init__.py")]
