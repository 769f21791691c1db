"""AlphaProof-style training: supervised warm start, then self-play with MCTS.

    python -m agents.alphaproof.train --actors 8 --iterations 40        # PropLogic-v0, in-process
    python -m agents.alphaproof.train --env LeanProof-v0 --server http://127.0.0.1:8000 \
        --theorems minif2f.jsonl --actors 16

One iteration:

1. **collect** -- the curriculum picks ``--actors`` theorems (difficulty levels
   solved about half the time are favoured); each gets a fresh Lean process
   and a :class:`ProofSession`, and ONE batched actor searches all of them at
   once (``run_batched_search``: one network call per round for every tree);
2. **store** -- every expanded node of every search becomes a training row:
   solved nodes teach the first tactic of their shortest proof (the policy
   target: found proofs, pruned to the solved path) and their steps-to-proof
   (the value target); when a search spends its budget without a proof its
   root and its well-visited nodes are labelled "not provable within budget"
   (not when it was cut short or met server failures: ``gives_verdict``);
3. **learn** -- ``--learn-steps`` AdamW steps on batches from the replay
   buffer, mixed with reference-proof rows so the policy does not drift off
   the tactic language while self-play data is still scarce;
4. **evaluate** every ``--eval-every`` iterations on held-out theorems:
   only proofs that passed ``session.verify`` count.

With ``--actor-procs N`` (by default one per core but one, on more than 2 cores), ``--bind`` or under
``torchrun``, steps 1-4 run side by side instead of in turn: actor processes search, a learner
learns continuously from what they stream back, an inference service batches their network calls
(:mod:`agents.alphaproof.distributed`, docs/distributed.md). Same flags, outputs and checkpoints.

Everything a run depends on (weights, optimizer, replay buffer, curriculum,
counters, RNG states, the held-out split) goes into the checkpoint, so
``--resume`` continues exactly from it (:mod:`agents.alphaproof.resume`), saving and
logging where that run did unless ``--checkpoint-dir`` / ``--logdir`` say otherwise; a run
never overwrites another run's checkpoint unless told to (``--overwrite``).
``--max-minutes`` cuts the iteration (or the warm start) under way when time
runs out; that shorter last stage is counted, learned from and saved, so a run
stopped by the limit and resumed is not the same as one run without the limit.
A statement the server rejects leaves the training pool for good (a warning
says so). A search batch that raises (a kernel bug ...) is logged and
counted; the next iteration starts on fresh processes. When no search can start
(the server is down) the iteration does not count: the same theorems are tried
again after a wait (1 s, 2 s, 4 s ... 60 s) until the server is back or
``--max-minutes`` is up. A hung server stops a search after ``--read-timeout``
(see :mod:`agents.alphaproof.actors`).
"""
from __future__ import annotations

import dataclasses
import os
import random
import sys
import time
from pathlib import Path
from typing import Any, Collection, Sequence

import numpy as np
import torch

from agents.alphaproof import checkpoint
from agents.alphaproof.resume import (checkpoint_dir_of, drop_if_unused, held_out_of, inherit_settings,
                                      interrupted_message, logdir_of, refuse_to_overwrite, restore, resume_file,
                                      save_checkpoint, saved_settings, say_if_split_differs,
                                      say_where_the_run_goes_on)
from agents.alphaproof.averaging import WeightAverage
from agents.alphaproof.actors import (Backoff, BatchOutcome, cut_by_deadline, evaluate, give_back,
                                      process_factory, run_searches, search_stats, server_lost, server_warning)
from agents.alphaproof.curriculum import Curriculum
from agents.alphaproof.data import Row
from agents.alphaproof.distributed.ddp import rank_device
from agents.alphaproof.iteration import (LOSSES, curve_text, drop_rejected, first_and_last, rows_from_result,
                                        solve_rate_text, start_label)
from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.replay import ReplayBuffer
from agents.alphaproof.search import gives_verdict
from agents.alphaproof.sft import make_optimizer, rows_from_reference_proofs, train_supervised
from agents.alphaproof.theorem_source import make_source
from agents.alphaproof.train_args import Args, check_args, closer_list, explicit_fields, parse_args
from leangym.backends.types import LeanError, ServerError
from leangym.cli import exclusive, run_cli
from leangym.daemon_pool import DaemonPool


HISTORY_KEPT = 5000  # per-iteration records a checkpoint keeps (the latest)


# ============================================================================ training rows


def reference_rows(source, args: Args, deadline: float | None = None) -> list[Row]:
    """Rows from reference proofs (held-out theorems excluded by the source), replayed on the run's own
    Lean, so that their states are the texts the search will see: the simulator (``--factorized`` as
    searched), or ``--server``, each theorem on a lease of its own (``--actors`` at once). A statement
    that Lean refuses to start, a server failure, or ``deadline`` (``--max-minutes``) costs that proof
    its rows, and a warning says how many gave none."""
    refs = source.reference(args.warmup_theorems, seed=args.seed + 1)
    if not refs:
        return []
    new_process = process_factory(args, deadline)
    closers = closer_list(args.warmup_closers)

    def replay(ref) -> list[Row] | str:
        if deadline is not None and time.monotonic() >= deadline:
            return f"{ref.theorem.name}: --max-minutes reached"
        try:
            process = new_process()
        except ServerError as e:
            return f"{ref.theorem.name}: {type(e).__name__}: {e}"
        try:
            return rows_from_reference_proofs([ref], process, closers=closers, chain=args.warmup_chain)
        except (LeanError, ServerError) as e:
            return f"{ref.theorem.name}: {type(e).__name__}: {e}"
        finally:
            give_back([process])

    if args.server:
        pool = DaemonPool(min(args.actors, len(refs)), name="warmup-lean")
        try:
            got = pool.map(replay, refs)
        finally:
            pool.close()
    else:
        got = [replay(ref) for ref in refs]
    refused = [g for g in got if isinstance(g, str)]
    if refused:
        print(f"[train] warm start: {len(refused)} of {len(refs)} reference proofs give no rows: they could not "
              f"be replayed on {'the server' if args.server else 'the simulator'} (first: {refused[0]})",
              file=sys.stderr, flush=True)
    return [row for g in got if not isinstance(g, str) for row in g]


# ============================================================================ learning
def learn(net: PolicyValueNet, opt: torch.optim.Optimizer, replay: ReplayBuffer, sft_rows: list, rng: random.Random,
          args: Args) -> dict[str, float]:
    """``--learn-steps`` steps on fresh replay samples (plus a ``--sft-mix`` share of reference rows)."""
    if len(replay) == 0 or args.learn_steps <= 0:
        return {}
    n_sft = round(args.batch_size * args.sft_mix) if sft_rows else 0
    rows = []
    for _ in range(args.learn_steps):  # learn_steps * batch_size rows, of which a --sft-mix share are reference rows
        rows += replay.sample(args.batch_size - n_sft, rng)
        rows += [sft_rows[rng.randrange(len(sft_rows))] for _ in range(n_sft)]
    # train_supervised shuffles the rows (seeded) and cuts them into learn_steps batches of batch_size, so each
    # row is used once and each batch holds that share of reference rows on average (not exactly)
    history = train_supervised(net, rows, args.learn_steps, args.batch_size, args.lr, optimizer=opt,
                               schedule=False, seed=rng.getrandbits(32))
    return {k: float(np.mean([h[k] for h in history])) for k in LOSSES}


# ============================================================================ the run
def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _writer(logdir: str | None, purge_step: int | None = None):
    if not logdir:
        return None
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(logdir, purge_step=purge_step)


def warm_start(net: PolicyValueNet, sft_rows: list, args: Args, deadline: float | None,
               progress: dict[str, Any]) -> None:
    """AlphaProof's supervised stage in miniature: imitate reference proofs (own optimizer and schedule).

    ``deadline`` (``--max-minutes``) may cut it short. A cut warm start counts as done, as a cut
    self-play iteration does: ``progress["warmup_cut_at"]`` records how far it got, and a resumed
    run says so and goes on with self-play (the warm start's optimizer is not saved, so it cannot go on).
    """
    if args.warmup_steps > 0 and sft_rows:
        # Logged as its own run (logdir/warmup): its sft/* steps count 10, 20 ... like self-play
        # iterations, and a resumed run's purge of later iterations must not reach them.
        warm_writer = _writer(args.logdir and str(Path(args.logdir) / "warmup"))
        history = train_supervised(net, sft_rows, args.warmup_steps, args.warmup_batch_size, args.warmup_lr,
                                   writer=warm_writer, progress=args.progress, seed=args.seed, deadline=deadline)
        if warm_writer:
            warm_writer.close()
        loss = f", loss {history[-1]['loss']:.3f}" if history else ""
        if len(history) < args.warmup_steps:
            progress["warmup_cut_at"] = [len(history), args.warmup_steps]
            print(f"warm start: stopped by --max-minutes after {len(history)} of {args.warmup_steps} steps{loss}; "
                  "it counts as done (--resume goes on with self-play, it does not finish the warm start)",
                  file=sys.stderr)
        else:
            print(f"warm start: {args.warmup_steps} steps on {len(sft_rows)} reference rows{loss}", file=sys.stderr)
    elif args.warmup_steps > 0:
        print("warm start: skipped, no reference proofs to learn from (--theorems rows have no 'proof' list, or "
              "none of them replayed); self-play starts from the net as it is", file=sys.stderr)
    progress["warm_started"] = True


def absorb(out: BatchOutcome, curriculum: Curriculum, replay: ReplayBuffer, args: Args) -> int:
    """Curriculum verdicts and replay rows from one batch of searches; returns the rows added."""
    new_rows = 0
    # a batch the run's time limit cut short: its finished searches are the quick solves, which
    # would raise their levels' rates (the proofs still teach the net)
    judge = not cut_by_deadline(out)
    for task, result in zip(out.tasks, out.results):
        if result is None:
            continue
        if judge and gives_verdict(result):  # cut short, or unsolved after server failures: no failure
            curriculum.record(task.key, task.level, result.verified)
        new_rows += replay.add(rows_from_result(result, args.min_unsolved_visits))
    return new_rows




def train(args: Args, explicit: Collection[str] | None = None) -> dict[str, Any]:
    """Run (or resume) training; returns the progress record (also stored in every checkpoint), with the
    net and ``checkpoint_dir`` (where the run saved, resolved as :func:`resume.checkpoint_dir_of` says).

    ``explicit``: the fields of ``args`` the caller chose (a command line's flags); a resumed run takes
    the others from its checkpoint (:func:`resume.inherit_settings`). ``None``: all of them.

    On Ctrl-C / SIGTERM (KeyboardInterrupt, re-raised) it says where to go on from, if anywhere.
    A second run into the same ``--checkpoint-dir`` at the same time is refused.
    """
    if args.server and args.env == "PropLogic-v0":
        args = dataclasses.replace(args, env="LeanProof-v0")
    if distributed_rank() > 0:  # a DDP follower: rank 0 alone saves, logs and shows progress
        args = dataclasses.replace(args, checkpoint_dir="", logdir="", progress=False)
    if args.env == "LeanProof-v0" and not args.server:
        raise ValueError("LeanProof-v0 needs --server URL (and usually --theorems FILE.jsonl)")
    check_args(args)
    chose_nat = "warmup_nat" in explicit if explicit is not None else args.warmup_nat != Args.warmup_nat
    if args.theorems and args.warmup_nat > 0 and chose_nat:
        raise ValueError("--warmup-nat mixes generated ℕ arithmetic into the generator's warm start; with "
                         "--theorems the file's proofs are the warm start: add natarith rows to the file instead "
                         "(python -m leangym.datasets.natarith -n N -o nat.jsonl)")
    resume_path = resume_file(args.resume) if args.resume else None
    given = args  # (what the caller chose: None is "the resumed run's, else the default")
    args = dataclasses.replace(args, checkpoint_dir=checkpoint_dir_of(args, resume_path))
    ckpt_dir = Path(args.checkpoint_dir) if args.checkpoint_dir else None
    refuse_to_overwrite(ckpt_dir, resume_path, args)
    try:
        with exclusive(ckpt_dir / ".lock" if ckpt_dir else None, f"--checkpoint-dir {ckpt_dir}", "--checkpoint-dir"):
            return _run(args, explicit, given, resume_path, ckpt_dir)
    finally:
        if given.checkpoint_dir is None and resume_path is None:
            drop_if_unused(ckpt_dir)  # a new run's own folder, if it stopped before saving


def _run(args: Args, explicit: Collection[str] | None, given: Args, resume_path: Path | None,
         ckpt_dir: Path | None) -> dict[str, Any]:
    """The run :func:`train` set up, while it holds ``ckpt_dir``."""
    from tqdm import tqdm

    started = time.monotonic()
    state = checkpoint.load(resume_path, map_location="cpu") if resume_path else None  # (nets load onto args.device)
    if state is not None and explicit is not None:
        args = inherit_settings(args, saved_settings(state), explicit)
        check_args(args)
    args = dataclasses.replace(args, device=rank_device(args.device))  # (under torchrun: this rank's GPU)
    deadline = None if args.max_minutes is None else started + 60 * args.max_minutes  # (the settings in force)
    _seed_everything(args.seed)
    args = dataclasses.replace(args, logdir=logdir_of(args, state, resume_path))  # (before any writer)
    # a resumed run keeps its checkpoint's held-out theorems, whatever --seed / --eval-size / --theorems say
    source = make_source(args.theorems, args.eval_size, args.seed,
                         held_out_of(state, resume_path) if state is not None else None, args.warmup_nat)
    if args.server and not args.theorems:
        print("theorems: the PropLogic generator's, proved on the server (--theorems FILE.jsonl for your own)",
              file=sys.stderr)
    heldout = source.heldout(args.eval_size)
    # distributed: the actors search; this process's Lean (the warm start's replays) is the first --server
    own_lean = lean_of_learner(args) if distributed(args) else args
    if args.actor_procs is None and not distributed(args):
        print(f"--actor-procs: 0, as chosen for {os.cpu_count()} cores and {args.actors} searches: the searches "
              "run in this process (--actor-procs N: in N actor processes)", file=sys.stderr)
    new_process = process_factory(own_lean, deadline)
    if args.init:
        net = PolicyValueNet.load(args.init, args.device, max_tactic_tokens=args.max_tactic_tokens)
        print(f"starting from the net in {args.init} ({net.model.cfg.n_params() / 1e6:.2f}M parameters)",
              file=sys.stderr)
    else:
        net = PolicyValueNet.create(args.model_size, device=args.device, seed=args.seed,
                                    max_tactic_tokens=args.max_tactic_tokens)
    opt = make_optimizer(net, args.lr)
    replay = ReplayBuffer(args.replay_size)
    curriculum = Curriculum(source.levels)
    rng = random.Random(args.seed)  # the trainer's own draws: theorems, levels, replay samples
    progress: dict[str, Any] = {"iteration": 0, "warm_started": False, "history": [], "evals": [],
                                "crashes": 0, "errors": 0, "seconds": 0.0}
    average, saved_average = WeightAverage(args.average_decay), None  # the net the run saves (averaging.py)
    if state is not None:
        net, opt, progress, saved_average = restore(state, resume_path, args, replay, curriculum, rng)
        say_if_split_differs(source, args)
        say_where_the_run_goes_on(args, given, state)
        if progress["iteration"] >= args.iterations:
            print(f"--resume: the run is at iteration {progress['iteration']} of --iterations {args.iterations}: "
                  "nothing to run (pass a larger --iterations to go on)", file=sys.stderr)
        del state  # (the replay buffer and weights live on in their objects)
    # training settings, not the net's: the run's flags decide (saved with the net, so prove samples alike)
    for name in ("value_weight", "negative_weight", "temperature", "oversample"):
        setattr(net, name, getattr(args, name))
    if progress["warm_started"]:
        average.start(net, saved_average)

    # A resumed run hides what a crashed run logged after its last checkpoint: steps > that iteration.
    writer = _writer(args.logdir, progress["iteration"] + 1 if resume_path else None)

    def log(prefix: str, metrics: dict[str, float], step: int) -> None:
        if writer:
            for k, v in metrics.items():
                writer.add_scalar(f"{prefix}/{k}", v, step)

    seconds_before = progress["seconds"]  # wall time of earlier runs of this training (resume)
    saved_in: Path | None = None  # set once this run has written a checkpoint (what an interrupt may point to)

    def minutes() -> float:
        return (seconds_before + time.monotonic() - started) / 60

    def out_of_time() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    def save() -> None:
        nonlocal saved_in
        progress["seconds"] = minutes() * 60
        if ckpt_dir:
            save_checkpoint(ckpt_dir / "latest.pt", net, opt, replay, curriculum, rng, progress, args,
                            source.held_out, average)
            saved_in = ckpt_dir

    def held_out(step: int) -> dict[str, float]:
        ev = evaluate(average.net, heldout, new_process, args)
        progress["evals"].append({"iteration": step, "minutes": minutes(), "eval_lean_calls": args.eval_lean_calls,
                                  **ev})
        log("heldout", ev, step)
        return ev

    def time_left() -> dict[str, str]:  # the bar's postfix under --max-minutes: it has no total to show an ETA
        return {} if deadline is None else {"left": tqdm.format_interval(max(0.0, deadline - time.monotonic()))}

    bar = None
    try:
        # Reference rows are rebuilt (deterministically) rather than stored: they are a pure function of the
        # seed. (Inside the try: their replay on a server takes a while, and a Ctrl-C there says where to go on.)
        sft_rows = reference_rows(source, own_lean, deadline) if (args.warmup_steps > 0 or args.sft_mix > 0) else []
        dist = distributed(args)
        if not progress["warm_started"]:
            warm_start(net, sft_rows, args, deadline, progress)
            average.start(net)
            if heldout and args.eval_every > 0 and not dist:  # (distributed: the actors evaluate)
                print(f"held-out solve rate {start_label(args)}: {solve_rate_text(held_out(0))}", file=sys.stderr)
            save()
        if dist:
            from agents.alphaproof.distributed.learner import Run, self_play

            self_play(Run(args, net, opt, replay, curriculum, rng, progress, source, heldout, sft_rows, deadline,
                          save, log, minutes, average, new_process))
            # (a DDP follower never steps an average: its net is the learner, kept in step by DDP)
            return {**progress, "net": average.net if distributed_rank() == 0 else net,
                    "checkpoint_dir": args.checkpoint_dir}

        # with a time limit the run ends at whichever comes first, so the bar shows no (misleading) total
        bar = tqdm(desc="self-play", disable=not args.progress, initial=progress["iteration"],
                   total=args.iterations if args.max_minutes is None else None, postfix=time_left() or None)
        backoff, tasks, down, said_down = Backoff(), None, None, None
        while progress["iteration"] < args.iterations and not out_of_time():
            step, iteration_started = progress["iteration"] + 1, time.monotonic()
            # after an outage the same theorems again: the run draws nothing for an iteration that did not count
            tasks = tasks or [source.sample(curriculum.sample_level(rng), rng, curriculum) for _ in range(args.actors)]
            out = run_searches(tasks, net, new_process, args, deadline=deadline)
            if out.rejected:
                drop_rejected(out.rejected, source, curriculum, step)
                tasks = [t for t in tasks if t.key not in curriculum.rejected]  # (an outage's retry skips them)
            down = out.outage or ("every search found it hung or gone" if server_lost(out) else None)
            results = [r for r in out.results if r is not None]
            if results and all(r.stop_reason == "deadline" and not r.simulations for r in results):
                break  # the time limit came before any search did anything: nothing to count
            if down:  # nothing was searched: no learning on the old buffer, no step, no (zero) statistics
                wait = backoff.delay() if deadline is None else min(backoff.delay(), deadline - time.monotonic())
                why = f"server unavailable ({down})" if down != said_down else "server still unavailable"
                said_down = down  # (the reason, with its how-to-start hint, once per outage)
                print(f"[iteration {step}] {why}; " + (f"retrying in {wait:.3g}s" if wait > 0 else
                                                       "no time left to retry"), file=sys.stderr)
                time.sleep(max(0.0, wait))
                continue
            tasks, said_down = None, None
            backoff.reset()
            new_rows = absorb(out, curriculum, replay, args)
            progress["crashes"] += out.crashed
            progress["errors"] += len(out.errors) + len(out.rejected)
            for e in out.errors + [w for w in [server_warning(out, args)] if w]:
                print(f"[iteration {step}] {e}", file=sys.stderr)
            losses = learn(net, opt, replay, sft_rows if args.sft_mix > 0 else [], rng, args)
            average.update(net)
            stats = search_stats(out)
            progress["iteration"] = step
            record = {"iteration": step, **stats, **losses, "replay_size": float(len(replay)),
                      "new_rows": float(new_rows), "iteration_seconds": time.monotonic() - iteration_started}
            # the latest records only (TensorBoard has them all): a checkpoint must not grow with the run
            progress["history"] = [*progress["history"], record][-HISTORY_KEPT:]
            log("train", {k: v for k, v in record.items() if k != "iteration"}, step)
            log("curriculum", curriculum.summary(), step)
            # no solve rate for an iteration without a verdict (every search cut short by the time limit)
            postfix = {"solved": f"{stats['solve_rate']:.2f}" if "solve_rate" in stats else "-", "replay": len(replay)}
            if losses:
                postfix["loss"] = f"{losses['loss']:.3f}"
            if heldout and args.eval_every > 0 and (step % args.eval_every == 0 or step == args.iterations
                                                    or out_of_time()):
                ev = held_out(step)
                postfix["heldout"] = f"{ev['solve_rate']:.3f}" if "solve_rate" in ev else "-"
            bar.set_postfix({**postfix, **time_left()})  # (time left after the evaluation)
            bar.update(1)
            save()
        bar.close()
        if out_of_time() and progress["iteration"] < args.iterations:
            print(f"--max-minutes {args.max_minutes} reached after iteration {progress['iteration']}"
                  + ("; no final evaluation: the server is unavailable" if down else ""), file=sys.stderr)
            evaluated = [e["iteration"] for e in progress["evals"]]
            if heldout and args.eval_every > 0 and not down and evaluated[-1:] != [progress["iteration"]]:
                held_out(progress["iteration"])  # (the limit fell between iterations: the last one is evaluated too)
            save()
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM (leangym.cli): where to go on from, if anywhere
        if bar is not None:
            bar.close()  # ends the bar's line, so the message below gets its own
        if distributed_rank() == 0:  # (a DDP follower saves nothing: rank 0 says where to go on from)
            print(interrupted_message(saved_in, args.resume if resume_path else None, ckpt_dir), file=sys.stderr)
        raise
    finally:
        if writer:
            writer.close()
    # the net for callers in this process (tests, benchmarks), and where the run saved (main prints it)
    return {**progress, "net": average.net, "checkpoint_dir": args.checkpoint_dir}


def distributed_rank() -> int:
    """This process's rank under torchrun (0 without it)."""
    return int(os.environ.get("RANK", "0")) if int(os.environ.get("WORLD_SIZE", "1")) > 1 else 0


def distributed(args: Args) -> bool:
    """Whether the run searches in actor processes (``--actor-procs``, ``--bind``, torchrun)."""
    from agents.alphaproof.distributed.learner import local_actor_procs

    return local_actor_procs(args) > 0 or bool(args.bind) or int(os.environ.get("WORLD_SIZE", "1")) > 1


def lean_of_learner(args: Args) -> Args:
    """The settings of a distributed learner's own Lean: the first ``--server`` (of ``URL[,URL...]``), with
    at most as many processes at once as it has (the ``--actors`` searches run on the actors' servers)."""
    if not args.server:
        return args
    from leangym.backends.leantree import LeanTreeClient

    first = args.server.split(",")[0]
    size = LeanTreeClient(first, read_timeout=args.read_timeout).max_processes()  # (unreachable: a clear error)
    return dataclasses.replace(args, server=first, actors=min(args.actors, size or args.actors))




# ============================================================================ CLI
def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    progress = train(args, explicit_fields(argv))  # (on Ctrl-C / SIGTERM it says where to go on from, then re-raises)
    evals = [e for e in progress["evals"] if "solve_rate" in e]  # (an evaluation during an outage has none)
    if evals:
        first, last = first_and_last(evals)
        when = [start_label(args) if first["iteration"] == 0 else f"iteration {first['iteration']}",
                f"iteration {last['iteration']}"]
        print(f"held-out solve rate: {solve_rate_text(first)} ({when[0]}) -> {solve_rate_text(last)} ({when[1]})")
        curves = [curve_text(first), curve_text(last)]
        if curves[0] and curves[1]:  # (the harness's budget curve: compare benchmarks/results)
            print(f"  solved within {curves[1][0]} Lean calls: {curves[0][1]} of {int(first['evaluated'])} "
                  f"({when[0]}) -> {curves[1][1]} of {int(last['evaluated'])} ({when[1]})")
    final = progress["evals"][-1] if progress["evals"] else None
    if final is not None and "solve_rate" not in final:
        print(f"final evaluation (iteration {final['iteration']}): {solve_rate_text(final)}"
              + ("; the last evaluation that ran is the one above" if evals else ""))
    if progress["checkpoint_dir"]:
        print(f"checkpoint: {Path(progress['checkpoint_dir']) / 'latest.pt'}")


if __name__ == "__main__":
    run_cli(main)
