"""STP's loop on ``ConjectureProve-v0``: a conjecturer and a prover trained against each other.

    python -m agents.stp.train --max-minutes 5                     # the simulator, 64 PropLogic seeds
    python -m agents.stp.train --no-conjectures --max-minutes 5    # the ablation: the seeds alone
    python -m agents.stp.train --server http://127.0.0.1:8000 --theorems seeds.jsonl

The prover IS the AlphaProof agent (its network, batched MCTS, replay buffer and learner); the
conjecturer is the same transformer reading the seed and writing a statement (:mod:`.conjecturer`).
Warm start: the prover imitates the seeds' reference proofs, the conjecturer edits of the seeds
(:mod:`.mutate`). Then each iteration:

1. **seeds** -- ``--seed-batch`` seed theorems are searched, as ``agents.alphaproof.train`` does;
2. **rounds** -- ``--rounds`` ConjectureProve-v0 rounds (:func:`agents.stp.rounds.play_rounds`):
   the conjecturer writes one conjecture per drawn seed; the env refuses invalid, duplicate and
   trivial ones (a penalty); the prover makes ``--attempts`` searches at each accepted one (``--escalate``,
   the default: doubling budgets, so that the pass rate reads how much search a proof takes);
3. **learn** -- the prover on rows of every search (proofs of seeds and of conjectures, and
   "not provable within budget" values), the conjecturer on the rounds the band rule rewarded
   (STP's filtered imitation), each mixed with its warm-start rows;
4. conjectures proved in the band, and (``--build-on-easy``) those proved above it, join the seed pool
   (with the prover's proof); ``--build-on`` of the rounds draw their seed from them, so later
   conjectures build on earlier ones. Tracking the band: ``--novel`` (default) drops already-seen
   candidates before one is played; ``--adapt`` (opt-in) plays the largest (smallest) candidate while conjectures proved
   above the band outnumber (are outnumbered by) unproved ones.

``--no-conjectures`` skips 2 and 4 (the same prover trained on the seeds alone, for the same wall
time with ``--max-minutes``). Each run saves into a folder of its own, ``checkpoints/stp/DATE-TIME``
(``latest`` links the run saved last; TensorBoard in ``runs/stp/DATE-TIME``): ``prover.pt`` (loads wherever
an AlphaProof net does, ``--init`` of ``agents.alphaproof.train``), ``conjecturer.pt``, ``history.json``,
``state.pt``; ``--resume`` alone goes on with the newest run, ``--resume DIR`` with that one, where it lives.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from agents.alphaproof import checkpoint, cli_checks, train as ap_train
from agents.alphaproof.actors import evaluate, process_factory, run_searches, search_config
from agents.alphaproof.proof_gate import confirm
from agents.alphaproof.replay import ReplayBuffer
from agents.alphaproof.resume import (checkpoint_dir_of, drop_if_unused, link_latest_in, logdir_of,
                                      refuse_to_overwrite, resume_file, say_where_the_run_goes_on)
from agents.alphaproof.sft import make_optimizer, rows_from_reference_proofs, train_supervised
from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.theorem_source import PropLogicSource, Task
from agents.alphaproof.train_args import Args as ProverArgs
from agents.stp import conjecturer, state as run_state
from agents.stp.rounds import Round, connectives, escalating, play_rounds
from leangym.cli import ArgumentParser, HelpFormatter, exclusive, run_cli
from leangym.envs.conjecture_prove import ConjectureProveEnv
from leangym.datasets import proplogic as generator
from leangym.theorem import Theorem


@dataclass
class Args:
    server: str | None = None  # LeanTree URL (default: the in-process simulator)
    theorems: str | None = None  # seed theorems (rows with a 'proof' list); default: --seeds PropLogic theorems
    seeds: int = 64  # generated seed theorems (levels 1..--seed-level), none of the held-out ones
    seed_level: int = 3  # the hardest PropLogic level among the generated seeds
    iterations: int = 1000  # iterations at most (--max-minutes usually ends the run first)
    max_minutes: float | None = None  # wall time of the whole run (warm start included), before the evaluation
    conjectures: bool = True  # --no-conjectures: the seeds-only ablation
    rounds: int = 24  # ConjectureProve-v0 rounds per iteration
    candidates: int = 4  # distinct conjectures sampled per round; one is played, at random
    attempts: int = 4  # the prover's attempts per conjecture (k)
    max_steps: int = 16  # tactics per attempt (N)
    band_hi: float = 0.25  # STP's band: 0 < pass rate <= this
    seed_batch: int = 16  # seed theorems searched per iteration
    sims: int = 16  # MCTS simulations per search
    lean_calls: int = 48  # Lean calls per search
    num_tactics: int = 4  # tactics asked of the policy per new search node
    warmup_steps: int = 150  # supervised steps of the prover on the seeds' proofs before self-play
    conjecturer_warmup_steps: int = 1500  # supervised steps of the conjecturer on edits of the seeds (and corpus)
    conjecturer_corpus: int = 2000  # generated statements (none held out) to warm the conjecturer up on; not with --theorems
    learn_steps: int = 8  # prover steps per iteration
    conjecturer_steps: int = 16  # conjecturer steps per iteration (once it has rewarded rounds)
    build_on: float = 0.5  # share of rounds seeded by conjectures proved in the band (once there are some)
    build_on_easy: bool = False  # conjectures proved ABOVE the band become seeds too: the next ones build past them
    novel: bool = True  # drop sampled conjectures already seen (seeds, earlier conjectures) before one is played
    adapt: bool = False  # play the candidate with most (fewest) connectives while too-easy (too-hard) conjectures dominate
    aim: bool = False  # play the candidate whose prover value is nearest a target that follows the band balance
    escalate: bool = True  # the prover's attempts at a conjecture double their budget each (the last: --sims, --lean-calls)
    batch_size: int = 16  # rows per gradient step (both nets)
    lr: float = 1e-3  # learning rate of both learners (AdamW)
    sft_mix: float = 0.25  # share of warm-start rows in each learner batch
    eval_size: int = 60  # held-out PropLogic theorems evaluated at the end (0: none)
    eval_level: int = 4  # the hardest level of the held-out theorems evaluated
    checkpoint_dir: str | None = None  # default: --resume's run's, else a new checkpoints/stp/DATE-TIME; '': none
    resume: str | None = None  # go on with a run (DIR: its folder; alone or 'latest': the newest in checkpoints/stp)
    overwrite: bool = False  # let --checkpoint-dir replace another run's state (else refused)
    logdir: str | None = None  # TensorBoard; default: --resume's run's, else a new runs/stp/DATE-TIME; '': none
    seed: int = 0  # seeds the nets, the seed theorems and every draw
    threads: int = 1  # torch CPU threads
    progress: bool = True  # tqdm bars


def _help(name: str) -> str:
    """A flag's help: the comment after its field in :class:`Args`."""
    import inspect

    for line in inspect.getsource(Args).splitlines():
        if line.strip().startswith(f"{name}:") and "#" in line:
            return line.split("#", 1)[1].strip()
    return name.replace("_", " ")


def parse_args(argv: Sequence[str] | None = None) -> Args:
    p = ArgumentParser(prog="python -m agents.stp.train", description=__doc__.split("\n\n")[0],
                       formatter_class=HelpFormatter)
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default, help=_help(f.name))
        else:
            kind = float if f.name == "max_minutes" else {int: int, float: float}.get(type(f.default), str)
            more = {"nargs": "?", "const": "latest", "metavar": "DIR"} if f.name == "resume" else {}
            p.add_argument(flag, type=kind, default=f.default, help=_help(f.name), **more)
    args = cli_checks.absolute_paths(Args(**vars(p.parse_args(argv))), "theorems")
    for name in ("seeds", "rounds", "candidates", "attempts", "max_steps", "sims", "lean_calls", "batch_size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if not 0 < args.band_hi <= 1:  # (a pass rate: else no round could ever be paid)
        p.error("--band-hi must be in (0, 1]")
    if args.aim and args.adapt:
        p.error("--aim and --adapt both pick the candidate to play: give one of them")
    if args.conjecturer_corpus < 0:  # (else the generator's "n must be >= 0", after the prover's warm start)
        p.error("--conjecturer-corpus must be at least 0")
    if not 1 <= args.seed_level <= generator.MAX_DIFFICULTY or not 1 <= args.eval_level <= generator.MAX_DIFFICULTY:
        p.error(f"--seed-level and --eval-level are PropLogic levels 1..{generator.MAX_DIFFICULTY}")
    return args


def prover_args(args: Args) -> ProverArgs:
    """The AlphaProof agent's settings for the prover's searches, learner and evaluation."""
    # on a server every round's env keeps a lease while the seeds are searched: rounds + seed_batch processes
    return ProverArgs(server=args.server, env="LeanProof-v0" if args.server else "PropLogic-v0",
                      actors=args.rounds + args.seed_batch, sims=args.sims, lean_calls=args.lean_calls,
                      num_tactics=args.num_tactics, batch_size=args.batch_size, lr=args.lr,
                      learn_steps=args.learn_steps, sft_mix=args.sft_mix, seed=args.seed, progress=False)


def seed_pool(args: Args) -> list[dict[str, Any]]:
    """The seed theorems as rows (name, header, formal_statement, proof, level)."""
    if args.theorems:
        from leangym.datasets import load_theorems

        return [{"name": t.name, "header": t.header, "formal_statement": t.formal_statement,
                 "proof": list(t.extra.get("proof") or []), "level": t.extra.get("difficulty", 0)}
                for t in load_theorems(args.theorems)]
    pts = generator.generate(args.seeds, args.seed, (1, args.seed_level), exclude=generator.heldout_set(),
                             prefix="seed")
    return [{"name": p.name, "header": p.theorem.header, "formal_statement": p.formal_statement,
             "proof": list(p.proof), "level": p.difficulty} for p in pts]


def corpus_rows(args: Args) -> list[dict[str, Any]]:
    """``--conjecturer-corpus`` generated statements (levels 1..--seed-level, none held out): 64 seeds' edits
    alone left 0.71 of the warmed-up conjecturer's candidates unparsable, these 2000 more 0.27 (1500 steps)."""
    if not args.conjecturer_corpus or args.theorems:  # seeds of a file: their language, not PropLogic's
        return []
    pts = generator.generate(args.conjecturer_corpus, args.seed + 7919, (1, args.seed_level),
                             exclude=generator.heldout_set(), prefix="corpus")
    return [{"name": p.name, "header": p.theorem.header, "formal_statement": p.formal_statement} for p in pts]


def as_task(row: dict[str, Any]) -> Task:
    t = Theorem.from_row(row)
    return Task(t, generator.statement_key(t), row.get("level", 0), tuple(row.get("proof") or ()))


def draw_seed(pool: list[dict[str, Any]], seeds_alone: int, build_on: float, rng: random.Random) -> dict[str, Any]:
    """A round's seed: with chance ``build_on`` a conjecture proved in the band (``pool[seeds_alone:]``),
    so that conjectures build on conjectures (STP's iterated conjecturing), else an original seed."""
    if len(pool) > seeds_alone and rng.random() < build_on:
        return pool[seeds_alone + rng.randrange(len(pool) - seeds_alone)]
    return pool[rng.randrange(seeds_alone)]


def round_stats(rounds: list[Round], band_hi: float) -> dict[str, float]:
    """What the evidence plots: outcome shares, pass rate of accepted conjectures, how hard they are."""
    n = len(rounds)
    share = {o: sum(r.outcome == o for r in rounds) / n for o in
             ("invalid", "duplicate", "trivial", "in_band", "out_of_band", "unproved", "server_failure")}
    accepted = [r for r in rounds if r.pass_rate is not None]
    proofs = [p for r in accepted for p in r.proofs]
    stats = {f"share_{k}": v for k, v in share.items()}
    stats["share_invalid_or_duplicate"] = share["invalid"] + share["duplicate"]
    if accepted:
        stats["pass_rate_accepted"] = float(np.mean([r.pass_rate for r in accepted]))
        stats["in_band_of_accepted"] = sum(0 < r.pass_rate <= band_hi for r in accepted) / len(accepted)
        stats["band_balance"] = (sum(r.pass_rate > band_hi for r in accepted)
                                 - sum(r.pass_rate == 0 for r in accepted)) / len(accepted)
        stats["conjecture_connectives"] = float(np.mean([connectives(r.conjecture.formal_statement)
                                                         for r in accepted]))
    if proofs:
        stats["steps_per_proof"] = float(np.mean([len([ln for ln in p.splitlines() if ln.strip()]) for p in proofs]))
    stats["conjecturer_reward"] = float(np.mean([r.reward for r in rounds]))
    return stats


def preference(balance: float | None, dead_zone: float = 0.1) -> str:
    """Which candidate to play, from the running balance of accepted conjectures proved above the band
    minus those not proved at all: harder ones while too-easy ones dominate, easier ones while too-hard do."""
    if balance is None or abs(balance) <= dead_zone:
        return "any"
    return "harder" if balance > 0 else "easier"


AIM_START, AIM_STEP = 0.5, 0.05  # --aim's target value at first, and how far one iteration's balance moves it


def next_aim(aim: float, balance: float | None) -> float:
    """--aim's target after an iteration whose band balance (above band - unproved, of the accepted) was
    ``balance``: lower (harder for the prover) while too-easy conjectures dominate, higher while unproved do."""
    return aim if balance is None else min(0.98, max(0.02, aim - AIM_STEP * balance))


def train(args: Args) -> dict[str, Any]:
    """Run (or resume) the loop; returns the history, the final evaluation, both nets and the
    settings in force (``args``: with the folders the run saved and logged into)."""
    resume_path = resume_file(args.resume, run_state.CHECKPOINTS, run_state.FILE) if args.resume else None
    given = args  # (None: the resumed run's folder, else a new one)
    args = dataclasses.replace(args, checkpoint_dir=checkpoint_dir_of(args, resume_path, run_state.CHECKPOINTS))
    ckpt_dir = Path(args.checkpoint_dir) if args.checkpoint_dir else None
    refuse_to_overwrite(ckpt_dir, resume_path, args, run_state.FILE)
    try:
        with exclusive(ckpt_dir / ".lock" if ckpt_dir else None, f"--checkpoint-dir {ckpt_dir}", "--checkpoint-dir"):
            return _run(args, given, resume_path)
    finally:
        if given.checkpoint_dir is None and resume_path is None:
            drop_if_unused(ckpt_dir)  # a new run's own folder, if it stopped before saving


def _run(args: Args, given: Args, resume_path: Path | None) -> dict[str, Any]:
    """The run :func:`train` set up, while it holds its checkpoint folder."""
    from tqdm import tqdm

    saved = run_state.load(resume_path) if resume_path else None
    if saved is not None:
        args = run_state.resumed_args(args, saved["args"])
    if args.aim and args.adapt:  # (train(Args(...)) skips parse_args; a run saved before --aim keeps its --adapt)
        raise ValueError("--aim: the resumed run picks its candidates with --adapt; resume it without --aim"
                         if saved is not None else "--aim and --adapt both pick the candidate to play: give one of them")
    args = dataclasses.replace(args, logdir=logdir_of(args, saved, resume_path, run_state.CHECKPOINTS, run_state.RUNS))
    if saved is not None:
        say_where_the_run_goes_on(args, given, saved)
    started = time.monotonic()
    deadline = None if args.max_minutes is None else started + 60 * args.max_minutes
    random.seed(args.seed), np.random.seed(args.seed), torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    pa = prover_args(args)
    new_process = process_factory(pa)
    pool = seed_pool(args)
    seeds_alone = len(pool)

    # warm start: the prover on the seeds' reference proofs, the conjecturer on edits of the seeds
    prover = PolicyValueNet.create("tiny", seed=args.seed, max_tactic_tokens=pa.max_tactic_tokens)
    ref_rows = rows_from_reference_proofs([as_task(r) for r in pool], factorized=pa.factorized)
    if saved is None:
        train_supervised(prover, ref_rows, args.warmup_steps, args.batch_size, 2e-3, seed=args.seed,
                         deadline=deadline, progress=args.progress)
    conj = conjecturer.create(seed=args.seed + 1)
    envs, conj_warm = [], []
    if args.conjectures:
        envs = [ConjectureProveEnv(theorem=pool, server=args.server, attempts=args.attempts, max_steps=args.max_steps,
                                   band=(0.0, args.band_hi), factorized=pa.factorized) for _ in range(args.rounds)]
        for env in envs[1:]:
            env.known = envs[0].known  # one memory of what was conjectured: a duplicate in any env is one
        seed_text = {r["formal_statement"]: _seed_text(envs[0], r) for r in pool}
        conj_warm = conjecturer.warm_rows([(seed_text[r["formal_statement"]], r["formal_statement"]) for r in pool],
                                          8, rng)
        if saved is None:  # (a resumed run's rows are in its state)
            corpus = corpus_rows(args)  # (a seed's text is local: no Lean call)
            conj_warm += conjecturer.warm_rows([(_seed_text(envs[0], r), r["formal_statement"]) for r in corpus], 4,
                                               rng)
            train_supervised(conj, conj_warm, args.conjecturer_warmup_steps, args.batch_size, 2e-3, seed=args.seed,
                             deadline=deadline, progress=args.progress)
    conj_opt, opt = make_optimizer(conj, args.lr), make_optimizer(prover, args.lr)
    replay, conj_replay = ReplayBuffer(20_000), ReplayBuffer(5_000)
    # a resumed run hides what a crashed run logged after its last save: steps > that step
    writer = _writer(args.logdir, int(saved["step"]) + 1 if saved is not None else None)
    history: list[dict[str, float]] = []
    step, balance = 0, None  # balance: (above band - unproved) share of accepted conjectures (EMA, 0.3)
    aim = AIM_START  # --aim: the prover value the played candidate is nearest
    if saved is not None:
        prover, conj, opt, conj_opt, step, balance = _restore(saved, args.lr, replay, conj_replay, pool,
                                                              conj_warm, envs, history, rng)
        aim = saved.get("aim", AIM_START)
    attempt_search = escalating(search_config(pa), args.attempts) if args.escalate else search_config(pa)
    bar = tqdm(desc="stp" if args.conjectures else "seeds alone", disable=not args.progress, initial=step)
    try:
        while step < args.iterations and (deadline is None or time.monotonic() < deadline):
            step, t0 = step + 1, time.monotonic()
            tasks = [as_task(pool[rng.randrange(seeds_alone)]) for _ in range(args.seed_batch)]
            out = run_searches(tasks, prover, new_process, pa, deadline=deadline)
            results = [r for r in out.results if r is not None]
            record: dict[str, float] = {"iteration": step,
                                        "seed_solve_rate": float(np.mean([r.verified for r in results] or [0]))}
            if args.conjectures:
                drawn = [draw_seed(pool, seeds_alone, args.build_on, rng) for _ in envs]
                prefer = "value" if args.aim else preference(balance) if args.adapt else "any"
                rounds = play_rounds(envs, conj, prover, attempt_search, rng, str(step), drawn, args.candidates,
                                     args.novel, prefer, aim)
                record.update(round_stats(rounds, args.band_hi), prefer_harder=float(prefer == "harder"),
                              prefer_easier=float(prefer == "easier"), **({"aim": aim} if args.aim else {}))
                if "band_balance" in record:
                    b = record["band_balance"]
                    balance = b if balance is None else 0.7 * balance + 0.3 * b
                    aim = next_aim(aim, b)
                for r in rounds:  # (their rows count only once each proof holds on a fresh process)
                    results += confirm([r.conjecture] * len(r.searches), r.searches, new_process)
                for r in rounds:
                    if r.reward > 0:  # STP: imitate the conjectures the band rule rewarded
                        conj_replay.add([conjecturer.row(r.seed_text, r.signature)])
                    too_easy = args.build_on_easy and r.pass_rate is not None and r.pass_rate > args.band_hi
                    if r.reward > 0 or too_easy:  # a seed now: edits of it join the warm-start rows
                        pool.append(_as_seed(r))
                        text = _seed_text(envs[0], pool[-1])
                        conj_warm += conjecturer.warm_rows([(text, r.conjecture.formal_statement)], 8, rng)
                if len(conj_replay):
                    ap_train.learn(conj, conj_opt, conj_replay, conj_warm, rng,
                                   dataclasses.replace(pa, learn_steps=args.conjecturer_steps))
            replay.add([row for r in results for row in ap_train.rows_from_result(r, pa.min_unsolved_visits)])
            record.update(ap_train.learn(prover, opt, replay, ref_rows, rng, pa))
            record.update(pool_size=float(len(pool)), replay_size=float(len(replay)),
                          iteration_seconds=time.monotonic() - t0, minutes=(time.monotonic() - started) / 60)
            history.append(record)
            _log(writer, record, step)
            bar.set_postfix({k: f"{record[k]:.2f}" for k in ("seed_solve_rate", "pass_rate_accepted",
                                                             "share_invalid_or_duplicate") if k in record})
            bar.update(1)
    finally:
        bar.close()
        for env in envs:
            env.close()
    evaluation = {}
    if args.eval_size > 0:
        heldout = [t for t in PropLogicSource().heldout(generator.HELDOUT_SIZE) if t.level <= args.eval_level]
        evaluation = evaluate(prover, heldout[:args.eval_size], new_process, pa, search_config(pa))  # (STP's search)
        print(f"held-out PropLogic (levels 1-{args.eval_level}): {ap_train.solve_rate_text(evaluation)}",
              file=sys.stderr)
    result = {"args": dataclasses.asdict(args), "history": history, "evaluation": evaluation,
              "minutes": (time.monotonic() - started) / 60, "iterations": step}
    _save(args, prover, conj, result)
    if args.checkpoint_dir:
        run_state.save(args.checkpoint_dir, args=dataclasses.asdict(args), prover=prover.to_payload(),
                       conjecturer=conj.to_payload(), optimizer=opt.state_dict(), conj_optimizer=conj_opt.state_dict(),
                       replay=replay.state_dict(), conj_replay=conj_replay.state_dict(), pool=pool[seeds_alone:],
                       conj_warm=conj_warm, known=sorted(envs[0].known) if envs else [], history=history,
                       step=step, balance=balance, aim=aim, rng=checkpoint.rng_state(rng),
                       # absolute: a resumed run may start from another working directory
                       logdir=str(Path(args.logdir).resolve()) if args.logdir else "")
        link_latest_in(Path(args.checkpoint_dir), run_state.CHECKPOINTS)  # checkpoints/stp/latest
    if writer:
        writer.close()
    return {**result, "prover": prover, "conjecturer": conj}


def _restore(saved, lr, replay, conj_replay, pool, conj_warm, envs, history, rng):
    """A resumed run's nets, optimizers, step and band balance; the rest restored in place."""
    prover, conj = PolicyValueNet.from_payload(saved["prover"]), PolicyValueNet.from_payload(saved["conjecturer"])
    opt, conj_opt = make_optimizer(prover, lr), make_optimizer(conj, lr)
    opt.load_state_dict(saved["optimizer"]), conj_opt.load_state_dict(saved["conj_optimizer"])
    replay.load_state_dict(saved["replay"]), conj_replay.load_state_dict(saved["conj_replay"])
    pool += saved["pool"]
    conj_warm[:] = saved["conj_warm"]
    if envs:
        envs[0].known.update(saved["known"])  # every env shares this set: the duplicate memory
    history += saved["history"]
    checkpoint.set_rng_state(saved["rng"], rng)
    return prover, conj, opt, conj_opt, int(saved["step"]), saved["balance"]


def _seed_text(env: ConjectureProveEnv, row: dict[str, Any]) -> str:
    env.reset(options={"theorem": row})
    return str(env.observe("conjecturer"))


def _as_seed(r: Round) -> dict[str, Any]:
    """A conjecture proved in the band, as a seed row (its first proof as the reference)."""
    t = r.conjecture
    return {"name": t.name, "header": t.header, "formal_statement": t.formal_statement,
            "proof": r.proofs[0].splitlines(), "level": 0}


def _writer(logdir: str, purge_step: int | None = None):
    if not logdir:
        return None
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(logdir, purge_step=purge_step)


def _log(writer, record: dict[str, float], step: int) -> None:
    if writer:
        for k, v in record.items():
            if k != "iteration":
                writer.add_scalar(f"stp/{k}", v, step)


def _save(args: Args, prover: PolicyValueNet, conj: PolicyValueNet, result: dict[str, Any]) -> None:
    if not args.checkpoint_dir:
        return
    out = Path(args.checkpoint_dir)
    out.mkdir(parents=True, exist_ok=True)
    prover.save(str(out / "prover.pt"))
    conj.save(str(out / "conjecturer.pt"))
    (out / "history.json").write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    print(f"checkpoint: {out}/prover.pt, {out}/conjecturer.pt, {out}/history.json", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    train(args)


if __name__ == "__main__":
    run_cli(main)
