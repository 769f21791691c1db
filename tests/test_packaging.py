"""What ``pip install .`` installs (read from setup.cfg, as setuptools reads it): the light install is the
envs, the simulator and the harness, without torch; no top-level ``scripts``, ``tests`` or ``benchmarks``
package; console scripts for the tools people start."""
from __future__ import annotations

import configparser
import importlib
import re
from pathlib import Path

from setuptools import find_packages

REPO = Path(__file__).resolve().parents[1]


def _cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg", encoding="utf-8")
    return cfg


def _names(block: str) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", line.strip(), maxsplit=1)[0].lower()
            for line in block.splitlines() if line.strip() and not line.strip().startswith("#")}


def test_the_light_install_has_no_torch_and_the_extras_have_the_rest():
    cfg = _cfg()
    base = _names(cfg["options"]["install_requires"])
    assert base == {"gymnasium", "pettingzoo", "numpy", "requests", "urllib3", "pyyaml", "tqdm"}
    extras = {k: _names(v) for k, v in cfg["options.extras_require"].items()}
    assert {"torch", "tokenizers", "pyzmq", "tensorboard"} <= extras["agents"]
    assert {"stable-baselines3", "sb3-contrib"} <= extras["baselines"]
    assert {"pytest", "hypothesis", "leangym"} <= extras["dev"]  # leangym[agents,baselines]: the whole suite


def test_no_top_level_scripts_tests_or_benchmarks_package():
    include = _cfg()["options.packages.find"]["include"].split()
    top = {p.split(".")[0] for p in find_packages(str(REPO), include=include)}
    assert top == {"leangym", "agents", "baselines"}


def test_the_console_scripts_exist():
    lines = _cfg()["options.entry_points"]["console_scripts"].strip().splitlines()
    scripts = dict(line.replace(" ", "").split("=") for line in lines)
    assert set(scripts) == {"leangym-benchmark", "leangym-sim-server"}
    for target in scripts.values():
        module, func = target.split(":")
        assert callable(getattr(importlib.import_module(module), func))


def test_leangym_itself_imports_none_of_the_extras():
    """The light install must import: no module of leangym imports an extra's package (matplotlib, for the
    harness's plots, only inside the function that draws them, which says how to install it)."""
    import ast

    extras = {"torch", "tokenizers", "zmq", "tensorboard", "stable_baselines3", "sb3_contrib"}  # pettingzoo: base
    found = []
    for path in (REPO / "leangym").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in extras]
    assert found == []
