"""Seeded generator of ℕ-arithmetic theorems with reference proofs: miniF2F's number-theory shape.

PropLogic (:mod:`leangym.datasets.proplogic`) teaches the connectives; its only
arithmetic is closed facts. These statements put ℕ variables under hypotheses
(``n % 5 = 3``, ``11 ∣ 2007 + 10 * n``, bounds, linear equations) and are proved by
``omega``, after ``intro``/``constructor``/``left``/``right`` when the goal has a
connective; the closed ones (``(a * b + c) % m = r``) by ``norm_num``. Each is true by
construction: the answer is computed, and a unique solution is found by enumerating
its bound. A user of them (the trainer's warm start) still replays every proof on Lean.
The benchmark these imitate is never trained on, by proof state rather than by text: a theorem
is skipped when a state its reference proof passes through (on the simulator, which prints
terms one way) is, up to local names and case tags, a start state of a miniF2F statement
(after its ``intro``s). Those states ship as fingerprints (:mod:`.minif2f_fingerprints`), so
the stream depends on the seed alone, not on whether a miniF2F copy is at hand.

    generate(n, seed, *, prefix="nat", exclude=FINGERPRINTS) -> list[PropTheorem]   # levels 1 .. 3
    fingerprints_of(statement) -> set[str]    # a benchmark statement's start states, as excluded
    python -m leangym.datasets.natarith -n 1000 --seed 0 -o nat.jsonl
    python -m leangym.datasets.natarith --write-fingerprints    # from the local miniF2F copy
"""
from __future__ import annotations

import hashlib
import math
import random
from pathlib import Path
from typing import Callable, Collection, Sequence

from leangym.backends.types import LeanError, ProofState
from leangym.datasets.minif2f_fingerprints import FINGERPRINTS
from leangym.datasets.proplogic import HEADER, PropTheorem, to_jsonl
from leangym.goal_key import alpha_key
from leangym.sim.local import LocalProcess
from leangym.theorem import Theorem

Fact = tuple[str, tuple[str, ...], str, int]  # (binders, hypotheses, goal, level); hypotheses named h₀ h₁ ... later
VARS = ("n", "x", "a", "k")


def _closed(rng: random.Random) -> Fact:
    """``(A * B + C ^ e) % m = r`` or ``A * B + C = D``: computed, closed by ``norm_num``."""
    terms = [_closed_term(rng) for _ in range(rng.randint(2, 3))]
    total = sum(v for _, v in terms)
    text = " + ".join(t for t, _ in terms)
    if rng.random() < 0.7:
        m = rng.randint(3, 13)
        return "", (), f"({text}) % {m} = {total % m}", 1
    return "", (), f"{text} = {total}", 1


def _closed_term(rng: random.Random) -> tuple[str, int]:
    a = rng.randint(2, 150)
    roll = rng.random()
    if roll < 0.35:
        b = rng.randint(2, 150)
        return f"{a} * {b}", a * b
    if roll < 0.6:
        e = rng.randint(2, 30 if a < 10 else 4)
        return f"{a} ^ {e}", a ** e
    return str(a), a


def _forward(rng: random.Random) -> Fact:
    """From ``n % m = r`` to ``(a * n + b) % m = s``."""
    v, m = rng.choice(VARS), rng.randint(3, 13)
    r, a, b = rng.randrange(m), rng.randint(2, 9), rng.randint(1, 20)
    return f"({v} : ℕ)", (f"{v} % {m} = {r}",), f"({a} * {v} + {b}) % {m} = {(a * r + b) % m}", 2


def _backward(rng: random.Random) -> Fact:
    """From ``(a * n) % m = r`` with ``a`` invertible mod ``m`` to ``n % m = s``."""
    v = rng.choice(VARS)
    while True:
        m, a = rng.randint(3, 50), rng.randint(2, 12)
        if a % m and math.gcd(a, m) == 1:
            break
    r = rng.randrange(m)
    return f"({v} : ℕ)", (f"({a} * {v}) % {m} = {r}",), f"{v} % {m} = {r * pow(a, -1, m) % m}", 2


def _digit(rng: random.Random) -> Fact:
    """The one digit ``n ≤ 9`` that makes ``d ∣ C * 10 + n`` (or ``C * 100 + 10 * n + e``)."""
    v = rng.choice(VARS)
    while True:
        d, c = rng.randint(7, 19), rng.randint(10, 999)
        if rng.random() < 0.5:
            e = rng.randint(0, 9)
            expr, value = f"{c} * 100 + 10 * {v} + {e}", lambda n: c * 100 + 10 * n + e
        else:
            expr, value = f"{c} * 10 + {v}", lambda n: c * 10 + n
        fits = [n for n in range(10) if value(n) % d == 0]
        if len(fits) == 1:
            return f"({v} : ℕ)", (f"{v} ≤ 9", f"{d} ∣ {expr}"), f"{v} = {fits[0]}", 2


def _inverse(rng: random.Random) -> Fact:
    """The one ``x < m`` with ``x * a % m = r``."""
    v = rng.choice(VARS)
    while True:
        m, a = rng.randint(5, 60), rng.randint(2, 30)
        if math.gcd(a, m) == 1 and a % m:
            break
    r = rng.randrange(1, m)
    return f"({v} : ℕ)", (f"{v} < {m}", f"{v} * {a} % {m} = {r}"), f"{v} = {r * pow(a, -1, m) % m}", 2


def _linear(rng: random.Random) -> Fact:
    """Two unknowns pinned by two linear equations, or a chain of bounds."""
    if rng.random() < 0.5:
        x, y, c = rng.randint(0, 40), rng.randint(0, 40), rng.randint(1, 5)
        hyps = (f"{c} * a + b = {c * x + y}", f"b = {y}")
        return "(a b : ℕ)", hyps, rng.choice([f"a = {x}", f"a + b = {x + y}"]), 2
    k1, k2 = rng.randint(0, 5), rng.randint(0, 5)
    hyps = (f"a + {k1} < b", f"b + {k2} ≤ c")
    return "(a b c : ℕ)", hyps, f"a + {k1 + k2 + 1} ≤ c", 2


SIMPLE: Sequence[Callable[[random.Random], Fact]] = (_forward, _backward, _digit, _inverse, _linear)


def _compound(rng: random.Random) -> tuple[Fact, list[str]]:
    """A connective over simple facts: ``P ∧ Q`` (``constructor``), ``P → Q`` (``intro``), ``P ∨ Q`` (``left``/``right``)."""
    binders, hyps, goal, _ = rng.choice(SIMPLE)(rng)
    roll = rng.random()
    if roll < 0.4:  # the last hypothesis moves into the goal: ``H → goal``
        return (binders, hyps[:-1], f"{hyps[-1]} → {goal}", 3), [f"intro {_name(len(hyps) - 1)}", "omega"]
    if roll < 0.7:
        _, _, other, _ = _closed(rng)
        return (binders, hyps, f"{goal} ∧ {other}", 3), ["constructor", "omega", "norm_num"]
    wrong = _falsify(goal)
    if rng.random() < 0.5:
        return (binders, hyps, f"{goal} ∨ {wrong}", 3), ["left", "omega"]
    return (binders, hyps, f"{wrong} ∨ {goal}", 3), ["right", "omega"]


def _falsify(goal: str) -> str:
    """A decoy disjunct: ``lhs = v`` becomes ``lhs = v + 1`` (a different claim; whether true does not matter)."""
    lhs, _, rhs = goal.rpartition(" = ")
    return f"{lhs} = {int(rhs) + 1}" if lhs and rhs.isdigit() else f"{goal.split(' ≤ ')[0]} = 0"


def _one(rng: random.Random) -> tuple[Fact, list[str]]:
    roll = rng.random()
    if roll < 0.25:
        return _closed(rng), ["norm_num"]
    if roll < 0.7:
        return rng.choice(SIMPLE)(rng), ["omega"]
    return _compound(rng)


def generate(n: int, seed: int, *, prefix: str = "nat", exclude: Collection[str] = FINGERPRINTS) -> list[PropTheorem]:
    """``n`` distinct theorems for ``seed``, none passing through a state of ``exclude`` (fingerprints)."""
    rng, seen, out, banned = random.Random(seed), set(), [], frozenset(exclude or ())
    while len(out) < n:
        (binders, hyps, goal, level), proof = _one(rng)
        head = " ".join([binders] * bool(binders) + [f"({_name(i)} : {h})" for i, h in enumerate(hyps)])
        body = f"{head + ' ' if head else ''}: {goal} := by sorry"
        if body in seen:
            continue
        seen.add(body)
        name = f"{prefix}_d{level}_{len(out):05d}"
        thm = Theorem(formal_statement=f"theorem {name} {body}", name=name, header=HEADER, split="train",
                      extra={"proof": proof, "difficulty": level, "depth": 0, "proof_length": len(proof)})
        if banned and not banned.isdisjoint(_states_of_proof(thm, proof)):
            continue
        out.append(PropTheorem(thm, tuple(proof), level, 0))
    return out


def fingerprints_of(statement: Theorem) -> set[str]:
    """The start state of a statement (none if the simulator cannot start it), and each after an ``intro``."""
    lean = LocalProcess()
    try:
        state = lean.start_proof(statement.start_source())
    except LeanError:
        return set()
    found = _fingerprints(state)
    for i in range(8):  # `P → Q → R` gives its hypotheses one `intro` at a time (named: `a✝` would be a key apart)
        result = lean.apply_tactic(state, f"intro fingerprint_h{i}")
        if not result.ok or len(result.states) != 1:
            break
        state = result.states[0]
        found |= _fingerprints(state)
    return found


def benchmark_fingerprints() -> frozenset[str]:
    """What :data:`FINGERPRINTS` should be: the local miniF2F copy's (``$LEANGYM_MINIF2F`` or ../shared)."""
    from leangym.datasets import load_theorems, minif2f

    path = minif2f.local_copy()
    if path is None:
        raise FileNotFoundError("no miniF2F copy: set LEANGYM_MINIF2F to one, or put ../shared/data/minif2f beside "
                                "the checkout")
    return frozenset(f for t in load_theorems(str(path)) for f in fingerprints_of(t))


def _write_fingerprints() -> int:
    """Rewrite :data:`FINGERPRINTS` in its module from the local copy; returns how many."""
    from leangym.datasets import minif2f_fingerprints

    path = Path(minif2f_fingerprints.__file__)
    begin, end = "    # BEGIN (written by natarith --write-fingerprints)\n", "    # END\n"
    head, _, rest = path.read_text(encoding="utf-8").partition(begin)
    tail = rest.partition(end)[2]
    found = sorted(benchmark_fingerprints())
    path.write_text(head + begin + "".join(f'    "{f}",\n' for f in found) + end + tail, encoding="utf-8")
    return len(found)


def _states_of_proof(thm: Theorem, proof: Sequence[str]) -> set[str]:
    """Fingerprints of every goal the reference proof passes through (each tactic on the first open goal)."""
    lean = LocalProcess()
    open_ = [lean.start_proof(thm.start_source())]
    found: set[str] = set()
    for tactic in proof:
        found |= _fingerprints(open_[0])
        result = lean.apply_tactic(open_[0], tactic)
        if not result.ok:
            break
        open_ = list(result.states) + open_[1:]
    return found


def _fingerprints(state: ProofState) -> set[str]:
    """One per goal: its text up to local names and case tags (``goal_key.alpha_key`` reads no tag), hashed."""
    return {hashlib.sha256(alpha_key(ProofState(0, 0, (g,))).encode()).hexdigest()[:16] for g in state.goals}


def _name(i: int) -> str:
    return "h" + str(i).translate(_SUBSCRIPT)  # h₀ h₁ ...: miniF2F's names


_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m leangym.datasets.natarith -n 1000 --seed 0 -o nat.jsonl``."""
    from leangym.cli import ArgumentParser

    ap = ArgumentParser(prog="python -m leangym.datasets.natarith",
                        description="Write generated ℕ-arithmetic theorems with reference proofs as JSONL.")
    ap.add_argument("-n", type=int, default=1000, help="number of theorems")
    ap.add_argument("--seed", type=int, default=0, help="seed of the stream")
    ap.add_argument("-o", "--out")
    ap.add_argument("--write-fingerprints", action="store_true",
                    help="remake minif2f_fingerprints.py from the local miniF2F copy (after a change to the simulator)")
    a = ap.parse_args(argv)
    if a.write_fingerprints:
        print(f"{_write_fingerprints()} fingerprints -> leangym/datasets/minif2f_fingerprints.py")
        return 0
    if not a.out:
        ap.error("-o/--out is required (the JSONL to write)")
    if a.n < 0:
        ap.error(f"-n must be 0 or more, got {a.n}")
    print(f"{to_jsonl(a.out, generate(a.n, a.seed))} theorems -> {a.out}")
    return 0


if __name__ == "__main__":
    from leangym.cli import run_cli

    run_cli(main)
