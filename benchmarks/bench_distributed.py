"""The distributed training path, measured in one run: transport, inference batch fill, scaling, learning parity.

    python benchmarks/bench_distributed.py --out benchmarks/results/distributed.md --plot benchmarks/results/distributed.png
    python benchmarks/bench_distributed.py --only transport scaling --per-proc 16 --procs 1 2   # quicker
    python benchmarks/bench_distributed.py --only scaling --device cuda    # the network on a GPU

1. **transport** -- training rows per second through the real message format (JSON header +
   numpy columns) over a ZeroMQ PUSH/PULL pair on loopback, packed, sent, received, checked, decoded;
2. **scaling** -- end-to-end searches per second of real ``train`` runs against a simulated
   LeanTree server at ``--latency-ms`` per Lean call: ``--per-proc`` searches in each of 1, 2, 4
   actor processes, and single-process mode (``--actor-procs 0``) with as many searches as 1 and as
   the largest; efficiency(N) = rate(N) / (N x rate(1));
3. **fill** -- inference batch fill of runs of ``--fill-searches`` (256) searches over ``--fill-procs`` (4)
   actor processes, one per ``--fill-wait-ms`` (the runs' ``--infer-wait-ms``): mean over forward passes
   of min(1, states / ``--infer-batch``) (default ``--actors``: a leaf of every search), with the mean
   forward batch, queue wait and searches/s: what a longer wait for other actors buys and costs;
4. **parity** -- held-out PropLogic solve rate after ``--parity-minutes`` of training with
   ``--actor-procs 2`` and with ``--actor-procs 0``, same seed, same machine, one after the other.

Runs are subprocesses (``python -m agents.alphaproof.train``); their history is read from the
checkpoint. Rates exclude the warm start and the first iteration (start-up).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import zmq
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.alphaproof import checkpoint  # noqa: E402
from agents.alphaproof.distributed.wire import RESULT, pack, rows_from_arrays, rows_to_arrays, unpack  # noqa: E402
from agents.alphaproof.train_args import Args  # noqa: E402


# ============================================================================ 1. transport
def bench_transport(messages: int = 400, rows_per_message: int = 500) -> dict[str, float]:
    rng = np.random.default_rng(0)
    rows = [{"state": "p q r : Prop\nh₁ : p → q\nh₂ : q → r\n⊢ " + "p → r ∧ " * int(rng.integers(1, 12)) + "True",
             "tactic": "exact fun hp => ⟨h₂ (h₁ hp), trivial⟩" if i % 3 else None,
             "steps_to_go": None if i % 5 == 0 else int(i % 7)} for i in range(rows_per_message)]
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.SNDHWM, 100)
    push.connect(f"tcp://127.0.0.1:{port}")
    header = {"actor": "bench", "task": 1, "status": "searched", "verified": True, "verdict": True,
              "rate_verdict": True, "stop_reason": "solved", "simulations": 8, "lean_calls": 20, "wall_s": 1.0,
              "version": 3, "n_rows": len(rows), "error": None,
              "proof": "intro hp\nexact ⟨h₂ (h₁ hp), trivial⟩"}

    def send():
        for i in range(messages):
            push.send_multipart(pack("result", {**header, "task": i}, rows_to_arrays(rows)))

    t0 = time.perf_counter()
    sender = threading.Thread(target=send)
    sender.start()
    got = 0
    for _ in range(messages):
        msg = unpack([f.buffer for f in pull.recv_multipart(copy=False)], RESULT)
        got += len(rows_from_arrays(msg, msg["n_rows"]))
    sender.join()
    seconds = time.perf_counter() - t0
    ctx.destroy(linger=0)
    nbytes = sum(len(bytes(f)) for f in pack("result", header, rows_to_arrays(rows)))
    return {"rows": got, "seconds": seconds, "rows_per_s": got / seconds, "bytes_per_row": nbytes / len(rows)}


# ============================================================================ training runs
def train_run(flags: list[str], work: Path, name: str) -> tuple[dict, str]:
    """A ``train`` subprocess; returns its checkpoint's progress and its stdout."""
    ck = work / name
    cmd = [sys.executable, "-m", "agents.alphaproof.train", *flags, "--checkpoint-dir", str(ck), "--logdir", "",
           "--no-progress", "--overwrite"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with (work / f"{name}.log").open("w") as log:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed ({proc.returncode}); see {work / name}.log:\n"
                         + (work / f"{name}.log").read_text()[-2000:])
    return checkpoint.load(ck / "latest.pt")["progress"], proc.stdout


def fill_runs(scaling: dict | None) -> list[dict]:
    """The batch-fill runs of ``bench_scaling``'s result (one per --fill-wait-ms) that report a fill."""
    return [r for n, r in (scaling or {}).items() if n.startswith("fill") and r["fill"] is not None]


def searches_per_s(history: list[dict], actors: int) -> float:
    """Searches per second over the iterations after the first (each iteration is ``actors`` searches)."""
    later = history[1:] or history
    return actors * len(later) / sum(r["iteration_seconds"] for r in later)


def bench_scaling(args, work: Path, url: str) -> dict:
    common = ["--server", url, "--sims", str(args.sims), "--lean-calls", str(args.lean_calls), "--num-tactics", "3",
              "--warmup-steps", str(args.warmup_steps), "--warmup-theorems", "300", "--eval-every", "0",
              "--iterations", str(args.iterations), "--seed", "0", "--threads", "1", "--max-tactic-tokens", "16",
              "--read-timeout", "60", "--device", args.device]
    runs = {}
    biggest = max(args.procs)
    wait = args.infer_wait_ms
    plan = [("single", 0, args.per_proc, wait)] + [(f"procs{n}", n, n * args.per_proc, wait) for n in args.procs]
    if biggest > 1:
        plan.insert(1, ("single_big", 0, biggest * args.per_proc, wait))
    if args.fill_searches:
        plan += [(f"fill{w:g}", args.fill_procs, args.fill_searches, w) for w in args.fill_wait_ms]
    for name, procs, actors, wait_ms in tqdm(plan, desc="scaling runs"):
        progress, _ = train_run([*common, "--actors", str(actors), "--actor-procs", str(procs),
                                 "--infer-wait-ms", str(wait_ms)], work, name)
        rec = progress["history"][-1]
        runs[name] = {"procs": procs, "actors": actors, "searches_per_s": searches_per_s(progress["history"], actors),
                      "wait_ms": wait_ms,
                      "fill": rec.get("dist_inference_fill"), "batch": rec.get("dist_inference_batch"),
                      "queue_wait_ms": rec.get("dist_inference_queue_wait_ms")}
    return runs


def bench_parity(args, work: Path) -> dict:
    flags = ["--actors", str(args.parity_actors), "--max-minutes", str(args.parity_minutes), "--iterations", "100000",
             "--eval-every", "100000", "--eval-size", "40", "--seed", "0", "--threads", "1", "--device", args.device]
    out = {}
    for procs in tqdm((2, 0), desc="parity runs"):
        progress, _ = train_run([*flags, "--actor-procs", str(procs)], work, f"parity{procs}")
        evals = [e for e in progress["evals"] if "solve_rate" in e]
        out[procs] = {"first": evals[0]["solve_rate"] if evals else None,
                      "final": evals[-1]["solve_rate"] if evals else None,
                      "evaluated": evals[-1]["evaluated"] if evals else 0, "iterations": progress["iteration"]}
    return out


# ============================================================================ report
def report(args, transport, scaling, parity) -> str:
    lines = [f"machine: {os.cpu_count()} cores; the network (inference service, learner) on {args.device}", ""]
    if transport:
        lines += ["## 1. Transport", "", "| rows | seconds | rows/s | bytes/row |", "|---|---|---|---|",
                  f"| {transport['rows']:,} | {transport['seconds']:.2f} | {transport['rows_per_s']:,.0f} | "
                  f"{transport['bytes_per_row']:.0f} |", "",
                  f"ratio to the goal (100,000 rows/s): {transport['rows_per_s'] / 1e5:.1f}x", ""]
    if scaling:
        base = next((r for n, r in scaling.items() if r["procs"] == 1), None)
        single = scaling["single"]
        lines += ["## 2. Scaling (simulated server, %g ms per Lean call)" % args.latency_ms, "",
                  "| mode | actor procs | searches | searches/s | vs single-process (same searches) | "
                  "efficiency vs N x 1 proc |", "|---|---|---|---|---|---|"]
        for name, r in scaling.items():
            if name.startswith("fill"):
                continue
            same = next((s for s in scaling.values() if s["procs"] == 0 and s["actors"] == r["actors"]), None)
            vs = f"{r['searches_per_s'] / same['searches_per_s']:.2f}x" if same and r["procs"] else "-"
            eff = (f"{r['searches_per_s'] / (r['procs'] * base['searches_per_s']):.2f}" if base and r["procs"]
                   else "-")
            lines.append(f"| {'single-process' if r['procs'] == 0 else 'distributed'} | {r['procs']} | {r['actors']} | "
                         f"{r['searches_per_s']:.1f} | {vs} | {eff} |")
        lines += ["", f"single-process mode with {single['actors']} searches: "
                  f"{single['searches_per_s']:.1f} searches/s; distributed runs with --infer-wait-ms "
                  f"{args.infer_wait_ms:g}", ""]
        fills = fill_runs(scaling)
        if fills:
            lines += ["## 3. Inference batch fill", "",
                      f"{fills[0]['actors']} searches over {fills[0]['procs']} actor processes (a full batch: "
                      f"{fills[0]['actors']} states, one leaf per search):", "",
                      "| --infer-wait-ms | mean forward batch | fill | mean queue wait | searches/s |",
                      "|---|---|---|---|---|"]
            lines += [f"| {r['wait_ms']:g} | {r['batch']:.0f} | **{r['fill']:.2f}** | {r['queue_wait_ms']:.1f} ms | "
                      f"{r['searches_per_s']:.1f} |" for r in fills]
            lines.append("")
    if parity:
        lines += ["## 4. Learning parity (PropLogic, %g minutes each, same seed)" % args.parity_minutes, "",
                  "| mode | iterations | held-out after warm start | held-out final |", "|---|---|---|---|"]
        for procs, r in parity.items():
            f = (lambda x: "-" if x is None else f"{x:.3f}")
            lines.append(f"| --actor-procs {procs} | {r['iterations']} | {f(r['first'])} | {f(r['final'])} "
                         f"({int(r['evaluated'])} theorems) |")
        lines.append("")
    return "\n".join(lines)


def plot(path: Path, scaling, parity) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fills = fill_runs(scaling)
    panels = [p for p in (scaling, fills, parity) if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6), squeeze=False)
    ax_iter = iter(axes[0])
    if scaling:
        ax = next(ax_iter)
        names = [n for n in scaling if not n.startswith("fill")]
        ax.bar(range(len(names)), [scaling[n]["searches_per_s"] for n in names],
               color=["grey" if scaling[n]["procs"] == 0 else "tab:blue" for n in names])
        labels = [("single" if scaling[n]["procs"] == 0 else f"{scaling[n]['procs']} procs")
                  + f"\n{scaling[n]['actors']} searches" for n in names]
        ax.set_xticks(range(len(names)), labels, fontsize=8)
        ax.set_ylabel("searches / s")
        ax.set_title("end-to-end throughput")
    if fills:
        ax = next(ax_iter)
        runs = fills
        ax.bar(range(len(runs)), [r["fill"] for r in runs], color="tab:orange")
        for i, r in enumerate(runs):
            ax.annotate(f"{r['searches_per_s']:.1f} searches/s", (i, r["fill"]), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(runs)), [f"--infer-wait-ms {r['wait_ms']:g}" for r in runs], fontsize=8)
        ax.set_ylim(0, 1.15)
        ax.set_ylabel("inference batch fill")
        ax.set_title(f"{runs[0]['actors']} searches over {runs[0]['procs']} procs")
    if parity:
        ax = next(ax_iter)
        modes = list(parity)
        ax.bar(range(len(modes)), [parity[m]["final"] or 0 for m in modes], color=["tab:blue", "grey"])
        ax.set_xticks(range(len(modes)), [f"--actor-procs {m}" for m in modes])
        ax.set_ylabel("held-out solve rate")
        ax.set_title("learning parity")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", choices=("transport", "scaling", "parity"), default=("transport", "scaling",
                                                                                             "parity"))
    p.add_argument("--latency-ms", type=float, default=50.0)
    p.add_argument("--device", default="cpu", help="the runs' --device (cuda: the network off the actors' cores)")
    p.add_argument("--transport-messages", type=int, default=400, help="messages of 500 rows")
    p.add_argument("--per-proc", type=int, default=16, help="searches per actor process")
    p.add_argument("--fill-searches", type=int, default=256, help="searches of the batch-fill run (0: none)")
    p.add_argument("--fill-procs", type=int, default=4)
    p.add_argument("--fill-wait-ms", type=float, nargs="+", default=[Args().infer_wait_ms, 2000.0],
                   help="--infer-wait-ms of the fill runs, one run each")
    p.add_argument("--infer-wait-ms", type=float, default=Args().infer_wait_ms, help="the scaling runs' --infer-wait-ms")
    p.add_argument("--procs", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument("--sims", type=int, default=16)
    p.add_argument("--lean-calls", type=int, default=48)
    p.add_argument("--warmup-steps", type=int, default=100)
    p.add_argument("--parity-minutes", type=float, default=10.0)
    p.add_argument("--parity-actors", type=int, default=16)
    p.add_argument("--out", type=Path, default=None, help="also write the report (markdown) here")
    p.add_argument("--plot", type=Path, default=None)
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-distributed-"))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; runs in {work}", file=sys.stderr)
    transport = bench_transport(args.transport_messages) if "transport" in args.only else None
    scaling = parity = None
    if "scaling" in args.only:
        from leangym.sim.server import start_server

        pool = max(max(args.procs) * args.per_proc, args.fill_searches) + 8
        srv = start_server(latency_ms=args.latency_ms, max_processes=pool, factorized=True)
        try:
            scaling = bench_scaling(args, work, srv.url)
        finally:
            srv.stop()
    if "parity" in args.only:
        parity = bench_parity(args, work)
    text = report(args, transport, scaling, parity)
    print(text)
    if args.out:
        args.out.write_text(text)
    if args.plot and (scaling or parity):
        plot(args.plot, scaling, parity)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    from leangym.cli import run_cli

    run_cli(main)
