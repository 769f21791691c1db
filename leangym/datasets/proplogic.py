"""Seeded generator of provable propositional-logic theorems with reference proofs.

Theorems are built *backward from proofs*: a random proof tree is grown from
the tactics the simulated kernel supports (``intro``, ``exact``, ``constructor``,
``left``/``right``, ``apply``, ``rcases``, ``exfalso``, ``absurd``,
``trivial``, ``assumption``, ``by_contra``, ``norm_num``/``decide``) and the goal
is read off the tree. A leaf that needs a fact requests a hypothesis for it; a
request is later discharged by an ``intro``/``rcases``/``by_contra`` higher up,
or becomes a hypothesis of the theorem (``(h₁ : p → q)``). Every theorem thus
comes with a linear reference script: a list of tactics, each applied to the
first open goal, as Lean runs the lines of a ``by`` block.

Statements are printed with Lean 4's precedences and minimal parentheses
(``¬`` max, ``∧`` 35 and ``∨`` 30 and ``→`` 25 right-associative, ``↔`` 20
non-associative), Prop variables renamed to ``p q r s t`` in order of first
appearance and hypotheses to ``h₁ h₂ …`` (theorem hypotheses first, then the
ones the proof introduces), so equal theorems print equally.

Difficulty ``1..MAX_DIFFICULTY`` maps to ranges of the reference proof length
and of the formula depth (:data:`LEVELS`). Before binning, a small structural
prover tries the finished statement; when it finds a shorter script than the
construction, that script becomes the reference. ``proof_length`` is still
only an upper bound on the minimal length: a construction can keep a detour
that this prover does not see through (an ``exfalso`` where a hypothesis
eliminated by ``rcases`` would close the goal directly, say).

Public API::

    generate(n, seed, difficulty=(1, 5), *, exclude=None, arith=0.1, classical=0.4,
             prefix="prop", split="train") -> list[PropTheorem]
    heldout_set(size=200) -> list[PropTheorem]        # fixed seed, levels cycled, split "heldout"
    training_stream(seed, difficulty=(1, 5), *, exclude=heldout_set()) -> Iterator[PropTheorem]
    statement_key(theorem_or_text) -> str             # the statement without its name
    to_row / from_row / to_jsonl(path, theorems)   # rows read back with from_row(json.loads(line))
    PropTheorem(theorem, proof, difficulty, depth)    # .proof_length .script .source .name
    LEVELS[d] = Level(proof_length=(lo, hi), depth=(lo, hi), size=...)

    python -m leangym.datasets.proplogic -n 10000 --seed 0 -o train.jsonl   # warm-start data

The construction lives in :mod:`leangym.datasets.propgen` (soundness notes for real
Lean 4 in :mod:`leangym.datasets.propgen.builder`); this module draws, bins,
deduplicates and names the theorems, and reads and writes them as JSONL.

Everything is deterministic for a seed, across processes and hash seeds: only
``random.Random.random`` is drawn from and no set is iterated.
"""
from __future__ import annotations

import hashlib
import json
import numbers
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Iterator, Mapping, Sequence

from leangym.datasets.propgen.builder import Builder
from leangym.datasets.propgen.formulas import FALSE, TRUE, VAR_NAMES, depth, render  # noqa: F401 - part of this API
from leangym.datasets.propgen.statement import finish
from leangym.theorem import Theorem

__all__ = [
    "HEADER",
    "HELDOUT_SEED",
    "HELDOUT_SIZE",
    "LEVELS",
    "Level",
    "MAX_DIFFICULTY",
    "PropTheorem",
    "from_row",
    "generate",
    "heldout_set",
    "levels",
    "render",
    "statement_key",
    "to_jsonl",
    "to_row",
    "training_stream",
    "main",
]

# The miniF2F (DeepSeek-Prover) header: servers that cache one environment per
# header share it with miniF2F. Needed for real Lean: norm_num and by_contra.
HEADER = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen BigOperators Real Nat Topology Rat\n\n"


@dataclass(frozen=True)
class Level:
    """What one difficulty level asks for: inclusive ranges."""

    proof_length: tuple[int, int]  # tactics in the reference proof
    depth: tuple[int, int]  # max connective depth over the hypotheses and the goal
    size: tuple[int, int]  # size of the random proof tree that is grown (internal knob)


LEVELS: dict[int, Level] = {
    1: Level(proof_length=(1, 2), depth=(0, 2), size=(1, 2)),
    2: Level(proof_length=(3, 4), depth=(1, 3), size=(3, 4)),
    3: Level(proof_length=(5, 7), depth=(2, 5), size=(6, 8)),
    4: Level(proof_length=(8, 11), depth=(3, 6), size=(10, 12)),
    5: Level(proof_length=(12, 16), depth=(3, 8), size=(15, 17)),
}
MAX_DIFFICULTY = max(LEVELS)

HELDOUT_SEED = 0x5EED_0F_1E  # fixed forever: changing it changes the evaluation set
HELDOUT_SIZE = 200

STREAM_MEMORY = 200_000  # statements a training stream remembers to avoid repeats (about 15 MB)
_MAX_TRIES = 2000  # consecutive failures before a level counts as exhausted

# --------------------------------------------------------------------------- theorems


@dataclass(frozen=True)
class PropTheorem:
    """A generated theorem with its reference proof (tactics applied in order to the first goal)."""

    theorem: Theorem
    proof: tuple[str, ...]
    difficulty: int
    depth: int

    @property
    def proof_length(self) -> int:
        return len(self.proof)

    @property
    def name(self) -> str:
        return self.theorem.name

    @property
    def formal_statement(self) -> str:
        return self.theorem.formal_statement

    @property
    def script(self) -> str:
        """The proof as the body of a ``by`` block."""
        return "\n".join(self.proof)

    @property
    def source(self) -> str:
        """Header + statement + proof: a complete Lean command."""
        return self.theorem.source_with_proof(self.script)

    @property
    def key(self) -> str:
        return statement_key(self)


_NAME = re.compile(r"^(theorem\s+)\S+")
_WS = re.compile(r"\s+")


def statement_key(x: PropTheorem | Theorem | str) -> str:
    """The statement without its name and with whitespace collapsed: equal keys, equal theorems."""
    if isinstance(x, PropTheorem):
        x = x.theorem
    if isinstance(x, Theorem):
        x = x.formal_statement
    at = x.find("theorem ")  # drop a header, if any
    x = x[at:] if at >= 0 else x
    return _WS.sub(" ", _NAME.sub(r"\1_", x.strip(), count=1))


class _Source:
    """Draws theorems of given difficulties from one random stream."""

    def __init__(self, seed: int, arith: float, classical: float):
        self.rng = random.Random(seed)
        self.arith = arith
        self.classical = classical

    def draw(self, level: int) -> tuple[str, list[str], int] | None:
        """One attempt at a theorem of ``level``: (body, proof, depth) or None."""
        spec = LEVELS[level]
        r = self.rng.random
        nvars = (1, 2, 2, 3, 3, 3, 3, 4, 4, 5)[int(r() * 10)] if level > 1 else (1, 2, 2, 3)[int(r() * 4)]
        b = Builder(self.rng, nvars, self.arith, self.classical)
        lo, hi = spec.size
        root = b.build(b.randint(lo, hi))
        return finish(b, root, spec.depth, spec.proof_length)


def levels(difficulty: Any) -> tuple[int, int]:
    """``difficulty`` (a level, or a ``(lo, hi)`` pair of them) as ``(lo, hi)``; ValueError unless whole
    numbers (not bools) with ``1 <= lo <= hi <= MAX_DIFFICULTY``."""
    def whole(x: Any) -> int | None:
        return int(x) if isinstance(x, numbers.Integral) and not isinstance(x, bool) else None

    pair = (difficulty, difficulty) if whole(difficulty) is not None else difficulty
    if isinstance(pair, (tuple, list)) and len(pair) == 2:
        lo, hi = (whole(x) for x in pair)
        if lo is not None and hi is not None and 1 <= lo <= hi <= MAX_DIFFICULTY:
            return lo, hi
    raise ValueError(f"difficulty must be a level in 1..{MAX_DIFFICULTY} or a (lo, hi) range of them, "
                     f"got {difficulty!r}")


def _exclusion_keys(exclude: Iterable[PropTheorem | Theorem | str] | None) -> set[str]:
    return {statement_key(x) for x in exclude} if exclude is not None else set()


def _make(body: str, tactics: list[str], level: int, d: int, name: str, split: str | None) -> PropTheorem:
    proof = tuple(tactics)
    thm = Theorem(
        formal_statement=f"theorem {name} {body}",
        name=name,
        header=HEADER,
        split=split,
        extra={"proof": list(proof), "difficulty": level, "depth": d, "proof_length": len(proof)},
    )
    return PropTheorem(thm, proof, level, d)


def _stream(
    seed: int,
    difficulty: int | tuple[int, int],
    exclude: set[str],
    arith: float,
    classical: float,
    prefix: str,
    split: str | None,
    remember: int | None = None,
) -> Iterator[PropTheorem]:
    """Distinct theorems, none in ``exclude``. ``remember``: how many of the statements drawn are kept to
    tell a repeat (hashes, oldest forgotten first), so that an endless stream's memory stays bounded;
    ``None``: all of them. ``exclude`` is always kept whole."""
    lo, hi = levels(difficulty)
    src = _Source(seed, arith, classical)
    drawn: dict[bytes, None] = {}  # hashes of the statements drawn, oldest first (an ordered set)
    index = 0
    active = list(range(lo, hi + 1))
    while active:
        for level in list(active):
            for _ in range(_MAX_TRIES):
                got = src.draw(level)
                if got is None:
                    continue
                body, tactics, d = got
                key = statement_key("theorem _ " + body)
                digest = hashlib.blake2b(key.encode(), digest_size=8).digest()  # (the same in every process)
                if key in exclude or digest in drawn:
                    continue
                drawn[digest] = None
                if remember is not None and len(drawn) > remember:
                    del drawn[next(iter(drawn))]
                yield _make(body, tactics, level, d, f"{prefix}_d{level}_{index:05d}", split)
                index += 1
                break
            else:
                active.remove(level)  # this level has no new theorems left (or almost none)


def generate(
    n: int,
    seed: int,
    difficulty: int | tuple[int, int] = (1, MAX_DIFFICULTY),
    *,
    exclude: Iterable[PropTheorem | Theorem | str] | None = None,
    arith: float = 0.1,
    classical: float = 0.4,
    prefix: str = "prop",
    split: str | None = "train",
) -> list[PropTheorem]:
    """``n`` distinct theorems, deterministic for ``seed``.

    ``difficulty`` is one level or an inclusive range; a range is cycled through
    (``lo, lo+1, …, hi, lo, …``) so levels are equally represented. Names are
    ``{prefix}_d{level}_{index:05d}``. Statements in ``exclude`` (theorems or
    statement strings, compared by :func:`statement_key`) are never produced.
    ``arith`` weighs leaves that are closed ℕ facts (``norm_num``/``decide``),
    ``classical`` the ``by_contra`` rule; 0 turns either off. The result for
    ``n`` is a prefix of the result for any larger ``n``.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    out: list[PropTheorem] = []
    if n == 0:
        return out
    for t in _stream(seed, difficulty, _exclusion_keys(exclude), arith, classical, prefix, split):
        out.append(t)
        if len(out) == n:
            return out
    raise ValueError(f"only {len(out)} distinct theorems exist at difficulty {difficulty!r} with these settings")


@lru_cache(maxsize=8)
def _heldout(size: int) -> tuple[PropTheorem, ...]:
    return tuple(generate(size, HELDOUT_SEED, (1, MAX_DIFFICULTY), prefix="prop_heldout", split="heldout"))


def heldout_set(size: int = HELDOUT_SIZE) -> list[PropTheorem]:
    """The fixed evaluation set: ``size`` theorems spread evenly over all levels.

    ``heldout_set(k)`` is a prefix of ``heldout_set(m)`` for ``k <= m``. Names
    are ``prop_heldout_d{level}_{index:05d}``, split ``"heldout"``.
    """
    return list(_heldout(size))


def training_stream(
    seed: int,
    difficulty: int | tuple[int, int] = (1, MAX_DIFFICULTY),
    *,
    exclude: Iterable[PropTheorem | Theorem | str] | None = None,
    arith: float = 0.1,
    classical: float = 0.4,
    prefix: str | None = None,
) -> Iterator[PropTheorem]:
    """Endless distinct theorems for training, never one of the held-out statements.

    Names are ``{prefix}_d{level}_{index:05d}`` with ``prefix`` ``prop_s{seed}`` by
    default: streams of different seeds (the sub-envs of a vector env) draw
    different statements, and a name must not stand for two of them in one log.

    ``exclude`` defaults to :func:`heldout_set` (its default size); pass a larger
    held-out set, or extra statements, to exclude more. A level whose theorems
    run out (only the easiest can) drops out of the cycle; the stream ends when
    every level has. Distinct means among the last :data:`STREAM_MEMORY` statements
    drawn: an endless stream remembers no more (its memory stays bounded).
    """
    keys = _exclusion_keys(heldout_set() if exclude is None else exclude)
    prefix = f"prop_s{seed}" if prefix is None else prefix
    return _stream(seed, difficulty, keys, arith, classical, prefix, "train", remember=STREAM_MEMORY)


# --------------------------------------------------------------------------- JSONL


def to_row(t: PropTheorem) -> dict[str, Any]:
    """The miniF2F JSONL row plus ``proof`` (list of tactics), ``difficulty``, ``depth``, ``proof_length``."""
    th = t.theorem
    return {
        "name": th.name,
        "header": th.header,
        "formal_statement": th.formal_statement,
        "split": th.split,
        "proof": list(t.proof),
        "difficulty": t.difficulty,
        "depth": t.depth,
        "proof_length": t.proof_length,
    }


def from_row(row: Mapping[str, Any]) -> PropTheorem:
    """Inverse of :func:`to_row`."""
    thm = Theorem.from_row(row)
    proof = tuple(str(x) for x in row.get("proof") or ())
    return PropTheorem(thm, proof, int(row.get("difficulty") or 0), int(row.get("depth") or 0))


def to_jsonl(path: str, theorems: Iterable[PropTheorem]) -> int:
    """Write one :func:`to_row` per line (UTF-8, Lean symbols unescaped); returns the row count."""
    k = 0
    with open(path, "w", encoding="utf-8") as fh:
        for t in theorems:
            fh.write(json.dumps(to_row(t), ensure_ascii=False) + "\n")
            k += 1
    return k


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m leangym.datasets.proplogic -n 1000 --seed 0 -o train.jsonl`` (``--heldout`` for the evaluation set)."""
    from leangym.cli import ArgumentParser

    ap = ArgumentParser(prog="python -m leangym.datasets.proplogic",
                        description="Write generated PropLogic theorems with reference proofs as JSONL.")
    ap.add_argument("-n", type=int, default=1000, help="number of theorems")
    ap.add_argument("--seed", type=int, help="seed of the training stream (default 0)")
    ap.add_argument("--difficulty", help=f"a level (3) or a range (1-{MAX_DIFFICULTY}; the default)")
    ap.add_argument("--heldout", action="store_true",
                    help="write heldout_set(n), the fixed evaluation set, instead (no seed, difficulty or exclusion)")
    ap.add_argument("--no-exclude", action="store_true", help="do not exclude the held-out statements")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args(argv)
    if a.n < 0:
        ap.error(f"-n must be 0 or more, got {a.n}")
    if a.heldout and (a.seed is not None or a.difficulty is not None or a.no_exclude):
        ap.error("--heldout writes the fixed evaluation set: --seed, --difficulty and --no-exclude do not apply")
    lo, _, hi = (a.difficulty or f"1-{MAX_DIFFICULTY}").partition("-")
    try:
        diff: int | tuple[int, int] = (int(lo), int(hi)) if hi else int(lo)
    except ValueError:
        ap.error(f"--difficulty: a level (3) or a range (1-{MAX_DIFFICULTY}), got {a.difficulty!r}")
    if a.heldout:
        ts = heldout_set(a.n)
    else:
        ts = generate(a.n, a.seed or 0, diff, exclude=None if a.no_exclude else heldout_set())
    print(f"{to_jsonl(a.out, ts)} theorems -> {a.out}")
    return 0


if __name__ == "__main__":
    from leangym.cli import run_cli

    run_cli(main)
