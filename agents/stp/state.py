"""An STP run's state, so that ``python -m agents.stp.train --resume DIR`` goes on where it stopped.

``DIR/state.pt`` holds both nets, both optimizers, both replay buffers, the conjectures that joined
the seed pool, the conjecturer's warm-start rows, the statements already seen (the env's duplicate
memory), the history and every RNG: plain values only, written with the AlphaProof agent's
:mod:`~agents.alphaproof.checkpoint` (atomic; read back with ``weights_only=True``, never unpickling code).
A resumed run takes its settings from the checkpoint, except those that belong to one invocation.
Each run has a folder of its own (``checkpoints/stp/DATE-TIME``, ``latest`` linking the run saved last),
kept as the AlphaProof agent keeps its runs (:mod:`agents.alphaproof.resume`, with the roots below).
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from agents.alphaproof import checkpoint

KIND = "stp"
FILE = "state.pt"  # a run's state in its folder (--resume DIR reads DIR/state.pt)
CHECKPOINTS, RUNS = "checkpoints/stp", "runs/stp"  # where runs save and log unless told: a folder each
PER_INVOCATION = ("resume", "iterations", "max_minutes", "eval_size", "eval_level", "checkpoint_dir", "logdir",
                  "overwrite", "threads", "progress")  # what a command line sets for itself; the rest comes from the run


def save(directory: str, **parts: Any) -> Path:
    return checkpoint.save(Path(directory) / FILE, {"kind": KIND, **parts})


def load(path: Path) -> dict[str, Any]:
    """The state at ``path`` (found by :func:`agents.alphaproof.resume.resume_file`)."""
    state = checkpoint.load(path)
    if state.get("kind") != KIND:
        raise ValueError(f"{path} is not an STP run's state (an AlphaProof checkpoint? resume it with "
                         "agents.alphaproof.train)")
    return state


SAVED_BEFORE = {"escalate": False}  # settings newer than some saved runs: the value those runs ran with


def resumed_args(args, saved: dict[str, Any]):
    """The checkpoint's settings, with this invocation's own (``PER_INVOCATION``) from the command line; a
    setting the run was saved without (``SAVED_BEFORE``) keeps the value the run had."""
    mine = {k: getattr(args, k) for k in PER_INVOCATION}
    fields = {f.name for f in dataclasses.fields(args)}
    older = {k: v for k, v in SAVED_BEFORE.items() if k not in saved}
    if older:
        print(f"resumed run: saved before {', '.join('--' + k for k in older)}; it goes on as it ran ({older})",
              file=sys.stderr)
    return dataclasses.replace(args, **{**older, **{k: v for k, v in saved.items() if k in fields}, **mine})
