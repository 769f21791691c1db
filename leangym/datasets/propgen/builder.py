"""The random proof tree a theorem is read off.

A :class:`Node` proves its ``goal`` by a linear script (hypotheses written
``H<id>``) from the hypotheses it *requests*. Leaves request the facts they
use; an ``intro``/``rcases``/``by_contra`` higher up discharges a request (the
hypothesis is then in scope), and whatever is still requested at the root
becomes a hypothesis of the theorem.

Soundness notes for real Lean 4 (Mathlib header): ``by_contra`` is only used
on goals that are no negation (Mathlib's ``by_contra h`` on ``¬q`` introduces
``h : q``); ``apply h`` only on goals that are no implication/negation (no
ambiguity in how many arguments it fills); an ``rcases`` target is never merged
with another hypothesis of the same type (``rcases`` clears it).
"""
from __future__ import annotations

import random

from leangym.datasets.propgen.draw import Draw
from leangym.datasets.propgen.formulas import FALSE, TRUE, halves
from leangym.datasets.propgen.prover import direct


class Node:
    """A proof of ``goal`` by ``tactics`` (hypotheses written ``H<id>``) using hypotheses ``reqs``."""

    __slots__ = ("goal", "tactics", "reqs")

    def __init__(self, goal: tuple, tactics: list[str], reqs: dict[int, tuple]):
        self.goal = goal
        self.tactics = tactics
        self.reqs = reqs


class Builder(Draw):
    """Grows one random proof tree. ``reqs`` are free hypotheses, keyed by id, in use order."""

    def __init__(self, rng: random.Random, nvars: int, arith: float, classical: float):
        super().__init__(rng, nvars)
        self.arith_p = arith
        self.classical_p = classical
        self.next_id = 0
        self.alias: dict[int, int] = {}
        self.cleared: list[int] = []  # rcases targets: never merged with another hypothesis

    def fresh(self) -> int:
        self.next_id += 1
        return self.next_id

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
    def leaf(self, false: bool) -> Node:
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
            return Node(f, [f"exact H{h}" if r() < 0.8 else "assumption"], {h: f})
        if k == "proj":
            h, a = self.fresh(), self.small()
            b = self.other(a)
            if r() < 0.5:
                return Node(a, [f"exact H{h}.1"], {h: ("and", a, b)})
            return Node(b, [f"exact H{h}.2"], {h: ("and", a, b)})
        if k == "iffproj":
            h, a = self.fresh(), self.formula(0)
            b = self.other(a)
            if r() < 0.5:
                return Node(("imp", a, b), [f"exact H{h}.1"], {h: ("iff", a, b)})
            return Node(("imp", b, a), [f"exact H{h}.2"], {h: ("iff", a, b)})
        if k == "mp":
            f, x, a = self.fresh(), self.fresh(), self.small()
            b = self.other(a)
            return Node(b, [f"exact H{f} H{x}"], {f: ("imp", a, b), x: a})
        if k == "pair":
            x, y = self.fresh(), self.fresh()
            a = self.small()
            b = self.other(a)
            if r() < 0.15 and a != b:
                return Node(("iff", a, b), [f"exact ⟨H{x}, H{y}⟩"], {x: ("imp", a, b), y: ("imp", b, a)})
            return Node(("and", a, b), [f"exact ⟨H{x}, H{y}⟩"], {x: a, y: b})
        if k == "absurd":
            x, n, a = self.fresh(), self.fresh(), self.formula(0)
            goal = FALSE if false else self.formula(self.randint(0, 2))
            return Node(goal, [f"exact absurd H{x} H{n}"], {x: a, n: ("not", a)})
        if k == "trivial":
            return Node(TRUE, ["trivial"], {})
        if k == "arith":
            return Node(self.arith(), [self.arith_tactic()], {})
        if k == "false":
            h = self.fresh()
            return Node(FALSE, [f"exact H{h}"], {h: FALSE})
        # "neg": exact n a
        n, x, a = self.fresh(), self.fresh(), self.small()
        neg = ("imp", a, FALSE) if r() < 0.15 else ("not", a)
        return Node(FALSE, [f"exact H{n} H{x}"], {n: neg, x: a})

    # -- inner rules
    def build(self, size: int, false: bool = False) -> Node:
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

    def rule_intro(self, size: int, false: bool) -> Node:
        sub = self.build(size - 1)
        return self.intro_over(sub)

    def intro_over(self, sub: Node) -> Node:
        keys = [i for i, f in sub.reqs.items() if f != sub.goal]  # no `a → a`
        if keys and self.r() < 0.9:
            h = self.pick(keys)
            a = sub.reqs[h]
            reqs = self.discharge(sub.reqs, h)
        else:
            h, a, reqs = self.fresh(), self.other(sub.goal), sub.reqs
        return Node(("imp", a, sub.goal), [f"intro H{h}"] + sub.tactics, reqs)

    def rule_neg(self, size: int, false: bool) -> Node:
        sub = self.build(size - 1, false=True)
        if not sub.reqs:
            return self.intro_over(sub)
        x = self.pick(list(sub.reqs))
        a = sub.reqs[x]
        reqs = self.discharge(sub.reqs, x)
        if a == FALSE:
            return Node(("imp", a, FALSE), [f"intro H{x}"] + sub.tactics, reqs)
        return Node(("not", a), [f"intro H{x}"] + sub.tactics, reqs)

    def rule_or(self, size: int, false: bool) -> Node:
        sub = self.build(size - 1)
        other = self.formula(self.randint(0, 1))
        if other == sub.goal:
            other = ("not", other)
        if self.r() < 0.5:
            return Node(("or", sub.goal, other), ["left"] + sub.tactics, sub.reqs)
        return Node(("or", other, sub.goal), ["right"] + sub.tactics, sub.reqs)

    def rule_and(self, size: int, false: bool) -> Node:
        k = self.randint(1, size - 2)
        a = self.build(k)
        b = self.build(size - 1 - k)
        if b.goal == a.goal:
            b = self.build(size - 1 - k)
        return Node(("and", a.goal, b.goal), ["constructor"] + a.tactics + b.tactics, {**a.reqs, **b.reqs})

    def rule_iff(self, size: int, false: bool) -> Node:
        k = self.randint(1, max(1, (size - 1) // 2))
        a = self.intro_over(self.build(k))
        _, x, y = a.goal
        if x == y:
            return a
        tactics, reqs = self.fixed(("imp", y, x), dict(a.reqs), 3)
        return Node(("iff", x, y), ["constructor"] + a.tactics + tactics, {**a.reqs, **reqs})

    def rule_apply(self, size: int, false: bool) -> Node:
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
        return Node(goal, tactics, reqs)

    def rule_apply_neg(self, size: int, false: bool) -> Node:
        sub = self.build(size - 1)
        if sub.goal == FALSE:
            return sub
        n = self.fresh()
        neg = ("imp", sub.goal, FALSE) if self.r() < 0.15 else ("not", sub.goal)
        return Node(FALSE, [f"apply H{n}"] + sub.tactics, {n: neg, **sub.reqs})

    def rule_rcases_and(self, size: int, false: bool) -> Node:
        sub = self.build(size - 1, false)
        if not sub.reqs:
            return sub if false else self.intro_over(sub)
        keys = list(sub.reqs)
        x = self.pick(keys)
        a = sub.reqs[x]
        reqs = self.discharge(sub.reqs, x)
        if reqs and self.r() < 0.6:
            y = self.pick(list(reqs))
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
        return Node(sub.goal, [f"rcases H{h} with ⟨H{x}, H{y}⟩"] + sub.tactics, reqs)

    def rule_rcases_or(self, size: int, false: bool) -> Node:
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
        return Node(goal, [f"rcases H{h} with H{x} | H{y}"] + a.tactics + tactics, out)

    def rule_exfalso(self, size: int, false: bool) -> Node:
        sub = self.build(size - 1, false=True)
        goal = self.formula(self.randint(0, 2))
        if goal == FALSE:
            return sub
        return Node(goal, ["exfalso"] + sub.tactics, sub.reqs)

    def rule_by_contra(self, size: int, false: bool) -> Node:
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
        return Node(goal, [f"by_contra H{x}"] + sub.tactics, reqs)

    # -- proving a given goal (second branches, the other direction of ↔)
    def fixed(self, goal: tuple, ctx: dict[int, tuple], budget: int) -> tuple[list[str], dict[int, tuple]]:
        """A script for exactly ``goal``; facts it cannot derive from ``ctx`` become requests."""
        t = direct(goal, ctx)
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
                ga, gb = halves(goal)
                ta, ra = self.fixed(ga, ctx, budget - 1)
                tb, rb = self.fixed(gb, {**ctx, **ra}, budget - 1)
                return ["constructor"] + ta + tb, {**ra, **rb}
            if tag == "or":
                for side, g in (("left", goal[1]), ("right", goal[2])):
                    t = direct(g, ctx)
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
