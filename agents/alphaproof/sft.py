"""Supervised bootstrapping: teach the net to imitate known proofs before it searches.

    python -m agents.alphaproof.sft --data rows.jsonl --size tiny --steps 2000 --out sft.pt
    python -m leangym.datasets.proplogic -n 2000 -o gen.jsonl && python -m agents.alphaproof.sft --data gen.jsonl

Rows are ``{"state": ..., "tactic": ...[, "steps_to_go": n]}`` (see
:mod:`agents.alphaproof.data`): transitions extracted from Mathlib, or from the
generator's reference proofs (:func:`rows_from_reference_proofs`). ``--data`` takes
either: a file of the generator's theorems (``python -m leangym.datasets.proplogic -o
FILE``: rows with a ``formal_statement`` and a reference ``proof``) is replayed into
rows on the simulator, as written (:func:`load_sft_rows`; ``train --warmup-closers`` golfs them). :func:`train_supervised` is the whole
training loop (AdamW, linear warmup then cosine decay, gradient clipping); the
RL learner reuses it on replay-buffer rows, passing its own optimizer so AdamW's
moments persist between learner steps.
"""
from __future__ import annotations

import math
import argparse
import os
import time
from contextlib import closing
from typing import Any, Iterable, Sequence

import torch
from tqdm import tqdm

from agents.alphaproof import cli_checks
from agents.alphaproof.data import Row, batches, load_rows
from agents.alphaproof.jsonl import iter_json_lines
from agents.alphaproof.model import SIZES
from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.tokenizer import load_tokenizer
from leangym.backends.types import Outcome, ServerError
from leangym.cli import ArgumentParser, HelpFormatter, run_cli


def make_optimizer(net: PolicyValueNet, lr: float = 3e-4, weight_decay: float = 0.1) -> torch.optim.AdamW:
    """AdamW with decay on matrices only (decaying a bias only pulls it toward an arbitrary 0)."""
    params = [p for p in net.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), fused=net.device.type == "cuda")


def lr_at(step: int, steps: int, lr: float, warmup: int, min_lr_frac: float = 0.1) -> float:
    """Linear warmup to ``lr``, then cosine decay to ``min_lr_frac * lr`` at ``steps``."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return lr * (min_lr_frac + (1 - min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


def train_supervised(net: PolicyValueNet, rows: Sequence[Row], steps: int, batch_size: int = 32,
                     lr: float = 3e-4, *, warmup: int | None = None, min_lr_frac: float = 0.1,
                     weight_decay: float = 0.1, grad_clip: float = 1.0,
                     optimizer: torch.optim.Optimizer | None = None, schedule: bool = True,
                     writer=None, log_every: int = 10, global_step: int = 0,
                     ckpt_path: str | None = None, ckpt_every: int = 0,
                     progress: bool = False, seed: int = 0,
                     deadline: float | None = None) -> list[dict[str, float]]:
    """``steps`` optimizer steps on batches of ``rows``; returns the per-step losses.

    ``optimizer``: reuse one across calls (the RL learner); default a fresh AdamW.
    ``schedule=False`` keeps ``lr`` constant (no warmup/cosine), as a learner
    that is called again and again wants. ``global_step`` offsets the TensorBoard
    step, so repeated calls draw one continuous curve. ``deadline``: a
    ``time.monotonic()`` time after which no step starts (a training run's time
    limit), so the result may hold fewer than ``steps`` entries, even none; the
    schedule stays the one for ``steps``.
    """
    opt = optimizer or make_optimizer(net, lr, weight_decay)
    warmup = min(100, steps // 10) if warmup is None else warmup
    autocast = torch.autocast(device_type=net.device.type, dtype=torch.bfloat16, enabled=net.device.type == "cuda")
    data = batches(rows, batch_size, seed)
    net.model.train()
    history = []
    bar = tqdm(range(steps), disable=not progress, desc="sft", dynamic_ncols=True)
    try:
        for step in bar:
            if deadline is not None and time.monotonic() >= deadline:
                break
            step_lr = lr_at(step, steps, lr, warmup, min_lr_frac) if schedule else lr
            for group in opt.param_groups:
                group["lr"] = step_lr
            with autocast:
                out = net.losses(next(data))
            opt.zero_grad(set_to_none=True)
            out["loss"].backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), grad_clip)
            opt.step()
            stats = {k: v.item() for k, v in out.items()} | {"lr": step_lr, "grad_norm": float(grad_norm)}
            history.append(stats)
            if (step + 1) % log_every == 0 or step == steps - 1:
                bar.set_postfix(loss=f"{stats['loss']:.3f}", pol=f"{stats['policy_loss']:.3f}",
                                val=f"{stats['value_loss']:.3f}")
                if writer is not None:
                    for k, v in stats.items():
                        writer.add_scalar(f"sft/{k}", v, global_step + step + 1)
            if ckpt_path and ckpt_every and (step + 1) % ckpt_every == 0:
                net.save(ckpt_path)
    finally:  # (a deadline may end the loop early; Ctrl-C: what is printed next starts on a new line)
        bar.close()
    net.model.eval()
    return history


def rows_from_reference_proofs(prop_theorems: Iterable[Any], process=None, *, factorized: bool = True,
                               closers: Sequence[str] = (), chain: bool = False) -> list[Row]:
    """Training rows from generator theorems, by replaying each reference proof on the kernel.

    Every tactic goes to the first open branch; the row's state is that branch's
    text (what a search node sees: one goal on the factorized kernel, every
    goal of the proof on the other; ``factorized`` as the training run's). ``steps_to_go`` is what the search counts for that state:
    1 for its tactic plus what every branch it opens still needs (the Lean calls of its subproof),
    not the tactics left in the whole script. A proof that fails to replay
    contributes no rows: a row must describe a state the kernel really produced. A server failure
    (replaying or golfing) raises :class:`ServerError`: the caller (``train.reference_rows``, one proof
    per call) drops that proof's rows and counts it.

    ``closers`` golfs the proof with Lean: each is tried, in order, on every state the golfed proof
    reaches, and one that closes the state replaces the reference's whole subproof there (a shorter
    proof, checked by Lean like the rest: the target the search would keep, see mcts ``proof_tactic``).
    ``chain`` also tries ``TACTIC <;> CLOSER`` where the reference's tactic leaves goals: one that closes the
    state replaces the subproof too (one Lean call where the reference spent one per branch).

    ``process``: where to replay them all; by default a fresh in-process kernel for each (a kernel
    keeps what a proof start declared, as Lean does: two theorems sharing a header that declares
    something could not both start on one).
    """
    from leangym.sim.local import LocalProcess  # the in-process kernel

    rows: list[Row] = []
    for pt in prop_theorems:
        proof = pt.proof
        tactics = [t.strip() for t in (proof.splitlines() if isinstance(proof, str) else proof) if t.strip()]
        lean = process if process is not None else LocalProcess(factorized=factorized)
        # (branch, row that opened it); the first is worked on
        open_ = [(lean.start_proof(pt.theorem.start_source()), None)]
        replay: list[tuple[Any, str]] = []  # (state, reference tactic)
        parent: list[int | None] = []  # per row: the row whose tactic opened its branch
        for i, tactic in enumerate(tactics):
            if not open_:
                break
            state, opened_by = open_[0]
            replay.append((state, tactic))
            parent.append(opened_by)
            result = lean.apply_tactic(state, tactic)
            if result.outcome is Outcome.SERVER_FAILURE:  # not Lean's verdict: the caller says so and goes on
                raise ServerError(f"replaying {tactic!r}: {result.error}")
            if not result.ok:
                break
            open_ = [(s, i) for s in result.states] + open_[1:]
        else:
            if not open_:  # the proof really closed every goal
                rows.extend(_golfed_rows(lean, replay, parent, closers, chain))
    return rows


def _golfed_rows(lean, replay: list[tuple[Any, str]], parent: list[int | None], closers: Sequence[str],
                 chain: bool = False) -> list[Row]:
    """The rows of a replayed proof, each subproof a closer finishes replaced by that closer (top down, in the
    replay's order: a row, then its branches' subproofs). A loop, not recursion: a proof may be 1000s deep."""
    children: list[list[int]] = [[] for _ in replay]
    for j, p in enumerate(parent):
        if p is not None:
            children[p].append(j)
    out: list[Row] = []
    up: list[int | None] = []  # per row of out: the row of out whose tactic opened its branch
    todo: list[tuple[int, int | None]] = [(0, None)]  # (replay index, its parent's row in out)
    while todo:
        j, above = todo.pop()
        state, tactic = replay[j]
        closer = _closer(lean, state, tactic, closers, closes=not children[j], chain=chain)
        up.append(above)
        out.append({"state": state.text, "tactic": closer or tactic, "steps_to_go": 1})
        if closer is None:  # the reference's tactic: its branches next, the first on top
            todo += [(k, len(out) - 1) for k in reversed(children[j])]
    for k in reversed(range(len(out))):  # branches come after the row that opened them: each is whole here
        if up[k] is not None:
            out[up[k]]["steps_to_go"] += out[k]["steps_to_go"]
    return out


def _closer(lean, state, tactic: str, closers: Sequence[str], closes: bool, chain: bool = False) -> str | None:
    """The first of ``closers`` that closes ``state`` (None: none does, or the reference's ``tactic`` comes
    first and closes it, as the replay saw: ``closes``), then with ``chain`` the first ``tactic <;> closer``
    that does (where ``tactic`` leaves goals). A server failure raises: whether a closer works is
    then unknown, and every further call would wait on the same server (the caller drops the proof)."""
    chained = [f"{tactic} <;> {c}" for c in closers] if chain and not closes and "\n" not in tactic else []
    for closer in [*closers, *chained]:
        if closer == tactic:
            if closes:
                return None
            continue
        result = lean.apply_tactic(state, closer)
        if result.outcome is Outcome.SERVER_FAILURE:
            raise ServerError(f"golfing with {closer!r}: {result.error}")
        if result.ok and not result.states:
            return closer
    return None


# What --data takes, for the error that finds something else.
ROW_FORMAT = ('sft reads JSONL rows {"state": GOAL_TEXT, "tactic": TACTIC[, "steps_to_go": N]} '
              '(see agents/alphaproof/data.py), or the theorems of "python -m leangym.datasets.proplogic -o FILE.jsonl" '
              '(a formal_statement and a reference proof per row), which it replays into such rows '
              '(agents.alphaproof.sft.rows_from_reference_proofs)')


def is_generator_row(row: Any) -> bool:
    """A row of ``leangym.datasets.proplogic``'s JSONL (a theorem and its reference proof), not a training row."""
    return (isinstance(row, dict) and "state" not in row and isinstance(row.get("formal_statement"), str)
            and isinstance(row.get("proof"), list))


def load_sft_rows(path: str) -> list[Row]:
    """Training rows from ``path``: rows as :func:`agents.alphaproof.data.load_rows` reads them, or, when
    its first row is one of the generator's theorems, every reference proof replayed into rows."""
    with closing(iter_json_lines(path)) as lines:
        first = next(lines, None)
    if first is not None and is_generator_row(first[1]):
        return rows_from_generator_file(path)
    try:
        return load_rows(path)
    except ValueError as e:
        raise ValueError(f"{e}. {ROW_FORMAT}") from None


def rows_from_generator_file(path: str) -> list[Row]:
    """Rows from a ``python -m leangym.datasets.proplogic -o FILE`` file: each reference proof replayed on the
    simulator (:func:`rows_from_reference_proofs`); a statement the simulator cannot start names its line."""
    from leangym.backends.types import LeanError
    from leangym.datasets.proplogic import from_row

    rows: list[Row] = []
    theorems = failed = 0
    for lineno, row in iter_json_lines(path):
        if not is_generator_row(row):
            raise ValueError(f"{path}:{lineno}: the file starts with generator theorems, but this row is not one "
                             "(a 'formal_statement' and a 'proof' list of tactics); one file holds one kind of row. "
                             f"{ROW_FORMAT}")
        try:
            got = rows_from_reference_proofs([from_row(row)])
        except (ValueError, TypeError, LeanError) as e:
            raise ValueError(f"{path}:{lineno}: {e} (reference proofs are replayed on the PropLogic simulator, "
                             "which knows the generator's theorems)") from None
        theorems += 1
        failed += not got
        rows += got
    if not rows:
        raise ValueError(f"{path}: none of its {theorems} reference proofs replayed on the simulator, so there "
                         f"is nothing to train on. {ROW_FORMAT}")
    print(f"{path}: {theorems} generator theorems, their reference proofs replayed into {len(rows)} rows"
          + (f" ({failed} proofs did not replay and gave none)" if failed else ""))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(prog="python -m agents.alphaproof.sft", formatter_class=HelpFormatter,
                                 description="Supervised training of the AlphaProof policy-value net.")
    ap.add_argument("--data", required=True, help='JSONL rows {"state": ..., "tactic": ...[, "steps_to_go": n]}, '
                    "or the output of python -m leangym.datasets.proplogic -o FILE (replayed into rows)")
    ap.add_argument("--size", default="tiny", choices=tuple(SIZES), help="model size for a fresh net (not with --init)")
    ap.add_argument("--init", default=None, help="start from this checkpoint instead of a fresh net")
    ap.add_argument("--tokenizer", default=None, help="tokenizer json for a fresh net (default: the shipped one)")
    ap.add_argument("--steps", type=int, default=1000, help="optimizer steps (at least 1)")
    ap.add_argument("--batch-size", type=int, default=32, help="rows per step (at least 1)")
    ap.add_argument("--lr", type=float, default=3e-4, help="peak learning rate (AdamW)")
    ap.add_argument("--warmup", type=int, default=None,
                    help="linear warmup steps before the cosine decay (default: a tenth of --steps, at most 100)")
    ap.add_argument("--weight-decay", type=float, default=0.1, help="AdamW weight decay (matrices only)")
    ap.add_argument("--out", default="checkpoints/sft.pt", help="where the net is saved (for prove --checkpoint, "
                    "or another sft --init)")
    ap.add_argument("--overwrite", action="store_true", help="replace --out if it exists (default: refuse)")
    ap.add_argument("--ckpt-every", type=int, default=500, help="also save --out every this many steps (0: only "
                    "at the end)")
    ap.add_argument("--logdir", default=None, help="TensorBoard directory (default: none)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help=cli_checks.DEVICES)
    ap.add_argument("--seed", type=int, default=0, help="seeds the fresh net and the order of the rows")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default); "
                    "1 is often fastest for small models on a shared machine")
    ap.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                    help="a progress bar (tqdm); --no-progress for logs written to a file")
    args = ap.parse_args(argv)
    # values that cannot work are refused before anything is read, trained or written
    cli_checks.at_least(1, steps=args.steps, batch_size=args.batch_size)
    cli_checks.at_least(0, warmup=args.warmup, ckpt_every=args.ckpt_every, threads=args.threads)
    cli_checks.positive(lr=args.lr)
    cli_checks.non_negative(weight_decay=args.weight_decay)
    cli_checks.seed(args.seed)
    cli_checks.check_device(args.device)

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    # the inputs before the output: a missing --data is the error to fix first, not the existing --out
    cli_checks.input_file("--data", args.data, "a JSONL file of rows, or python -m leangym.datasets.proplogic's output")
    cli_checks.input_file("--init", args.init, "a net to start from: an sft --out file or a train checkpoint")
    if args.init and (args.tokenizer or args.size != "tiny"):
        raise ValueError("--size and --tokenizer choose a fresh net; --init's net keeps its own size and tokenizer "
                         "(leave them out, or drop --init)")
    tokenizer = None if args.init else load_tokenizer(args.tokenizer)  # (small: read now, as the inputs above)
    if os.path.exists(args.out) and not args.overwrite:  # before any training step
        raise ValueError(f"{args.out} exists and this run would overwrite it (from its first --ckpt-every "
                         "save on): choose another --out, or pass --overwrite to replace it")
    rows = load_sft_rows(args.data)  # every row checked: a bad one is an error now, not after an hour
    if args.init:
        net = PolicyValueNet.load(args.init, device=args.device)
    else:
        net = PolicyValueNet.create(args.size, tokenizer, device=args.device)
    print(f"{len(rows)} rows; model {net.model.n_params() / 1e6:.2f}M params on {net.device}")
    writer = None
    if args.logdir:
        from torch.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(args.logdir)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    history = train_supervised(net, rows, args.steps, args.batch_size, args.lr, warmup=args.warmup,
                               weight_decay=args.weight_decay, writer=writer, ckpt_path=args.out,
                               ckpt_every=args.ckpt_every, progress=args.progress, seed=args.seed)
    net.save(args.out)
    if writer is not None:
        writer.close()
    print(f"final loss {history[-1]['loss']:.4f}; saved {args.out}")
    return 0


if __name__ == "__main__":
    run_cli(main)
