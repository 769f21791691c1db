"""A training run's checkpoint: what goes in, what a resumed run takes from it, and what it says.

A checkpoint holds everything the run depends on (weights, optimizer, replay
buffer, curriculum, counters, RNG states) and the held-out split
(:class:`~agents.alphaproof.theorem_source.HeldOut`): a resumed run evaluates on
the same statements and never trains on them, even with another ``--seed``,
``--eval-size`` or ``--theorems``. Other flags that differ from the
checkpoint's run are named, with their effect (:func:`warn_changed_settings`).
A new run saves into a directory of its own (``checkpoints/alphaproof/DATE-TIME``, with a
``latest`` link beside it) and logs into ``runs/alphaproof/DATE-TIME``, so the same command can
be run again; ``--resume`` alone (or ``--resume latest``) picks the run saved last (:func:`resume_file`).
A resumed run saves and logs where the checkpoint's run did (:func:`checkpoint_dir_of`,
:func:`logdir_of`), so that ``--resume DIR`` goes on with the run, not a copy of it elsewhere.
The STP trainer (``agents.stp.train``) keeps its runs the same way, with its own roots and file name
(the ``root`` / ``log_root`` / ``file`` parameters; the defaults are this agent's).
"""
from __future__ import annotations

import dataclasses
import random
import sys
import time
from pathlib import Path
from typing import Any, Collection

from agents.alphaproof import checkpoint
from agents.alphaproof.curriculum import Curriculum
from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.replay import ReplayBuffer
from agents.alphaproof.sft import make_optimizer
from agents.alphaproof.theorem_source import HeldOut
from agents.alphaproof.train_args import DEFAULT_CHECKPOINT_DIR, DEFAULT_LOGDIR, Args

# What a resumed run takes from its checkpoint whatever the command line says (its network is the
# checkpoint's), and what only changes how the run goes on from here.
_FIXED_BY_CHECKPOINT = ("model_size", "max_tactic_tokens")
_NOT_SETTINGS = ("resume", "init", "overwrite", "progress", "iterations", "max_minutes", "logdir", "checkpoint_dir",
                 "threads", "read_timeout", "device")  # (the net loads onto this run's device: --device, else the saved one)
# Flags that choose the held-out split: on resume the checkpoint's split is kept (see held_out_of).
_SPLIT = ("seed", "eval_size", "theorems")
# What a command line sets for itself only: a resumed run does not take these from its checkpoint.
_PER_INVOCATION = ("resume", "init", "overwrite", "progress", "logdir", "checkpoint_dir", "threads")


def inherit_settings(args: Args, saved: Any, explicit: Collection[str]) -> Args:
    """``args`` with every setting the command line did not give (``explicit``: the field names it gave)
    taken from the resumed run's (``saved``: its checkpoint's args), so that ``--resume DIR`` alone goes
    on as that run was configured (its server, theorems, budgets, ``--iterations``); one line says which."""
    if not isinstance(saved, dict):
        return args
    taken = {f.name: saved[f.name] for f in dataclasses.fields(args)
             if f.name in saved and f.name not in explicit and f.name not in _PER_INVOCATION
             and saved[f.name] != getattr(args, f.name)}
    if taken:
        print("--resume: as the resumed run (flags given on the command line would override): "
              + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in taken.items()), file=sys.stderr)
    return dataclasses.replace(args, **taken)


def saved_settings(state: dict[str, Any]) -> Any:
    """The checkpoint's args, with the settings an older version had no flag for as that version ran them
    (its net's sampling and value weight, no negatives, warm-start batches of ``--batch-size``, reference
    proofs as written), so that resuming its run does not silently take this version's new defaults."""
    saved = state.get("args")
    if not isinstance(saved, dict):
        return saved
    net = state.get("net", {}).get("settings", {}) if isinstance(state.get("net"), dict) else {}
    older = {"temperature": net.get("temperature", 1.0), "oversample": net.get("oversample", 2),
             "value_weight": net.get("value_weight", 1.0), "negative_weight": net.get("negative_weight", 0.0),
             "warmup_batch_size": saved.get("batch_size", Args.batch_size), "warmup_closers": "", "warmup_chain": False,
             "warmup_nat": 0.0, "average_decay": 0.0}
    return {**older, **saved}


def save_checkpoint(path: Path, net, opt, replay, curriculum, rng, progress: dict, args: Args,
                    held_out: HeldOut, average=None) -> None:
    """``net``: the learner's; ``average`` (a :class:`averaging.WeightAverage`): the net users get as
    ``"net"`` (prove, ``--init``), the learner's own weights going under ``"learner"`` for ``--resume``."""
    averaged = average is not None and average.net is not None and average.net is not net
    checkpoint.save(path, {
        "net": (average.net if averaged else net).to_payload(),
        **({"learner": {k: v.detach().cpu() for k, v in net.model.state_dict().items()}} if averaged else {}),
        "optimizer": opt.state_dict(), "replay": replay.state_dict(),
        "curriculum": curriculum.state_dict(), "rng": checkpoint.rng_state(rng), "progress": progress,
        "args": dataclasses.asdict(args), "held_out": held_out.to_state(),
        # where this run logs, absolute ("" for nowhere): args["logdir"] may be relative to a working
        # directory a resumed run does not know (see logdir_of)
        "logdir": str(Path(args.logdir).resolve()) if args.logdir else "",
    })
    link_latest_in(path.parent, DEFAULT_CHECKPOINT_DIR)  # checkpoints/alphaproof/latest: the run saved last


# ---------------------------------------------------------------------------- where a run lives
def resume_file(spec: str, root: str = DEFAULT_CHECKPOINT_DIR, file: str = "latest.pt") -> Path:
    """The checkpoint ``--resume spec`` names: a run's directory (its ``file``), a checkpoint file,
    a folder of runs (the one saved last), or ``latest`` (the run saved last in ``root``)."""
    where = root if spec == "latest" and not Path(spec).exists() else spec
    found = checkpoint.latest(where, file)
    if found is None:
        raise ValueError(f"--resume {spec}: no checkpoint there"
                         + (f" (no run in {where} has saved one yet)" if where != spec else ""))
    return found


def checkpoint_dir_of(args: Args, resume_path: Path | None, root: str = DEFAULT_CHECKPOINT_DIR) -> str:
    """``--checkpoint-dir`` as given, else the resumed checkpoint's directory (``--resume DIR`` goes on
    writing the run where it lives, as the Ctrl-C message's ``go on with --resume DIR`` promises), else
    a new directory of its own in ``root`` (created here). ``""``: no checkpoints."""
    if args.checkpoint_dir is not None:
        return args.checkpoint_dir
    return str(resume_path.parent) if resume_path is not None else str(new_run_dir(Path(root)))


def link_latest_in(run_dir: Path, root: str) -> None:
    """``root/latest`` -> ``run_dir`` when the run is one of ``root``'s own folders (a ``--checkpoint-dir``
    the user named elsewhere gets no link), so that ``--resume`` alone finds the run saved last."""
    if run_dir.parent.resolve() == Path(root).resolve():
        checkpoint.link_latest(run_dir)


def new_run_dir(root: Path, name: str | None = None, *, create: bool = True) -> Path:
    """A folder in ``root`` that no other run has: ``name`` (default: the start time), with ``-2``, ``-3`` ...
    when taken. ``create``: made here, so that two runs started in the same second get two."""
    stamp = name or time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 10_000):
        path = root / (stamp if n == 1 else f"{stamp}-{n}")
        if not create and not path.exists():
            return path
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                path.mkdir()
                return path
            except FileExistsError:
                pass
    raise ValueError(f"{root}: no free run folder named {stamp}-N; clean it up or pass a directory of your own")


def drop_if_unused(run_dir: Path | None) -> None:
    """Remove a new run's own folder (:func:`new_run_dir`) if the run saved nothing into it (it stopped early)."""
    try:
        if run_dir is not None:
            run_dir.rmdir()  # only if empty
    except OSError:
        pass


def logdir_of(args: Args, state: dict[str, Any] | None, path: Path | None, root: str = DEFAULT_CHECKPOINT_DIR,
              log_root: str = DEFAULT_LOGDIR) -> str:
    """``--logdir`` as given, else the resumed run's (its checkpoint records it), else a new folder in
    ``log_root``; a checkpoint of an older version, which does not record it, gets a new one and a note."""
    if args.logdir is not None:
        return args.logdir
    if state is None:  # a new run: named as its checkpoint folder, where that is one in root
        ckpt = Path(args.checkpoint_dir) if args.checkpoint_dir else None
        mine = ckpt is not None and ckpt.parent.resolve() == Path(root).resolve()
        return default_logdir(ckpt.name if mine else None, log_root)
    if isinstance(state.get("logdir"), str):
        return state["logdir"]
    was = state.get("args", {}).get("logdir") if isinstance(state.get("args"), dict) else None
    print(f"--resume: {path} does not record where its run logged (written by an older version"
          + (f"; its --logdir was {was!r}" if was else "") + f"): TensorBoard logs go "
          f"to a new folder in {log_root} (pass --logdir to choose)", file=sys.stderr)
    return default_logdir(None, log_root)


def default_logdir(name: str | None = None, root: str = DEFAULT_LOGDIR) -> str:
    """A folder of its own in ``root`` for a run's TensorBoard logs (``name``, else its start time), so
    that runs do not interleave their curves and ``tensorboard --logdir runs/alphaproof`` shows each one apart."""
    return str(new_run_dir(Path(root), name, create=False))  # (the TensorBoard writer makes it)


def say_where_the_run_goes_on(args: Args, given: Args, state: dict[str, Any]) -> None:
    """One line naming the directories a resumed run took from its checkpoint (none if both were given)."""
    took = []
    if given.checkpoint_dir is None:
        took.append(f"checkpoints in {args.checkpoint_dir}")
    if given.logdir is None and isinstance(state.get("logdir"), str):
        took.append(f"TensorBoard logs in {args.logdir}" if args.logdir else "no TensorBoard logs")
    if took:
        print(f"--resume: {' and '.join(took)}, as the resumed run (--checkpoint-dir / --logdir choose others)",
              file=sys.stderr)


def warn_changed_settings(saved: dict[str, Any], args: Args) -> None:
    """Say which settings of a resumed run differ from the checkpoint's, and which of them take effect."""
    changed = [f.name for f in dataclasses.fields(args) if f.name in saved and f.name not in _NOT_SETTINGS
               and saved[f.name] != getattr(args, f.name)]
    for name in changed:
        if name in _FIXED_BY_CHECKPOINT:
            effect = "ignored: the checkpoint's network is kept"
        elif name in _SPLIT:
            effect = "applies from now on, except to the held-out theorems, which stay the checkpoint's"
        else:
            effect = "applies from now on"
        print(f"--resume: --{name.replace('_', '-')} is {getattr(args, name)!r}, the checkpoint's run had "
              f"{saved[name]!r} ({effect}; the run no longer continues exactly)", file=sys.stderr)


def refuse_to_overwrite(ckpt_dir: Path | None, resume_path: Path | None, args: Args,
                        file: str = "latest.pt") -> None:
    """A run writes ``ckpt_dir/file``: never over another run's checkpoint unless told to (``args.overwrite``)."""
    target = ckpt_dir / file if ckpt_dir else None
    if target is None or not target.exists() or args.overwrite:
        return
    if resume_path is not None and resume_path.resolve() == target.resolve():
        return  # the run goes on where it left off
    raise ValueError(f"{target} holds another run's checkpoint, which this run would overwrite: continue that run "
                     f"with --resume {ckpt_dir}, choose another --checkpoint-dir (or none: each run gets a folder of "
                     "its own), or pass --overwrite to replace it")


def held_out_of(state: dict[str, Any], path: Path) -> HeldOut | None:
    """The held-out split a checkpoint stored; None (with a warning) for one written before it stored any."""
    if "held_out" not in state:
        print(f"--resume: {path} does not record its held-out theorems (written by an older version): they are "
              "chosen again from --theorems, --eval-size and --seed, so pass the first run's values, or held-out "
              "and training theorems mix", file=sys.stderr)
        return None
    try:
        return HeldOut.from_state(state["held_out"])
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: a damaged training checkpoint (held_out: {type(e).__name__}: {e}); resume from "
                         "an earlier one or start afresh") from None


def say_if_split_differs(source, args: Args) -> None:
    """One line when the checkpoint's held-out theorems are not those the flags would choose now."""
    kept = source.held_out
    if kept == source.default_held_out:
        return
    found = len(source.heldout(len(kept.keys)))
    where = f" ({found} of them in {args.theorems})" if args.theorems and found < len(kept.keys) else ""
    print(f"--resume: the held-out theorems stay the checkpoint's run's ({len(kept.keys)} statements{where}), "
          "never trained on; --theorems, --eval-size and --seed as given would have held out others",
          file=sys.stderr)


def restore(state: dict[str, Any], path: Path, args: Args, replay: ReplayBuffer, curriculum: Curriculum,
            rng: random.Random):
    """The learner's net, its optimizer, progress and the saved average's weights (None: the checkpoint has no
    average of its own) of a loaded checkpoint; replay, curriculum and RNGs restored in place."""
    try:
        net = PolicyValueNet.from_payload(state["net"], device=args.device)
        average = state["net"]["state_dict"] if "learner" in state else None  # (the saved net is the average)
        if average is not None:
            net.model.load_state_dict(state["learner"])
        opt = make_optimizer(net, args.lr)
        saved = state["optimizer"]  # its groups carry the saving device's `fused`: this device's applies
        fused = opt.param_groups[0].get("fused")
        opt.load_state_dict({**saved, "param_groups": [{**g, "fused": fused} for g in saved["param_groups"]]})
        # a changed --replay-size applies, as warn_changed_settings says (the newest rows are kept)
        replay.load_state_dict(state["replay"], capacity=args.replay_size)
        curriculum.load_state_dict(state["curriculum"])
        checkpoint.set_rng_state(state["rng"], rng)
        progress = state["progress"]
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError) as e:
        raise ValueError(f"{path}: a damaged training checkpoint ({type(e).__name__}: {e}); resume from an "
                         "earlier one or start afresh") from None
    print(f"resumed from {path} at iteration {progress['iteration']}", file=sys.stderr)
    warn_changed_settings(saved_settings(state) or {}, args)
    if progress["iteration"] == 0 and progress.get("warmup_cut_at"):
        done, planned = progress["warmup_cut_at"]
        print(f"--resume: the warm start was cut by --max-minutes after {done} of {planned} steps; it counts as "
              "done and is not resumed: self-play starts now", file=sys.stderr)
    return net, opt, progress, average


def interrupted_message(saved_in: Path | None, resumed_from: str | None, ckpt_dir: Path | None) -> str:
    """What a run stopped by Ctrl-C / SIGTERM says about where to go on from.

    Only a checkpoint of this run counts: the last one it saved (``saved_in``, its directory), or
    the one it resumed from. A ``latest.pt`` that another run left in ``--checkpoint-dir``
    (``--overwrite``) is not one.
    """
    if saved_in is not None:
        return f"stopped; the last checkpoint is {saved_in / 'latest.pt'}: go on with --resume {saved_in}"
    if resumed_from is not None:
        return (f"stopped before this run saved a checkpoint; the one it resumed from is unchanged: "
                f"go on with --resume {resumed_from}")
    other = ckpt_dir / "latest.pt" if ckpt_dir else None
    return ("stopped before this run saved a checkpoint: nothing was saved"
            + (f" ({other} is still another run's)" if other is not None and other.exists() else ""))
