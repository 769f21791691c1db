"""A finished proof tree as a theorem statement and its reference script, with canonical names.

Hypotheses print as ``h₁ h₂ …`` (theorem hypotheses first, in order of first
use, then the ones the proof introduces) and Prop variables as ``p q r s t`` in
order of first appearance, so equal theorems print equally.
"""
from __future__ import annotations

import re

from leangym.datasets.propgen.builder import Builder, Node
from leangym.datasets.propgen.formulas import VAR_NAMES, depth, has_echo, rename_vars, render, vars_in_order
from leangym.datasets.propgen.prover import shortcut

MAX_HYPS = 6  # more theorem hypotheses than this is rejected
SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
_HID = re.compile(r"H(\d+)")


def finish(
    b: Builder, root: Node, depths: tuple[int, int], lengths: tuple[int, int]
) -> tuple[str, list[str], int] | None:
    """(statement body without ``theorem NAME``, proof, depth).

    None when rejected: too many hypotheses, ``a ∘ a`` noise, a depth outside
    ``depths`` or a proof length outside ``lengths`` (inclusive ranges).
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
    if len(merged) > MAX_HYPS or has_echo(root.goal) or any(has_echo(f) for f in merged.values()):
        return None
    d = max([depth(root.goal)] + [depth(f) for f in merged.values()])
    if not (depths[0] <= d <= depths[1]):
        return None
    # quick structural proof of the finished statement: keep the shorter script
    fresh = [b.next_id + 1000]
    short = shortcut(root.goal, merged, 4, fresh)
    if short is not None and len(short) < len(root.tactics):
        tactics = short
    else:
        tactics = [_HID.sub(lambda m: f"H{res(int(m.group(1)))}", t) for t in root.tactics]
    if not (lengths[0] <= len(tactics) <= lengths[1]):
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
    names = {i: "h" + str(k + 1).translate(SUBSCRIPTS) for k, i in enumerate(binders + locals_)}
    tactics = [_HID.sub(lambda m: names[int(m.group(1))], t) for t in tactics]
    # variables: p q r ... in order of first appearance
    formulas = [merged[i] for i in binders] + [root.goal]
    vs: list[int] = []
    for f in formulas:
        vars_in_order(f, vs)
    vmap = {v: k for k, v in enumerate(vs)}
    formulas = [rename_vars(f, vmap) for f in formulas]
    parts = []
    if vs:
        parts.append(f"({' '.join(VAR_NAMES[: len(vs)])} : Prop)")
    for i, f in zip(binders, formulas):
        parts.append(f"({names[i]} : {render(f)})")
    body = " ".join(parts) + (" " if parts else "") + f": {render(formulas[-1])} := by sorry"
    return body, tactics, d
