"""An STP run's state, so that ``python -m agents.stp.train --resume DIR`` goes on where it stopped.

``DIR/state.pt`` holds both nets, both optimizers, both replay buffers, the conjectures that joined
the seed pool, the conjecturer's warm-start rows, the statements already seen (the env's duplicate
memory), the history and every RNG: plain values only, written with the AlphaProof agent's
:mod:`~agents.alphaproof.checkpoint` (atomic; read back with ``weights_only=True``, never unpickling code).
A resumed run takes its settings from the checkpoint, except those that belong to one invocation.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from agents.alphaproof import checkpoint

KIND = "stp"
PER_INVOCATION = ("resume", "iterations", "max_minutes", "eval_size", "eval_level", "checkpoint_dir", "logdir",
                  "threads", "progress")  # what a command line sets for itself; the rest comes from the run


def path_of(spec: str) -> Path:
    p = Path(spec)
    return p if p.is_file() else p / "state.pt"


def save(directory: str, **parts: Any) -> Path:
    return checkpoint.save(Path(directory) / "state.pt", {"kind": KIND, **parts})


def load(spec: str) -> dict[str, Any]:
    path = path_of(spec)
    if not path.exists():
        raise FileNotFoundError(f"--resume {spec}: no {path} (a directory an STP run checkpointed to, "
                                "with --checkpoint-dir, or its state.pt)")
    state = checkpoint.load(path)
    if state.get("kind") != KIND:
        raise ValueError(f"{path} is not an STP run's state (an AlphaProof checkpoint? resume it with "
                         "agents.alphaproof.train)")
    return state


def resumed_args(args, saved: dict[str, Any]):
    """The checkpoint's settings, with this invocation's own (``PER_INVOCATION``) from the command line."""
    mine = {k: getattr(args, k) for k in PER_INVOCATION}
    fields = {f.name for f in dataclasses.fields(args)}
    return dataclasses.replace(args, **{**{k: v for k, v in saved.items() if k in fields}, **mine})
