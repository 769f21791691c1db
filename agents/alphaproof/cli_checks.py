"""Checks of the command-line values of ``train``, ``sft`` and ``prove``, before any work; their --help format.

A value that cannot work (``--sims 0``, ``--batch-size 0``, ``--device cuda`` on a
machine without CUDA) is a ValueError naming the flag and what it must be, raised
before anything is read, trained or written, so that ``leangym.cli.run_cli`` turns
it into one ``error: ...`` line (exit status 2) and the corrected rerun starts
clean. ``None`` is "not given" (no limit) and is never refused.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import torch

DEVICES = "cpu, cuda, cuda:N (a GPU's index) or mps"
MAX_SEED = 2**32 - 1  # numpy's seeds are 32-bit


def flag(name: str) -> str:
    """``lean_calls`` -> ``--lean-calls``."""
    return "--" + name.replace("_", "-")


def at_least(lo: int, **values: Any) -> None:
    """Whole numbers (counts, steps, sizes) of at least ``lo``."""
    for name, v in values.items():
        if v is not None and not v >= lo:
            raise ValueError(f"{flag(name)} must be at least {lo}, got {v}")


def positive(**values: Any) -> None:
    """Finite numbers > 0 (seconds, minutes, learning rates); NaN and infinity are refused."""
    for name, v in values.items():
        if v is not None and not (math.isfinite(v) and v > 0):
            raise ValueError(f"{flag(name)} must be a number > 0, got {v}")


def non_negative(**values: Any) -> None:
    """Finite numbers >= 0 (a weight decay)."""
    for name, v in values.items():
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{flag(name)} must be a number >= 0, got {v}")


def fraction(**values: Any) -> None:
    """Numbers from 0 to 1 (a share of a batch)."""
    for name, v in values.items():
        if v is not None and not 0 <= v <= 1:
            raise ValueError(f"{flag(name)} must be a fraction from 0 to 1, got {v}")


def seed(value: int) -> None:
    if not 0 <= value <= MAX_SEED:
        raise ValueError(f"--seed must be a whole number from 0 to {MAX_SEED}, got {value}")


def check_device(spec: str) -> torch.device:
    """The device ``--device spec`` names, if this torch build and machine have it; else a ValueError."""
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError, TypeError):
        raise ValueError(f"--device {spec}: not a device name; use {DEVICES}") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {spec}: this torch build/machine has no CUDA; use --device cpu")
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise ValueError(f"--device {spec}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}")
    elif device.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"--device {spec}: this torch build/machine has no MPS; use --device cpu")
    elif device.type != "cpu":
        raise ValueError(f"--device {spec}: the agent runs on {DEVICES}, not on {device.type!r}")
    return device


def input_file(label: str, path: str | None, what: str) -> None:
    """A file the tool will read: a ValueError naming it (``label``: its flag) and ``what`` to pass, unless
    it is a readable file.

    Cheap (it only opens the file), so a tool can check its inputs before it refuses to overwrite
    its output: the user fixes a missing input first, not after adding ``--overwrite``.
    """
    if path is None:
        return
    if Path(path).is_dir():
        raise ValueError(f"{label} {path}: a directory, not a file; pass {what}")
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise ValueError(f"{label} {path}: no such file; pass {what}") from None
    except OSError as e:
        raise ValueError(f"{label} {path}: cannot be read ({e.strerror or e}); pass {what}") from None




def absolute_paths(args: Any, *names: str) -> Any:
    """The dataclass ``args`` with the local files or directories its fields ``names`` give made absolute:
    the checkpoint keeps them, and ``--resume`` from another directory must find the same ones
    (what is not a local path, ``minif2f`` or a URL, stays as given)."""
    found = {name: str(Path(value).resolve()) for name in names
             if (value := getattr(args, name)) and Path(value).exists() and not _named_set(value)}
    return dataclasses.replace(args, **found)


def _named_set(value: str) -> bool:
    """``minif2f``, ``proplogic-heldout:100``, a URL: names the loaders know, not paths (a folder of that name
    in the working directory does not make them one)."""
    return "://" in value or value.split(":", 1)[0] in ("minif2f", "proplogic-heldout")
