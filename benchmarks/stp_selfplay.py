"""STP self-play on ConjectureProve-v0 against the same prover trained on the seeds alone.

    python benchmarks/stp_selfplay.py                      # 6 minutes per arm, 60 held-out theorems
    python benchmarks/stp_selfplay.py --minutes 2 --eval-size 20 --minif2f ''
    LEANGYM_MINIF2F=/path/minif2f_lean4.jsonl python benchmarks/stp_selfplay.py   # offline

Two runs of ``agents.stp.train`` with the same settings and the same wall time (``--minutes``,
warm starts included): *self-play* (seed searches + conjecture rounds) and *seeds alone*
(``--no-conjectures``: seed searches only, so more of them). Each final prover is evaluated on
held-out PropLogic theorems (the generator's fixed held-out set, levels 1..``--eval-level``)
and on the miniF2F statements (``--minif2f``: a theorem set, default ``minif2f``; ``''``: none)
that the simulator can elaborate. Only proofs
re-checked whole count. The self-play run's per-iteration records give the curves: pass rate of
accepted conjectures, invalid/duplicate share, steps per proof. Writes
``benchmarks/results/stp_selfplay.{md,png,json}``. ``--ablations``: also self-play arms with the
band-tracking changes off (all, and one at a time; PropLogic only); ``--report-from``: rebuild the
report from saved runs (this script's JSON, or ``history.json`` files of ``agents.stp.train`` runs).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.alphaproof.actors import evaluate, process_factory, search_config  # noqa: E402
from agents.alphaproof.theorem_source import Task  # noqa: E402
from agents.alphaproof.train import solve_rate_text  # noqa: E402
from agents.stp.train import Args, prover_args, train  # noqa: E402
from leangym.cli import ArgumentParser, run_cli  # noqa: E402
from leangym.datasets import proplogic as generator  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
# self-play arms with each band-tracking change on and off (novel, adapt, build_on_easy, escalate); all off: the loop
# as first built; the defaults' arm (novel, escalate) is the script's "self-play"
TRACKING = ("novel", "adapt", "build_on_easy", "escalate")
ABLATIONS = [(False, False, False, False), (True, False, False, False), (True, False, False, True),
             (True, True, False, True), (True, False, True, True), (True, True, True, True)]


def arm_label(args: dict) -> str:
    # (--aim too: not one of the ablations, but its run's history.json would take a --novel arm's name and place)
    on = [f"--{k.replace('_', '-')}" for k in (*TRACKING, "aim") if args.get(k)]
    return "self-play, " + (" ".join(on) if on else "none of them (before)")


def minif2f_tasks(spec: str) -> list[Task]:
    """The miniF2F statements (both splits) the simulator can elaborate."""
    from leangym.datasets import load_theorems
    from leangym.sim.local import LocalProcess

    tasks = []
    for t in load_theorems(spec):
        try:
            LocalProcess(factorized=True).start_proof(t.start_source())
        except Exception:  # noqa: BLE001 -- outside the simulated fragment
            continue
        tasks.append(Task(t, generator.statement_key(t), f"minif2f-{t.split}"))
    return tasks


def main(argv=None) -> None:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=6.0, help="wall time of each arm (warm start included)")
    p.add_argument("--eval-size", type=int, default=60)
    p.add_argument("--eval-level", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--minif2f", default="minif2f", help="miniF2F as a theorem set ('': skip it)")
    p.add_argument("--out", default=str(RESULTS))
    p.add_argument("--ablations", action="store_true", help="also the self-play arms of ABLATIONS")
    p.add_argument("--report-from", nargs="+", default=None, metavar="JSON",
                   help="no training: the report of saved runs (this script's JSON, train runs' history.json)")
    opts = p.parse_args(argv)
    if opts.report_from:
        runs = load_runs(opts.report_from)
        Path(opts.out).mkdir(parents=True, exist_ok=True)
        (Path(opts.out) / "stp_selfplay.json").write_text(json.dumps(runs, indent=1, default=str), encoding="utf-8")
        mf = runs["self-play"].get("minif2f", {})
        return write_report(runs, opts, Path(opts.out), int(mf.get("evaluated", 0) + mf.get("not_evaluated", 0)))
    torch.set_num_threads(1)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    mf = minif2f_tasks(opts.minif2f) if opts.minif2f else []
    runs = {}
    arms = [("self-play", {}), ("seeds alone", dict(conjectures=False))]
    default = tuple(getattr(Args(), k) for k in TRACKING)
    arms += [(arm_label(dict(zip(TRACKING, on))), dict(zip(TRACKING, on))) for on in ABLATIONS
             if opts.ablations and on != default]
    for name, flags in arms:
        args = Args(max_minutes=opts.minutes, eval_size=opts.eval_size, eval_level=opts.eval_level, seed=opts.seed,
                    checkpoint_dir="", logdir="", **flags)
        print(f"== {name}: {opts.minutes} minutes", file=sys.stderr)
        res = train(args)
        if mf and name in ("self-play", "seeds alone"):
            t0 = time.monotonic()
            pa = prover_args(args)
            res["minif2f"] = evaluate(res["prover"], mf, process_factory(pa), pa, search_config(pa))  # (STP's search)
            print(f"miniF2F (simulator-readable, {len(mf)}): {solve_rate_text(res['minif2f'])} "
                  f"in {time.monotonic() - t0:.0f}s", file=sys.stderr)
        runs[name] = {k: v for k, v in res.items() if k not in ("prover", "conjecturer")}
    (out / "stp_selfplay.json").write_text(json.dumps(runs, indent=1, default=str), encoding="utf-8")
    write_report(runs, opts, out, len(mf))


def load_runs(paths) -> dict:
    """Runs from this script's JSON files and from ``agents.stp.train`` history.json files (an ablation
    arm, named by which of TRACKING its settings turned on)."""
    runs = {}
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if "history" not in data:
            runs.update(data)
            continue
        runs[arm_label(data["args"])] = data
    return runs


def _series(history, key):
    pts = [(h["iteration"], h[key]) for h in history if key in h]
    return [x for x, _ in pts], [y for _, y in pts]


def _smooth(ys, w: int = 3):
    return [sum(ys[max(0, i - w + 1):i + 1]) / len(ys[max(0, i - w + 1):i + 1]) for i in range(len(ys))]


def write_report(runs: dict, opts, out: Path, n_minif2f: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sp = runs["self-play"]["history"]
    runs_all, runs = runs, {n: runs[n] for n in ("self-play", "seeds alone")}
    fig, ax = plt.subplots(1, 4, figsize=(18, 4))
    for key, label in (("pass_rate_accepted", "pass rate of accepted conjectures"),
                       ("in_band_of_accepted", "share of accepted in band (0, 1/4]")):
        x, y = _series(sp, key)
        ax[0].plot(x, _smooth(y), label=label)
    other, what = _dashed(runs_all)
    if other:  # dashed: the defaults with attempts at one budget (else the loop as first built)
        for i, key, color, label in ((0, "pass_rate_accepted", "tab:blue", "pass rate"),
                                     (0, "in_band_of_accepted", "tab:orange", "in band"),
                                     (1, "share_invalid_or_duplicate", "tab:blue", "invalid or duplicate")):
            x, y = _series(other, key)
            ax[i].plot(x, _smooth(y), "--", color=color, alpha=0.6, label=f"{label}, {what}")
    ax[0].axhspan(0, 0.25, color="green", alpha=0.08, label="band")
    ax[0].set(xlabel="iteration", ylim=(0, 1), title="prover on fresh conjectures (3-iter mean)")
    ax[0].legend(fontsize=7)
    for key, label in (("share_invalid_or_duplicate", "invalid or duplicate"), ("share_invalid", "invalid"),
                       ("share_duplicate", "duplicate"), ("share_trivial", "trivial")):
        x, y = _series(sp, key)
        ax[1].plot(x, _smooth(y), label=label)
    ax[1].set(xlabel="iteration", ylim=(0, 1), title="refused conjectures (share of rounds, 3-iter mean)")
    ax[1].legend(fontsize=7)
    for key, label in (("steps_per_proof", "prover steps per proof of a conjecture"),
                       ("conjecture_connectives", "connectives per accepted conjecture")):
        x, y = _series(sp, key)
        ax[2].plot(x, _smooth(y), label=label)
    ax[2].set(xlabel="iteration", title="conjecture hardness (3-iter mean)")
    ax[2].legend(fontsize=7)
    names = list(runs)
    held = [runs[n]["evaluation"].get("solve_rate", 0.0) for n in names]
    bars = ax[3].bar([f"{n}\nPropLogic" for n in names], held, color=["tab:blue", "tab:gray"])
    if n_minif2f:
        mf = [runs[n].get("minif2f", {}).get("solve_rate", 0.0) for n in names]
        ax[3].bar([f"{n}\nminiF2F-sim" for n in names], mf, color=["tab:blue", "tab:gray"], alpha=0.5)
    ax[3].set(ylim=(0, 1), title=f"held-out solve rate after {opts.minutes:g} min each")
    for b in bars:
        ax[3].text(b.get_x() + b.get_width() / 2, b.get_height() + 0.01, f"{b.get_height():.2f}", ha="center")
    fig.tight_layout()
    fig.savefig(out / "stp_selfplay.png", dpi=110)

    def row(n):
        r = runs[n]
        ev, mf = r["evaluation"], r.get("minif2f", {})
        return (f"| {n} | {r['iterations']} | {solve_rate_text(ev) if ev else '-'} | "
                f"{solve_rate_text(mf) if mf else '-'} |")

    def first_last(key, history=sp):
        x, y = _series(history, key)
        if not y:
            return "-"
        k = max(1, len(y) // 4)
        return f"{sum(y[:k]) / k:.2f} -> {sum(y[-k:]) / k:.2f}"

    settings = {k: v for k, v in runs["self-play"]["args"].items() if k not in ("checkpoint_dir", "logdir", "progress")}
    lines = [
        "# STP self-play (ConjectureProve-v0) vs. the seeds alone",
        "",
        f"    python benchmarks/stp_selfplay.py --minutes {opts.minutes:g} --eval-size {opts.eval_size} "
        f"--eval-level {opts.eval_level} --seed {opts.seed}" + ("" if n_minif2f else " --minif2f ''"),
        "",
        f"Each arm: `agents.stp.train` defaults ({json.dumps(settings)}), "
        f"{opts.minutes:g} minutes of wall time (warm starts included) on a shared 2-core CPU, torch 1 thread.",
        "",
        "| arm | iterations | held-out PropLogic | miniF2F (simulator-readable) |",
        "|---|---:|---:|---:|",
        row("self-play"), row("seeds alone"),
        "",
        "Self-play run, first quarter -> last quarter of its iterations (mean per iteration):",
        "",
        "| measure | first -> last |",
        "|---|---|",
    ] + [f"| {k} | {first_last(k)} |" for k in ("pass_rate_accepted", "in_band_of_accepted",
                                                   "share_invalid_or_duplicate", "share_invalid", "share_duplicate",
                                                   "share_trivial", "steps_per_proof", "conjecture_connectives",
                                                   "seed_solve_rate", "pool_size")] + [
        "",
        f"miniF2F: the {n_minif2f} statements (of 488) the simulator elaborates (mostly ℕ arithmetic), "
        "searched with the same budget." if n_minif2f else "",
        "",
        "![curves](stp_selfplay.png)",
    ] + ablation_table(runs_all, first_last)
    (out / "stp_selfplay.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def _dashed(runs: dict) -> tuple[list | None, str]:
    """The run the plot draws dashed, and what it is: the defaults' arm with ``--no-escalate``, else all off."""
    defaults = {k: getattr(Args(), k) for k in TRACKING}
    for name, what in ((arm_label({**defaults, "escalate": False}), "attempts at one budget"),
                       (arm_label({}), "before the changes")):
        if name in runs:
            return runs[name]["history"], what
    return None, ""


def ablation_table(runs: dict, first_last) -> list[str]:
    """Self-play with and without each band-tracking change: first -> last quarter, and held-out."""
    names = sorted((n for n in runs if n != "seeds alone"), key=lambda n: [bool(runs[n]["args"].get(k)) for k in TRACKING])
    if len(names) == 1:
        return []
    keys = ("pass_rate_accepted", "in_band_of_accepted", "share_invalid", "share_duplicate",
            "conjecture_connectives", "steps_per_proof")
    lines = ["", "Band tracking, each change on and off (self-play arms, same seed; first -> last quarter; "
             "`self-play` is the arm of the table above):", "",
             "| arm | iterations | held-out PropLogic | " + " | ".join(keys) + " |",
             "|---|---:|---:|" + "---|" * len(keys)]
    for n in names:
        r, ev = runs[n], runs[n]["evaluation"]
        label = f"{n} ({arm_label(r['args'])})" if n == "self-play" else n
        lines.append(f"| {label} | {r['iterations']} | {solve_rate_text(ev) if ev else '-'} | "
                     + " | ".join(first_last(k, r["history"]) for k in keys) + " |")
    return lines


if __name__ == "__main__":
    run_cli(main)
