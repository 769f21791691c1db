"""Values shared by the tactic modules: proof-state records, errors, tag helpers."""
from __future__ import annotations

from typing import NamedTuple

from leangym.sim.goals import Goal

SYNTHETIC_SORRY = "sorryAx*"  # a goal admitted by error recovery (no "declaration uses 'sorry'" warning)


class TacticError(Exception):
    def __init__(self, msg: str, span=None):
        super().__init__(msg)
        self.msg, self.span = msg, span


class Timeout(Exception):
    pass


class State(NamedTuple):
    goals: tuple
    axioms: tuple = ()
    log: tuple = ()  # ('error', msg, span) | ('sorry', goal, span)


def merge_axioms(old: tuple, new) -> tuple:
    out = old
    for a in new:
        if a not in out:
            out = out + (a,)
    return out


def tactic_failed(name: str, goal: Goal, msg: str | None = None) -> str:
    head = f"tactic '{name}' failed" + (f", {msg}" if msg else "")
    return f"{head}\n{goal.text()}"


def append_tag(parent: str | None, suffix: str) -> str:
    return f"{parent}.{suffix}" if parent else suffix
