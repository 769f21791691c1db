"""The distributed self-play loop (``--actor-procs N``, or a learner that remote actors join).

Rank 0 is learner + coordinator + inference service; searches run in actor
processes (local ones it starts, remote ones that connect). The loop never
waits for collection:

1. **collect** -- finished searches stream in (:class:`Coordinator`); a proof
   an actor reports counts once re-checked on the learner's own Lean
   (``proof_gate``); verdicts go to the curriculum, rows to the replay buffer;
2. **learn** -- one gradient step whenever the step budget allows: ``--learn-steps``
   steps per ``--actors`` finished searches, as in-process (a bounded replay
   ratio: no overfitting a trickle of rows; when learning falls two iterations
   behind, the coordinator hands out no new theorems until it catches up);
   the inference service gets the new weights (a version number travels with
   every answer);
3. every ``--actors`` finished searches are an **iteration**: logged, saved, and
   every ``--eval-every`` one a held-out evaluation is dispatched to the actors
   (ahead of training work). Learning waits while one runs, so each measures one
   weight version (recorded with it; a search that began on older weights is
   searched again); the first and the final one hold collection back too.
"""
from __future__ import annotations

import math
import os
import socket
import sys
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from agents.alphaproof.actors import solved_within
from agents.alphaproof.distributed import ddp
from agents.alphaproof.distributed.actor import SEARCH_SETTINGS
from agents.alphaproof.distributed.coordinator import Coordinator, Result
from agents.alphaproof.distributed.inference import InferenceService
from agents.alphaproof.distributed.sockets import Net, parse_bind
from agents.alphaproof.distributed.supervisor import Supervisor
from agents.alphaproof.iteration import drop_rejected, solve_rate_text, start_label
from agents.alphaproof.proof_gate import Gate
from agents.alphaproof.train_args import Args
from leangym.session import VERIFY_CALLS

@dataclass
class Run:
    """What ``train._run`` set up, handed to the distributed loop."""

    args: Any
    net: Any
    opt: torch.optim.Optimizer
    replay: Any
    curriculum: Any
    rng: Any
    progress: dict[str, Any]
    source: Any
    heldout: list
    sft_rows: list
    deadline: float | None
    save: Callable[[], None]
    log: Callable[[str, dict[str, float], int], None]
    minutes: Callable[[], float]
    average: Any  # averaging.WeightAverage: the saved net, a step after each iteration (the actors evaluate the learner's)
    new_process: Callable[[], Any]  # the learner's own Lean: every proof an actor reports is re-checked on it


@dataclass
class EvalRound:
    step: int
    jobs: set[int]
    exclusive: bool  # collection waits for it too (the first and the final evaluation)
    version: int = 0  # the one weight version it evaluates (learning waits while a round is open)
    solved: dict[Any, list[int]] = field(default_factory=dict)
    calls: list[int] = field(default_factory=list)  # the search's Lean calls of each verified proof
    missing: int = 0


@dataclass
class Window:
    """What the searches of the iteration under way gave."""

    started: float = field(default_factory=time.monotonic)
    searches: int = 0
    judged: list[int] = field(default_factory=list)
    simulations: int = 0
    lean_calls: int = 0
    rows: int = 0
    crashed: int = 0
    failed_starts: int = 0
    lag: list[int] = field(default_factory=list)
    losses: list[dict[str, float]] = field(default_factory=list)
    sampled: int = 0


def actor_shares(actors: int, procs: int) -> list[int]:
    """``actors`` searches over ``procs`` processes, as evenly as possible."""
    return [len(range(i, actors, procs)) for i in range(procs) if len(range(i, actors, procs))]


def auto_actor_procs(actors: int) -> int:
    """The default ``--actor-procs``: a process per core but one (the learner's), each with at least 8
    searches; none (single-process mode) on a machine of 2 cores or fewer, where an actor process
    competes with the learner's own forward passes for the same cores."""
    cores = os.cpu_count() or 1
    return 0 if cores <= 2 else max(0, min(cores - 1, actors // 8))


def local_actor_procs(args: Args) -> int:
    """The actor processes this learner starts: ``--actor-procs``, else automatic; under torchrun without
    ``--bind`` at least one (no remote actor is expected, so on a small machine nobody would search)."""
    if args.actor_procs is not None:
        return args.actor_procs
    torchrun = int(os.environ.get("WORLD_SIZE", "1")) > 1
    return max(1 if torchrun and not args.bind else 0, auto_actor_procs(args.actors))


def self_play(run: Run) -> None:
    args = run.args
    world = ddp.World.from_env(args.device)
    host, port = parse_bind(args.bind or "127.0.0.1")
    znet = Net(args.keys, server=True)
    svc = sup = coord = None
    finished = False  # (else: interrupted or failed, and remote actors wait for a --resume)
    learner = ddp.Learner(run.net, run.opt, world, args)
    try:
        infer_net = type(run.net).from_payload(run.net.to_payload(), args.device)
        max_batch = args.infer_batch or max(1, args.actors // world.size)
        svc = InferenceService(infer_net, znet, host, max_batch, args.infer_wait_ms / 1e3).start()
        endpoints = world.endpoints(svc.port)
        learner.publish = lambda version: svc.publish(learner.weights(), version)
        if world.rank != 0:
            learner.follow(svc.raise_if_failed)  # DDP steps as rank 0 says, until it says stop
            return
        config = {k: getattr(args, k) for k in SEARCH_SETTINGS}
        loop = Loop(run, learner, svc)
        coord = Coordinator(znet, host, port, config, endpoints, loop.draw, args.heartbeat, args.heartbeat_timeout)
        loop.coord = coord
        coord.status_extra = loop.status
        wildcard = host in ("0.0.0.0", "*", "[::]")
        if host not in ("127.0.0.1", "localhost", "[::1]") and not args.keys:
            print(f"[learner] warning: --bind {host} without --keys: anyone who reaches this machine can join, "
                  "take theorems and send results (python -m agents.alphaproof.keys DIR, then --keys DIR on "
                  "both sides)", file=sys.stderr, flush=True)
        connect = f"tcp://{'127.0.0.1' if wildcard else host}:{coord.port}"
        shown = f"tcp://{socket.gethostname() if wildcard else host}:{coord.port}"
        print(f"[learner] actors connect with: python -m agents.alphaproof.actor --connect {shown}"
              + (f" --keys {args.keys}" if args.keys else "") + f" (inference on {len(endpoints)} rank(s))",
              file=sys.stderr, flush=True)
        procs = local_actor_procs(args)
        if procs > 0:
            servers = [u for u in (args.server or "").split(",") if u]
            sup = Supervisor(connect, actor_shares(args.actors, procs), servers, args.keys)
            sup.start()
        loop.sup = sup
        loop.main()
        finished = True
    finally:
        if coord is not None:
            coord.stop_all("the run is over" if finished else "the learner stopped", final=finished)
        if sup is not None:
            sup.stop()
        learner.stop()
        if coord is not None:
            coord.close()
        if svc is not None:
            svc.stop()
        znet.close()
        world.close()


class Loop:
    """Rank 0's loop: results in, learning steps, iterations, evaluations (see the module docstring)."""

    def __init__(self, run: Run, learner: "ddp.Learner", svc: InferenceService) -> None:
        self.run, self.args, self.learner, self.svc = run, run.args, learner, svc
        self.coord: Coordinator | None = None
        self.sup: Supervisor | None = None
        self.rounds: dict[int, EvalRound] = {}
        self.window = Window()
        self.open = True  # training theorems are handed out
        self.searches_done = 0  # training searches absorbed by this run (the step budget counts them)
        self.steps_done = 0
        self.rows_in = 0
        self.rows_sampled = 0
        self.started = time.monotonic()
        self.gate = Gate(run.new_process)
        self.checking: list[tuple[Result, Future]] = []  # actors' proofs being re-checked, in arrival order
        self.unconfirmed = 0  # proofs that did not hold on the learner's process
        self.recheck_failures = 0  # re-checks the learner's Lean could not run (their theorems searched again)
        self.counted: dict[str, int] = {}  # progress["distributed"] at the last save, and this run's counts then
        self.counted_at: dict[str, int] = {}

    def status(self) -> dict[str, Any]:
        run = self.run
        elapsed = max(1e-9, time.monotonic() - self.started)
        return {"inference": self.svc.stats.snapshot(),
                "learner": {"iteration": run.progress["iteration"], "steps": self.steps_done,
                            "rows_per_s": self.rows_in / elapsed, "replay": len(run.replay),
                            "replay_ratio": self.rows_sampled / max(1, self.rows_in), "version": self.learner.version,
                            "actor_restarts": self.sup.restarts if self.sup else 0}}

    # ------------------------------------------------------------------ dispatch
    def draw(self):
        if not self.open or any(r.exclusive for r in self.rounds.values()):
            return None
        run = self.run
        return run.source.sample(run.curriculum.sample_level(run.rng), run.rng, run.curriculum)

    def schedule_eval(self, step: int, exclusive: bool) -> None:
        if not self.run.heldout or self.args.eval_every <= 0:
            return
        self.learner.publish_now()  # the newest weights, held until the round is over: it measures one net
        jobs = self.coord.add_eval(list(self.run.heldout), step)
        self.rounds[step] = EvalRound(step, {j.id for j in jobs}, exclusive, self.learner.version)

    # ------------------------------------------------------------------ the loop
    def main(self) -> None:
        from tqdm import tqdm

        run, args = self.run, self.args
        progress = run.progress
        if not progress["evals"]:
            self.schedule_eval(0, exclusive=True)
        bar = tqdm(desc="self-play", disable=not args.progress, initial=progress["iteration"],
                   total=args.iterations if args.max_minutes is None else None)
        try:
            while progress["iteration"] < args.iterations and not self.out_of_time():
                self.step_once()
                if self.window.searches >= args.actors:
                    self.end_iteration(bar)
            self.open = False
            if progress["iteration"] < args.iterations:
                print(f"--max-minutes {args.max_minutes} reached after iteration {progress['iteration']}",
                      file=sys.stderr)
            self.rounds.clear()  # (unfinished evaluations: the final one supersedes them)
            final = progress["iteration"]
            if not progress["evals"] or progress["evals"][-1]["iteration"] != final:
                self.schedule_eval(final, exclusive=True)
                alone_since = None  # (no actor connected since then: nobody may come to evaluate)
                while self.rounds:
                    self.step_once(learn=False)
                    starting = self.sup is not None and self.sup.pids()  # (local actors on their way)
                    alone_since = None if self.coord.actors or starting else alone_since or time.monotonic()
                    if alone_since is not None and time.monotonic() - alone_since > args.heartbeat_timeout:
                        print(f"[learner] no actor connected for --heartbeat-timeout {args.heartbeat_timeout:g} s: "
                              "the run ends without its final evaluation", file=sys.stderr, flush=True)
                        self.rounds.clear()
            self.save()
        finally:
            bar.close()
            self.gate.close()

    def out_of_time(self) -> bool:
        return self.run.deadline is not None and time.monotonic() >= self.run.deadline

    def step_once(self, learn: bool = True) -> None:
        """Take in what arrived, restart dead local actors, and take a learning step if one is due."""
        if len(self.run.replay) == 0:  # nothing to learn from (as in-process, those steps are not taken)
            self.steps_done = self.steps_due()
        due = self.steps_due() - self.steps_done
        for r in self.coord.poll(0 if learn and due > 0 else 50):
            if r.msg["status"] != "searched":
                r.msg.header["verified"] = False  # (only a search can prove: a crashed one is unsolved)
            if r.msg["verified"]:  # a claim: it counts once re-checked here
                self.checking.append((r, self.gate.submit(r.job.task.theorem, r.msg.header.get("proof"))))
            else:
                self.absorb(r)
        for r in self.rechecked():
            self.absorb(r)
        self.svc.raise_if_failed()
        if self.sup is not None:
            for event in self.sup.check():
                print(f"[learner] {event}", file=sys.stderr, flush=True)
        evaluating = bool(self.rounds)  # (no step while an evaluation runs: it uses one weight version)
        self.coord.wait_s = 1.0 if due > 2 * max(1, self.args.learn_steps) else 0.0
        if learn and due > 0 and not evaluating and len(self.run.replay) > 0:
            self.learn_step()
        self.coord.version = self.learner.version

    def steps_due(self) -> int:
        return self.args.learn_steps * self.searches_done // self.args.actors

    def learn_step(self) -> None:
        run, args = self.run, self.args
        total = args.batch_size * self.learner.world.size  # (each DDP rank learns on batch_size of them)
        n_sft = round(total * args.sft_mix) if (run.sft_rows and args.sft_mix > 0) else 0
        rows = run.replay.sample(total - n_sft, run.rng)
        rows += [run.sft_rows[run.rng.randrange(len(run.sft_rows))] for _ in range(n_sft)]
        self.window.losses.append(self.learner.step(rows))
        self.window.sampled += len(rows)
        self.rows_sampled += len(rows)
        self.steps_done += 1

    # ------------------------------------------------------------------ results
    def rechecked(self) -> list[Result]:
        """The results whose proofs the gate has re-checked, with ``verified`` its verdict: a proof that does
        not hold is unsolved, without rows; one the learner's Lean could not check is searched again
        (dropping only solved searches would lower the solve rates)."""
        done, waiting = [], []
        for r, future in self.checking:
            if not future.done():
                waiting.append((r, future))
                continue
            check = future.result()
            if check.server_failure:
                self.coord.requeue([r.job], fault=False)
                self.recheck_failures += 1
                if self.recheck_failures % 100 == 1:
                    print(f"[learner] the learner's Lean could not re-check a proof ({check.error}); its theorem "
                          f"is searched again ({self.recheck_failures} so far)", file=sys.stderr, flush=True)
                continue
            if not check.holds:
                r.msg.header["verified"] = False
                r.rows = []  # (trust nothing from this tree)
                self.unconfirmed += 1
                print(f"[learner] {r.job.task.theorem.name}: the proof actor {r.actor} found did not hold when "
                      f"re-checked on the learner's Lean (not counted): {check.error}", file=sys.stderr, flush=True)
            done.append(r)
        self.checking = waiting
        return done

    def absorb(self, r: Result) -> None:
        run, msg, job = self.run, r.msg, r.job
        status = msg["status"]
        if job.eval_round is not None:
            rnd = self.rounds.get(job.eval_round)
            if rnd is None or job.id not in rnd.jobs:
                return
            if status == "searched" and msg["version"] != rnd.version:  # began on older weights: again
                self.coord.requeue([job], fault=False)
                return
            rnd.jobs.discard(job.id)
            if status in ("searched", "crashed") and msg["rate_verdict"]:
                rnd.solved.setdefault(job.task.level, []).append(int(msg["verified"]))
                rnd.calls += [msg["lean_calls"] - VERIFY_CALLS] if msg["verified"] else []
            else:
                rnd.missing += 1
            if not rnd.jobs:
                self.end_eval(rnd)
            return
        if status == "rejected":
            drop_rejected([(job.task, msg["error"] or "rejected")], run.source, run.curriculum,
                          run.progress["iteration"] + 1)
            return
        w = self.window
        w.searches += 1
        self.searches_done += 1
        if status == "failed_start":
            w.failed_starts += 1
            return
        if status == "server_down":  # a theorem servers failed SERVER_RETRIES times: searched, no verdict, no rows
            return
        if status == "crashed":
            w.crashed += 1
            w.judged.append(0)
            return
        if msg["verdict"]:
            run.curriculum.record(job.task.key, job.task.level, msg["verified"])
        if msg["rate_verdict"]:
            w.judged.append(int(msg["verified"]))
        added = run.replay.add(r.rows)
        w.rows += added
        self.rows_in += added
        w.simulations += msg["simulations"]
        w.lean_calls += msg["lean_calls"]
        w.lag.append(max(0, self.learner.version - msg["version"]))

    def end_eval(self, rnd: EvalRound) -> None:
        run = self.run
        del self.rounds[rnd.step]
        flat = [x for v in rnd.solved.values() for x in v]
        ev: dict[str, float] = {"evaluated": float(len(flat)), "not_evaluated": float(rnd.missing),
                                "weight_version": float(rnd.version)}
        if flat:
            ev["solve_rate"] = sum(flat) / len(flat)
            ev.update({f"solve_rate_level_{lv}": sum(v) / len(v) for lv, v in sorted(rnd.solved.items(), key=str)})
            ev.update(solved_within(rnd.calls, self.args.eval_lean_calls))
        run.progress["evals"].append({"iteration": rnd.step, "minutes": run.minutes(),
                                      "eval_lean_calls": self.args.eval_lean_calls, **ev})
        run.log("heldout", ev, rnd.step)
        label = start_label(self.args) if rnd.step == 0 else f"iteration {rnd.step}"
        print(f"held-out solve rate ({label}): {solve_rate_text(ev)}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ iterations
    def end_iteration(self, bar) -> None:
        run, args, w = self.run, self.args, self.window
        progress = run.progress
        step = progress["iteration"] + 1
        wall = max(1e-9, time.monotonic() - w.started)
        stats: dict[str, float] = {"crashed_searches": float(w.crashed), "failed_starts": float(w.failed_starts),
                                   "simulations_per_s": w.simulations / wall, "lean_calls_per_s": w.lean_calls / wall,
                                   "searches_per_s": w.searches / wall}
        if w.judged:
            stats["solve_rate"] = sum(w.judged) / len(w.judged)
        losses = {k: float(np.mean([h[k] for h in w.losses])) for k in ("loss", "policy_loss", "value_loss")
                  } if w.losses else {}
        inf = self.svc.stats.snapshot()
        dist = {**self.coord.totals(), "rows_per_s": w.rows / wall, "learn_steps": float(len(w.losses)),
                "replay_ratio": self.rows_sampled / max(1, self.rows_in),
                "weight_version_lag": float(np.mean(w.lag)) if w.lag else 0.0,
                "requeued_theorems": float(self.coord.requeued), "unconfirmed_proofs": float(self.unconfirmed),
                "actor_restarts": float(self.sup.restarts if self.sup else 0),
                "inference_batch": inf["batch_mean"], "inference_fill": inf["fill"],
                "inference_queue_wait_ms": inf["queue_wait_ms"], "weight_version": float(self.learner.version)}
        record = {"iteration": step, **stats, **losses, "replay_size": float(len(run.replay)),
                  "new_rows": float(w.rows), "iteration_seconds": wall, **{f"dist_{k}": v for k, v in dist.items()}}
        progress["iteration"] = step
        progress["history"] = [*progress["history"], record][-5000:]
        run.log("train", {k: v for k, v in record.items() if k != "iteration" and not k.startswith("dist_")}, step)
        run.log("dist", dist, step)
        run.log("curriculum", run.curriculum.summary(), step)
        for a in self.coord.actors.values():
            run.log(f"actors/{a.id}", {k: v for k, v in a.rates.items() if math.isfinite(v)}, step)
        self.window = Window()
        postfix = {"solved": f"{stats['solve_rate']:.2f}" if "solve_rate" in stats else "-",
                   "replay": len(run.replay), "actors": len(self.coord.actors)}
        if losses:
            postfix["loss"] = f"{losses['loss']:.3f}"
        bar.set_postfix(postfix)
        bar.update(1)
        if args.eval_every > 0 and step % args.eval_every == 0 and step < args.iterations:
            self.schedule_eval(step, exclusive=False)
        run.average.update(self.learner.net)
        self.learner.publish_now()
        self.save()

    def save(self) -> None:
        """A checkpoint, with the run's fault counters (they add up across --resume)."""
        counts = self.run.progress.setdefault("distributed", {"requeued": 0, "actor_restarts": 0})
        now = {"requeued": self.coord.requeued, "actor_restarts": self.sup.restarts if self.sup else 0}
        for k, v in now.items():
            counts[k] = self.counted.get(k, counts.get(k, 0)) + v - self.counted_at.get(k, 0)
        self.counted, self.counted_at = dict(counts), now
        self.run.save()
