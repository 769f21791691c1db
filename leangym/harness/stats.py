"""Summary statistics of a benchmark run: pass rate with a Wilson interval, unbiased pass@k, budget, latency.

Pass rate: a theorem counts as solved when ANY of its attempts verified;
its 95% interval is Wilson's score interval (sound for small n and for rates
near 0 or 1, unlike the normal approximation).

pass@k: the unbiased estimator of Chen et al. (2021), ``1 - C(n-c, k) / C(n, k)``
for a theorem with n attempts of which c succeeded, averaged over the theorems.
It is reported only for k up to the fewest finished attempts any theorem has:
averaging over just the theorems that have k (a run cut short) would describe
the theorems the run happened to reach, not the run.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from leangym.harness.records import AttemptResult

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when n == 0."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k attempts drawn without replacement from n (c correct) succeeds."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i): the ratio of binomials without huge integers.
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear interpolation between order statistics; None if empty."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


class _SolveRate:
    """Pass rate and its 95% Wilson interval, for anything with ``solved`` of ``theorems``."""

    solved: int
    theorems: int

    @property
    def rate(self) -> float:
        return self.solved / self.theorems if self.theorems else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.solved, self.theorems)


@dataclass
class CategoryRow(_SolveRate):
    category: str
    theorems: int
    solved: int



@dataclass
class Summary(_SolveRate):
    theorems: int  # theorems with at least one finished attempt
    solved: int  # ... of which at least one attempt verified
    expected: int | None  # theorems the run was asked for (header count), when known
    attempts: int
    pass_at: dict[int, float]  # k -> mean unbiased pass@k
    lean_calls: int
    calls_per_attempt: float
    calls_per_solve_median: float | None
    wall_s: float
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    errors: int  # prover exceptions and answers that were not proofs at all
    statement_errors: int  # statements Lean rejected: the dataset's fault, not the prover's
    infra_errors: int
    timeouts: int
    server_failures: int
    budget_exhausted: int
    categories: list[CategoryRow] = field(default_factory=list)
    expected_attempts: int | None = None  # theorems x attempts the run was asked for, when known

    @property
    def unfinished(self) -> int:
        """Attempts the run was asked for that have no finished result (never ran, or ended in a server error)."""
        return max(0, self.expected_attempts - self.attempts) if self.expected_attempts is not None else 0



def ks_for(max_n: int) -> list[int]:
    """1, 2, 4, 8, ... up to max_n, and max_n itself."""
    ks, k = [], 1
    while k < max_n:
        ks.append(k)
        k *= 2
    return ks + [max_n] if max_n >= 1 else []


def per_theorem(results: Iterable[AttemptResult]) -> dict[str, list[AttemptResult]]:
    """Finished attempts (infra errors excluded: they say nothing about the prover) by theorem."""
    by: dict[str, list[AttemptResult]] = defaultdict(list)
    for r in results:
        if r.status != "infra_error":
            by[r.theorem].append(r)
    return dict(by)


def summarize(results: Iterable[AttemptResult], expected: int | None = None,
              attempts_per_theorem: int | None = None) -> Summary:
    """The run's numbers; ``expected`` theorems x ``attempts_per_theorem`` is what it was asked for (when known)."""
    results = list(results)
    by = per_theorem(results)
    done = [r for rs in by.values() for r in rs]
    counts = {name: (len(rs), sum(r.solved for r in rs)) for name, rs in by.items()}
    # up to the fewest attempts any theorem has (a run cut short): every pass@k is then over all theorems
    min_n = min((n for n, _ in counts.values()), default=0)
    pass_at = {k: sum(pass_at_k(n, c, k) for n, c in counts.values()) / len(counts) for k in ks_for(min_n)}
    cats: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, rs in by.items():
        row = cats[rs[0].category]
        row[0] += 1
        row[1] += any(r.solved for r in rs)
    latencies = [x for r in done for x in r.latencies_ms]
    solve_calls = sorted(r.lean_calls for r in done if r.solved)
    return Summary(
        theorems=len(by),
        solved=sum(c > 0 for _, c in counts.values()),
        expected=expected,
        attempts=len(done),
        pass_at=pass_at,
        lean_calls=sum(r.lean_calls for r in done),
        calls_per_attempt=sum(r.lean_calls for r in done) / len(done) if done else 0.0,
        calls_per_solve_median=percentile(solve_calls, 50),
        wall_s=sum(r.wall_s for r in done),
        latency_p50_ms=percentile(latencies, 50),
        latency_p99_ms=percentile(latencies, 99),
        errors=sum(r.status == "error" and not r.statement_rejected for r in done),
        statement_errors=sum(r.statement_rejected for r in done),
        infra_errors=sum(r.status == "infra_error" for r in results),
        timeouts=sum(r.timeouts for r in done),
        server_failures=sum(r.server_failures for r in done),
        budget_exhausted=sum(r.budget_exhausted for r in done),
        categories=[CategoryRow(c, n, s) for c, (n, s) in sorted(cats.items())],
        expected_attempts=expected * attempts_per_theorem if expected and attempts_per_theorem else None,
    )


def short_of(results: Iterable[AttemptResult], k: int) -> list[str]:
    """The theorems (sorted) with some finished attempt but fewer than k: a run cut short, or attempts
    that ended in server errors. (Theorems without any finished attempt are not among them.)"""
    return sorted(t for t, rs in per_theorem(results).items() if len(rs) < k)


def mean_pass_at(results: Iterable[AttemptResult], k: int) -> float | None:
    """Mean unbiased pass@k over the theorems with finished attempts; None when there is none, or when
    some theorem has fewer than k (see :func:`short_of`): the mean over only the theorems that have k
    would describe the ones an interrupted run happened to reach, not the run.

    For comparing runs with different attempt counts at the same k: the run with more attempts
    is estimated from all of them, not from an arbitrary k of them.
    """
    counts = [(len(rs), sum(r.solved for r in rs)) for rs in per_theorem(results).values()]
    if not counts or any(n < k for n, _ in counts):
        return None
    return sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)


def solved_within(results: Iterable[AttemptResult], budgets: Sequence[int]) -> tuple[list[float], list[float]]:
    """For each Lean-call budget b: the fraction of theorems solved by some attempt using <= b calls,
    and the mean over theorems of the fraction of attempts solved within b (pass@1 at budget b).

    Read as "what a smaller budget would have given" for provers whose search does not depend on the
    budget (most do not); a budget-aware prover should be rerun at each budget instead.
    """
    by = per_theorem(results)
    if not by:
        return [0.0] * len(budgets), [0.0] * len(budgets)
    any_, one = [], []
    for b in budgets:
        hits = [[r.solved and r.lean_calls <= b for r in rs] for rs in by.values()]
        any_.append(sum(any(h) for h in hits) / len(by))
        one.append(sum(sum(h) / len(h) for h in hits) / len(by))
    return any_, one
