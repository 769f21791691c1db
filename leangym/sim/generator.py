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
    to_row / from_row / to_jsonl(path, theorems) / read_jsonl(path)
    PropTheorem(theorem, proof, difficulty, depth)    # .proof_length .script .source .name
    LEVELS[d] = Level(proof_length=(lo, hi), depth=(lo, hi), size=...)

    python -m leangym.sim.generator -n 10000 --seed 0 -o train.jsonl   # warm-start data

Soundness notes for real Lean 4 (Mathlib header): ``by_contra`` is only used
on goals that are no negation (Mathlib's ``by_contra h`` on ``¬q`` introduces
``h : q``); ``apply h`` only on goals that are no implication/negation (no
ambiguity in how many arguments it fills); an ``rcases`` target is never merged
with another hypothesis of the same type (``rcases`` clears it).

Everything is deterministic for a seed, across processes and hash seeds: only
``random.Random.random`` is drawn from and no set is iterated.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Iterator, Mapping, Sequence

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
    "read_jsonl",
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

_MAX_HYPS = 6  # more theorem hypotheses than this is rejected
_MAX_TRIES = 2000  # consecutive failures before a level counts as exhausted

# --------------------------------------------------------------------------- formulas
# Formulas are tuples: ("var", i) ("true",) ("false",) ("arith", text)
# ("not", a) ("and", a, b) ("or", a, b) ("imp", a, b) ("iff", a, b).

TRUE = ("true",)
FALSE = ("false",)
_PREC = {"iff": 20, "imp": 25, "or": 30, "and": 35}
_SYM = {"iff": "↔", "imp": "→", "or": "∨", "and": "∧"}
VAR_NAMES = ("p", "q", "r", "s", "t")
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def render(f: tuple, names: Sequence[str] = VAR_NAMES, prec: int = 0) -> str:
    """``f`` in Lean 4 syntax with minimal parentheses, as an argument of precedence ``prec``."""
    tag = f[0]
    if tag == "var":
        return names[f[1]]
    if tag == "true":
        return "True"
    if tag == "false":
        return "False"
    if tag == "arith":  # `=`, `<`, `≤` are precedence 50
        return f[1] if prec <= 50 else f"({f[1]})"
    if tag == "not":  # notation:max "¬" p:40
        return "¬" + render(f[1], names, 40)
    p = _PREC[tag]
    left = p + 1
    right = p + 1 if tag == "iff" else p
    s = f"{render(f[1], names, left)} {_SYM[tag]} {render(f[2], names, right)}"
    return s if prec <= p else f"({s})"


def depth(f: tuple) -> int:
    """Connective depth: atoms 0, ``¬a`` and ``a ∘ b`` one more than their arguments."""
    n = len(f)
    if n == 1 or f[0] in ("var", "arith"):
        return 0
    if n == 2:
        return 1 + depth(f[1])
    return 1 + max(depth(f[1]), depth(f[2]))


def _vars_in_order(f: tuple, out: list[int]) -> None:
    tag = f[0]
    if tag == "var":
        if f[1] not in out:
            out.append(f[1])
    elif tag in ("not",):
        _vars_in_order(f[1], out)
    elif len(f) == 3 and tag != "arith":
        _vars_in_order(f[1], out)
        _vars_in_order(f[2], out)


def _rename_vars(f: tuple, m: Mapping[int, int]) -> tuple:
    tag = f[0]
    if tag == "var":
        return ("var", m[f[1]])
    if tag == "not":
        return ("not", _rename_vars(f[1], m))
    if tag in _PREC:
        return (tag, _rename_vars(f[1], m), _rename_vars(f[2], m))
    return f


def _has_echo(f: tuple) -> bool:
    """``a ∘ a`` somewhere in ``f`` (``p ∧ p``, ``q → q``): legal but reads as noise."""
    if len(f) == 3 and f[0] in _PREC:
        return f[1] == f[2] or _has_echo(f[1]) or _has_echo(f[2])
    return f[0] == "not" and _has_echo(f[1])


# --------------------------------------------------------------------------- construction


def _direct(goal: tuple, ctx: Mapping[int, tuple]) -> str | None:
    """One ``exact``/``assumption`` closing ``goal`` from ``ctx``, or None."""
    items = list(ctx.items())
    items.reverse()  # the most recent hypothesis first
    for i, f in items:
        if f == goal:
            return f"exact H{i}"
    for i, f in items:
        t = f[0]
        if t == "and":
            if f[1] == goal:
                return f"exact H{i}.1"
            if f[2] == goal:
                return f"exact H{i}.2"
        elif t == "iff" and goal[0] == "imp":
            if (f[1], f[2]) == (goal[1], goal[2]):
                return f"exact H{i}.1"
            if (f[2], f[1]) == (goal[1], goal[2]):
                return f"exact H{i}.2"
        elif t == "imp" and f[2] == goal:
            for j, g in items:
                if g == f[1]:
                    return f"exact H{i} H{j}"
        elif t == "not" and goal == FALSE:
            for j, g in items:
                if g == f[1]:
                    return f"exact H{i} H{j}"
    for i, f in items:
        if f == FALSE and goal == FALSE:
            return f"exact H{i}"
    for i, f in items:
        if f[0] == "not":
            for j, g in items:
                if g == f[1]:
                    return f"exact absurd H{j} H{i}"
    if goal[0] == "and":
        a = b = None
        for i, f in items:
            if a is None and f == goal[1]:
                a = i
            if b is None and f == goal[2]:
                b = i
        if a is not None and b is not None:
            return f"exact ⟨H{a}, H{b}⟩"
    return None


class _Node:
    """A proof of ``goal`` by ``tactics`` (hypotheses written ``H<id>``) using hypotheses ``reqs``."""

    __slots__ = ("goal", "tactics", "reqs")

    def __init__(self, goal: tuple, tactics: list[str], reqs: dict[int, tuple]):
        self.goal = goal
        self.tactics = tactics
        self.reqs = reqs


class _Builder:
    """Grows one random proof tree. ``reqs`` are free hypotheses, keyed by id, in use order."""

    def __init__(self, rng: random.Random, nvars: int, arith: float, classical: float):
        self.r = rng.random
        self.nvars = nvars
        self.arith_p = arith
        self.classical_p = classical
        self.next_id = 0
        self.alias: dict[int, int] = {}
        self.cleared: list[int] = []  # rcases targets: never merged with another hypothesis

    # -- randomness (only random() is used: stable across Python versions)
    def randint(self, lo: int, hi: int) -> int:
        return lo + int(self.r() * (hi - lo + 1))

    def pick(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.r() * len(seq))]

    def weighted(self, options: Sequence[tuple[float, str]]) -> str:
        total = 0.0
        for w, _ in options:
            total += w
        x = self.r() * total
        for w, name in options:
            x -= w
            if x < 0:
                return name
        return options[-1][1]

    def fresh(self) -> int:
        self.next_id += 1
        return self.next_id

    # -- formulas
    def atom(self) -> tuple:
        x = self.r()
        if x < 0.02:
            return TRUE
        if x < 0.035:
            return FALSE
        return ("var", int(self.r() * self.nvars))

    def formula(self, d: int) -> tuple:
        if d <= 0 or self.r() < 0.4:
            return ("var", int(self.r() * self.nvars)) if self.r() < 0.97 else self.atom()
        k = self.weighted(((3, "and"), (2.5, "or"), (2.5, "imp"), (1.5, "not"), (0.5, "iff")))
        if k == "not":
            return ("not", self.formula(d - 1))
        a = self.formula(d - 1)
        b = self.formula(d - 1)
        for _ in range(3):  # no `p ∧ p`, `p → p`, ...: they read as noise
            if b != a:
                break
            b = self.formula(d - 1)
        return (k, a, b) if b != a else a

    def small(self) -> tuple:
        return self.formula(0 if self.r() < 0.6 else 1)

    def other(self, a: tuple) -> tuple:
        """A small formula different from ``a`` (mostly)."""
        for _ in range(4):
            b = self.small()
            if b != a:
                return b
        return ("not", a)

    def arith(self) -> tuple:
        x = self.r()
        if x < 0.5:
            a, b = self.randint(0, 12), self.randint(0, 12)
            if self.r() < 0.6:
                return ("arith", f"{a} + {b} = {a + b}")
            a, b = self.randint(0, 9), self.randint(0, 9)
            return ("arith", f"{a} * {b} = {a * b}")
        a = self.randint(0, 20)
        b = a + self.randint(0 if x >= 0.75 else 1, 9)
        return ("arith", f"{a} {'≤' if x >= 0.75 else '<'} {b}")

    def arith_tactic(self) -> str:
        return "norm_num" if self.r() < 0.5 else "decide"

    # -- discharging requests
    def resolve(self, i: int) -> int:
        while i in self.alias:
            i = self.alias[i]
        return i

    def discharge(self, reqs: dict[int, tuple], x: int) -> dict[int, tuple]:
        """Remove ``x`` from ``reqs``; merge requests of the same formula into ``x`` (it is in scope)."""
        f = reqs[x]
        out = {}
        for i, g in reqs.items():
            if i == x:
                continue
            if g == f and x not in self.cleared and i not in self.cleared:
                self.alias[i] = x
                continue
            out[i] = g
        return out

    # -- leaves
    def leaf(self, false: bool) -> _Node:
        r = self.r
        if false:
            k = self.weighted(((4, "neg"), (0.3, "false"), (0.5, "absurd")))
        else:
            k = self.weighted(
                (
                    (3, "hyp"),
                    (1.5, "proj"),
                    (0.4, "iffproj"),
                    (1.5, "mp"),
                    (1, "pair"),
                    (0.5, "absurd"),
                    (0.3, "trivial"),
                    (3 * self.arith_p, "arith"),
                )
            )
        if k == "hyp":
            h, f = self.fresh(), self.small()
            return _Node(f, [f"exact H{h}" if r() < 0.8 else "assumption"], {h: f})
        if k == "proj":
            h, a = self.fresh(), self.small()
            b = self.other(a)
            if r() < 0.5:
                return _Node(a, [f"exact H{h}.1"], {h: ("and", a, b)})
            return _Node(b, [f"exact H{h}.2"], {h: ("and", a, b)})
        if k == "iffproj":
            h, a = self.fresh(), self.formula(0)
            b = self.other(a)
            if r() < 0.5:
                return _Node(("imp", a, b), [f"exact H{h}.1"], {h: ("iff", a, b)})
            return _Node(("imp", b, a), [f"exact H{h}.2"], {h: ("iff", a, b)})
        if k == "mp":
            f, x, a = self.fresh(), self.fresh(), self.small()
            b = self.other(a)
            return _Node(b, [f"exact H{f} H{x}"], {f: ("imp", a, b), x: a})
        if k == "pair":
            x, y = self.fresh(), self.fresh()
            a = self.small()
            b = self.other(a)
            if r() < 0.15 and a != b:
                return _Node(("iff", a, b), [f"exact ⟨H{x}, H{y}⟩"], {x: ("imp", a, b), y: ("imp", b, a)})
            return _Node(("and", a, b), [f"exact ⟨H{x}, H{y}⟩"], {x: a, y: b})
        if k == "absurd":
            x, n, a = self.fresh(), self.fresh(), self.formula(0)
            goal = FALSE if false else self.formula(self.randint(0, 2))
            return _Node(goal, [f"exact absurd H{x} H{n}"], {x: a, n: ("not", a)})
        if k == "trivial":
            return _Node(TRUE, ["trivial"], {})
        if k == "arith":
            return _Node(self.arith(), [self.arith_tactic()], {})
        if k == "false":
            h = self.fresh()
            return _Node(FALSE, [f"exact H{h}"], {h: FALSE})
        # "neg": exact n a
        n, x, a = self.fresh(), self.fresh(), self.small()
        neg = ("imp", a, FALSE) if r() < 0.15 else ("not", a)
        return _Node(FALSE, [f"exact H{n} H{x}"], {n: neg, x: a})

    # -- inner rules
    def build(self, size: int, false: bool = False) -> _Node:
        if size <= 1:
            return self.leaf(false)
        if false:
            opts = [(3, "apply_neg"), (1.2, "rcases_and")]
            if size >= 3:
                opts.append((0.8, "rcases_or"))
        else:
            opts = [(3, "intro"), (1.2, "neg"), (1.2, "or"), (1.2, "rcases_and"), (0.6, "exfalso")]
            if self.classical_p > 0:
                opts.append((self.classical_p, "by_contra"))
            if size >= 3:
                opts += [(2, "and"), (0.8, "iff"), (1.2, "apply"), (0.8, "rcases_or")]
        k = self.weighted(opts)
        return getattr(self, "rule_" + k)(size, false)

    def rule_intro(self, size: int, false: bool) -> _Node:
        sub = self.build(size - 1)
        return self.intro_over(sub)

    def intro_over(self, sub: _Node) -> _Node:
        keys = [i for i, f in sub.reqs.items() if f != sub.goal]  # no `a → a`
        if keys and self.r() < 0.9:
            h = self.pick(keys)
            a = sub.reqs[h]
            reqs = self.discharge(sub.reqs, h)
        else:
            h, a, reqs = self.fresh(), self.other(sub.goal), sub.reqs
        return _Node(("imp", a, sub.goal), [f"intro H{h}"] + sub.tactics, reqs)

    def rule_neg(self, size: int, false: bool) -> _Node:
        sub = self.build(size - 1, false=True)
        if not sub.reqs:
            return self.intro_over(sub)
        x = self.pick(list(sub.reqs))
        a = sub.reqs[x]
        reqs = self.discharge(sub.reqs, x)
        if a == FALSE:
            return _Node(("imp", a, FALSE), [f"intro H{x}"] + sub.tactics, reqs)
        return _Node(("not", a), [f"intro H{x}"] + sub.tactics, reqs)

    def rule_or(self, size: int, false: bool) -> _Node:
        sub = self.build(size - 1)
        other = self.formula(self.randint(0, 1))
        if other == sub.goal:
            other = ("not", other)
        if self.r() < 0.5:
            return _Node(("or", sub.goal, other), ["left"] + sub.tactics, sub.reqs)
        return _Node(("or", other, sub.goal), ["right"] + sub.tactics, sub.reqs)

    def rule_and(self, size: int, false: bool) -> _Node:
        k = self.randint(1, size - 2)
        a = self.build(k)
        b = self.build(size - 1 - k)
        if b.goal == a.goal:
            b = self.build(size - 1 - k)
        return _Node(("and", a.goal, b.goal), ["constructor"] + a.tactics + b.tactics, {**a.reqs, **b.reqs})

    def rule_iff(self, size: int, false: bool) -> _Node:
        k = self.randint(1, max(1, (size - 1) // 2))
        a = self.intro_over(self.build(k))
        _, x, y = a.goal
        if x == y:
            return a
        tactics, reqs = self.fixed(("imp", y, x), dict(a.reqs), 3)
        return _Node(("iff", x, y), ["constructor"] + a.tactics + tactics, {**a.reqs, **reqs})

    def rule_apply(self, size: int, false: bool) -> _Node:
        premises = 2 if size >= 4 and self.r() < 0.4 else 1
        if premises == 2:
            k = self.randint(1, size - 3)
            subs = [self.build(k), self.build(size - 1 - k)]
        else:
            subs = [self.build(size - 1)]
        goal = self.formula(self.randint(0, 1))
        while goal[0] in ("imp", "not") or goal == FALSE:
            goal = self.formula(self.randint(0, 1))
        f = goal
        for s in reversed(subs):
            f = ("imp", s.goal, f)
        h = self.fresh()
        reqs = {h: f}
        tactics = [f"apply H{h}"]
        for s in subs:
            reqs.update(s.reqs)
            tactics += s.tactics
        return _Node(goal, tactics, reqs)

    def rule_apply_neg(self, size: int, false: bool) -> _Node:
        sub = self.build(size - 1)
        if sub.goal == FALSE:
            return sub
        n = self.fresh()
        neg = ("imp", sub.goal, FALSE) if self.r() < 0.15 else ("not", sub.goal)
        return _Node(FALSE, [f"apply H{n}"] + sub.tactics, {n: neg, **sub.reqs})

    def rule_rcases_and(self, size: int, false: bool) -> _Node:
        sub = self.build(size - 1, false)
        if not sub.reqs:
            return sub if false else self.intro_over(sub)
        keys = list(sub.reqs)
        x = self.pick(keys)
        a = sub.reqs[x]
        reqs = self.discharge(sub.reqs, x)
        others = [i for i in reqs if i != x]
        if others and self.r() < 0.6:
            y = self.pick(others)
            b = reqs[y]
            reqs = self.discharge(reqs, y)
        else:
            y = self.fresh()
            b = self.other(a)
            if a[0] == "imp" and self.r() < 0.4:
                b = ("imp", a[2], a[1])
        h = self.fresh()
        self.cleared.append(h)
        if a[0] == "imp" and b == ("imp", a[2], a[1]) and a[1] != a[2]:
            hf = ("iff", a[1], a[2])
        else:
            hf = ("and", a, b)
        reqs[h] = hf
        return _Node(sub.goal, [f"rcases H{h} with ⟨H{x}, H{y}⟩"] + sub.tactics, reqs)

    def rule_rcases_or(self, size: int, false: bool) -> _Node:
        a = self.build(max(1, size - 2 - int(self.r() * (size - 2) / 2)), false)
        goal = a.goal
        if not a.reqs:
            return a if false else self.intro_over(a)
        x = self.pick(list(a.reqs))
        fa = a.reqs[x]
        reqs = self.discharge(a.reqs, x)
        y = self.fresh()
        c = self.r()
        if c < 0.25:
            fb = goal
        elif c < 0.45:
            fb = ("and", goal, self.small()) if self.r() < 0.5 else ("and", self.small(), goal)
        else:
            fb = self.formula(self.randint(0, 1))
        if fb == fa:
            fb = ("not", fa) if fa[0] != "not" else fa[1]
        ctx = dict(reqs)
        ctx[y] = fb
        tactics, breqs = self.fixed(goal, ctx, 3)
        h = self.fresh()
        self.cleared.append(h)
        out = dict(reqs)
        out.update(breqs)
        out[h] = ("or", fa, fb)
        return _Node(goal, [f"rcases H{h} with H{x} | H{y}"] + a.tactics + tactics, out)

    def rule_exfalso(self, size: int, false: bool) -> _Node:
        sub = self.build(size - 1, false=True)
        goal = self.formula(self.randint(0, 2))
        if goal == FALSE:
            return sub
        return _Node(goal, ["exfalso"] + sub.tactics, sub.reqs)

    def rule_by_contra(self, size: int, false: bool) -> _Node:
        sub = self.build(size - 1, false=True)
        # Mathlib's `by_contra h` on a goal `¬q` introduces `h : q`: keep to goals that are no negation
        cands = [
            i for i, f in sub.reqs.items()
            if f[0] == "not" and f[1][0] not in ("not", "true", "false") and not (f[1][0] == "imp" and f[1][2] == FALSE)
        ]
        if not cands:
            return self.intro_over(sub)
        x = self.pick(cands)
        goal = sub.reqs[x][1]
        reqs = self.discharge(sub.reqs, x)
        return _Node(goal, [f"by_contra H{x}"] + sub.tactics, reqs)

    # -- proving a given goal (second branches, the other direction of ↔)
    def fixed(self, goal: tuple, ctx: dict[int, tuple], budget: int) -> tuple[list[str], dict[int, tuple]]:
        """A script for exactly ``goal``; facts it cannot derive from ``ctx`` become requests."""
        t = _direct(goal, ctx)
        if t is not None:
            return [t], {}
        tag = goal[0]
        if tag == "true":
            return ["trivial"], {}
        if tag == "arith":
            return [self.arith_tactic()], {}
        if budget > 0:
            if tag in ("imp", "not"):
                h = self.fresh()
                inner = dict(ctx)
                inner[h] = goal[1]
                tactics, reqs = self.fixed(goal[2] if tag == "imp" else FALSE, inner, budget - 1)
                return [f"intro H{h}"] + tactics, reqs
            if tag in ("and", "iff"):
                if tag == "and":
                    ga, gb = goal[1], goal[2]
                else:
                    ga, gb = ("imp", goal[1], goal[2]), ("imp", goal[2], goal[1])
                ta, ra = self.fixed(ga, ctx, budget - 1)
                tb, rb = self.fixed(gb, {**ctx, **ra}, budget - 1)
                return ["constructor"] + ta + tb, {**ra, **rb}
            if tag == "or":
                for side, g in (("left", goal[1]), ("right", goal[2])):
                    t = _direct(g, ctx)
                    if t is not None:
                        return [side, t], {}
                side = "left" if self.r() < 0.5 else "right"
                tactics, reqs = self.fixed(goal[1] if side == "left" else goal[2], ctx, budget - 1)
                return [side] + tactics, reqs
            if tag == "false":
                negs = [(i, f[1]) for i, f in ctx.items() if f[0] == "not"]
                if negs:
                    i, a = self.pick(negs)
                    tactics, reqs = self.fixed(a, ctx, budget - 1)
                    return [f"apply H{i}"] + tactics, reqs
        if tag == "false":
            pos = [(i, f) for i, f in ctx.items() if f[0] not in ("not", "false", "true")]
            if pos:
                i, a = self.pick(pos)
                n = self.fresh()
                return [f"exact H{n} H{i}"], {n: ("not", a)}
        h = self.fresh()
        return [f"exact H{h}"], {h: goal}


# --------------------------------------------------------------------------- shortest-script check


def _shortcut(goal: tuple, ctx: dict[int, tuple], budget: int, fresh: list[int]) -> list[str] | None:
    """A short structural proof of ``goal`` from ``ctx`` with no requests, or None.

    Tries one closing ``exact``/``trivial`` first, then intro/constructor/left/right.
    Used to replace a construction whose statement turned out easier than its proof.
    """
    t = _direct(goal, ctx)
    if t is not None:
        return [t]
    tag = goal[0]
    if tag == "true":
        return ["trivial"]
    if budget <= 0:
        return None
    if tag in ("imp", "not"):
        fresh[0] += 1
        h = fresh[0]
        inner = dict(ctx)
        inner[h] = goal[1]
        rest = _shortcut(goal[2] if tag == "imp" else FALSE, inner, budget - 1, fresh)
        return None if rest is None else [f"intro H{h}"] + rest
    if tag in ("and", "iff"):
        if tag == "and":
            ga, gb = goal[1], goal[2]
        else:
            ga, gb = ("imp", goal[1], goal[2]), ("imp", goal[2], goal[1])
        ta = _shortcut(ga, ctx, budget - 1, fresh)
        if ta is None:
            return None
        tb = _shortcut(gb, ctx, budget - 1, fresh)
        return None if tb is None else ["constructor"] + ta + tb
    if tag == "or":
        best = None
        for side, g in (("left", goal[1]), ("right", goal[2])):
            t = _shortcut(g, ctx, budget - 1, fresh)
            if t is not None and (best is None or len(t) + 1 < len(best)):
                best = [side] + t
        return best
    return None


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


_HID = re.compile(r"H(\d+)")


def _finish(b: _Builder, root: _Node, spec: Level | None = None) -> tuple[str, list[str], int, int, int] | None:
    """(statement body without ``theorem NAME``, proof, binder count, depth, proof length).

    None when rejected: too many hypotheses, ``a ∘ a`` noise, or (with ``spec``)
    a proof length or depth outside the level's ranges.
    """
    res = b.resolve
    # theorem hypotheses, merged when equal (unless rcases clears one of them)
    hyps: dict[int, tuple] = {}
    for i, f in root.reqs.items():
        i = res(i)
        if i in hyps:
            continue
        hyps[i] = f
    merged: dict[int, tuple] = {}
    by_formula: dict[tuple, int] = {}
    cleared = {res(c) for c in b.cleared}
    for i, f in hyps.items():
        j = by_formula.get(f)
        if j is not None and i not in cleared and j not in cleared:
            b.alias[i] = j
            continue
        if i not in cleared:
            by_formula.setdefault(f, i)
        merged[i] = f
    if len(merged) > _MAX_HYPS or _has_echo(root.goal) or any(_has_echo(f) for f in merged.values()):
        return None
    d = max([depth(root.goal)] + [depth(f) for f in merged.values()])
    if spec is not None and not (spec.depth[0] <= d <= spec.depth[1]):
        return None
    # quick structural proof of the finished statement: keep the shorter script
    fresh = [b.next_id + 1000]
    short = _shortcut(root.goal, merged, 4, fresh)
    if short is not None and len(short) < len(root.tactics):
        tactics = short
    else:
        tactics = [_HID.sub(lambda m: f"H{res(int(m.group(1)))}", t) for t in root.tactics]
    if spec is not None and not (spec.proof_length[0] <= len(tactics) <= spec.proof_length[1]):
        return None
    # names: theorem hypotheses in order of first use, then local ones in order of appearance
    order: list[int] = []
    seen: dict[int, None] = {}
    for t in tactics:
        for m in _HID.finditer(t):
            i = int(m.group(1))
            if i not in seen:
                seen[i] = None
                order.append(i)
    binders = [i for i in order if i in merged] + [i for i in merged if i not in seen]
    locals_ = [i for i in order if i not in merged]
    names = {i: "h" + str(k + 1).translate(_SUB) for k, i in enumerate(binders + locals_)}
    tactics = [_HID.sub(lambda m: names[int(m.group(1))], t) for t in tactics]
    # variables: p q r ... in order of first appearance
    formulas = [merged[i] for i in binders] + [root.goal]
    vs: list[int] = []
    for f in formulas:
        _vars_in_order(f, vs)
    vmap = {v: k for k, v in enumerate(vs)}
    formulas = [_rename_vars(f, vmap) for f in formulas]
    parts = []
    if vs:
        parts.append(f"({' '.join(VAR_NAMES[: len(vs)])} : Prop)")
    for i, f in zip(binders, formulas):
        parts.append(f"({names[i]} : {render(f)})")
    body = " ".join(parts) + (" " if parts else "") + f": {render(formulas[-1])} := by sorry"
    return body, tactics, len(binders), d, len(tactics)


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
        b = _Builder(self.rng, nvars, self.arith, self.classical)
        lo, hi = spec.size
        root = b.build(b.randint(lo, hi))
        out = _finish(b, root, spec)
        if out is None:
            return None
        body, tactics, _, d, _ = out
        return body, tactics, d


def _levels(difficulty: int | tuple[int, int]) -> list[int]:
    if isinstance(difficulty, int):
        lo = hi = difficulty
    else:
        lo, hi = difficulty
    if not (1 <= lo <= hi <= MAX_DIFFICULTY):
        raise ValueError(f"difficulty must be in 1..{MAX_DIFFICULTY} (or a (lo, hi) range), got {difficulty!r}")
    return list(range(lo, hi + 1))


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
) -> Iterator[PropTheorem]:
    levels = _levels(difficulty)
    src = _Source(seed, arith, classical)
    seen = set(exclude)
    index = 0
    active = list(levels)
    while active:
        for level in list(active):
            for _ in range(_MAX_TRIES):
                got = src.draw(level)
                if got is None:
                    continue
                body, tactics, d = got
                key = statement_key("theorem _ " + body)
                if key in seen:
                    continue
                seen.add(key)
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
    prefix: str = "prop",
) -> Iterator[PropTheorem]:
    """Endless distinct theorems for training, never one of the held-out statements.

    ``exclude`` defaults to :func:`heldout_set` (its default size); pass a larger
    held-out set, or extra statements, to exclude more. A level whose theorems
    run out (only the easiest can) drops out of the cycle; the stream ends when
    every level has.
    """
    keys = _exclusion_keys(heldout_set() if exclude is None else exclude)
    return _stream(seed, difficulty, keys, arith, classical, prefix, "train")


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


def read_jsonl(path: str) -> list[PropTheorem]:
    with open(path, encoding="utf-8") as fh:
        return [from_row(json.loads(line)) for line in fh if line.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m leangym.sim.generator -n 1000 --seed 0 -o train.jsonl`` (``--heldout`` for the evaluation set)."""
    import argparse

    ap = argparse.ArgumentParser(description="Write generated PropLogic theorems with reference proofs as JSONL.")
    ap.add_argument("-n", type=int, default=1000, help="number of theorems")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--difficulty", default=f"1-{MAX_DIFFICULTY}", help="a level (3) or a range (1-5)")
    ap.add_argument("--heldout", action="store_true", help="write heldout_set(n) instead")
    ap.add_argument("--no-exclude", action="store_true", help="do not exclude the held-out statements")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args(argv)
    lo, _, hi = a.difficulty.partition("-")
    diff: int | tuple[int, int] = (int(lo), int(hi)) if hi else int(lo)
    if a.heldout:
        ts = heldout_set(a.n)
    else:
        ts = generate(a.n, a.seed, diff, exclude=None if a.no_exclude else heldout_set())
    print(f"{to_jsonl(a.out, ts)} theorems -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
