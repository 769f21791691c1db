"""The benchmark results file: one JSON object per line, appended and flushed as attempts finish.

Line 1 is the run header (``"type": "header"``): everything needed to
reproduce the run (agent spec and kwargs, budgets, seed, dataset and where it
was read from, server identity, leangym version and commit). Then one
``"type": "result"`` line per (theorem, attempt), and a ``"type": "resume"``
line (the header as that rerun asked) each time a run is resumed.

Resuming: an attempt whose result line is in the file is done and skipped,
except ``status == "infra_error"`` (the server failed, not the prover), which
is tried again. A line cut short by an interruption is dropped on resume.
Each result records ``statement_hash``, a short sha256 of the statement the
prover was asked to prove (header included), so that a resume can refuse to
mix results on a statement that has changed since (files written before the
field existed resume as before).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from leangym.datasets import MINIF2F_URL, DatasetError
from leangym.datasets.minif2f import local_copy
from leangym.datasets.download import redacted
from leangym.theorem import Theorem

FORMAT = 1
# Header fields that must match for a resumed run to append to the same file.
# ("agent_resolved": `hammer` and `baselines.hammer:HammerProver` are one agent; "server.*": a run on
# the simulator must not be continued on real Lean, nor one server generation on the other.)
RESUME_KEYS = ("agent_resolved", "agent_kwargs", "dataset", "split", "budget_calls", "budget_seconds", "seed",
               "timeout_ms", "server.simulated", "server.generation")
STATUSES = ("proved", "failed", "error", "infra_error")
# How every header line starts (json.dumps of a dict whose first key is "type").
HEADER_START = b'{"type": "header"'
# How leangym.harness.run words an ``error`` that is the statement's fault (Lean did not elaborate it), not the prover's.
STATEMENT_REJECTED = "Lean rejected the statement"


def statement_hash(theorem: Theorem) -> str:
    """A short sha256 of what the prover is asked to prove: the header (imports, opens) and the statement."""
    text = f"{theorem.header}\n{theorem.formal_statement}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
    statement_hash: str | None = None  # see statement_hash(); None in files written before it existed

    @property
    def solved(self) -> bool:
        return self.status == "proved"

    @property
    def key(self) -> tuple[str, int]:
        return (self.theorem, self.attempt)

    @property
    def statement_rejected(self) -> bool:
        """Lean did not accept the statement itself: the dataset's fault, not the prover's."""
        return self.status == "error" and (self.error or "").startswith(STATEMENT_REJECTED)

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
        bad_number = any(not isinstance(getattr(r, n), (int, float)) or isinstance(getattr(r, n), bool)
                         for n in numbers)
        if bad_number or not isinstance(r.theorem, str) or r.status not in STATUSES or \
                not isinstance(r.statement_hash, (str, type(None))):
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

    @property
    def run(self) -> dict[str, Any]:
        """The run as it stands: the latest of the header and the resume lines (a resume may ask for more
        attempts or theorems). ``attempts`` and ``count`` never shrink: a rerun asking for fewer leaves
        the earlier results in the file, and the reports count them."""
        lines = [self.header] + [e for e in self.events if e.get("type") == "resume"]
        latest = dict(lines[-1])
        for key in ("attempts", "count"):
            values = [line[key] for line in lines if isinstance(line.get(key), int)]
            if values:
                latest[key] = max(values)
        # every theorem with a result line was asked for (a resume with another --theorems adds names)
        latest["count"] = max(latest.get("count") or 0, len({name for name, _ in self.results})) or None
        return latest

    def changed_statements(self, hashes: dict[str, str]) -> list[str]:
        """Theorems with a finished attempt on a statement other than ``hashes[name]`` (sorted names)."""
        return sorted({r.theorem for r in self.results.values() if r.status != "infra_error"
                       and r.statement_hash and r.theorem in hashes and r.statement_hash != hashes[r.theorem]})


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


def is_partial_header(data: bytes) -> bool:
    """``data`` (a whole file) is the start of a header line and nothing more: a run interrupted while
    writing its first line. Such a file may be started afresh; nothing else may (see :func:`is_results_file`)."""
    return b"\n" not in data and (HEADER_START.startswith(data) or data.startswith(HEADER_START))


def is_results_file(path: Path) -> bool:
    """``path`` is a results file this tool wrote (its first line is a header), or the start of one.

    Checked before a run truncates, deletes or appends to ``--out``: any other file (a data set,
    notes, another tool's output) is left alone.
    """
    with open(path, "rb") as f:
        first = f.readline()
    if not first.endswith(b"\n"):
        return is_partial_header(first)
    try:
        row = json.loads(first)
    except ValueError:  # not JSON, or not UTF-8
        return False
    return isinstance(row, dict) and row.get("type") == "header"


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


# --------------------------------------------------------------------------- one run or another

def canonical_agent(spec: str) -> str:
    """An agent spec (aliases already expanded) as the header records it: an agent file by its
    absolute path (``my.py:A`` and ``/abs/my.py:A`` are one agent)."""
    module, sep, name = spec.partition(":")
    return f"{Path(module).expanduser().resolve()}{sep}{name}" if module.endswith(".py") else spec


def canonical_dataset(spec: str) -> str:
    """``--dataset`` with a file or directory by its absolute path (``one.jsonl`` is ``./one.jsonl``), a URL
    without credentials or query values (:func:`leangym.datasets.download.redacted`)."""
    if spec.startswith("minif2f:"):
        return "minif2f:" + canonical_dataset(spec.partition(":")[2])
    if "://" in spec:  # (a token in its query is not recorded: results files are shared)
        return redacted(spec)
    if spec == "minif2f" or spec.startswith("proplogic-heldout"):
        return spec
    return str(Path(spec).expanduser().resolve())


def recorded(text: str) -> str:
    """``text`` as a results file may keep it: every URL in it without credentials or query values
    (``--dataset=https://…``, ``minif2f:https://…`` too)."""
    return re.sub(r"[A-Za-z][A-Za-z0-9+.-]*://\S+", lambda m: redacted(m.group(0)), text)


def dataset_source(spec: str) -> str | None:
    """Where the theorems were read from (a resolved path or a URL); None for a generated set."""
    if spec == "minif2f":
        try:
            path = local_copy()
        except DatasetError:
            return None
        return str(path.resolve()) if path else MINIF2F_URL
    if spec.startswith("proplogic-heldout"):
        return None
    return canonical_dataset(spec).removeprefix("minif2f:")


def _field(header: dict[str, Any], key: str) -> Any:
    value: Any = header
    for part in key.split("."):  # "server.simulated": a field of the header's server entry
        value = value.get(part) if isinstance(value, dict) else None
    return value


def mismatches(old: dict[str, Any], new: dict[str, Any], keys: Iterable[str] = RESUME_KEYS) -> list[str]:
    """The header fields that differ between an existing results file and this run."""
    return [f"{k}: file has {_field(old, k)!r}, this run {_field(new, k)!r}"
            for k in keys if _field(old, k) != _field(new, k)]


def _comparable(header: dict[str, Any], by_source: bool) -> dict[str, Any]:
    """A header with the agent and dataset specs in canonical form, for the resume check
    (files written before the header held canonical specs included). ``by_source``: compare the
    datasets by their resolved sources (a relative path means nothing in another directory)."""
    dataset = recorded(str(header.get("dataset_source"))) if by_source else canonical_dataset(str(header.get("dataset")))
    return {**header, "agent_resolved": canonical_agent(str(header.get("agent_resolved"))), "dataset": dataset}


def resume_refusal(old: ResultSet, header: dict[str, Any], hashes: dict[str, str]) -> str | None:
    """Why this run must not append to ``old`` (None: it may)."""
    by_source = bool(old.header.get("dataset_source")) and bool(header.get("dataset_source"))
    bad = mismatches(_comparable(old.header, by_source), _comparable(header, by_source))
    if bad:
        return f"{old.path} holds a different run ({'; '.join(bad)}); use another --out or --restart"
    changed = old.changed_statements(hashes)
    if changed:
        n = len(changed)
        return (f"the statement{'s' if n > 1 else ''} of {n} theorem{'s' if n > 1 else ''} changed since this run "
                f"started (e.g. {changed[0]}); "
                "use --restart or another --out")
    return None
