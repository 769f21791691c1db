"""Reports of benchmark results: a markdown summary, a pass-rate-vs-budget plot, and run comparison.

Every report reads the run as it stands (:attr:`ResultSet.run`: the latest
header or resume line), so a run extended by a resume is described by what it
now holds. A run with attempts that never finished (interrupted, or lost to
server errors) is called incomplete before any number. ``compare`` says when two
runs are not like for like (another dataset, split, budget, attempt count or
server, or a run that is incomplete) and compares pass@k at the same k, never
from a run that has fewer than k attempts of some theorem.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping

from leangym.harness.records import ResultSet
from leangym.harness.stats import Summary, mean_pass_at, per_theorem, short_of, solved_within, summarize


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f} ms"


def _server_kind(header: Mapping) -> str:
    server = header.get("server") or {}
    return "simulated" if server.get("simulated") else str(server.get("generation", "?"))


def describe(header: Mapping) -> str:
    """One line naming what was run (pass :attr:`ResultSet.run`): agent, dataset, split, budgets, attempts, server."""
    server = header.get("server") or {}
    kind = _server_kind(header)
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
    missing = s.expected - s.theorems if s.expected is not None else 0
    lost = f"{s.infra_errors} attempt{'s' if s.infra_errors > 1 else ''} hit server errors"
    over = ""
    if missing > 0:  # the pass rate's denominator is smaller than the theorem set: say so before any number
        of_attempts = (f"; {s.attempts} of {s.expected_attempts} attempts finished"
                       if s.expected_attempts and s.expected_attempts != s.expected else "")
        out += [f"**Incomplete run:** {missing} of the {s.expected} theorems have no finished attempt"
                f"{f' ({lost})' if s.infra_errors else ''}{of_attempts}; the pass rate below is over the "
                f"{s.theorems} attempted, not all {s.expected}. Rerun the same command to finish it.", ""]
        over = f" of the {s.theorems} attempted"
    elif s.unfinished > 0:  # every theorem has an attempt, but not all of them (an interrupted --attempts N run)
        out += [f"**Incomplete run:** {s.attempts} of {s.expected_attempts} attempts finished ({s.expected} "
                f"theorems x {s.expected_attempts // s.expected} attempts){f' ({lost})' if s.infra_errors else ''}; "
                f"a theorem counts as solved by the attempts it has, and pass@k is shown only up to "
                f"k = {max(s.pass_at, default=0)}, the fewest any theorem has. Rerun the same command to finish it.",
                ""]
    elif s.infra_errors:
        out += [f"**Incomplete run:** {lost}; they are not counted. Rerun the same command to retry them.", ""]
    out += ["| metric | value |", "|---|---|",
            f"| theorems attempted | {done} |",
            f"| solved | {s.solved} |",
            f"| pass rate (any attempt) | {_pct(s.rate)}{over} (95% CI {_pct(lo)}-{_pct(hi)}) |"]
    out += [f"| pass@{k} | {_pct(v)} |" for k, v in s.pass_at.items()]
    out += [f"| attempts | {s.attempts} |",
            f"| Lean calls (total / per attempt) | {s.lean_calls} / {s.calls_per_attempt:.1f} |",
            f"| Lean calls per solve (median) | "
            f"{'-' if s.calls_per_solve_median is None else f'{s.calls_per_solve_median:g}'} |",
            f"| wall time (sum over attempts) | {s.wall_s:.1f} s |",
            f"| Lean latency p50 / p99 | {_ms(s.latency_p50_ms)} / {_ms(s.latency_p99_ms)} |",
            f"| budget exhausted | {s.budget_exhausted} |",
            f"| prover errors / statements rejected / infra errors | "
            f"{s.errors} / {s.statement_errors} / {s.infra_errors} |",
            f"| tactic timeouts / server failures | {s.timeouts} / {s.server_failures} |"]
    if s.categories:
        out += ["", "| category | theorems | solved | pass rate | 95% CI |", "|---|---:|---:|---:|---|"]
        for c in s.categories:
            clo, chi = c.interval
            out.append(f"| {c.category} | {c.theorems} | {c.solved} | {_pct(c.rate)} | {_pct(clo)}-{_pct(chi)} |")
    return "\n".join(out)


def summary_of(rs: ResultSet) -> Summary:
    """The summary; the expected theorem and attempt counts are the run's as it stands (a resume may change
    --limit or --attempts)."""
    return summarize(rs.attempts, rs.run.get("count"), rs.run.get("attempts"))


# --------------------------------------------------------------------------- plot

def plot(runs: Mapping[str, ResultSet], path: Path | str) -> Path:
    """PNG of the theorems solved within N Lean calls, one curve per run; returns the file written
    (``path``, with ``.png`` added when it has no suffix; another suffix picks another format).

    From each run as it ran (at its own budget): how many calls each solved attempt had used.
    That is not what a rerun at budget N would give: an agent that sends a batch of calls at
    once is charged the whole batch, and one that knows its budget may spend it differently.
    """
    try:
        import matplotlib
    except ImportError:  # the light install: the results are there, only the picture is not
        raise ValueError("plots need matplotlib: pip install 'leangym[plot]' (or pass --plot none)") from None
    matplotlib.use("Agg")  # files only: no display needed, safe in threads and on servers
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, rs in runs.items():
        cap = rs.run.get("budget_calls") or max((r.lean_calls for r in rs.attempts), default=1)
        # the curves only step where some solved attempt's call count is: evaluate there, not at every budget
        budgets = sorted({0, int(cap)} | {r.lean_calls for r in rs.attempts if r.solved and r.lean_calls <= cap})
        any_, one = solved_within(rs.attempts, budgets)
        line, = ax.step(budgets, [100 * x for x in any_], where="post", label=f"{label}: solved (any attempt)")
        if (rs.run.get("attempts") or 1) > 1:
            ax.step(budgets, [100 * x for x in one], where="post", linestyle="--", color=line.get_color(),
                    label=f"{label}: pass@1")
    ax.set_xlabel("Lean calls the solving attempt had used (a batch counts whole)")
    ax.set_ylabel("theorems solved (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    ax.set_title("Solved within N Lean calls (each run at its own budget)")
    fig.tight_layout()
    path = Path(path)
    if not path.suffix:  # matplotlib would add ".png" itself: name the file it writes
        path = path.with_name(path.name + ".png")
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


def comparability(a: Mapping, b: Mapping, label_a: str = "A", label_b: str = "B") -> list[str]:
    """Why the numbers of two runs (their :attr:`ResultSet.run`) are not like for like; empty when they are."""
    both_sourced = bool(a.get("dataset_source") and b.get("dataset_source"))

    def field(h: Mapping, name: str) -> object:
        if name == "dataset" and both_sourced:  # the resolved source: one.jsonl is ./one.jsonl
            return h.get("dataset_source")
        return _server_kind(h) if name == "server" else h.get(name)

    names = {"dataset": "dataset", "split": "split", "budget_calls": "Lean-call budget",
             "budget_seconds": "time budget (s)", "timeout_ms": "tactic timeout (ms)",
             "attempts": "attempts per theorem", "server": "server"}
    return [f"{what} differs ({label_a}: {field(a, k)}, {label_b}: {field(b, k)})"
            for k, what in names.items() if field(a, k) != field(b, k)]


def _short_of_k(s: Summary, rs: ResultSet, k: int) -> int:
    """How many of the run's theorems have fewer than k finished attempts (none at all included)."""
    return len(short_of(rs.attempts, k)) + max(0, (s.expected or 0) - s.theorems)


def incomplete_warning(s: Summary, rs: ResultSet, k: int, label: str) -> str | None:
    """Why ``label``'s numbers are not the whole run's (None when it is complete), and what to do."""
    short = _short_of_k(s, rs, k)
    if not s.unfinished and not short:
        return None
    parts = [f"{s.attempts} of {s.expected_attempts} attempts finished"] if s.unfinished else []
    if short:
        parts.append(f"{short} of its {max(s.expected or 0, s.theorems)} theorems have fewer than {k}; "
                     f"its pass@{k} is not shown")
    return f"{label} is an incomplete run: {', and '.join(parts)}: rerun its command to resume the run"


def compare(a: ResultSet, b: ResultSet, label_a: str = "A", label_b: str = "B") -> str:
    """Markdown: side-by-side summary and the per-theorem difference (on the theorems both runs attempted).

    Runs with different attempt counts are compared at the smaller one, k: pass@k (unbiased, from
    all of each run's attempts) and, per theorem, "solved by one of its first k attempts".
    A run with a theorem that has fewer than k finished attempts (an interrupted run) gets no pass@k,
    and a warning that says to resume it.
    """
    sa, sb = summary_of(a), summary_of(b)
    ra, rb = a.run, b.run
    k = max(1, min(ra.get("attempts") or 1, rb.get("attempts") or 1))
    same_k = ra.get("attempts") == rb.get("attempts")
    # per theorem: its finished attempts among the first k (all of them when both runs made k)
    by_a = per_theorem(r for r in a.attempts if r.attempt < k)
    by_b = per_theorem(r for r in b.attempts if r.attempt < k)
    common = sorted(set(by_a) & set(by_b))
    solved_a = {t: any(r.solved for r in by_a[t]) for t in common}
    solved_b = {t: any(r.solved for r in by_b[t]) for t in common}
    only_a = [t for t in common if solved_a[t] and not solved_b[t]]
    only_b = [t for t in common if solved_b[t] and not solved_a[t]]
    both = sum(solved_a[t] and solved_b[t] for t in common)

    warnings = comparability(ra, rb, label_a, label_b)
    warnings += [w for w in (incomplete_warning(sa, a, k, label_a), incomplete_warning(sb, b, k, label_b)) if w]
    if not common:
        warnings.append("no theorem has a finished attempt in both runs: there is nothing to compare per theorem")
    hashes_a = {t: rs[0].statement_hash for t, rs in by_a.items()}
    changed = [t for t in common if hashes_a[t] and by_b[t][0].statement_hash
               and hashes_a[t] != by_b[t][0].statement_hash]
    if changed:
        warnings.append(f"{len(changed)} theorems have different statements in the two runs (e.g. {changed[0]})")

    def row(name: str, f) -> str:  # noqa: ANN001
        return f"| {name} | {f(sa, a)} | {f(sb, b)} |"

    def rate(s: Summary, _: ResultSet) -> str:
        lo, hi = s.interval
        return f"{s.solved}/{s.theorems} = {_pct(s.rate)} ({_pct(lo)}-{_pct(hi)})"

    def pass_k(s: Summary, rs: ResultSet) -> str:
        if _short_of_k(s, rs, k):  # averaging over the theorems that have k would bias it: see the warning
            return "n/a (incomplete run)"
        v = mean_pass_at(rs.attempts, k)
        return "-" if v is None else _pct(v)

    out = [f"- {label_a}: {describe(ra)}", f"- {label_b}: {describe(rb)}", ""]
    if warnings:
        out += ["**Warning: these runs are not directly comparable:**"] + [f"- {w}" for w in warnings] + [""]
    out += [f"| metric | {label_a} | {label_b} |", "|---|---|---|",
            row("pass rate, any of its attempts (95% CI)", rate),
            row(f"pass@{k}" + ("" if same_k else " (k: the smaller attempt count)"), pass_k)]
    if k > 1:
        out.append(row("pass@1", lambda s, _: _pct(s.pass_at.get(1, 0.0))))
    out += [row("Lean calls per attempt", lambda s, _: f"{s.calls_per_attempt:.1f}"),
            row("Lean latency p50 / p99", lambda s, _: f"{_ms(s.latency_p50_ms)} / {_ms(s.latency_p99_ms)}"),
            row("prover errors / statements rejected / infra errors",
                lambda s, _: f"{s.errors} / {s.statement_errors} / {s.infra_errors}"),
            "",
            f"On the {len(common)} theorems both attempted"
            + ("" if same_k else f" (solved: by one of its first {k} attempt(s), as in the run with fewer)")
            + f": both solved {both}, only {label_a} {len(only_a)}, "
            f"only {label_b} {len(only_b)} (exact McNemar p = {mcnemar_p(len(only_a), len(only_b)):.3g})."]
    for label, names in ((label_a, only_a), (label_b, only_b)):
        if names:
            out += ["", f"Solved only by {label}:"] + [f"- {t}" for t in names]
    return "\n".join(out)
