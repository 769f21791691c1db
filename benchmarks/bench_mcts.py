"""Simulations per second: 64 proof searches batched in one actor vs the same 64 run one at a time.

    python benchmarks/bench_mcts.py                      # 64 theorems, tiny model, CPU
    python benchmarks/bench_mcts.py --n 16 --warmup-steps 30   # quicker

Same model, same theorems, same SearchConfig both ways; the only difference
is B (64 trees per ``evaluate`` call vs 1). The model is the tiny
``PolicyValueNet``, briefly warm-started on the generator's reference proofs
so that it writes short, finished tactics like a trained policy does (an
untrained net samples noise up to the token cap, and every search would die at its root).
Each mode runs with the torch thread count that is fastest for it: one thread
for one-at-a-time calls (their tensors are too small to share), every core for
batched ones (``--threads-one`` / ``--threads-batched``). Each mode is warmed up
at its own settings first, and the modes alternate ``--repeats`` times; the best
run of each counts (this machine's speed drifts by tens of percent within a minute).

Theorems come from ``leangym.datasets.proplogic``. By default (``--lean local``) they
run on the in-process simulated kernel (``LocalProcess``): a tactic costs
microseconds there, so what is measured is the search and the model's batching,
not Lean's latency. ``--lean server --latency-ms 20`` runs them on a simulated
LeanTree server in a subprocess instead, each tactic taking that long, one
request at a time per Lean process, as a REPL does: the regime of real Lean,
where the batched actor also keeps B Lean processes busy at once.

Several settings in one run, with a table and a plot at the end:

    python benchmarks/bench_mcts.py --lean local server --latency-ms 5 20 --plot benchmarks/results/bench_mcts.png

runs the in-process kernel, then the simulated server at 5 and at 20 ms per call, with one
warm-started net for all of them.

``--evaluator overhead`` swaps the net for a stand-in that costs a fixed time
per call and nothing per state (the regime of a GPU or a remote model server),
to see what the batching itself can give when the model's per-call cost dominates.

``bench_mcts_products.py`` runs these searches in process and times the model's
matrix products alone: both modes do the same arithmetic, so that ratio is about
what batching can give on the machine's cores once per-operation costs are gone.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.alphaproof.interfaces import Evaluation, per_state  # noqa: E402
from agents.alphaproof.policy import PolicyValueNet  # noqa: E402
from agents.alphaproof.sft import rows_from_reference_proofs, train_supervised  # noqa: E402
from agents.alphaproof.search import SearchConfig, run_batched_search, run_search  # noqa: E402
from agents.alphaproof.train import Args  # noqa: E402  (training's defaults)
from leangym.backends.leantree import LeanTreeClient  # noqa: E402
from leangym.session import ProofSession  # noqa: E402
from leangym.datasets.proplogic import generate  # noqa: E402
from leangym.sim.local import LocalProcess  # noqa: E402


class Counting:
    """The evaluator, with its calls and states counted."""

    def __init__(self, net, record: list | None = None):
        self.net, self.calls, self.states, self.seconds = net, 0, 0, 0.0
        self.record = record  # when a list: every call's (states, k) is appended, to replay it later

    def evaluate(self, states, k):
        self.calls += 1
        self.states += len(states)
        if self.record is not None:
            self.record.append((list(states), k if isinstance(k, int) else list(k)))
        t0 = time.perf_counter()
        out = self.net.evaluate(states, k)
        self.seconds += time.perf_counter() - t0
        return out


class Overhead:
    """A model stand-in: ``ms`` per call whatever the batch, uniform priors over common tactics."""

    TACTICS = ("intro h", "constructor", "assumption", "left", "right", "exact h₁", "exact h₂", "trivial",
               "rcases h with ⟨a, b⟩", "exfalso", "apply h₁", "apply h₂")

    def __init__(self, ms: float):
        self.seconds = ms / 1000

    def evaluate(self, states, k):
        time.sleep(self.seconds)
        return [Evaluation(self.TACTICS[:n], (0.0,) * len(self.TACTICS[:n]), 0.5) for n in per_state(k, len(states))]


def parser(description: str):
    """The benchmark's settings (``bench_mcts_products.py`` adds its own to the same ones)."""
    from leangym.cli import ArgumentParser, integer, number

    ap = ArgumentParser(description=description)
    ap.add_argument("--n", type=integer(1), default=64, help="theorems (= searches in the batch)")
    ap.add_argument("--sims", type=integer(1), default=8, help="simulations per theorem")
    ap.add_argument("--difficulty", type=int, nargs=2, default=(2, 4))
    ap.add_argument("--leaves-per-round", type=integer(1), default=4)
    ap.add_argument("--num-tactics", type=integer(1), default=Args.num_tactics,
                    help="tactics per new node (as training)")
    ap.add_argument("--warmup-steps", type=integer(1), default=100)
    ap.add_argument("--evaluator", choices=("model", "overhead"), default="model")
    ap.add_argument("--overhead-ms", type=number(0.0), default=20.0)
    ap.add_argument("--lean", choices=("local", "server"), nargs="+", default=["local"],
                    help="in-process kernel, and/or a simulated LeanTree server over HTTP")
    ap.add_argument("--latency-ms", type=number(0.0), nargs="+",
                    help="--lean server: time per Lean call (several: one server run each; default 20)")
    ap.add_argument("--plot", metavar="PNG", help="save a plot of every setting's simulations/s here")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-tactic-tokens", type=integer(1), default=Args.max_tactic_tokens)
    ap.add_argument("--threads-one", type=integer(1), default=1, help="torch CPU threads for one-at-a-time calls")
    ap.add_argument("--threads-batched", type=integer(1), default=os.cpu_count() or 1,
                    help="torch CPU threads for batched calls")
    ap.add_argument("--repeats", type=integer(1), default=2, help="runs of each mode, alternating; the best counts")
    return ap


def warm_started_net(args) -> PolicyValueNet:
    """The tiny net, briefly trained on the generator's reference proofs (see the module doc)."""
    # The tactic cap that training uses (PropLogic tactics are at most ~15 tokens).
    net = PolicyValueNet.create("tiny", seed=args.seed, max_tactic_tokens=args.max_tactic_tokens)
    rows = rows_from_reference_proofs(generate(400, args.seed + 1, (1, 5)))
    loss = train_supervised(net, rows, args.warmup_steps, batch_size=16, lr=3e-3, progress=True,
                            seed=args.seed)[-1]["loss"]
    net.model.eval()
    print(f"tiny PolicyValueNet ({sum(p.numel() for p in net.parameters()) / 1e6:.2f}M params, "
          f"warm-start loss {loss:.2f}); torch threads: {args.threads_one} one at a time, "
          f"{args.threads_batched} batched")
    return net


def warn_if_busy(args) -> None:
    busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if busy > 0.9 and args.threads_batched >= (os.cpu_count() or 1):
        # every parallel op waits at a barrier for its slowest thread: one thread without a core stalls them all
        print(f"warning: this machine was busy over the last minute (load average {busy:.1f} on {os.cpu_count()} "
              f"cores); if it still is, batched timings on "
              f"{args.threads_batched} threads will stall and read far too low. Run it idle, or pass "
              f"--threads-batched {max(1, args.threads_batched - 1)}.")


def search_config(args) -> SearchConfig:
    return dataclasses.replace(SearchConfig.for_budget(args.sims, args.num_tactics, None, None),
                               leaves_per_round=args.leaves_per_round)


def main(argv=None) -> None:
    ap = parser(__doc__.splitlines()[0])
    args = ap.parse_args(argv)
    if args.latency_ms is not None and "server" not in args.lean:
        ap.error("--latency-ms sets the simulated server's time per call: add --lean server (or local server)")
    args.latency_ms = args.latency_ms or [20.0]
    torch.set_num_threads(args.threads_one)
    warn_if_busy(args)
    torch.manual_seed(args.seed)
    if args.evaluator == "model":
        net = warm_started_net(args)
    else:
        net = Overhead(args.overhead_ms)
        print(f"model stand-in: {args.overhead_ms} ms per evaluate call, no cost per state")
    theorems = generate(args.n, args.seed, tuple(args.difficulty))
    cfg = search_config(args)
    print(f"{args.n} theorems at difficulty {args.difficulty}, {cfg}")

    settings = [("in-process kernel", None)] if "local" in args.lean else []
    if "server" in args.lean:
        settings += [(f"server, {ms:g} ms per call", ms) for ms in args.latency_ms]
    results = {}
    for name, latency_ms in settings:
        if latency_ms is None:
            runs = compare(net, theorems, cfg, args, lambda: LocalProcess(factorized=True))
        else:
            from bench_env import Server  # the simulated server in its own interpreter, as in real use

            with Server("--max-processes", str(args.n), "--factorized", "--latency-ms", str(latency_ms)) as srv:
                client = LeanTreeClient(srv.url)
                print(f"Lean: simulated LeanTree server, {latency_ms:g} ms per call, {args.n} processes")
                runs = compare(net, theorems, cfg, args, client.lease)
        results[name] = runs
        print(f"{name}: speed-up (batched / one at a time): {runs['batched'] / runs['one at a time']:.1f}x")
    if len(results) > 1:
        print(f"\n| Lean | one at a time (sims/s) | {args.n} batched (sims/s) | batched / one at a time |\n"
              "|---|---:|---:|---:|")
        for name, runs in results.items():
            one, batched = runs["one at a time"], runs["batched"]
            print(f"| {name} | {one:,.1f} | {batched:,.1f} | {batched / one:.1f}x |")
    if args.plot:
        print(f"plot: {plot(results, args, args.plot)}")


def plot(results: dict[str, dict[str, float]], args, path: str) -> Path:
    """Grouped bars: each setting's simulations/s one at a time and batched, the ratio written above."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, ax = plt.subplots(figsize=(1.9 * len(names) + 2.5, 4))
    for j, (mode, color) in enumerate((("one at a time", "tab:gray"), ("batched", "tab:blue"))):
        xs = [i + (j - 0.5) * 0.38 for i in range(len(names))]
        ax.bar(xs, [results[n][mode] for n in names], width=0.38, color=color,
               label=mode if mode != "batched" else f"{args.n} searches batched")
    for i, n in enumerate(names):
        ratio = results[n]["batched"] / results[n]["one at a time"]
        ax.annotate(f"{ratio:.1f}x", (i + 0.19, results[n]["batched"]), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_ylabel("simulations / s (best run)")
    ax.set_title(f"{args.n} proof searches, {args.sims} simulations each, "
                 f"{'tiny PolicyValueNet' if args.evaluator == 'model' else 'fixed-cost model stand-in'}, CPU")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def compare(net, theorems, cfg: SearchConfig, args, new_process) -> dict[str, float]:
    """Simulations per second of each mode (the best of its runs)."""
    def sessions(ths):
        return [ProofSession(new_process(), t.theorem) for t in ths]

    # warm up torch at each mode's settings: small calls on one thread, one full batch on all
    for threads, warm in ((args.threads_one, theorems[:4]), (args.threads_batched, theorems)):
        torch.set_num_threads(threads)
        warm = sessions(warm)
        run_batched_search(warm, net, SearchConfig(num_simulations=1 if len(warm) > 4 else 4))
        for s in warm:
            s.process.close()
    runs = {"one at a time": 0.0, "batched": 0.0}
    for mode in list(runs) * args.repeats:
        ev, sess = Counting(net), sessions(theorems)
        torch.set_num_threads(args.threads_one if mode == "one at a time" else args.threads_batched)
        torch.manual_seed(args.seed)
        with tqdm(total=args.n * args.sims, desc=mode, unit="sim") as bar:
            t0 = time.perf_counter()
            if mode == "batched":
                results = run_batched_search(sess, ev, cfg, progress=bar)
            else:
                results = [run_search(s, ev, cfg, progress=bar) for s in sess]
            wall = time.perf_counter() - t0
        for s in sess:
            s.process.close()  # give the leases back (a no-op in-process)
        sims = sum(r.simulations for r in results)
        runs[mode] = max(runs[mode], sims / wall)
        print(f"{mode:>13}: {sims} simulations in {wall:.1f}s = {sims / wall:.1f} sims/s; "
              f"{ev.calls} evaluate calls, {ev.states / max(ev.calls, 1):.1f} states/call, "
              f"model {ev.seconds:.1f}s / rest (Lean, search) {wall - ev.seconds:.1f}s; "
              f"{sum(r.lean_calls for r in results)} Lean calls; "
              f"solved {sum(r.solved for r in results)}, verified {sum(r.verified for r in results)}/{args.n}")
    return runs


if __name__ == "__main__":
    from leangym.cli import run_cli

    run_cli(main)
