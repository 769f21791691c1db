"""The benchmark results file: one JSON object per line, appended and flushed as attempts finish.

Line 1 is the run header (``"type": "header"``): everything needed to
reproduce the run (agent spec and kwargs, budgets, seed, dataset, server
identity, leangym version and commit). Then one ``"type": "result"`` line per
(theorem, attempt), and a ``"type": "resume"`` line each time a run is resumed.

Resuming: an attempt whose result line is in the file is done and skipped,
except ``status == "infra_error"`` (the server failed, not the prover), which
is tried again. A line cut short by an interruption is dropped on resume.
"""
from __future__ import annotations

import dataclasses
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

FORMAT = 1
# Header fields that must match for a resumed run to append to the same file.
# ("agent_resolved": `hammer` and `baselines.hammer:HammerProver` are one agent; "server.*": a run on
# the simulator must not be continued on real Lean, nor one server generation on the other.)
RESUME_KEYS = ("agent_resolved", "agent_kwargs", "dataset", "split", "budget_calls", "budget_seconds", "seed",
               "timeout_ms", "server.simulated", "server.generation")
STATUSES = ("proved", "failed", "error", "infra_error")


@dataclass
class AttemptResult:
    theorem: str
    attempt: int
    category: str
    status: str  # one of STATUSES; "proved" iff the proof passed session.verify
    proof: str | None = None  # the verified tactic script
    candidate: str | None = None  # what the prover returned when it did NOT verify
    verify_error: str | None = None
    error: str | None = None  # prover exception, or why the attempt could not run
    budget_exhausted: bool = False
    tactics_tried: int = 0  # sent to Lean + stopped by the soundness policy
    lean_calls: int = 0
    rejected: int = 0
    policy_rejected: int = 0
    timeouts: int = 0
    server_failures: int = 0
    wall_s: float = 0.0
    seed: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def solved(self) -> bool:
        return self.status == "proved"

    @property
    def key(self) -> tuple[str, int]:
        return (self.theorem, self.attempt)

    def latency_summary(self) -> dict[str, float | int | None]:
        """Per-call Lean latency of this attempt: count, median, max (ms)."""
        xs = sorted(self.latencies_ms)
        mid = (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2 if xs else None
        return {"n": len(xs), "p50": mid, "max": xs[-1] if xs else None}

    def to_json(self) -> dict[str, Any]:
        return {"type": "result", "solved": self.solved, **dataclasses.asdict(self),
                "latency_ms": self.latency_summary()}

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> "AttemptResult":
        """A result line back; a field of the wrong type is a ValueError (the file is not ours, or damaged)."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        r = cls(**{k: v for k, v in row.items() if k in fields})
        numbers = ("attempt", "tactics_tried", "lean_calls", "rejected", "policy_rejected", "timeouts",
                   "server_failures", "wall_s", "seed")
        if not isinstance(r.theorem, str) or r.status not in STATUSES or \
                any(not isinstance(getattr(r, n), (int, float)) or isinstance(getattr(r, n), bool) for n in numbers):
            raise ValueError(f"a field has the wrong type or value: {str(row)[:200]}")
        return r


@dataclass
class ResultSet:
    """A results file as read back: header, resume lines, and the latest result of each attempt."""

    path: Path
    header: dict[str, Any]
    results: dict[tuple[str, int], AttemptResult]
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def attempts(self) -> list[AttemptResult]:
        return list(self.results.values())

    def done(self) -> set[tuple[str, int]]:
        return {k for k, r in self.results.items() if r.status != "infra_error"}


def read_results(path: Path | str) -> ResultSet:
    """Parse a results file; a truncated last line (an interrupted write) is ignored."""
    path = Path(path)
    header: dict[str, Any] | None = None
    results: dict[tuple[str, int], AttemptResult] = {}
    events: list[dict[str, Any]] = []
    # "\n" only: lines are written with ensure_ascii=False, so a text field may hold U+2028 or
    # \x85, which str.splitlines() would also split on
    lines = path.read_text(encoding="utf-8").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines):
                break
            raise ValueError(f"{path}:{i}: not a JSON line") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{i}: expected a JSON object, got {type(row).__name__}")
        kind = row.get("type")
        if kind == "header":
            header = header or row
        elif kind == "result":
            try:
                r = AttemptResult.from_json(row)
            except (TypeError, ValueError) as e:
                raise ValueError(f"{path}:{i}: not a result line ({e})") from None
            results[r.key] = r
        else:
            events.append(row)
    if header is None:
        raise ValueError(f"{path}: no header line; not a leangym benchmark results file")
    return ResultSet(path, header, results, events)


class ResultsWriter:
    """Appends lines to a results file from many threads; every line is flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        _drop_partial_line(path)
        self._f = open(path, "a", encoding="utf-8")

    def write(self, row: dict[str, Any]) -> None:
        text = json.dumps(row, ensure_ascii=False) + "\n"
        with self._lock:
            self._f.write(text)
            self._f.flush()

    def write_result(self, result: AttemptResult) -> None:
        self.write(result.to_json())

    def close(self) -> None:
        with self._lock:
            self._f.close()


def _drop_partial_line(path: Path) -> None:
    """Cut a last line that has no newline (a write interrupted mid-way), so appends stay line-aligned.

    A file holding only part of its header line is cut to nothing: the run starts afresh.
    """
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    with open(path, "r+b") as f:
        f.truncate(data.rfind(b"\n") + 1)


def _field(header: dict[str, Any], key: str) -> Any:
    value: Any = header
    for part in key.split("."):  # "server.simulated": a field of the header's server entry
        value = value.get(part) if isinstance(value, dict) else None
    return value


def mismatches(old: dict[str, Any], new: dict[str, Any], keys: Iterable[str] = RESUME_KEYS) -> list[str]:
    """The header fields that differ between an existing results file and this run."""
    return [f"{k}: file has {_field(old, k)!r}, this run {_field(new, k)!r}"
            for k in keys if _field(old, k) != _field(new, k)]
