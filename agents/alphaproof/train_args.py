"""The command line of ``python -m agents.alphaproof.train``: its settings (:class:`Args`), their help, the parser,
and :func:`check_args`, which refuses values that cannot work."""
from __future__ import annotations

import argparse
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from agents.alphaproof import cli_checks
from agents.alphaproof.distributed.sockets import Keys, parse_bind
from agents.alphaproof.model import SIZES
from leangym.datasets import check_spec
from leangym.cli import ArgumentParser, HelpFormatter

# Where a run saves and logs unless told (each run in a folder of its own there: agents.alphaproof.resume)
DEFAULT_CHECKPOINT_DIR = "checkpoints/alphaproof"
DEFAULT_LOGDIR = "runs/alphaproof"
_DESCRIPTION = "AlphaProof-style training: supervised warm start, then self-play with MCTS."


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
    read_timeout: float = 120.0  # seconds to wait for a server's answer; a search whose call waits longer stops
    num_tactics: int = 4  # tactics asked of the policy per new node
    temperature: float = 0.7  # the policy's sampling temperature when it proposes tactics
    oversample: int = 4  # samples drawn per tactic asked for; the most probable distinct ones are kept
    model_size: str = "tiny"  # mini's warm start is better (91 vs 83), its 10-minute run not (learning_curve.md)
    init: str | None = None  # a net to start from (sft --out, or a train checkpoint's net): replaces --model-size
    max_tactic_tokens: int = 24  # decoding cap: PropLogic tactics are <= 15 tokens; raise it for real Lean (48+)
    factorized: bool = True  # simulator: one branch per goal, so AND nodes split into independent subgoals
    batch_size: int = 16
    lr: float = 3e-4  # self-play learner: near where the warm start's cosine ends (2e-4), so it goes on, not restarts
    learn_steps: int = 8  # gradient steps per iteration
    average_decay: float = 0.99  # the saved net: an EMA of the learner's weights, a step per iteration (averaging.py)
    warmup_steps: int = 6000  # supervised steps on reference proofs before self-play (3000: 83-87 of 100, 6000: 90-92)
    warmup_lr: float = 2e-3  # peak of the warm start's warmup + cosine schedule
    warmup_batch_size: int = 64  # rows per warm-start step
    warmup_theorems: int = 6000  # reference proofs generated for the warm start
    warmup_closers: str = "trivial"  # comma-separated tactics that golf the reference proofs ("": as written)
    warmup_chain: bool = True  # golf with `TACTIC <;> CLOSER` too (one call, not one per branch): learning_curve.md
    warmup_nat: float = 0.1  # share of the generator's warm-start theorems that are ℕ arithmetic (natarith)
    sft_mix: float = 0.25  # fraction of each RL batch drawn from the reference-proof rows
    value_weight: float = 0.25  # weight of the value loss against the policy's (they share the tiny trunk)
    negative_weight: float = 0.0  # weight of the unlikelihood loss on tactics Lean rejected in self-play (0.5: 82 vs 90)
    replay_size: int = 20_000
    min_unsolved_visits: int = 2  # an unsolved node needs this many visits to count as "not provable"
    eval_every: int = 50
    eval_size: int = 100  # held-out theorems per evaluation (PropLogic: proplogic-heldout:100, the harness's)
    eval_lean_calls: int = 64  # Lean-call budget per held-out theorem, searched as prove and the harness search
    # None: the resumed run's (so --resume DIR goes on where the run lives), else a new folder of the run's own in
    # runs/ and checkpoints/alphaproof (resume.logdir_of, checkpoint_dir_of); "": none
    logdir: str | None = None
    checkpoint_dir: str | None = None
    resume: str | None = None  # DIR: a run's --checkpoint-dir (its latest.pt), a checkpoint file; "latest": the newest
    overwrite: bool = False  # start afresh even where a given --checkpoint-dir holds another run's latest.pt
    seed: int = 0
    device: str = "cpu"
    threads: int = 0  # torch CPU threads; 0 keeps torch's default (1 is often fastest for tiny models on few cores)
    max_minutes: float | None = None  # stop after this long, warm start included (then evaluate and save): see _HELP
    progress: bool = True  # tqdm bars
    # distributed (agents.alphaproof.distributed; docs/distributed.md)
    actor_procs: int | None = None  # actor processes (None: automatic from the cores; 0: all in this process)
    bind: str | None = None  # HOST[:PORT] of the learner's sockets (None: 127.0.0.1, a free port)
    keys: str | None = None  # CurveZMQ keys directory (python -m agents.alphaproof.keys DIR)
    heartbeat: float = 1.0  # seconds between an actor's heartbeats
    heartbeat_timeout: float = 10.0  # an actor silent this long is dropped; its theorems are requeued
    infer_batch: int = 0  # states that start an inference forward pass at once (0: --actors / ranks)
    infer_wait_ms: float = 5.0  # the longest an evaluation request waits for others to share its batch


_CHOICES = {"env": ("PropLogic-v0", "LeanProof-v0"), "model_size": tuple(SIZES)}
# Every flag's help (the Args comments, for the user); the formatter appends the default where there is one.
_HELP = {
    "env": ("PropLogic-v0: the in-process simulator; LeanProof-v0: a LeanTree server (--server, which implies it). "
            "Either way the search drives the env's proof sessions (any tactic on any earlier state), not step()"),
    "server": "LeanTree URL (implies --env LeanProof-v0) (default: none)",
    "theorems": "theorems to train and evaluate on, as benchmark --dataset takes them: FILE.jsonl, FILE.json, "
                "FILE.lean, DIR, minif2f, a URL (default: the PropLogic generator's)",
    "actors": "concurrent proof searches per iteration (on a server: one Lean process each)",
    "iterations": "self-play iterations in all (a resumed run counts the earlier ones)",
    "sims": "MCTS simulations per theorem",
    "lean_calls": "Lean-call budget per theorem of training's searches (the held-out one's: --eval-lean-calls)",
    "time_per_theorem": "seconds per theorem (default: unlimited, which keeps runs deterministic)",
    "read_timeout": "seconds to wait for a server's answer; a search whose call waits longer stops",
    "num_tactics": "tactics asked of the policy per new node",
    "temperature": ("sampling temperature of the policy's candidate tactics (lower: closer to its most probable "
                    "ones; log-priors stay the model's own)"),
    "oversample": ("samples drawn per tactic asked for: the most probable distinct ones are kept, so more samples "
                   "find the policy's true top tactics more often, at some decoding cost"),
    "model_size": "size of the policy/value transformer",
    "init": ("start from this net's weights instead of a fresh net: an sft --out file (e.g. supervised on "
             "Mathlib transitions) or a train checkpoint; its size and tokenizer replace --model-size, and the "
             "optimizer, replay buffer and counters start fresh. Add --warmup-steps 0 to skip the PropLogic "
             "warm start (default: a fresh net)"),
    "max_tactic_tokens": "decoding cap per tactic: PropLogic tactics are at most 15 tokens; raise it for real "
                         "Lean (48+)",
    "factorized": "simulator: one branch per goal, so AND nodes split into independent subgoals",
    "batch_size": "rows per gradient step",
    "lr": ("learning rate of the self-play learner (AdamW, weight decay 0.1 on matrices, as in sft); "
           "near where the warm start's schedule ends, so self-play refines the warm-started net rather than "
           "shaking it (at 1e-3 a 10-minute run ended at 74 of 100 held-out theorems, against 79)"),
    "learn_steps": "gradient steps per iteration",
    "average_decay": ("the net the run saves (checkpoints, prove, --init, and in-process runs' held-out "
                      "evaluation; distributed runs evaluate the learner's) is an exponential moving average of "
                      "the learner's weights, one step of this decay per iteration, from the warm-started net (a "
                      "resumed run without one: from its learner); the searches use the learner's own weights "
                      "(0: no average, the learner's weights are saved)"),
    "warmup_steps": "supervised steps on reference proofs before self-play (0: no warm start)",
    "warmup_lr": "peak learning rate of the warm start (linear warmup, then cosine decay)",
    "warmup_batch_size": "rows per warm-start step",
    "warmup_theorems": "reference proofs generated for the warm start",
    "warmup_closers": ("comma-separated tactics tried, in order, on every state of a reference proof: one that "
                       "closes the state replaces the reference's subproof there (shorter proofs, checked by Lean, "
                       "as a search keeps its shortest); a comma inside brackets stays in its tactic "
                       "('trivial,simp [h, g],omega' is three); '': the reference proofs as written"),
    "warmup_chain": ("golf with 'TACTIC <;> CLOSER' too, where the reference's tactic leaves goals: one that "
                     "closes the state replaces the subproof (one Lean call instead of one per branch)"),
    "warmup_nat": ("share of the generator's warm-start theorems drawn from leangym.datasets.natarith: ℕ variables "
                   "under hypotheses, proved by omega (miniF2F's number-theory shape; PropLogic's own arithmetic is "
                   "closed facts only); not with --theorems, whose file is the warm start"),
    "sft_mix": "fraction of each learner batch drawn from the reference-proof rows",
    "value_weight": ("weight of the value loss against the policy loss (both heads share one trunk: on a tiny "
                     "model a lighter value loss leaves the policy more of it)"),
    "negative_weight": ("weight of the loss that makes tactics Lean rejected during self-play less likely "
                        "(-log(1 - p(tactic | state)), at most 2 per state; 0: rejected tactics teach nothing. After the "
                        "6000-step warm start, 0.5 took held-out from 92 to 82 of 100 in 190 iterations, 0 to 90: "
                        "benchmarks/results/learning_curve.md)"),
    "replay_size": "replay buffer capacity in rows (the newest are kept)",
    "min_unsolved_visits": "visits an unsolved node needs to be labelled 'not provable within budget'",
    "eval_every": "evaluate on the held-out theorems every this many iterations, and at the end (0: never)",
    "eval_lean_calls": "Lean-call budget per held-out theorem. The held-out search is prove's and the benchmark "
                       "harness's (not training's, which explores wider): the solve rate is what scripts.benchmark "
                       "reports for the saved net at this --budget-calls",
    "eval_size": "held-out theorems per evaluation (a --theorems file without split \"test\" rows holds out at "
                 "most half its statements)",
    "logdir": (f"TensorBoard directory ('': none) (default: with --resume the resumed run's, else a new folder "
               f"{DEFAULT_LOGDIR}/DATE-TIME, one per run)"),
    "checkpoint_dir": ("where the run saves latest.pt ('': nowhere) (default: with --resume the resumed "
                       f"checkpoint's directory, else a new folder {DEFAULT_CHECKPOINT_DIR}/DATE-TIME, one per run, "
                       f"with a link {DEFAULT_CHECKPOINT_DIR}/latest to the run saved last)"),
    "resume": ("continue a run: DIR is its --checkpoint-dir (the latest.pt in it) or a checkpoint file; "
               f"--resume alone (or --resume latest) is the run saved last in {DEFAULT_CHECKPOINT_DIR}; "
               "the run goes on exactly from the checkpoint, up to --iterations in all, with the "
               "checkpoint's held-out theorems, saving and logging where that run did; a flag not given is "
               "that run's (its server, theorems, budgets, --iterations) (default: a new run)"),
    "overwrite": "start afresh even where a --checkpoint-dir you name holds another run's latest.pt",
    "seed": "seeds the network, the theorems drawn and the held-out split",
    "device": cli_checks.DEVICES,
    "threads": "torch CPU threads (0: torch's default; 1 is often fastest for tiny models on few cores)",
    "max_minutes": ("stop training after this many minutes, warm start included; the final held-out "
                    "evaluation (--eval-size searches) and the save come after the limit, so the run takes "
                    "that much longer (default: no limit). The iteration (or warm start) under way is cut short "
                    "and then counted, learned from and saved: --resume continues exactly from the checkpoint; "
                    "a run stopped by --max-minutes ends with a shorter last iteration, so it is not the same "
                    "as one run without the limit"),
    "progress": "progress bars (tqdm)",
    "actor_procs": ("actor processes that run the --actors searches, the network serving them from this process "
                    "(docs/distributed.md); 0: everything in this one process, as for debugging (default: "
                    "automatic, one per core but one with at least 8 searches each, 0 on 2 cores or fewer)"),
    "bind": ("HOST[:PORT] where the learner listens for actors (port 0 or none: a free one, printed); "
             "0.0.0.0:5555 lets actors on other machines join (use --keys there); given, the run is distributed "
             "even with --actor-procs 0 (remote actors only); '': none (a --resume of a --bind run that goes on "
             "in one process) (default: 127.0.0.1, a free port)"),
    "keys": ("CurveZMQ keys directory made by `python -m agents.alphaproof.keys DIR`: only actors holding its "
             "client key can connect; '': none (default: none, plain TCP)"),
    "heartbeat": "seconds between an actor's heartbeats",
    "heartbeat_timeout": ("an actor silent this many seconds is dropped and its theorems go back to the queue; "
                          "a final evaluation with no actor connected this long is given up"),
    "infer_batch": ("leaf states that start an inference forward pass at once, and the 'full' batch of the "
                    "batch-fill statistic (default: 0, --actors / learner ranks: one leaf per search)"),
    "infer_wait_ms": ("longest wait of an evaluation request for others to share its forward pass (ms; 0: none); "
                      "longer waits fill bigger batches but hold actors back (2000 keeps them in step)"),
}
_METAVAR = {"resume": "DIR", "init": "NET", "keys": "DIR", "bind": "HOST[:PORT]"}


def closer_list(text: str) -> list[str]:
    """``--warmup-closers`` as tactics: split at the commas outside brackets (``simp [h, g]`` is one tactic)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        depth += (ch in "([{⟨") - (ch in ")]}⟩")
        if ch == "," and depth <= 0:
            out.append(text[start:i].strip())
            start, depth = i + 1, 0
    return [t for t in out if t]


def build_parser(only_given: bool = False) -> argparse.ArgumentParser:
    """The command line of :class:`Args`; ``only_given``: a flag not given is left out of the result."""
    p = ArgumentParser(prog="python -m agents.alphaproof.train", description=_DESCRIPTION,
                       formatter_class=HelpFormatter)
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        default = argparse.SUPPRESS if only_given else f.default
        if isinstance(f.default, bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=_HELP[f.name])
        else:
            kind = {int: int, float: float}.get(type(f.default), str)
            if f.name in ("time_per_theorem", "max_minutes"):
                kind = float
            if f.name == "actor_procs":
                kind = int
            more = {"nargs": "?", "const": "latest"} if f.name == "resume" else {}  # --resume alone: the newest run
            p.add_argument(flag, type=kind, default=default, choices=_CHOICES.get(f.name),
                           metavar=_METAVAR.get(f.name), help=_HELP[f.name], **more)
    return p


def parse_args(argv: Sequence[str] | None = None) -> Args:
    return cli_checks.absolute_paths(Args(**vars(build_parser().parse_args(argv))), "theorems", "keys", "init")


def explicit_fields(argv: Sequence[str] | None = None) -> frozenset[str]:
    """The :class:`Args` fields the command line gives (a resumed run takes the others from its checkpoint)."""
    return frozenset(vars(build_parser(only_given=True).parse_args(argv)))


def check_args(args: Args) -> None:
    """Refuse values that cannot work, naming the flag, before the run reads, trains or writes anything."""
    cli_checks.check_device(args.device)
    cli_checks.at_least(1, actors=args.actors, sims=args.sims, lean_calls=args.lean_calls,
                        eval_lean_calls=args.eval_lean_calls,
                        num_tactics=args.num_tactics, max_tactic_tokens=args.max_tactic_tokens,
                        batch_size=args.batch_size, warmup_batch_size=args.warmup_batch_size,
                        replay_size=args.replay_size, eval_size=args.eval_size)
    # 0 is meaningful here: no iterations (warm start only), no learning, no warm start, no evaluation ...
    cli_checks.at_least(0, iterations=args.iterations, learn_steps=args.learn_steps, warmup_steps=args.warmup_steps,
                        warmup_theorems=args.warmup_theorems, min_unsolved_visits=args.min_unsolved_visits,
                        eval_every=args.eval_every, threads=args.threads)
    cli_checks.positive(lr=args.lr, warmup_lr=args.warmup_lr, time_per_theorem=args.time_per_theorem,
                        read_timeout=args.read_timeout, max_minutes=args.max_minutes)
    cli_checks.fraction(sft_mix=args.sft_mix, warmup_nat=args.warmup_nat)
    if not 0 <= args.average_decay < 1:  # (1 would save the warm-started net whatever self-play learned)
        raise ValueError(f"--average-decay must be at least 0 and below 1 (0: no average), got {args.average_decay}")
    cli_checks.at_least(0.0, negative_weight=args.negative_weight, value_weight=args.value_weight)
    cli_checks.positive(temperature=args.temperature)
    cli_checks.at_least(1, oversample=args.oversample)
    if args.actor_procs is not None:
        cli_checks.at_least(0, actor_procs=args.actor_procs)
    if args.actor_procs == 0 and not args.bind and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ValueError("--actor-procs 0 under torchrun: no actor would search; pass --actor-procs N (actors on "
                         "this machine) or --bind HOST:PORT (actors started elsewhere with --connect)")
    cli_checks.positive(heartbeat=args.heartbeat, heartbeat_timeout=args.heartbeat_timeout)
    if args.heartbeat_timeout < 2 * args.heartbeat:  # (else live actors are dropped between two beats)
        raise ValueError(f"--heartbeat-timeout ({args.heartbeat_timeout:g} s) must be at least twice --heartbeat "
                         f"({args.heartbeat:g} s)")
    cli_checks.at_least(0, infer_batch=args.infer_batch)
    cli_checks.non_negative(infer_wait_ms=args.infer_wait_ms)
    if args.bind:
        parse_bind(args.bind)
    if args.keys and not Path(args.keys).is_dir():
        raise ValueError(f"--keys {args.keys}: no such directory; make the keys with "
                         f"`python -m agents.alphaproof.keys {args.keys}`")
    if args.keys:
        Keys(Path(args.keys)).check(server=True)  # (before the warm start, not after it)
    cli_checks.seed(args.seed)
    if args.init is not None:
        if args.resume:
            raise ValueError("--init and --resume exclude each other: a resumed run goes on with its own net")
        cli_checks.input_file("--init", args.init, "a net to start from: an sft --out file or a train checkpoint")
    if args.theorems is not None:
        try:
            check_spec(args.theorems)
        except ValueError as e:
            raise ValueError(f"--theorems {e}") from None
