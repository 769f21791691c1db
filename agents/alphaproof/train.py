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
   (the value target); when a search ends without a proof its root and its
   well-visited nodes are labelled "not provable within budget";
3. **learn** -- ``--learn-steps`` Adam steps on batches from the replay
   buffer, mixed with reference-proof rows so the policy does not drift off
   the tactic language while self-play data is still scarce;
4. **evaluate** every ``--eval-every`` iterations on held-out theorems:
   only proofs that passed ``session.verify`` count.

Everything a run depends on (weights, optimizer, replay buffer, curriculum,
counters, RNG states) goes into the checkpoint, so ``--resume`` continues the
run exactly. A search batch that raises (a dead server ...) is logged and
counted; the next iteration starts on fresh processes.
"""
from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from agents.alphaproof import checkpoint
from agents.alphaproof.curriculum import Curriculum
from agents.alphaproof.model import SIZES
from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.replay import ReplayBuffer
from agents.alphaproof.sft import make_optimizer, rows_from_reference_proofs, train_supervised
from agents.alphaproof.search import SearchConfig, SearchResult, run_batched_search
from agents.alphaproof.theorem_source import Task, make_source
from leangym.backends.types import LeanProcess, NoProcessAvailable, ServerError, ServerUnavailable
from leangym.cli import run_cli
from leangym.session import Budget, ProofSession


@dataclass
class Args:
    env: str = "PropLogic-v0"  # PropLogic-v0: in-process simulator; LeanProof-v0: a LeanTree server
    server: str | None = None  # LeanTree URL (implies LeanProof-v0)
    theorems: str | None = None  # JSONL of theorems (default: the PropLogic generator)
    actors: int = 16  # concurrent searches per iteration
    iterations: int = 30
    sims: int = 32  # MCTS simulations per theorem
    lean_calls: int = 96  # Lean-call budget per theorem
    time_per_theorem: float | None = None  # seconds per theorem (None: unlimited; keeps runs deterministic)
    num_tactics: int = 4  # tactics asked of the policy per new node
    model_size: str = "tiny"
    max_tactic_tokens: int = 24  # decoding cap: PropLogic tactics are <= 15 tokens; raise it for real Lean (48+)
    factorized: bool = True  # simulator: one branch per goal, so AND nodes split into independent subgoals
    batch_size: int = 16
    lr: float = 1e-3
    learn_steps: int = 8  # gradient steps per iteration
    warmup_steps: int = 200  # supervised steps on reference proofs before self-play
    warmup_lr: float = 2e-3  # peak of the warm start's warmup + cosine schedule
    warmup_theorems: int = 1500  # reference proofs generated for the warm start
    sft_mix: float = 0.25  # fraction of each RL batch drawn from the reference-proof rows
    replay_size: int = 20_000
    min_unsolved_visits: int = 2  # an unsolved node needs this many visits to count as "not provable"
    eval_every: int = 5
    eval_size: int = 40  # held-out theorems per evaluation
    logdir: str | None = "runs/alphaproof"
    checkpoint_dir: str | None = "checkpoints/alphaproof"
    resume: str | None = None  # a checkpoint file, or a directory holding latest.pt
    seed: int = 0
    device: str = "cpu"
    threads: int = 0  # torch CPU threads; 0 keeps torch's default (1 is often fastest for tiny models on few cores)
    max_minutes: float | None = None  # stop after this long, warm start included (then evaluate and save)
    progress: bool = True  # tqdm bars


# ============================================================================ processes and sessions
def process_factory(args: Args) -> Callable[[], LeanProcess]:
    """A fresh Lean process per theorem: the simulator in-process, or a lease from the server.

    A server is asked first whether it can serve the run at all, so that a wrong URL or a
    pool smaller than ``--actors`` stops the run before it trains (and saves) anything:
    actors beyond the pool would wait a minute for a process and then count as unsolved.
    """
    if args.server:
        from leangym.backends.leantree import LeanTreeClient

        client = LeanTreeClient(args.server)
        size = client.status().get("max_processes")  # ServerUnavailable (with a hint) if nobody answers
        if isinstance(size, int) and args.actors > size:
            raise ValueError(f"--actors {args.actors} searches {args.actors} theorems at once, each on its own Lean "
                             f"process, but the server at {args.server} runs at most {size}: restart it with "
                             f"--max-processes {args.actors} (or more), or pass --actors {size}")
        return lambda: client.lease()
    from leangym.sim.local import LocalProcess

    return lambda: LocalProcess(factorized=args.factorized)


START_ATTEMPTS = 3  # a theorem's start is tried this often on a failing server (fresh process each time)


def open_sessions(tasks: Sequence[Task], new_process: Callable[[], LeanProcess], args: Args,
                  errors: list[str]) -> tuple[list[Task], list[ProofSession]]:
    """A ProofSession per task; a task whose process or statement fails is dropped (and logged).

    A server failure (HTTP 5xx, a dropped connection, a dead process) is retried on a fresh
    process first, so that a flaky server does not count as unsolved theorems in evaluations.
    """
    budget = Budget(max_lean_calls=args.lean_calls, max_seconds=args.time_per_theorem)
    kept, sessions = [], []
    for task in tasks:
        for attempt in range(START_ATTEMPTS):
            proc = None
            try:
                proc = new_process()
                sessions.append(ProofSession(proc, task.theorem, budget=budget))
                kept.append(task)
                break
            except Exception as e:  # noqa: BLE001 -- LeanError (bad statement), ServerError, a dead lease ...
                if proc is not None:
                    proc.close()
                transient = isinstance(e, ServerError) and not isinstance(e, (ServerUnavailable, NoProcessAvailable))
                if not transient or attempt + 1 == START_ATTEMPTS:
                    errors.append(f"{task.theorem.name}: {type(e).__name__}: {e}")
                    break
    return kept, sessions


def close_sessions(sessions: Sequence[ProofSession]) -> None:
    for s in sessions:
        try:
            s.process.close()
        except Exception:  # a lease on a dead server cannot be given back (a restart frees it)
            pass


class CountingEvaluator:
    """The network, with the batch size and time of every ``evaluate`` call recorded."""

    def __init__(self, net: PolicyValueNet) -> None:
        self.net, self.batch_sizes, self.seconds = net, [], 0.0

    def evaluate(self, states, k):
        t0 = time.monotonic()
        out = self.net.evaluate(states, k)
        self.seconds += time.monotonic() - t0
        self.batch_sizes.append(len(states))
        return out


def search_config(args: Args) -> SearchConfig:
    return SearchConfig(num_simulations=args.sims, max_lean_calls=args.lean_calls,
                        max_seconds=args.time_per_theorem, num_tactics=args.num_tactics,
                        widen_tactics=args.num_tactics)


def run_searches(tasks: Sequence[Task], net: PolicyValueNet, new_process, args: Args,
                 retry_alone: bool = True) -> dict[str, Any]:
    """Search every task in one batched actor. Never raises: failures are counted in the result.

    If the batch raises (a dead server, a kernel bug on one tactic ...), its theorems are searched
    again one by one on fresh processes, so that one poisoned theorem costs only itself.
    """
    errors: list[str] = []
    kept, sessions = open_sessions(tasks, new_process, args, errors)
    evaluator = CountingEvaluator(net)
    t0 = time.monotonic()
    results: list[SearchResult | None] = [None] * len(kept)
    crashed = 0
    try:
        if sessions:
            results = list(run_batched_search(sessions, evaluator, search_config(args)))
    except Exception as e:  # noqa: BLE001 -- a long run must outlive a failed worker
        errors.append(f"search batch of {len(sessions)} raised {type(e).__name__}: {e}\n"
                      f"{traceback.format_exc(limit=-3)}")
        crashed = len(sessions)
    finally:
        close_sessions(sessions)
    out = {"tasks": kept, "sessions": sessions, "results": results, "errors": errors,
           "failed_starts": len(tasks) - len(kept), "crashed": crashed, "evaluator": evaluator}
    if crashed and retry_alone and len(kept) > 1:
        alone = [run_searches([t], net, new_process, args, retry_alone=False) for t in kept]
        out.update(tasks=[t for a in alone for t in a["tasks"]], sessions=[s for a in alone for s in a["sessions"]],
                   results=[r for a in alone for r in a["results"]], crashed=sum(a["crashed"] for a in alone),
                   failed_starts=out["failed_starts"] + sum(a["failed_starts"] for a in alone),
                   errors=errors + [e for a in alone for e in a["errors"]])
        evaluator.batch_sizes += [b for a in alone for b in a["evaluator"].batch_sizes]
        evaluator.seconds += sum(a["evaluator"].seconds for a in alone)
    out["wall_s"] = time.monotonic() - t0
    return out


# ============================================================================ training rows
def rows_from_result(result: SearchResult, min_unsolved_visits: int) -> list[dict[str, Any]]:
    """Policy + value rows from one finished search (see the module docstring, step 2)."""
    if result.solved and not result.verified:
        return []  # the proof did not survive the final check: trust nothing from this tree
    rows = []
    for i, t in enumerate(result.targets):
        if t.steps_to_go is not None:
            rows.append({"state": t.state, "tactic": t.proof_tactic, "steps_to_go": t.steps_to_go})
        elif not result.solved and (i == 0 or sum(t.visit_counts) >= min_unsolved_visits):
            # The search spent its whole budget and never solved this state: "not provable
            # within budget". (After a solved root, unsolved side nodes were just abandoned.)
            rows.append({"state": t.state, "steps_to_go": None})
    return rows


def reference_rows(source, args: Args) -> list[dict[str, Any]]:
    """Rows from reference proofs, replayed on the simulator (held-out theorems excluded by the source)."""
    refs = source.reference(args.warmup_theorems, seed=args.seed + 1)
    return rows_from_reference_proofs(refs) if refs else []


# ============================================================================ learning
def learn(net: PolicyValueNet, opt: torch.optim.Optimizer, replay: ReplayBuffer, sft_rows: list, rng: random.Random,
          args: Args) -> dict[str, float]:
    """``--learn-steps`` steps on fresh replay samples (plus a ``--sft-mix`` share of reference rows)."""
    if len(replay) == 0 or args.learn_steps <= 0:
        return {}
    n_sft = round(args.batch_size * args.sft_mix) if sft_rows else 0
    rows = []
    for _ in range(args.learn_steps):  # batch by batch, so that each batch holds its share of reference rows
        rows += replay.sample(args.batch_size - n_sft, rng)
        rows += [sft_rows[rng.randrange(len(sft_rows))] for _ in range(n_sft)]
    # train_supervised shuffles the rows (seeded) and cuts them into learn_steps batches of batch_size
    history = train_supervised(net, rows, args.learn_steps, args.batch_size, args.lr, optimizer=opt,
                               schedule=False, seed=rng.getrandbits(32))
    return {k: float(np.mean([h[k] for h in history])) for k in ("loss", "policy_loss", "value_loss")}


# ============================================================================ statistics
def search_stats(out: dict[str, Any]) -> dict[str, float]:
    """Throughput and Lean health of one batch of searches (for TensorBoard)."""
    results = [r for r in out["results"] if r is not None]
    sessions = out["sessions"]
    calls = sum(s.stats.lean_calls for s in sessions)
    rejected = sum(s.stats.rejected for s in sessions)
    lat = [x for s in sessions for x in s.stats.latencies_s]
    wall = max(out["wall_s"], 1e-9)
    ev = out["evaluator"]
    return {
        "solve_rate": sum(r.verified for r in results) / max(1, len(out["tasks"]) + out["failed_starts"]),
        "simulations_per_s": sum(r.simulations for r in results) / wall,
        "lean_calls_per_s": calls / wall,
        "tactic_error_rate": rejected / max(1, calls + sum(s.stats.policy_rejected for s in sessions)),
        "lean_latency_p50_ms": 1e3 * float(np.percentile(lat, 50)) if lat else 0.0,
        "lean_latency_p99_ms": 1e3 * float(np.percentile(lat, 99)) if lat else 0.0,
        "eval_batch_mean": float(np.mean(ev.batch_sizes)) if ev.batch_sizes else 0.0,
        "eval_batch_max": float(max(ev.batch_sizes, default=0)),
        "network_time_frac": ev.seconds / wall,
        "server_failures": float(sum(s.stats.server_failures for s in sessions)),
        "crashed_searches": float(out["crashed"]),
        "failed_starts": float(out["failed_starts"]),
    }


def evaluate(net: PolicyValueNet, tasks: Sequence[Task], new_process, args: Args) -> dict[str, float]:
    """Held-out solve rate (verified proofs only), overall and per level.

    In-process, every theorem is searched in one batch (bigger network batches); on a server
    ``--actors`` at a time, as many leases as training uses.
    """
    # Evaluating draws from torch's RNG (the policy samples): on a fork of it, so that the run's
    # own draws, and so a resumed run, do not depend on when evaluations happened.
    with torch.random.fork_rng(devices=[net.device] if net.device.type == "cuda" else []):
        return _evaluate(net, tasks, new_process, args)


def _evaluate(net: PolicyValueNet, tasks: Sequence[Task], new_process, args: Args) -> dict[str, float]:
    solved: dict[Any, list[int]] = {}
    width = args.actors if args.server else max(1, len(tasks))
    for i in range(0, len(tasks), width):
        chunk = list(tasks[i:i + width])
        out = run_searches(chunk, net, new_process, args)
        for e in out["errors"]:
            print(f"[evaluation] {e}", file=sys.stderr)
        ok = {t.key for t, r in zip(out["tasks"], out["results"]) if r is not None and r.verified}
        for t in chunk:
            solved.setdefault(t.level, []).append(int(t.key in ok))
    flat = [x for v in solved.values() for x in v]
    metrics = {"solve_rate": sum(flat) / max(1, len(flat))}
    metrics.update({f"solve_rate_level_{lv}": sum(v) / len(v) for lv, v in sorted(solved.items())})
    return metrics


# ============================================================================ the run
def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def save_checkpoint(path: Path, net, opt, replay, curriculum, rng, progress: dict, args: Args) -> None:
    checkpoint.save(path, {
        "net": net.to_payload(), "optimizer": opt.state_dict(), "replay": replay.state_dict(),
        "curriculum": curriculum.state_dict(), "rng": checkpoint.rng_state(rng), "progress": progress,
        "args": dataclasses.asdict(args),
    })


# What a resumed run takes from its checkpoint whatever the command line says (its network is the
# checkpoint's), and what only changes how the run goes on from here.
_FIXED_BY_CHECKPOINT = ("model_size", "max_tactic_tokens", "device")
_NOT_SETTINGS = ("resume", "progress", "iterations", "max_minutes", "logdir", "checkpoint_dir", "threads")


def warn_changed_settings(saved: dict[str, Any], args: Args) -> None:
    """Say which settings of a resumed run differ from the checkpoint's, and which of them take effect."""
    changed = [f.name for f in dataclasses.fields(Args) if f.name in saved and f.name not in _NOT_SETTINGS
               and saved[f.name] != getattr(args, f.name)]
    for name in changed:
        effect = "ignored: the checkpoint's network is kept" if name in _FIXED_BY_CHECKPOINT else "applies from now on"
        print(f"--resume: --{name.replace('_', '-')} is {getattr(args, name)!r}, the checkpoint's run had "
              f"{saved[name]!r} ({effect}; the run no longer continues exactly)", file=sys.stderr)


def train(args: Args) -> dict[str, Any]:
    """Run (or resume) training; returns the progress record (also stored in every checkpoint)."""
    from tqdm import tqdm

    if args.server and args.env == "PropLogic-v0":
        args = dataclasses.replace(args, env="LeanProof-v0")
    if args.env == "LeanProof-v0" and not args.server:
        raise SystemExit("LeanProof-v0 needs --server URL (and usually --theorems FILE.jsonl)")
    started = time.monotonic()
    _seed_everything(args.seed)
    source = make_source(args.theorems, args.eval_size, args.seed)
    if args.server and not args.theorems:
        print("theorems: the PropLogic generator's, proved on the server (--theorems FILE.jsonl for your own)",
              file=sys.stderr)
    heldout = source.heldout(args.eval_size)
    new_process = process_factory(args)
    net = PolicyValueNet.create(args.model_size, device=args.device, seed=args.seed,
                                max_tactic_tokens=args.max_tactic_tokens)
    opt = make_optimizer(net, args.lr)
    replay = ReplayBuffer(args.replay_size)
    curriculum = Curriculum(source.levels)
    rng = random.Random(args.seed)  # the trainer's own draws: theorems, levels, replay samples
    progress: dict[str, Any] = {"iteration": 0, "warm_started": False, "history": [], "evals": [],
                                "crashes": 0, "errors": 0, "seconds": 0.0}
    ckpt_dir = Path(args.checkpoint_dir) if args.checkpoint_dir else None

    resume_path = checkpoint.latest(args.resume) if args.resume else None
    if args.resume and resume_path is None:
        raise SystemExit(f"--resume {args.resume}: no checkpoint there")
    if resume_path is not None:
        state = checkpoint.load(resume_path, map_location=args.device)
        net = PolicyValueNet.from_payload(state["net"], device=args.device)
        opt = make_optimizer(net, args.lr)
        opt.load_state_dict(state["optimizer"])
        replay.load_state_dict(state["replay"])
        curriculum.load_state_dict(state["curriculum"])
        checkpoint.set_rng_state(state["rng"], rng)
        progress = state["progress"]
        print(f"resumed from {resume_path} at iteration {progress['iteration']}", file=sys.stderr)
        warn_changed_settings(state.get("args", {}), args)

    # Reference rows are rebuilt (deterministically) rather than stored: they are a pure function of the seed.
    sft_rows = reference_rows(source, args) if (args.warmup_steps > 0 or args.sft_mix > 0) else []
    writer = None
    if args.logdir:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(args.logdir, purge_step=progress["iteration"] or None)

    def log(prefix: str, metrics: dict[str, float], step: int) -> None:
        if writer:
            for k, v in metrics.items():
                writer.add_scalar(f"{prefix}/{k}", v, step)

    seconds_before = progress["seconds"]  # wall time of earlier runs of this training (resume)

    def minutes() -> float:
        return (seconds_before + time.monotonic() - started) / 60

    def save() -> None:
        progress["seconds"] = minutes() * 60
        if ckpt_dir:
            save_checkpoint(ckpt_dir / "latest.pt", net, opt, replay, curriculum, rng, progress, args)

    if not progress["warm_started"]:
        if args.warmup_steps > 0 and sft_rows:
            # AlphaProof's supervised stage in miniature: imitate reference proofs, own optimizer and schedule.
            history = train_supervised(net, sft_rows, args.warmup_steps, args.batch_size, args.warmup_lr,
                                       writer=writer, progress=args.progress, seed=args.seed)
            sft = history[-1]
            print(f"warm start: {args.warmup_steps} steps on {len(sft_rows)} reference rows, loss {sft['loss']:.3f}",
                  file=sys.stderr)
        progress["warm_started"] = True
        if heldout and args.eval_every > 0:
            ev = evaluate(net, heldout, new_process, args)
            progress["evals"].append({"iteration": 0, "minutes": minutes(), **ev})
            log("heldout", ev, 0)
            print(f"held-out solve rate after warm start: {ev['solve_rate']:.2f}", file=sys.stderr)
        save()

    # with a time limit the run ends at whichever comes first, so the bar shows no (misleading) total
    todo = range(progress["iteration"], args.iterations)
    bar = tqdm(todo if args.max_minutes is None else iter(todo), desc="self-play", disable=not args.progress,
               initial=progress["iteration"], total=args.iterations if args.max_minutes is None else None)
    for it in bar:
        tasks = [source.sample(curriculum.sample_level(rng), rng, curriculum) for _ in range(args.actors)]
        out = run_searches(tasks, net, new_process, args)
        new_rows = 0
        for task, result in zip(out["tasks"], out["results"]):
            if result is None:
                continue
            curriculum.record(task.key, task.level, result.verified)
            new_rows += replay.add(rows_from_result(result, args.min_unsolved_visits))
        progress["crashes"] += out["crashed"]
        progress["errors"] += len(out["errors"])
        for e in out["errors"]:
            print(f"[iteration {it + 1}] {e}", file=sys.stderr)
        losses = learn(net, opt, replay, sft_rows if args.sft_mix > 0 else [], rng, args)
        stats = search_stats(out)
        step = it + 1
        progress["iteration"] = step
        record = {"iteration": step, **stats, **losses, "replay_size": float(len(replay)), "new_rows": float(new_rows)}
        progress["history"].append(record)
        log("train", {k: v for k, v in record.items() if k != "iteration"}, step)
        log("curriculum", curriculum.summary(), step)
        postfix = {"solved": f"{stats['solve_rate']:.2f}", "replay": len(replay)}
        if losses:
            postfix["loss"] = f"{losses['loss']:.3f}"
        timed_out = args.max_minutes is not None and time.monotonic() - started > 60 * args.max_minutes
        if heldout and args.eval_every > 0 and (step % args.eval_every == 0 or step == args.iterations or timed_out):
            ev = evaluate(net, heldout, new_process, args)
            progress["evals"].append({"iteration": step, "minutes": minutes(), **ev})
            log("heldout", ev, step)
            postfix["heldout"] = f"{ev['solve_rate']:.2f}"
        bar.set_postfix(postfix)
        save()
        if timed_out:
            print(f"--max-minutes {args.max_minutes} reached after iteration {step}", file=sys.stderr)
            break
    bar.close()
    if writer:
        writer.close()
    return {**progress, "net": net}  # the net for callers in this process (tests, benchmarks)


# ============================================================================ CLI
_CHOICES = {"env": ("PropLogic-v0", "LeanProof-v0"), "model_size": tuple(SIZES)}


def parse_args(argv: Sequence[str] | None = None) -> Args:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        default = f.default
        if isinstance(default, bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=default)
        else:
            kind = {int: int, float: float}.get(type(default), str)
            if f.name in ("time_per_theorem", "max_minutes"):
                kind = float
            p.add_argument(flag, type=kind, default=default, choices=_CHOICES.get(f.name),
                           help=f"(default: {default})")
    ns = p.parse_args(argv)
    return Args(**vars(ns))


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    try:
        progress = train(args)
    except KeyboardInterrupt:
        if args.checkpoint_dir and (Path(args.checkpoint_dir) / "latest.pt").exists():
            print(f"stopped; the last checkpoint is {Path(args.checkpoint_dir) / 'latest.pt'}: "
                  f"go on with --resume {args.checkpoint_dir}", file=sys.stderr)
        raise
    evals = progress["evals"]
    if evals:
        print(f"held-out solve rate: {evals[0]['solve_rate']:.3f} (after warm start) -> "
              f"{evals[-1]['solve_rate']:.3f} (iteration {evals[-1]['iteration']})")
    if args.checkpoint_dir:
        print(f"checkpoint: {Path(args.checkpoint_dir) / 'latest.pt'}")


if __name__ == "__main__":
    run_cli(main)
