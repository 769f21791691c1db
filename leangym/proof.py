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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from leangym.backends.types import ProofState


@dataclass(frozen=True)
class ProofTree:
    tactic: str
    children: tuple["ProofTree", ...] = ()
    # number of goals in each child branch when it was created (1 = a bullet may focus it)
    child_goal_counts: tuple[int, ...] = ()

    @classmethod
    def join(cls, tactic: str, states: Sequence["ProofState"], subtrees: Sequence["ProofTree"]) -> "ProofTree":
        """``tactic`` left the branches ``states`` open, and ``subtrees`` close them, in order."""
        return cls(tactic, tuple(subtrees), tuple(len(s.goals) for s in states))

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


def script_of(proof: object) -> str:
    """The tactic script of a proof given as a :class:`ProofTree`, a script, or a list of tactics."""
    if isinstance(proof, ProofTree):
        return assemble(proof)
    if isinstance(proof, str):
        return proof
    if isinstance(proof, (list, tuple)) and all(isinstance(t, str) for t in proof):
        return linear(list(proof))
    raise TypeError(f"a proof is a ProofTree, a script or a list of tactics, not {type(proof).__name__}")


def linear(tactics: list[str]) -> str:
    """A script of tactics applied one after another to the main goal."""
    return "\n".join(tactics)


class LinearWalk:
    """A proof built one tactic at a time on the first open branch, as Lean runs a ``by`` block.

    The open branches are kept in Lean's goal order; a tactic applied to the
    first one (by the caller, through its session: this module sends nothing) replaces it with its
    child branches, in order (:meth:`advance`). The branches form
    a :class:`ProofTree`, so the finished proof is assembled with correct
    ``·`` focusing on servers that split goals into several branches.
    """

    def __init__(self, root: "ProofState") -> None:
        self._root = _WalkNode(root)
        self._open: list[_WalkNode] = [self._root] if root.goals else []

    @property
    def done(self) -> bool:
        """Every goal is closed."""
        return not self._open

    @property
    def states(self) -> tuple["ProofState", ...]:
        """The open branches, first one first."""
        return tuple(n.state for n in self._open)

    @property
    def current(self) -> "ProofState":
        """The branch the next tactic runs on."""
        return self._open[0].state

    def observation(self) -> str:
        """Every open goal, first one first, as Lean prints them."""
        from leangym.backends.types import goals_to_text

        return goals_to_text([g for s in self.states for g in s.goals])

    def advance(self, tactic: str, children: Sequence["ProofState"]) -> None:
        """``tactic`` succeeded on the first open branch and left ``children`` open."""
        node = self._open[0]
        node.tactic, node.children = tactic, [_WalkNode(s) for s in children]
        self._open[0:1] = node.children

    def tree(self) -> ProofTree | None:
        """The applied tactics as a tree, once every goal is closed (else ``None``)."""
        return self._root.tree() if self.done and self._root.tactic is not None else None


@dataclass(eq=False)
class _WalkNode:
    state: "ProofState"
    tactic: str | None = None
    children: list["_WalkNode"] = field(default_factory=list)

    def tree(self) -> ProofTree:
        return ProofTree.join(self.tactic or "", [c.state for c in self.children],
                              [c.tree() for c in self.children])
