"""Keys under which two proof states are one for a search: the same goals, whatever they are called.

``table_key``: the goals' text without their ``case`` tags. A tag names a goal, it does not
change what proves it (a proof script is assembled with ``·``, never by tag), so a search may
share one node, and its proof, between states with this key.

``alpha_key``: also blind to the names of hypotheses, and to a hypothesis that repeats an
earlier one's type and is used nowhere (``intro h₄`` when ``h₃`` already says the same).
States with one alpha key are provable together, but a tactic of one may not run on the other
(it names ``h₃``), so a search uses it to prune (a tactic back to an ancestor, two tactics with
one result), never to share proofs. Where renaming is unsure (a string literal), names stay: two
states then differ that might not, which costs pruning, never a proof.
"""
from __future__ import annotations

import re

from leangym.backends.types import Goal, ProofState
from leangym.lexer import ID_FIRST, ID_REST

# a name, dotted parts included (`h.mp`, `Nat.succ`): a local is renamed only as the whole or first part
_NAME = re.compile(f"[{ID_FIRST}][{ID_REST}]*(?:\\.[{ID_FIRST}][{ID_REST}]*)*")
_FRESH = "\x00"  # canonical names are `\x00<i>`: no goal text holds the character


def table_key(state: ProofState) -> str:
    return "\n\n".join(_untagged(g) for g in state.goals) if state.goals else "no goals"


def alpha_key(state: ProofState) -> str:
    return "\n\n".join(_alpha(g) for g in state.goals) if state.goals else "no goals"


def _untagged(goal: Goal) -> str:
    return goal.to_text() if goal.tag is None else Goal(goal.hypotheses, goal.target).to_text()


def _names_in(text: str) -> set[str]:
    return {m.group(0).split(".")[0] for m in _NAME.finditer(text)}


def _rename(text: str, names: dict[str, str]) -> str:
    if '"' in text:  # a string literal may hold a name that is no name: leave it be
        return text

    def one(m: re.Match[str]) -> str:
        head, dot, rest = m.group(0).partition(".")
        return names.get(head, head) + dot + rest
    return _NAME.sub(one, text)


def _alpha(goal: Goal) -> str:
    hyps = goal.hypotheses
    # names used after each hypothesis (in a later type or value, or the target): those must stay
    used_after: list[set[str]] = [set()] * len(hyps)
    seen = _names_in(goal.target) | ({"*"} if '"' in goal.target else set())
    for i in range(len(hyps) - 1, -1, -1):
        used_after[i] = seen
        h = hyps[i]
        text = h.type + (h.value or "")
        seen = seen | _names_in(text) | ({"*"} if '"' in text else set())
    names: dict[str, str] = {}
    kept: list[tuple[str, str | None]] = []
    for h, later in zip(hyps, used_after):
        type_ = _rename(h.type, names)
        value = None if h.value is None else _rename(h.value, names)
        if value is None and (type_, None) in kept and h.name not in later and "*" not in later:
            continue  # a second copy of a hypothesis nothing refers to: it adds nothing
        names[h.name] = f"{_FRESH}{len(kept)}"
        kept.append((type_, value))
    lines = [f"{_FRESH}{i} : {t}" + ("" if v is None else f" := {v}") for i, (t, v) in enumerate(kept)]
    return "\n".join(lines + [f"⊢ {_rename(goal.target, names)}"])
