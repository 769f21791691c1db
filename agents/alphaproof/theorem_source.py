"""Where an actor's theorems come from: the PropLogic generator or a JSONL file.

A source answers three questions for the trainer: give me a training theorem
of this difficulty level (the curriculum picks the level), which theorems are
held out for evaluation (never trained on), and which reference proofs exist
for the supervised warm start. Both sources draw only from the RNG they are
handed, so a resumed run sees the same theorems as an uninterrupted one.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Hashable

from agents.alphaproof.jsonl import read_jsonl
from leangym.sim import generator
from leangym.theorem import Theorem


@dataclass(frozen=True)
class Task:
    theorem: Theorem
    key: str  # identity for per-theorem statistics (the statement without its name)
    level: Hashable  # difficulty level (the curriculum's unit)
    proof: tuple[str, ...] = ()  # a reference proof (linear tactics), when one is known


def _task(pt: generator.PropTheorem) -> Task:
    return Task(pt.theorem, generator.statement_key(pt), pt.difficulty, pt.proof)


class PropLogicSource:
    """Fresh generated theorems per draw; the generator's fixed held-out set is excluded."""

    def __init__(self, heldout_size: int = generator.HELDOUT_SIZE) -> None:
        self.levels: list[Hashable] = list(generator.LEVELS)
        # Exclude the whole default held-out set even if we evaluate on a prefix of it.
        self._exclude = [generator.statement_key(t) for t in generator.heldout_set(max(heldout_size, generator.HELDOUT_SIZE))]

    def sample(self, level: Hashable, rng: random.Random, curriculum=None) -> Task:
        seed = rng.getrandbits(62)  # one generator seed per theorem: stateless, so resumable
        return _task(generator.generate(1, seed, int(level), exclude=self._exclude)[0])

    def heldout(self, n: int) -> list[Task]:
        """A prefix of the generator's held-out set (spread evenly over the levels)."""
        return [_task(t) for t in generator.heldout_set(max(n, 1))[:n]]

    def reference(self, n: int, seed: int) -> list[generator.PropTheorem]:
        """``n`` training theorems with reference proofs for the supervised warm start."""
        return generator.generate(n, seed, exclude=self._exclude, prefix="prop_sft") if n > 0 else []


class TheoremFileSource:
    """Theorems from a miniF2F-style JSONL file (``Theorem.from_row`` rows).

    Rows with ``split == "test"`` are held out; if there are none, a seeded
    sample of ``heldout_size`` rows is (when the file has enough rows to spare
    them, else evaluation reuses training theorems and says so). Rows may carry
    ``difficulty`` (the curriculum's levels; default one level 0) and ``proof``
    (a list of tactics for the warm start), as the generator's ``to_row`` writes.
    """

    def __init__(self, path: str, heldout_size: int = 32, seed: int = 0) -> None:
        tasks = [_file_task(path, lineno, row) for lineno, row in read_jsonl(path)]
        if not tasks:
            raise ValueError(f"no theorems in {path}")
        test = [t for t in tasks if t.theorem.split == "test"]
        if test:
            train = [t for t in tasks if t.theorem.split != "test"]
        else:
            shuffled = list(tasks)
            random.Random(seed).shuffle(shuffled)
            k = min(heldout_size, len(tasks) // 2)
            test, train = shuffled[:k], shuffled[k:]
            if not test:  # too few rows to hold any out: evaluate on the training theorems
                test = list(tasks)
        self.train, self.test = train or list(tasks), test
        self.levels = sorted({t.level for t in self.train})
        self._by_level = {lv: [t for t in self.train if t.level == lv] for lv in self.levels}

    def sample(self, level: Hashable, rng: random.Random, curriculum=None) -> Task:
        pool = self._by_level[level]
        if curriculum is None:
            return pool[rng.randrange(len(pool))]
        return pool[curriculum.sample_theorem([t.key for t in pool], rng)]

    def heldout(self, n: int) -> list[Task]:
        return self.test[:n]

    def reference(self, n: int, seed: int) -> list[generator.PropTheorem]:
        with_proofs = [t for t in self.train if t.proof]
        return [generator.PropTheorem(t.theorem, t.proof, int(t.level), 0) for t in with_proofs[:n]]


def _file_task(path: str, lineno: int, row: Any) -> Task:
    """One row of a theorem file as a task; ValueError ``path:line: ...`` for a bad row."""
    def bad(what: str) -> ValueError:
        return ValueError(f"{path}:{lineno}: {what}")

    if not isinstance(row, dict):
        raise bad(f"expected a JSON object (a theorem row), got {type(row).__name__}")
    try:
        theorem = Theorem.from_row(row)
    except ValueError as e:  # TheoremError: no formal_statement, no ':= by sorry' ...
        raise bad(str(e)) from None
    level = row.get("difficulty")
    if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
        raise bad(f"'difficulty' must be a whole number (a curriculum level), got {level!r}")
    proof = row.get("proof")
    if isinstance(proof, str):  # a script, one tactic per line
        proof = [t for t in proof.splitlines() if t.strip()]
    if proof is not None and not (isinstance(proof, list) and all(isinstance(t, str) for t in proof)):
        raise bad(f"'proof' must be a list of tactic strings, got {proof!r:.80}")
    return Task(theorem, generator.statement_key(theorem), level or 0, tuple(proof or ()))


def make_source(theorems: str | None, heldout_size: int, seed: int) -> PropLogicSource | TheoremFileSource:
    return TheoremFileSource(theorems, heldout_size, seed) if theorems else PropLogicSource(heldout_size)
