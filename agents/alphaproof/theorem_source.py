"""Where an actor's theorems come from: the PropLogic generator or a theorem file (any ``--dataset`` of the benchmark).

A source answers three questions for the trainer: give me a training theorem
of this difficulty level (the curriculum picks the level), which theorems are
held out for evaluation (never trained on), and which reference proofs exist
for the supervised warm start. Both sources draw only from the RNG they are
handed, so a resumed run sees the same theorems as an uninterrupted one.
"""
from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass
from typing import Any, Hashable, Mapping, Sequence

from leangym.datasets import load_theorems, natarith
from leangym.datasets import proplogic as generator
from leangym.theorem import Theorem


@dataclass(frozen=True)
class Task:
    theorem: Theorem
    key: str  # identity for per-theorem statistics (the statement without its name)
    level: Hashable  # difficulty level (the curriculum's unit)
    proof: tuple[str, ...] = ()  # a reference proof (linear tactics), when one is known


@dataclass(frozen=True)
class HeldOut:
    """The statements a run evaluates on and never trains on, by statement key (so a renamed copy
    of a held-out theorem is held out too). A run stores it in its checkpoint, and a resumed run
    keeps it whatever its ``--seed``, ``--eval-size`` or ``--theorems`` would choose."""

    keys: tuple[str, ...]  # statement keys, in evaluation order
    shared: bool = False  # too few theorems to spare any: evaluation reuses the training theorems

    def to_state(self) -> dict[str, Any]:
        return {"keys": list(self.keys), "shared": self.shared}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "HeldOut":
        return cls(tuple(str(k) for k in state["keys"]), bool(state.get("shared", False)))


def _task(pt: generator.PropTheorem) -> Task:
    return Task(pt.theorem, generator.statement_key(pt), pt.difficulty, pt.proof)


def _one_per_key(tasks: Sequence[Task], keys: Sequence[str]) -> list[Task]:
    """The first task of ``tasks`` with each key, in the order of ``keys`` (keys without a task are skipped)."""
    first: dict[str, Task] = {}
    for t in tasks:
        first.setdefault(t.key, t)
    return [first[k] for k in keys if k in first]


class PropLogicSource:
    """Fresh generated theorems per draw; the generator's fixed held-out set is excluded.

    ``held_out``: a checkpoint's (see :class:`HeldOut`); by default the first
    ``max(heldout_size, generator.HELDOUT_SIZE)`` theorems of the generator's held-out set.
    ``nat_share``: the share of the warm start's reference proofs drawn from :mod:`leangym.datasets.natarith`.
    """

    def __init__(self, heldout_size: int = generator.HELDOUT_SIZE, held_out: HeldOut | None = None,
                 nat_share: float = 0.0) -> None:
        self.nat_share = nat_share
        self.levels: list[Hashable] = list(generator.LEVELS)
        # Exclude the whole default held-out set even if we evaluate on a prefix of it.
        self._pool = [_task(t) for t in generator.heldout_set(max(heldout_size, generator.HELDOUT_SIZE))]
        self.default_held_out = HeldOut(tuple(t.key for t in self._pool))
        self.held_out = held_out or self.default_held_out
        self._exclude = list(self.held_out.keys)
        self._keys = frozenset(self.held_out.keys)

    def sample(self, level: Hashable, rng: random.Random, curriculum=None) -> Task:
        rejected = getattr(curriculum, "rejected", ())
        while True:  # (a statement the server rejected is drawn again only by a rare coincidence)
            seed = rng.getrandbits(62)  # one generator seed per theorem: stateless, so resumable
            task = _task(generator.generate(1, seed, int(level), exclude=self._exclude)[0])
            if task.key not in rejected:
                return task

    def drawable(self, level: Hashable, curriculum=None) -> bool:
        """Whether ``level`` still has theorems to draw (always: the generator makes new ones)."""
        return True

    def heldout(self, n: int) -> list[Task]:
        """The first ``n`` of the generator's held-out set (spread evenly over the levels) that this
        run holds out (all of them, unless a resumed run's checkpoint held out fewer)."""
        pool = self._pool if n <= len(self._pool) else [_task(t) for t in generator.heldout_set(n)]
        return [t for t in pool if t.key in self._keys][:n]

    def reference(self, n: int, seed: int) -> list[generator.PropTheorem]:
        """``n`` training theorems with reference proofs for the supervised warm start (a ``nat_share`` of them
        ℕ arithmetic: PropLogic's own arithmetic is closed facts only, never ``omega`` under hypotheses)."""
        k = math.floor(n * self.nat_share + 0.5)  # (half up: 5 at 0.1 is one)
        props = generator.generate(n - k, seed, exclude=self._exclude, prefix="prop_sft") if n > k else []
        mixed = props + (natarith.generate(k, seed, prefix="nat_sft") if k > 0 else [])
        random.Random(seed).shuffle(mixed)  # a warm start cut by --max-minutes loses some of each
        return mixed


class TheoremFileSource:
    """Theorems from a theorem file: what ``leangym.datasets.load_theorems`` reads (miniF2F-style JSONL
    rows, a JSON array of them, a ``.lean`` file or directory, ``minif2f``, a URL).

    Rows with ``split == "test"`` are held out; if there are none, a seeded
    sample of ``heldout_size`` statements is (at most half the file's distinct
    statements; a file of one has none to spare, so evaluation reuses the
    training theorems, with a warning). Held out means by statement: every row
    with a held-out statement, whatever its name or split, is kept out of
    training, and a file with nothing left to train on is an error.
    ``held_out``: a checkpoint's (see :class:`HeldOut`) instead. Rows may carry
    ``difficulty`` (the curriculum's levels; default one level 0) and ``proof``
    (a list of tactics for the warm start), as the generator's ``to_row`` writes.
    """

    def __init__(self, path: str, heldout_size: int = 32, seed: int = 0, held_out: HeldOut | None = None) -> None:
        tasks = [_file_task(path, theorem) for theorem in load_theorems(path)]
        if not tasks:
            raise ValueError(f"no theorems in {path}")
        self.default_held_out = _choose_held_out(tasks, heldout_size, seed)
        self.held_out = held_out or self.default_held_out
        keys = frozenset(self.held_out.keys)
        self.test = _one_per_key(tasks, self.held_out.keys)
        self.train = list(tasks) if self.held_out.shared else [t for t in tasks if t.key not in keys]
        if not self.train:
            why = ("the checkpoint's run holds out every statement of it" if held_out is not None else
                   'every row is split "test", or states the same as one that is')
            raise ValueError(f"{path}: no theorem left to train on: {why}. Mark the training theorems "
                             '"split": "train" (or leave "split" out of every row: then a seeded sample of '
                             "--eval-size theorems is held out)")
        if self.held_out.shared and held_out is None:
            print(f"warning: {path} has {len(self.test)} distinct statement(s), too few to hold any out: the "
                  "held-out evaluation reuses the training theorems (add theorems, or mark some \"split\": \"test\")",
                  file=sys.stderr)
        elif held_out is None and len(self.test) < heldout_size:  # fewer held out than --eval-size asks for
            why = ('only those are marked "split": "test"' if any(t.theorem.split == "test" for t in tasks) else
                   f"at most half of its {len({t.key for t in tasks})} distinct statements are held out, the "
                   "rest are to train on")
            print(f"held-out: {len(self.test)} theorems of {path}, not --eval-size {heldout_size}: {why}",
                  file=sys.stderr)
        self.levels = sorted({t.level for t in self.train})
        self._by_level = {lv: [t for t in self.train if t.level == lv] for lv in self.levels}

    def _pool(self, level: Hashable, curriculum=None) -> list[Task]:
        rejected = getattr(curriculum, "rejected", ())
        return [t for t in self._by_level.get(level, ()) if t.key not in rejected]

    def sample(self, level: Hashable, rng: random.Random, curriculum=None) -> Task:
        """A training theorem of ``level``, never one whose statement the server rejected."""
        pool = self._pool(level, curriculum)
        if curriculum is None:
            return pool[rng.randrange(len(pool))]
        return pool[curriculum.sample_theorem([t.key for t in pool], rng)]

    def drawable(self, level: Hashable, curriculum=None) -> bool:
        """Whether ``level`` still has a theorem whose statement the server did not reject."""
        return bool(self._pool(level, curriculum))

    def heldout(self, n: int) -> list[Task]:
        return self.test[:n]

    def reference(self, n: int, seed: int) -> list[generator.PropTheorem]:
        """Up to ``n`` training theorems that have a reference proof: a ``seed``-ed sample (all when fewer)."""
        with_proofs = [t for t in self.train if t.proof]
        chosen = random.Random(seed).sample(with_proofs, min(n, len(with_proofs)))
        return [generator.PropTheorem(t.theorem, t.proof, int(t.level), 0) for t in chosen]


def _choose_held_out(tasks: Sequence[Task], heldout_size: int, seed: int) -> HeldOut:
    """The statements of the rows marked ``split: test``, else a seeded sample of ``heldout_size`` statements
    (at most half the file's distinct statements: the rest are to train on)."""
    test = [t for t in tasks if t.theorem.split == "test"]
    if test:
        return HeldOut(tuple(dict.fromkeys(t.key for t in test)))
    shuffled = list(tasks)
    random.Random(seed).shuffle(shuffled)
    distinct = list(dict.fromkeys(t.key for t in shuffled))  # (without repeated statements: the rows' order)
    k = min(heldout_size, len(distinct) // 2)
    if not k:  # too few statements to hold any out: evaluate on the training theorems
        return HeldOut(tuple(distinct), shared=True)
    return HeldOut(tuple(distinct[:k]))


def _file_task(path: str, theorem: Theorem) -> Task:
    """One theorem of a theorem file as a task, with its row's ``difficulty`` and ``proof`` fields."""
    def bad(what: str) -> ValueError:
        return ValueError(f"{path}: theorem {theorem.name!r}: {what}")

    level = theorem.extra.get("difficulty")
    if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
        raise bad(f"'difficulty' must be a whole number (a curriculum level), got {level!r}")
    proof = theorem.extra.get("proof")
    if isinstance(proof, str):  # a script, one tactic per line
        proof = [t for t in proof.splitlines() if t.strip()]
    if proof is not None and not (isinstance(proof, list) and all(isinstance(t, str) for t in proof)):
        raise bad(f"'proof' must be a list of tactic strings, got {proof!r:.80}")
    return Task(theorem, generator.statement_key(theorem), level or 0, tuple(proof or ()))


def make_source(theorems: str | None, heldout_size: int, seed: int, held_out: HeldOut | None = None,
                nat_share: float = 0.0) -> PropLogicSource | TheoremFileSource:
    """The run's theorems: ``--theorems`` FILE, else the generator (``nat_share``: see PropLogicSource);
    ``held_out`` a checkpoint's split."""
    if theorems:
        return TheoremFileSource(theorems, heldout_size, seed, held_out)
    return PropLogicSource(heldout_size, held_out, nat_share)
