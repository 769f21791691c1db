"""The AlphaProof agent after a fixed training budget, against the baselines, through the same harness.

    python benchmarks/learning_curve.py --minutes 10        # the README's training, then 100 held-out theorems
    python benchmarks/learning_curve.py --minutes 3 --train-args "--actors 8 --negative-weight 0.5"

1. One ``agents.alphaproof.train`` run of ``--minutes`` (warm start included), with the README's
   ``--actors 16 --iterations 1000`` and train's own defaults, then ``--train-args``. Its held-out
   evaluations (``--eval-every``/``--eval-size``, at ``--eval-lean-calls``, set to ``--budget-calls``) give the
   curve of solve rate against training minutes; a watcher copies the run's ``latest.pt`` (saved atomically)
   at ``--snapshots``.
2. Every agent through ``scripts.benchmark`` on ``proplogic-heldout:N`` (``--sim-factorized``: the
   generation the agent trains on), ``--budget-calls`` per theorem, one attempt, one seed: the agent
   (final net and each snapshot), best-first with the final net, MaskablePPO (its training excluded), random.
3. ``--out``.md (tables, the command, machine load), ``--out``.png (solve rate vs minutes; solved within
   N Lean calls), ``--out``.json (every number). The runs' files stay in ``--work``.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # also runnable as a file

import torch  # noqa: E402

from agents.alphaproof import checkpoint  # noqa: E402
from agents.alphaproof.prove import PROVE_SEARCH, default_sims  # noqa: E402
from agents.alphaproof.train import train  # noqa: E402
from agents.alphaproof.train_args import explicit_fields, parse_args  # noqa: E402
from benchmarks.baselines_proplogic import row, run_agent  # noqa: E402
from leangym.cli import ArgumentParser, run_cli  # noqa: E402
from leangym.harness.records import ResultSet  # noqa: E402
from leangym.harness.report import summary_of  # noqa: E402
from leangym.harness.stats import solved_within  # noqa: E402

README_TRAINING = ["--actors", "16", "--iterations", "1000"]  # the README's command; --max-minutes is ours
OURS = ("max_minutes", "checkpoint_dir", "logdir", "resume", "eval_lean_calls")  # train flags this script sets itself
WITHIN = (8, 16, 24, 32, 48, 64)


def say(msg: str) -> None:
    print(f"[learning_curve] {msg}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="training wall clock, warm start included")
    p.add_argument("--train-args", default="", help="more flags for agents.alphaproof.train (one quoted string)")
    p.add_argument("--snapshots", type=minutes_list, default="2,4,6,8",
                   help="training minutes at which to copy the net, comma-separated ('': none)")
    p.add_argument("--n", type=int, default=100, help="held-out theorems (proplogic-heldout:N)")
    p.add_argument("--budget-calls", type=int, default=64, help="Lean calls per theorem, the same for every agent")
    p.add_argument("--sims", type=int, default=None,
                   help="the agent's MCTS simulations per theorem in the harness (default: 4 per Lean call)")
    p.add_argument("--num-tactics", type=int, default=1,
                   help="the agent's tactics per new node in the harness (more as a node is revisited)")
    p.add_argument("--ppo-timesteps", type=int, default=50_000)
    p.add_argument("--seed", type=int, default=0, help="the harness runs' seed")
    p.add_argument("--work", type=Path, default=Path("runs/learning_curve"), help="training run, snapshots, JSONL")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/learning_curve"), help="path prefix")
    a = p.parse_args(argv)
    train_argv = README_TRAINING + shlex.split(a.train_args)
    if set(explicit_fields(train_argv)) & set(OURS):  # (a bad train flag: train's one-line error, here)
        p.error(f"--train-args: {', '.join('--' + f.replace('_', '-') for f in OURS)} are set by this script")
    snapshots = [m for m in a.snapshots if m < a.minutes]
    a.sims = default_sims(a.sims, a.budget_calls)
    for flag in ("n", "budget_calls", "sims", "num_tactics", "ppo_timesteps"):
        if getattr(a, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be >= 1")
    a.work = a.work / time.strftime("%Y%m%d-%H%M%S")  # a fresh folder per run: train refuses to overwrite
    a.work.mkdir(parents=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    train_argv += ["--max-minutes", f"{a.minutes:g}", "--eval-lean-calls", str(a.budget_calls),
                   "--checkpoint-dir", str(a.work / "checkpoint"),
                   "--logdir", str(a.work / "tb")]

    # 1. training, with a watcher copying the net at the snapshot times
    say(f"training {a.minutes:g} min: python -m agents.alphaproof.train {shlex.join(train_argv)}")
    load_before = os.getloadavg()
    targs = parse_args(train_argv)
    if targs.threads > 0:
        torch.set_num_threads(targs.threads)
    stop, taken = threading.Event(), []
    watcher = threading.Thread(target=snapshot_watcher, daemon=True,
                               args=(a.work / "checkpoint" / "latest.pt", a.work / "snapshots", snapshots, stop, taken))
    t0 = time.monotonic()
    watcher.start()
    try:
        run = train(targs, explicit_fields(train_argv))
    finally:
        stop.set()
        watcher.join()
    train_minutes = (time.monotonic() - t0) / 60
    load_after = os.getloadavg()
    final = a.work / "checkpoint" / "latest.pt"
    for s in taken:  # (read after training, not on its cores during it)
        s["iteration"] = checkpoint.read(s["path"])["progress"]["iteration"]
    # the same net twice (two snapshot times before the warm start's first save): measured once
    taken[:] = [s for i, s in enumerate(taken) if i == 0 or s["iteration"] != taken[i - 1]["iteration"]]
    evals = [{k: v for k, v in e.items() if isinstance(v, (int, float))} for e in run["evals"] if "solve_rate" in e]
    say(f"trained {run['iteration']} iterations in {train_minutes:.1f} min; {len(taken)} snapshot(s)")

    # 2. every agent through the harness, at the same Lean-call budget
    torch.set_num_threads(1)  # small nets on shared cores: extra threads only contend
    agent = {"sims": a.sims, "num_tactics": a.num_tactics}
    rows = [(f"AlphaProof agent, final ({run['iteration']} iterations, {train_minutes:.1f} min)",
             "agents.alphaproof.prove:AlphaProofProver", {"checkpoint": str(final), **agent})]
    rows += [(f"AlphaProof agent at {s['minutes']:.1f} min ({s['iteration']} iterations"
              + (", the warm start only)" if s["iteration"] == 0 else ")"),
              "agents.alphaproof.prove:AlphaProofProver", {"checkpoint": s["path"], **agent}) for s in taken]
    rows.append(("best-first, the final net", "baselines.best_first:BestFirstProver", {"checkpoint": str(final)}))
    ppo_path, ppo_s = train_ppo(a)
    rows += [(f"MaskablePPO, {a.ppo_timesteps} steps", "baselines.maskable_ppo:MaskablePPOProver", {"path": ppo_path}),
             ("random", "random", {})]
    results: dict[str, tuple[ResultSet, float]] = {}
    for i, (label, spec, kwargs) in enumerate(rows):
        say(f"harness {i + 1}/{len(rows)}: {label}")
        results[label] = run_agent(label, spec, kwargs, a, "--sim-factorized")

    # 3. tables, plot, numbers
    numbers = {"command": command(argv), "train_command": f"python -m agents.alphaproof.train {shlex.join(train_argv)}",
               "date": time.strftime("%Y-%m-%d %H:%M %Z"), "load_before": load_before, "load_after": load_after,
               "train_minutes": train_minutes, "iterations": run["iteration"], "evals": evals, "snapshots": taken,
               "ppo_train_s": ppo_s, "budget_calls": a.budget_calls, "n": a.n,
               "train_eval": {"theorems": targs.eval_size, "lean_calls": targs.eval_lean_calls, "every": targs.eval_every},
               "agents": {label: agent_numbers(rs, t, a.budget_calls) for label, (rs, t) in results.items()}}
    md, png, js = (Path(f"{a.out}.{ext}") for ext in ("md", "png", "json"))
    js.write_text(json.dumps(numbers, indent=1), encoding="utf-8")
    draw(png, numbers, results, a)
    md.write_text(report(numbers, results, a, png.name), encoding="utf-8")
    print(md.read_text(encoding="utf-8"))
    say(f"wrote {md}, {png.name} and {js.name}; the runs' files are in {a.work}")
    return 0


def minutes_list(text: str) -> list[float]:
    try:
        return sorted({float(m) for m in text.split(",") if m.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated minutes, e.g. 2,4,6,8") from None


def snapshot_watcher(latest: Path, folder: Path, minutes: list[float], stop: threading.Event, taken: list) -> None:
    """Copy ``latest`` at each of ``minutes`` (or as soon after as it first exists). Train replaces it with
    os.replace, so an open file is one whole checkpoint, never a half-written one."""
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    for m in minutes:
        if stop.wait(max(0.0, t0 + 60 * m - time.monotonic())):
            return
        while not latest.exists() and not stop.wait(1.0):  # (the warm start may not have saved yet)
            pass
        if stop.is_set():
            return
        path = folder / f"{m:g}min.pt"
        shutil.copyfile(latest, path)
        taken.append({"at": m, "minutes": (time.monotonic() - t0) / 60, "path": str(path)})


def train_ppo(a: argparse.Namespace) -> tuple[str, float]:
    """MaskablePPO on the PropLogic training stream (the held-out theorems left out); its time is not the harness's."""
    from baselines.maskable_ppo import heldout_excluded, train as train_maskable_ppo

    path, t0 = str(a.work / f"maskable_ppo_{a.ppo_timesteps}.zip"), time.monotonic()
    say(f"training MaskablePPO for {a.ppo_timesteps} steps")
    train_maskable_ppo(a.ppo_timesteps, path, seed=a.seed, env_kwargs=heldout_excluded(a.n))
    say(f"trained MaskablePPO in {time.monotonic() - t0:.0f}s (not counted in the harness)")
    return path, time.monotonic() - t0


def agent_numbers(rs: ResultSet, elapsed: float, budget: int) -> dict:
    s = summary_of(rs)
    within = [n for n in WITHIN if n <= budget] or [budget]
    return {"solved": s.solved, "theorems": s.theorems, "rate": s.rate, "interval": list(s.interval),
            "lean_calls_mean": s.calls_per_attempt, "wall_s": elapsed, "jsonl": str(rs.path),
            "per_level": {c.category: [c.solved, c.theorems] for c in s.categories},
            "solved_within": {str(n): sum(r.solved and r.lean_calls <= n for r in rs.attempts) for n in within}}


def command(argv: list[str]) -> str:
    return f"python benchmarks/learning_curve.py {shlex.join(argv)}".rstrip()


def report(nums: dict, results: dict[str, tuple[ResultSet, float]], a: argparse.Namespace, png: str) -> str:
    first = next(iter(nums["agents"].values()))
    within = list(first["solved_within"])
    lb, la = (" / ".join(f"{x:.2f}" for x in nums[k]) for k in ("load_before", "load_after"))
    evals, te = nums["evals"], nums["train_eval"]
    # (only when they are: --sims / --num-tactics may have been given)
    defaults = " (`agents.alphaproof.prove`'s defaults)" if (a.sims, a.num_tactics) == (
        default_sims(None, a.budget_calls), 1) else ""
    return "\n".join([
        "# AlphaProof agent against the baselines, at equal Lean calls",
        "", "```", nums["command"], "```", "",
        f"{nums['date']}; load average (1/5/15 min) {lb} before training, {la} after; {os.cpu_count()} cores.",
        f"Training: `{nums['train_command']}` ({nums['iterations']} iterations, {nums['train_minutes']:.1f} min, "
        f"warm start included). Then every agent through `scripts.benchmark` on `proplogic-heldout:{a.n}` "
        f"(simulated kernel, `--sim-factorized`), **{a.budget_calls} Lean calls per theorem**, one attempt, "
        f"seed {a.seed}; the agent with {a.sims} simulations, {a.num_tactics} tactic(s) per new node, a node "
        f"widened once its visits pass {PROVE_SEARCH['widen_c']:g} x (tactics tried)^1.5, and "
        f"{PROVE_SEARCH['leaves_per_round']} leaf per round{defaults}. Every counted proof was re-checked whole "
        f"by the harness. MaskablePPO trained {a.ppo_timesteps} steps in "
        f"{nums['ppo_train_s']:.0f} s (excluded). Pass rate with a 95% Wilson interval; Lean calls: mean per attempt.",
        "",
        "| agent | solved | pass rate (95% CI) | Lean calls | wall | L1 | L2 | L3 | L4 | L5 |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        *[row(label, rs, elapsed) for label, (rs, elapsed) in results.items()],
        "", "Theorems solved within N Lean calls (from the same runs at the full budget, not reruns at budget N):", "",
        "| agent | " + " | ".join(f"<= {n}" for n in within) + " |", "|---|" + "---:|" * len(within),
        *[f"| {label} | " + " | ".join(str(v) for v in x["solved_within"].values()) + " |"
          for label, x in nums["agents"].items()],
        "", f"Train's own held-out evaluations ({te['theorems']} theorems of its own held-out split, "
            f"{te['lean_calls']} Lean calls per theorem, `prove`'s default search"
            + (" as the harness agent here" if defaults else " (the harness agent: its own --sims/--num-tactics)")
            + f", in train's process with its torch seeds: not the harness's runs), every {te['every']} iterations:",
        "",
        "| iteration | minutes | solve rate |", "|---:|---:|---:|",
        *[f"| {e['iteration']} | {e['minutes']:.1f} | {e['solve_rate']:.1%} |" for e in evals],
        "", f"![solve rate against training minutes and Lean calls]({png})", ""])


def draw(path: Path, nums: dict, results: dict[str, tuple[ResultSet, float]], a: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    evals, agents = nums["evals"], nums["agents"]
    left.plot([e["minutes"] for e in evals], [100 * e["solve_rate"] for e in evals], "o-", markersize=3,
              label=f"AlphaProof agent, train's own evaluation ({nums['train_eval']['theorems']} theorems, "
                    f"{nums['train_eval']['lean_calls']} calls)")
    points = [(s["minutes"], label) for s, label in zip(nums["snapshots"], list(agents)[1:])]
    points.append((nums["train_minutes"], next(iter(agents))))
    left.plot([m for m, _ in points], [100 * agents[label]["rate"] for _, label in points], "s", color="C3",
              label=f"AlphaProof agent, harness ({a.budget_calls} calls)")
    for label, style in zip([k for k in agents if k.startswith(("MaskablePPO", "random"))], ("--", ":")):
        left.axhline(100 * agents[label]["rate"], linestyle=style, color="gray", label=f"{label}, harness")
    left.set(xlabel="training minutes (wall clock, warm start included)", ylabel="held-out solved (%)", ylim=(0, 100),
             xlim=(0, None),
             title="Solve rate against training minutes")
    budgets = list(range(a.budget_calls + 1))
    for label, (rs, _) in results.items():
        right.step(budgets, [100 * x for x in solved_within(rs.attempts, budgets)[0]], where="post", label=label)
    right.set(xlabel="Lean calls the solving attempt had used", ylabel=f"proplogic-heldout:{a.n} solved (%)",
              ylim=(0, 100), title=f"Solved within N Lean calls (one run each at {a.budget_calls})")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    run_cli(main)
