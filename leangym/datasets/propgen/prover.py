"""Proving a goal from hypotheses ``{id: formula}`` without randomness; hypotheses print as ``H<id>``.

:func:`direct` is one closing ``exact``; :func:`shortcut` a short structural
proof, used to replace a construction whose statement turned out easier than
its proof.
"""
from __future__ import annotations

from typing import Mapping

from leangym.datasets.propgen.formulas import FALSE, halves


def direct(goal: tuple, ctx: Mapping[int, tuple]) -> str | None:
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


def shortcut(goal: tuple, ctx: dict[int, tuple], budget: int, fresh: list[int]) -> list[str] | None:
    """A short structural proof of ``goal`` from ``ctx`` with no requests, or None.

    Tries one closing ``exact``/``trivial`` first, then intro/constructor/left/right.
    ``fresh[0]`` is the last hypothesis id used; ``intro`` takes the next one.
    """
    t = direct(goal, ctx)
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
        rest = shortcut(goal[2] if tag == "imp" else FALSE, inner, budget - 1, fresh)
        return None if rest is None else [f"intro H{h}"] + rest
    if tag in ("and", "iff"):
        ga, gb = halves(goal)
        ta = shortcut(ga, ctx, budget - 1, fresh)
        if ta is None:
            return None
        tb = shortcut(gb, ctx, budget - 1, fresh)
        return None if tb is None else ["constructor"] + ta + tb
    if tag == "or":
        best = None
        for side, g in (("left", goal[1]), ("right", goal[2])):
            t = shortcut(g, ctx, budget - 1, fresh)
            if t is not None and (best is None or len(t) + 1 < len(best)):
                best = [side] + t
        return best
    return None
