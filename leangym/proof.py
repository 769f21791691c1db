"""Turning a tree of applied tactics into one Lean tactic script.

A search applies a tactic to one branch (proof state) and gets zero or more
child branches. A :class:`ProofTree` records that. :func:`assemble` writes it
as Lean source: one child continues on the same indentation; several children
become ``·`` bullets in branch order, which is the order Lean lists the goals.
A branch that holds several goals (single-branch servers, or goals sharing
metavariables) continues linearly, as in Lean. If a server orders branches
differently from Lean, the re-check of the whole proof fails: assembly can
lose a proof, never accept a false one.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProofTree:
    tactic: str
    children: tuple["ProofTree", ...] = ()
    # number of goals in each child branch when it was created (1 = a bullet may focus it)
    child_goal_counts: tuple[int, ...] = ()

    def num_tactics(self) -> int:
        return 1 + sum(c.num_tactics() for c in self.children)


def assemble(tree: ProofTree) -> str:
    """The tactic script for ``tree`` (no leading indentation)."""
    lines = tree.tactic.splitlines() or [""]
    if len(tree.children) == 1:
        return "\n".join(lines) + "\n" + assemble(tree.children[0])
    counts = tree.child_goal_counts or (1,) * len(tree.children)
    out = list(lines)
    for child, count in zip(tree.children, counts):
        sub = assemble(child).splitlines()
        if count == 1:
            out.append("· " + sub[0])
            out.extend("  " + s for s in sub[1:])
        else:
            out.extend(sub)
    return "\n".join(out)


def linear(tactics: list[str]) -> str:
    """A script of tactics applied one after another to the main goal."""
    return "\n".join(tactics)
