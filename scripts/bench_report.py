"""Reports of benchmark results: a markdown summary, a pass-rate-vs-budget plot, and run comparison."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping

from scripts.bench_records import ResultSet
from scripts.bench_stats import Summary, per_theorem, solved_within, summarize


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f} ms"


def describe(header: Mapping) -> str:
    """One line naming what was run: agent, dataset, split, budgets, attempts, server."""
    server = header.get("server") or {}
    kind = "simulated" if server.get("simulated") else server.get("generation", "?")
    kwargs = header.get("agent_kwargs")
    return (f"agent `{header.get('agent')}`{' ' + json.dumps(kwargs, ensure_ascii=False) if kwargs else ''} on "
            f"`{header.get('dataset')}`{'/' + header['split'] if header.get('split') else ''} "
            f"({header.get('count')} theorems, {header.get('attempts')} attempt(s), "
            f"budget {header.get('budget_calls')} calls / {header.get('budget_seconds')} s, "
            f"server {server.get('url')} [{kind}], leangym {header.get('leangym_version')})")


def markdown(s: Summary, header: Mapping | None = None) -> str:
    """The summary as markdown: headline table, pass@k, per-category breakdown."""
    lo, hi = s.interval
    out = [describe(header), ""] if header else []
    done = f"{s.theorems}" + (f" of {s.expected}" if s.expected is not None else "")
    out += ["| metric | value |", "|---|---|",
            f"| theorems attempted | {done} |",
            f"| solved | {s.solved} |",
            f"| pass rate (any attempt) | {_pct(s.rate)} (95% CI {_pct(lo)}-{_pct(hi)}) |"]
    out += [f"| pass@{k} | {_pct(v)} |" for k, v in s.pass_at.items()]
    out += [f"| attempts | {s.attempts} |",
            f"| Lean calls (total / per attempt) | {s.lean_calls} / {s.calls_per_attempt:.1f} |",
            f"| Lean calls per solve (median) | "
            f"{'-' if s.calls_per_solve_median is None else f'{s.calls_per_solve_median:g}'} |",
            f"| wall time (sum over attempts) | {s.wall_s:.1f} s |",
            f"| Lean latency p50 / p99 | {_ms(s.latency_p50_ms)} / {_ms(s.latency_p99_ms)} |",
            f"| budget exhausted | {s.budget_exhausted} |",
            f"| errors (prover or statement) / infra errors | {s.errors} / {s.infra_errors} |",
            f"| tactic timeouts / server failures | {s.timeouts} / {s.server_failures} |"]
    if s.categories:
        out += ["", "| category | theorems | solved | pass rate | 95% CI |", "|---|---:|---:|---:|---|"]
        for c in s.categories:
            clo, chi = c.interval
            out.append(f"| {c.category} | {c.theorems} | {c.solved} | {_pct(c.rate)} | {_pct(clo)}-{_pct(chi)} |")
    return "\n".join(out)


def summary_of(rs: ResultSet) -> Summary:
    """The summary; the expected theorem count is the latest run's (a resume may change --limit)."""
    resumes = [e for e in rs.events if e.get("type") == "resume"]
    return summarize(rs.attempts, (resumes[-1] if resumes else rs.header).get("count"))


# --------------------------------------------------------------------------- plot

def plot(runs: Mapping[str, ResultSet], path: Path | str) -> Path:
    """PNG of the pass rate against the Lean-call budget (cumulative solved vs calls used), one curve per run."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed, safe in threads and on servers
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, rs in runs.items():
        cap = rs.header.get("budget_calls") or max((r.lean_calls for r in rs.attempts), default=1)
        # the curves only step where some solved attempt's call count is: evaluate there, not at every budget
        budgets = sorted({0, int(cap)} | {r.lean_calls for r in rs.attempts if r.solved and r.lean_calls <= cap})
        any_, one = solved_within(rs.attempts, budgets)
        line, = ax.step(budgets, [100 * x for x in any_], where="post", label=f"{label}: solved (any attempt)")
        if (rs.header.get("attempts") or 1) > 1:
            ax.step(budgets, [100 * x for x in one], where="post", linestyle="--", color=line.get_color(),
                    label=f"{label}: pass@1")
    ax.set_xlabel("Lean calls used per attempt (budget)")
    ax.set_ylabel("theorems solved (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    ax.set_title("Pass rate against budget")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- compare

def mcnemar_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar test on the theorems exactly one run solved."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def compare(a: ResultSet, b: ResultSet, label_a: str = "A", label_b: str = "B") -> str:
    """Markdown: side-by-side summary and the per-theorem difference (on the theorems both runs attempted)."""
    sa, sb = summary_of(a), summary_of(b)
    solved_a = {t: any(r.solved for r in rs) for t, rs in per_theorem(a.attempts).items()}
    solved_b = {t: any(r.solved for r in rs) for t, rs in per_theorem(b.attempts).items()}
    common = sorted(set(solved_a) & set(solved_b))
    only_a = [t for t in common if solved_a[t] and not solved_b[t]]
    only_b = [t for t in common if solved_b[t] and not solved_a[t]]
    both = sum(solved_a[t] and solved_b[t] for t in common)

    def row(name: str, fa, fb) -> str:  # noqa: ANN001
        return f"| {name} | {fa(sa)} | {fb(sb) if fb else fa(sb)} |"

    def rate(s: Summary) -> str:
        lo, hi = s.interval
        return f"{s.solved}/{s.theorems} = {_pct(s.rate)} ({_pct(lo)}-{_pct(hi)})"

    out = [f"- {label_a}: {describe(a.header)}", f"- {label_b}: {describe(b.header)}", "",
           f"| metric | {label_a} | {label_b} |", "|---|---|---|",
           row("pass rate (95% CI)", rate, None),
           row("pass@1", lambda s: _pct(s.pass_at.get(1, 0.0)), None),
           row("Lean calls per attempt", lambda s: f"{s.calls_per_attempt:.1f}", None),
           row("Lean latency p50 / p99", lambda s: f"{_ms(s.latency_p50_ms)} / {_ms(s.latency_p99_ms)}", None),
           row("prover / infra errors", lambda s: f"{s.errors} / {s.infra_errors}", None),
           "",
           f"On the {len(common)} theorems both attempted: both solved {both}, only {label_a} {len(only_a)}, "
           f"only {label_b} {len(only_b)} (exact McNemar p = {mcnemar_p(len(only_a), len(only_b)):.3g})."]
    for label, names in ((label_a, only_a), (label_b, only_b)):
        if names:
            out += ["", f"Solved only by {label}:"] + [f"- {t}" for t in names]
    return "\n".join(out)
