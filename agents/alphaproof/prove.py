"""Prove one theorem with a trained AlphaProof network.

    python -m agents.alphaproof.prove --checkpoint latest \
        --theorem "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
    python -m agents.alphaproof.prove --checkpoint C --theorem "..." --server http://127.0.0.1:8000

Runs the in-process simulator by default, or on a leased process of a
LeanTree server. The simulator's states are shaped as in the network's
training: factorized (one goal per branch) or not, as the checkpoint's
training run had it (``--factorized`` / ``--no-factorized`` to choose). Prints
the proof only after ``session.verify`` accepted it (exit status 0); otherwise
says why not, with the search's statistics (exit 1).
``--checkpoint`` takes a training run's directory too (its ``latest.pt``), a folder of runs (the one
saved last) or ``latest`` (the run saved last in ``checkpoints/alphaproof``).

:class:`AlphaProofProver` is the same search behind ``leangym.prover.Prover``
(``prove(theorem, session, budget)``), for the benchmark harness.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Sequence

import torch

from agents.alphaproof import checkpoint, cli_checks
from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.search import SearchConfig, SearchResult, run_search
from agents.alphaproof.train_args import DEFAULT_CHECKPOINT_DIR
from leangym.backends.select import open_backend
from leangym.backends.types import LeanError
from leangym.cli import ArgumentParser, HelpFormatter, run_cli
from leangym.session import Budget, ProofSession
from leangym.theorem import Theorem


# how a trained net proves (training explores wider): one tactic per new node, more only once its visits pass
# 8 x (tactics tried)^1.5 (widen_c 8, training's 2: deeper before wider), one leaf per round so that each Lean call
# sees the tree the last one left, and simulations enough that the Lean-call budget binds. On
# proplogic-heldout:100 at 64 calls, one net: 81 against 74 (64 sims, 2 tactics, 4 leaves, widen_c 2),
# solved within 8 calls 51 against 39 (benchmarks/results/learning_curve.md)
PROVE_SEARCH = {"leaves_per_round": 1, "widen_c": 8.0}
SIMS_PER_CALL = 4

# SearchConfig fields AlphaProofProver(**search) refuses, and why
FIXED_SEARCH = {"num_simulations": "is sims=", "num_tactics": "is num_tactics=",
                "max_lean_calls": "is the harness's budget, the same for every agent",
                "max_seconds": "is the harness's budget, the same for every agent",
                "self_check": "is the harness's: it checks every agent's answer itself, off the budget"}


class AlphaProofProver:
    """``leangym.prover.Prover``: MCTS guided by a trained network, within the harness's budget."""

    def __init__(self, checkpoint: str | None = None, net: PolicyValueNet | None = None, sims: int | None = None,
                 num_tactics: int = 1, device: str = "cpu", temperature: float | None = None,
                 oversample: int | None = None, **search: float) -> None:
        if net is None and checkpoint is None:
            raise ValueError("AlphaProofProver needs a checkpoint or a net")
        # other SearchConfig fields (leaves_per_round, c_puct, ...); the rest as the search's defaults. Not the
        # budget (the harness's, the same for every agent), sims or num_tactics (arguments of their own), nor
        # self_check (the harness checks every answer itself, off the budget)
        settable = [f.name for f in dataclasses.fields(SearchConfig) if f.name not in FIXED_SEARCH]
        refused = sorted(set(search) - set(settable))
        if refused:
            name = refused[0]
            raise ValueError(f"AlphaProofProver: {name} {FIXED_SEARCH.get(name, 'is not a search setting')}; "
                             f"it takes sims=, num_tactics= and any of {', '.join(settable)}")
        search = {**PROVE_SEARCH, **search}
        # a value the search cannot run with is refused now, not at every theorem (the harness records a
        # prove() error per theorem; 0 simulations would only fail each one without a word)
        prove_config(1, num_tactics, None, None, **search)
        if sims is not None and not sims >= 1:
            raise ValueError(f"AlphaProofProver: sims must be at least 1 (None: {SIMS_PER_CALL} per Lean call of "
                             f"the budget), got {sims}")
        # temperature / oversample: how the policy samples its candidate tactics (None: as the net was trained)
        overrides = {k: v for k, v in (("temperature", temperature), ("oversample", oversample)) if v is not None}
        self.net = net or PolicyValueNet.load(checkpoint_file(checkpoint, "checkpoint"), device, **overrides)
        self.sims, self.num_tactics = sims, num_tactics  # sims None: SIMS_PER_CALL per Lean call of the budget
        self.search = search
        self.last: SearchResult | None = None

    def set_seed(self, seed: int) -> None:
        torch.manual_seed(seed)  # the policy samples its candidate tactics

    def prove(self, theorem: Theorem, session: ProofSession, budget: Budget) -> str | None:
        # the harness checks every answer itself, off the budget, for every agent: the search does not spend
        # calls of the budget on a check of its own
        cfg = prove_config(self.sims, self.num_tactics, budget.max_lean_calls, budget.max_seconds, self_check=False,
                           **self.search)
        self.last = run_search(session, self.net, cfg)
        return self.last.proof if self.last.solved else None


def default_sims(sims: int | None, lean_calls: int | None) -> int:
    """``sims``, or enough that the Lean-call budget binds (256 without one)."""
    if sims is not None:
        return sims
    return SIMS_PER_CALL * lean_calls if lean_calls else 256


def prove_config(sims: int | None, num_tactics: int, lean_calls: int | None, seconds: float | None,
                 self_check: bool = True, **search: float) -> SearchConfig:
    """The search of ``prove`` and :class:`AlphaProofProver`: :data:`PROVE_SEARCH` unless ``search`` says otherwise."""
    cfg = SearchConfig.for_budget(default_sims(sims, lean_calls), num_tactics, lean_calls, seconds, self_check)
    return dataclasses.replace(cfg, **{**PROVE_SEARCH, **search})


CHECKPOINTS = ("a train run's --checkpoint-dir (its latest.pt), latest (the run saved last), a checkpoint file, "
               "or an sft --out file")


def checkpoint_file(spec: str, name: str = "--checkpoint") -> str:
    """The file ``--checkpoint spec`` names: a run's directory means its ``latest.pt`` (as ``train --resume``
    takes it); a missing or unreadable one is a ValueError saying what to pass (not a bare ``[Errno 21]``).
    ``name``: how the error names the value (the flag; ``checkpoint`` for the prover's keyword argument)."""
    if spec == "latest" and not Path(spec).exists():
        if checkpoint.latest(DEFAULT_CHECKPOINT_DIR) is None:  # (a relative folder: say where it looked)
            raise ValueError(f"{name} latest: no run in {Path(DEFAULT_CHECKPOINT_DIR).resolve()} has saved a "
                             f"checkpoint yet (run train there first, or pass {CHECKPOINTS})")
        spec = DEFAULT_CHECKPOINT_DIR
    if Path(spec).is_dir():
        found = checkpoint.latest(spec)
        if found is None:
            raise ValueError(f"{name} {spec}: a directory without a latest.pt; pass {CHECKPOINTS}")
        spec = str(found)
    cli_checks.input_file(name, spec, CHECKPOINTS)
    return spec


def start(process, theorem: Theorem, budget: Budget) -> ProofSession:
    """The session, where a statement too deeply nested to elaborate says so (Lean's own words,
    "maximum recursion depth has been reached", do not say what is wrong with the input)."""
    try:
        return ProofSession(process, theorem, budget=budget)
    except (LeanError, RecursionError) as e:
        if isinstance(e, LeanError) and "maximum recursion depth" not in str(e):
            raise
        raise ValueError("the statement is nested too deeply to elaborate (maximum recursion depth reached): "
                         "split it into smaller lemmas (on real Lean, --header 'set_option maxRecDepth N' "
                         "raises the limit)") from None


def trained_factorized(path: str) -> bool:
    """Whether the net at ``path`` was trained on factorized simulator states (one goal per branch): its
    training run's ``--factorized``; True for a bare net file or an older checkpoint, as train and sft default."""
    payload = checkpoint.read(path)
    args = payload.get("args") if isinstance(payload, dict) and payload.get("format") == checkpoint.FORMAT else None
    return bool(args.get("factorized", True)) if isinstance(args, dict) else True


def why_not(result: SearchResult) -> str:
    """Why a search found no verified proof, in words."""
    why = f"the proof failed the final check: {result.verify_error}" if result.solved else "no proof found"
    if result.stop_reason == "exhausted":
        tried = (any(n.tried for n in result.tree.table.values()) if result.tree is not None
                 else result.lean_calls > 0)
        why += (" (every tactic the network proposed failed, led nowhere, or led back to an open goal)" if tried else
                " (the network proposed no finished tactic: every sample ran past its token limit or was empty)")
    return why


def main(argv: Sequence[str] | None = None) -> int:
    p = ArgumentParser(
        prog="python -m agents.alphaproof.prove", formatter_class=HelpFormatter,
        description="Prove one theorem with a trained AlphaProof checkpoint.",
        epilog="exit status:   0  a proof was found and passed session.verify (printed on stdout)\n"
               "               1  no proof was found (why, on stderr)\n"
               "               2  a bad flag or input (one error: line)\n"
               "             130  interrupted (Ctrl-C)")
    p.add_argument("--checkpoint", required=True, metavar="PATH",
                   help=f"{CHECKPOINTS} (such as {DEFAULT_CHECKPOINT_DIR}/latest)")
    p.add_argument("--theorem", required=True, help="a Lean statement ending in ':= by sorry'")
    p.add_argument("--header", default="", help="Lean header (opens, set_options) before the statement")
    p.add_argument("--server", default=None, help="LeanTree URL (default: the in-process simulator)")
    p.add_argument("--sims", type=int, default=None,
                   help=f"MCTS simulations (at least 1; default: {SIMS_PER_CALL} per Lean call of --lean-calls)")
    p.add_argument("--lean-calls", type=int, default=512, help="Lean-call budget (at least 1)")
    p.add_argument("--seconds", type=float, default=None, help="wall-clock budget in seconds (default: none)")
    p.add_argument("--num-tactics", type=int, default=1,
                   help="tactics asked of the policy per new node; more as its visits grow (progressive widening) "
                        "(at least 1)")
    p.add_argument("--device", default="cpu", help=cli_checks.DEVICES)
    p.add_argument("--seed", type=int, default=0, help="seeds the policy's sampling of tactics")
    p.add_argument("--factorized", action=argparse.BooleanOptionalAction, default=None,
                   help="simulator only: one branch per goal (default: as the checkpoint's training run, else yes)")
    a = p.parse_args(argv)
    # a budget that cannot find a proof would only end in "no proof found"
    cli_checks.at_least(1, sims=a.sims, lean_calls=a.lean_calls, num_tactics=a.num_tactics)
    cli_checks.positive(seconds=a.seconds)
    cli_checks.seed(a.seed)
    cli_checks.check_device(a.device)

    path = checkpoint_file(a.checkpoint)  # before the (slower) work: a wrong path is one line
    torch.manual_seed(a.seed)
    net = PolicyValueNet.load(path, a.device)
    theorem = Theorem(a.theorem, header=a.header)
    factorized = a.factorized if a.factorized is not None else trained_factorized(path)
    process = open_backend(a.server, factorized=factorized)()
    cfg = prove_config(a.sims, a.num_tactics, a.lean_calls, a.seconds)
    t0 = time.monotonic()
    try:
        session = start(process, theorem, Budget(a.lean_calls, a.seconds))
        result = run_search(session, net, cfg)
    finally:
        process.close()
    stats = (f"{result.simulations} simulations, {result.lean_calls} Lean calls, "
             f"{time.monotonic() - t0:.1f}s, stopped by: {result.stop_reason}")
    if result.verified:
        print(f"-- proved ({stats}); verified:")
        print(theorem.source_with_proof(result.proof))
        return 0
    print(f"-- {why_not(result)} ({stats})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    run_cli(main)
