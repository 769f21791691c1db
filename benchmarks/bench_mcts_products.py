"""How much batching can give bench_mcts.py in process: each mode's matrix products, timed alone.

    python benchmarks/bench_mcts_products.py            # bench_mcts.py's defaults: 64 theorems, tiny model
    python benchmarks/bench_mcts_products.py --n 16 --warmup-steps 30   # quicker

It runs bench_mcts.py's searches once per mode on the in-process kernel (same
net, theorems, settings and thread counts), recording every ``evaluate`` call.
Then, for each mode, it

1. replays those calls (best of ``--repeats``): the model's time;
2. replays them once more, watching torch's dispatcher: which matrix products
   (``mm``, ``addmm``, ``bmm``) the model makes, their shapes and their FLOPs;
3. times each product's shape alone, with random inputs, at the mode's thread
   count, and sums: the time of an implementation whose *only* cost is its
   matrix products, computed by PyTorch's own kernels (each call's dispatch
   included; everything else, norms, attention's softmax, sampling, free).

Both modes run the same searches, so they do about the same arithmetic; one at
a time does it in smaller pieces, on one core instead of every core. The
products-alone ratio (one at a time / batched) is therefore about what batching
can still give once the rest is fused away. The measured ratio is higher only
because one-at-a-time calls pay, per decoding step, the fixed cost of the
model's other operations: making the model faster for both modes moves the
ratio towards the products-alone one, not away from it.
"""
from __future__ import annotations

import collections
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_mcts import Counting, parser, search_config, warm_started_net, warn_if_busy  # noqa: E402

from agents.alphaproof.search import run_batched_search, run_search  # noqa: E402
from leangym.session import ProofSession  # noqa: E402
from leangym.datasets.proplogic import generate  # noqa: E402
from leangym.sim.local import LocalProcess  # noqa: E402

PRODUCTS = {"mm": torch.mm, "addmm": torch.addmm, "bmm": torch.bmm}
MODES = ("one at a time", "batched")


@dataclass
class ModeCost:
    threads: int
    calls: int  # evaluate calls
    search_seconds: float  # the recorded search, whole (one run)
    model_seconds: float  # its evaluate calls replayed, best of --repeats
    products: int  # matrix products made by one replay
    gflop: float  # their arithmetic
    products_alone_seconds: float  # each product timed alone, summed


def record_calls(net, theorems, args, mode: str) -> tuple[list, float]:
    """Every ``evaluate`` call of one mode's searches, and the searches' wall time."""
    torch.manual_seed(args.seed)
    calls: list = []
    ev, cfg = Counting(net, record=calls), search_config(args)
    sessions = [ProofSession(LocalProcess(factorized=True), t.theorem) for t in theorems]
    t0 = time.perf_counter()
    if mode == "batched":
        run_batched_search(sessions, ev, cfg)
    else:
        for s in sessions:
            run_search(s, ev, cfg)
    return calls, time.perf_counter() - t0


def replay(net, calls, seed: int) -> float:
    torch.manual_seed(seed)  # the same samples each time, so the same shapes
    t0 = time.perf_counter()
    for states, k in calls:
        net.evaluate(states, k)
    return time.perf_counter() - t0


class ProductShapes(TorchDispatchMode):
    """Counts the matrix products that run under it, by shape, and their FLOPs.

    (The torch profiler records the same, but building its events for the ~2M
    operations of a one-at-a-time replay takes minutes.) Under inference mode
    ``F.linear`` and ``@`` arrive whole; each is recorded as the ``mm``,
    ``addmm`` or ``bmm`` it computes. SDPA's fused prompt attention is not
    counted (its products are inside one kernel, and tiny at these prompt lengths).
    """

    def __init__(self):
        super().__init__()
        self.counts: collections.Counter = collections.Counter()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name, a, b = func._overloadpacket.__name__, None, None
        if name == "linear":  # x (..., K) times weight (N, K) transposed, plus a bias
            x, w = args[0], args[1]
            a, b = (x.numel() // x.size(-1), x.size(-1)), (w.size(1), w.size(0))
            bias = args[2] if len(args) > 2 else (kwargs or {}).get("bias")
            name = "mm" if bias is None else "addmm"
        elif name == "matmul" or name in PRODUCTS:
            a, b = (tuple(t.shape) for t in (args[-2:] if name == "addmm" else args[:2]))
            a, b = a if len(a) > 1 else (1,) + a, b if len(b) > 1 else b + (1,)  # vectors as one-row matrices
            batch = math.prod(torch.broadcast_shapes(a[:-2], b[:-2]))
            if name == "matmul":
                name = "bmm" if len(a) > 2 or len(b) > 2 else "mm"
            a, b = ((batch,) + a[-2:], (batch,) + b[-2:]) if name == "bmm" else (a[-2:], b[-2:])
        if a is not None:
            shapes = (a, b) if name != "addmm" else ((b[-1],), a, b)
            self.counts[(name, shapes)] += 1
            self.flops += 2 * math.prod(a) * b[-1]  # 2 * (batch *) M * K * N
        return func(*args, **(kwargs or {}))


def products_of(net, calls, seed: int) -> tuple[collections.Counter, float]:
    """(name, input shapes) -> count for the matrix products of one replay, and their GFLOP."""
    with ProductShapes() as shapes:
        replay(net, calls, seed)
    return shapes.counts, shapes.flops / 1e9


def time_alone(name: str, shapes, target_s: float = 0.002) -> float:
    """Seconds per call of one product on random inputs of these shapes (best of 3 loops of ~target_s)."""
    op, inputs = PRODUCTS[name], [torch.randn(*s) for s in shapes]
    for _ in range(3):
        op(*inputs)
    t0 = time.perf_counter()
    op(*inputs)
    reps = max(1, int(target_s / max(time.perf_counter() - t0, 1e-7)))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            op(*inputs)
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def measure(net, theorems, args, mode: str) -> ModeCost:
    threads = args.threads_one if mode == "one at a time" else args.threads_batched
    torch.set_num_threads(threads)  # for everything below: the search, its replays and the products alone
    calls, search_s = record_calls(net, theorems, args, mode)
    replay(net, calls[:4], args.seed)  # warm up at this thread count
    model_s = min(replay(net, calls, args.seed) for _ in range(args.repeats))
    counts, gflop = products_of(net, calls, args.seed)
    alone = 0.0
    for (name, shapes), n in tqdm(counts.items(), desc=f"{mode}: products alone", unit="shape"):
        alone += n * time_alone(name, shapes)
    return ModeCost(threads, len(calls), search_s, model_s, sum(counts.values()), gflop, alone)


def table(costs: dict[str, ModeCost], n: int) -> str:
    one, batched = costs["one at a time"], costs["batched"]
    rows = ["| mode | evaluate calls | search (s) | model, replayed (ms) | matrix products | GFLOP | "
            "products alone (ms) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for mode, c in costs.items():
        name = f"{n} batched" if mode == "batched" else mode
        rows.append(f"| {name}, {c.threads} thread{'s' if c.threads > 1 else ''} | {c.calls:,} | "
                    f"{c.search_seconds:.2f} | {c.model_seconds * 1e3:,.0f} | {c.products:,} | {c.gflop:.2f} | "
                    f"{c.products_alone_seconds * 1e3:,.0f} |")
    rows.append(f"| one at a time / batched | | {one.search_seconds / batched.search_seconds:.1f}x | "
                f"{one.model_seconds / batched.model_seconds:.1f}x | | "
                f"{one.gflop / batched.gflop:.2f} | "
                f"{one.products_alone_seconds / batched.products_alone_seconds:.1f}x |")
    return "\n".join(rows)


def main(argv=None) -> None:
    ap = parser(__doc__.splitlines()[0])
    args = ap.parse_args(argv)
    if args.evaluator != "model" or args.lean != ["local"] or args.latency_ms:
        ap.error("this benchmark measures the model in process: drop --evaluator, --lean and --latency-ms")
    warn_if_busy(args)
    torch.manual_seed(args.seed)
    net = warm_started_net(args)
    theorems = generate(args.n, args.seed, tuple(args.difficulty))
    costs = {mode: measure(net, theorems, args, mode) for mode in MODES}
    print(table(costs, args.n))
    one, batched = costs["one at a time"], costs["batched"]
    print(f"\nBatching gives the model {one.model_seconds / batched.model_seconds:.1f}x here; an implementation "
          f"whose only cost were its matrix products would get "
          f"{one.products_alone_seconds / batched.products_alone_seconds:.1f}x, for "
          f"{one.gflop / batched.gflop:.2f}x the arithmetic one at a time.")


if __name__ == "__main__":
    from leangym.cli import run_cli

    run_cli(main)
