"""Checkpoints that resume a run exactly and load without unpickling anything.

A checkpoint is one ``torch.save`` of plain values: tensors, dicts, lists,
strings and numbers. It is read back with ``torch.load(weights_only=True)``,
which refuses arbitrary Python objects, so a checkpoint from elsewhere cannot
run code. RNG states (Python, NumPy, torch, and the trainer's own
``random.Random``) are stored the same way, converted to lists and tensors.
"""
from __future__ import annotations

import os
import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

FORMAT = "leangym-alphaproof-v1"


def _py_state(state: tuple) -> dict[str, Any]:
    version, internal, gauss = state
    return {"version": version, "internal": list(internal), "gauss": gauss}


def _py_restore(saved: dict[str, Any]) -> tuple:
    return (saved["version"], tuple(int(x) for x in saved["internal"]), saved["gauss"])


def rng_state(rng: random.Random | None = None) -> dict[str, Any]:
    """Every random state a training run draws from, as plain values."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {
        "python": _py_state(random.getstate()),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_initialized():  # (sampling on a GPU draws from its generator)
        state["cuda"] = torch.cuda.get_rng_state_all()
    if rng is not None:
        state["trainer"] = _py_state(rng.getstate())
    return state


def set_rng_state(state: dict[str, Any], rng: random.Random | None = None) -> None:
    random.setstate(_py_restore(state["python"]))
    n = state["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if len(state.get("cuda", ())) == torch.cuda.device_count() > 0:  # (another machine: nothing to continue)
        torch.cuda.set_rng_state_all(state["cuda"])
    if rng is not None and "trainer" in state:
        rng.setstate(_py_restore(state["trainer"]))


def save(path: str | os.PathLike, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (plain values only) atomically: a crash mid-write leaves the old file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save({"format": FORMAT, **payload}, tmp)
    os.replace(tmp, path)
    return path


def read(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> Any:
    """``torch.load(weights_only=True)``, where a file that is not a readable checkpoint is a
    ValueError naming the file (an empty, truncated or damaged file makes torch raise anything
    from EOFError to KeyError, naming nothing). A missing file stays an OSError."""
    try:
        return torch.load(Path(path), map_location=map_location, weights_only=True)
    except OSError:
        raise
    except pickle.UnpicklingError as e:
        # A real pickle, but of Python objects (never run that): how torch's safe unpickler says so
        # (2.4+: "Unsupported global"; 2.2-2.3: "Unsupported class", ...). Anything else it refuses
        # ("Unsupported operand": a byte that is no pickle opcode it reads) falls to _unreadable.
        if any(m in str(e).lower() for m in _PYTHON_OBJECTS):
            raise ValueError(f"{path}: holds Python objects, not only tensors and plain values; this tool "
                             "loads only checkpoints it wrote (it never unpickles code)") from None
        raise _unreadable(path, e) from None
    except Exception as e:  # noqa: BLE001 -- EOFError, RuntimeError (zip), KeyError, UnicodeDecodeError ...
        raise _unreadable(path, e) from None


_PYTHON_OBJECTS = ("unsupported global", "unsupported class", "trying to instantiate unsupported class",
                   "can only build", "can only create new object", "unrecognized function")


def _unreadable(path, e: Exception) -> ValueError:
    detail = str(e)
    if "WeightsUnpickler error:" in detail:  # torch's advice around it (weights_only=False) does not apply
        detail = detail.split("WeightsUnpickler error:", 1)[1].strip().splitlines()[0]
    return ValueError(f"{path}: not a readable checkpoint (truncated or corrupt, or not written by this tool's "
                      f"torch.save?); if a copy was cut short, copy it again, else use an earlier checkpoint "
                      f"or start afresh "
                      f"({type(e).__name__}: {detail[:200] or 'no detail'})")


def load(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save` (never unpickles code: ``weights_only=True``)."""
    payload = read(path, map_location)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} checkpoint")
    return payload


def latest(directory: str | os.PathLike, name: str = "latest.pt") -> Path | None:
    """The checkpoint a directory names (what ``--resume`` and ``prove --checkpoint`` pick): a file is
    itself; a run's directory, its ``name`` file; a folder of runs (``checkpoints/alphaproof``), the
    ``name`` file saved last among its runs. None: no checkpoint there. (``name``: the file a run saves,
    ``latest.pt`` for the AlphaProof agent, ``state.pt`` for the STP trainer.)"""
    p = Path(directory)
    if p.is_symlink():  # the `latest` link: the run it points to, under that run's own name
        p = p.resolve()
    if p.is_file():
        return p
    if (p / name).exists():
        return p / name
    runs = [d / name for d in p.iterdir() if not d.is_symlink() and (d / name).is_file()] \
        if p.is_dir() else []
    return max(runs, key=lambda f: (f.stat().st_mtime, f.parent.name), default=None)


def link_latest(run_dir: Path) -> None:
    """Point ``run_dir``'s sibling link ``latest`` at it (relative, replaced atomically), so that
    ``prove --checkpoint checkpoints/alphaproof/latest`` is the run saved last. Where links cannot be
    made (some Windows setups), nothing: a folder of runs finds its newest anyway (:func:`latest`)."""
    link = run_dir.parent / "latest"
    if link.exists() and not link.is_symlink():
        return  # a run or file of the user's own named `latest`: not ours to replace
    tmp = run_dir.parent / f".latest.{os.getpid()}.tmp"
    try:
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(run_dir.name, target_is_directory=True)
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)
