"""Held-out solve rate of the AlphaProof agent after a fixed CPU budget, against baselines.

    python benchmarks/learning_curve.py                 # 10 minutes of training, 40 held-out theorems
    python benchmarks/learning_curve.py --minutes 3 --eval-size 20

One training run (``agents.alphaproof.train``, default tiny model, PropLogic-v0
on the in-process simulator) gets ``--minutes`` of wall time, warm start and
evaluations included. Its held-out evaluations give two rows: *SFT only*
(right after the supervised warm start) and *SFT + RL* (the last one), and the
curve in the plot. The baselines search the same held-out theorems with the
same Lean-call budget per theorem and no training:

* ``random``: ``baselines.random_prover.RandomProver`` (random tactics, tree search);
* ``best-first, untrained``: ``baselines.best_first.BestFirstProver`` with an
  untrained tiny network (what a policy-guided search does before learning);
* ``best-first, trained net``: the same best-first search with this run's final
  network, to separate what the network learned from what MCTS adds.

Only proofs re-checked whole on a clean process count (as the benchmark harness checks them). Writes
``benchmarks/results/learning_curve.{md,png}``.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.alphaproof.train import Args, train  # noqa: E402
from agents.alphaproof.theorem_source import PropLogicSource  # noqa: E402
from leangym.proof import script_of  # noqa: E402
from leangym.session import Budget, BudgetExhausted, ProofSession  # noqa: E402
from leangym.sim.local import LocalProcess  # noqa: E402
from leangym.soundness import SoundnessPolicy, verify  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def solve_rate(prover, tasks, lean_calls: int) -> tuple[float, dict]:
    """Fraction of ``tasks`` a harness-style prover solves (verified), and per-level counts."""
    per_level: dict = {}
    for i, task in enumerate(tasks):
        session = ProofSession(LocalProcess(factorized=True), task.theorem, budget=Budget(max_lean_calls=lean_calls))
        if hasattr(prover, "set_seed"):
            prover.set_seed(i)
        try:
            proof = prover.prove(task.theorem, session, session.budget)
        except BudgetExhausted:
            proof = None
        # judged as the benchmark harness does: the whole proof, on a clean process, not charged to the prover
        ok = proof is not None and verify(LocalProcess(factorized=True), task.theorem, script_of(proof),
                                          SoundnessPolicy()).ok
        per_level.setdefault(task.level, []).append(int(ok))
    flat = [x for v in per_level.values() for x in v]
    return sum(flat) / max(1, len(flat)), {lv: f"{sum(v)}/{len(v)}" for lv, v in sorted(per_level.items())}


def main(argv=None) -> int:
    from leangym.cli import ArgumentParser

    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0, help="training budget (wall clock, everything included)")
    p.add_argument("--eval-size", type=int, default=40, help="held-out theorems (spread over levels 1-5)")
    p.add_argument("--eval-every", type=int, default=4, help="iterations between held-out evaluations")
    p.add_argument("--lean-calls", type=int, default=96, help="Lean-call budget per theorem, for every agent")
    p.add_argument("--sims", type=int, default=32)
    p.add_argument("--actors", type=int, default=16)
    p.add_argument("--model-size", default="tiny")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(RESULTS / "learning_curve"), help="output path without extension")
    a = p.parse_args(argv)

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="learning_curve_") as tmp:  # (the run's checkpoints and logs)
        workdir = Path(tmp)
        run = train(Args(iterations=10**6, max_minutes=a.minutes, eval_every=a.eval_every, eval_size=a.eval_size,
                         lean_calls=a.lean_calls, sims=a.sims, actors=a.actors, model_size=a.model_size,
                         seed=a.seed, logdir=str(workdir / "tb"), checkpoint_dir=str(workdir / "ck")))
    train_minutes = (time.monotonic() - t0) / 60
    evals = run["evals"]
    tasks = PropLogicSource().heldout(a.eval_size)

    def per_level(ev):  # "solved/total" per level, from the evaluation's per-level rates
        counts = {lv: sum(t.level == lv for t in tasks) for lv in {t.level for t in tasks}}
        return {lv: f"{round(ev[f'solve_rate_level_{lv}'] * n)}/{n}" for lv, n in counts.items()}

    rows = [("AlphaProof agent, SFT only (warm start)", evals[0]["solve_rate"], f"{evals[0]['minutes']:.1f}",
             per_level(evals[0])),
            (f"AlphaProof agent, SFT + RL ({run['iteration']} iterations), final evaluation", evals[-1]["solve_rate"],
             f"{evals[-1]['minutes']:.1f}", per_level(evals[-1])),
            # one evaluation of 40 theorems moves by 2.5 points a theorem: the last few, averaged, say more
            ("AlphaProof agent, SFT + RL, mean of the last 5 evaluations",
             sum(e["solve_rate"] for e in evals[-5:]) / len(evals[-5:]), f"{evals[-1]['minutes']:.1f}", {})]

    from baselines.best_first import BestFirstProver
    from baselines.random_prover import RandomProver

    torch.manual_seed(a.seed)
    for name, prover in [("random tactics (tree search)", RandomProver(seed=a.seed, mode="tree")),
                         ("best-first, untrained tiny net", BestFirstProver(seed=a.seed)),
                         ("best-first, this run's final net", BestFirstProver(evaluator=run["net"], k=4))]:
        rate, per = solve_rate(prover, tasks, a.lean_calls)
        rows.append((name, rate, f"{train_minutes:.1f} (the net above)" if "final net" in name else "0", per))

    lvls = sorted({t.level for t in tasks})
    header = ("| agent | held-out solve rate | training minutes | " + " | ".join(f"L{lv}" for lv in lvls) + " |\n"
              "|---|---:|---:|" + "---:|" * len(lvls))
    table = "\n".join([header] + [f"| {n} | {r:.1%} | {m} | " + " | ".join(per.get(lv, "-") for lv in lvls) + " |"
                                  for n, r, m, per in rows])
    print(table)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([e["minutes"] for e in evals], [e["solve_rate"] for e in evals], "o-", label="AlphaProof agent (SFT at first point)")
    for (name, rate, _, _), style in zip(rows[3:], ("--", ":", "-.")):
        ax.axhline(rate, linestyle=style, color="gray", label=name)
    ax.set_xlabel("wall-clock minutes of training (2 shared CPU cores)")
    ax.set_ylabel(f"held-out solve rate ({len(tasks)} theorems)")
    ax.set_ylim(0, 1)
    ax.set_title(f"PropLogic-v0, {a.lean_calls} Lean calls per theorem")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out.with_suffix(".png"), dpi=120)

    history = run["history"]
    last = (f"Last iteration: loss {history[-1].get('loss', float('nan')):.3f}, replay "
            f"{int(history[-1]['replay_size'])} rows, {history[-1]['simulations_per_s']:.1f} simulations/s, "
            f"{history[-1]['lean_calls_per_s']:.0f} Lean calls/s, tactic error rate "
            f"{history[-1]['tactic_error_rate']:.2f}." if history else
            "No self-play iteration ran: the warm start took the whole budget (raise --minutes).")
    md = f"""# AlphaProof agent: learning curve on PropLogic-v0

```
python benchmarks/learning_curve.py --minutes {a.minutes:g} --eval-size {a.eval_size} --lean-calls {a.lean_calls}
```

Held-out theorems: the first {len(tasks)} of `leangym.datasets.proplogic.heldout_set()` (levels {lvls[0]}-{lvls[-1]}),
never trained on. Every agent gets **{a.lean_calls} Lean calls per theorem** on the in-process
**simulated** kernel (factorized); only proofs re-checked whole on a clean process count.
Training: `{a.model_size}` model, {a.actors} actors, {a.sims} simulations per theorem, seed {a.seed},
{train_minutes:.1f} minutes wall clock in total ({run['iteration']} self-play iterations, warm start and
evaluations included) on a shared 2-core CPU. The random and untrained baselines do not train; the
last row searches with the net this run trained.

{table}

{last}

Held-out evaluations during training ({len(tasks)} theorems: one theorem moves an evaluation by
{100 / len(tasks):.1f} points, so read the trend; mean of the last {len(evals[-5:])}:
{sum(e["solve_rate"] for e in evals[-5:]) / len(evals[-5:]):.1%}):

| iteration | minutes | solve rate |
|---:|---:|---:|
""" + "\n".join(f"| {e['iteration']} | {e['minutes']:.1f} | {e['solve_rate']:.1%} |" for e in evals) + f"""

![learning curve]({out.with_suffix('.png').name})
"""
    out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    from leangym.cli import run_cli

    run_cli(main)
