"""Tactics a search may count rejected without sending them: any Lean would reject them.

``cites_missing_name``: a tactic that starts by citing a hypothesis the goal does not have (``apply h₉``
beside ``h₁ … h₄``): nothing in the tactic came before to bind the name, and a numbered name of the
context's own kind is no library constant.

``Unsplittable``: once Lean has said a hypothesis's type is no inductive type (``rcases h₁ with ⟨a, b⟩``
on ``h₁ : p → q``), every case split of a hypothesis of that type fails too, in any state of the same
search where the names the type mentions are declared the same (the type and those declarations, all
the way down, are the key: a shadowed ``p`` is another ``p``). Only a split fails: ``rcases h with x``
(a name pattern) splits nothing. Pruning only: a wrong answer here costs a tactic, never a proof.
"""
from __future__ import annotations

import re

from leangym.backends.types import Goal, ProofState
from leangym.goal_key import names_in
from leangym.lexer import ID_FIRST, ID_REST

_N = f"[{ID_FIRST}][{ID_REST}]*"
_END = f"(?![{ID_REST}✝.])"  # the whole name, not a field of it
# the name a tactic cites first, before it could bind any: `exact h₉ …`, `rcases h₉ with …` (`rcases h₉ : e` binds it)
_HEAD = re.compile(f"\\s*(?:exact|apply|rcases|cases|specialize)\\s+({_N})(?![{ID_REST}✝]|\\s*:(?!=))")
_NUMBERED = re.compile("(.*?)[0-9\u2080-\u2089]+")  # `h₁₂`, `h12`: the kind (`h`), then the number
# a case split of local `h`: `rcases h with ⟨a, b⟩` or `a | b`, `obtain ⟨a, b⟩ := h`, `cases h`
_ALONE = "\\s*(?:$|;|<;>)"  # the term is the name alone (`f h` is no local)
_SPLITS = (re.compile(f"\\s*rcases\\s+({_N}){_END}\\s+with\\s*(?:⟨|{_N}\\s*\\|)"),
           re.compile(f"\\s*obtain\\s*(?:⟨|{_N}\\s*\\|)[^:]*:=\\s*({_N}){_END}{_ALONE}"),
           re.compile(f"\\s*cases\\s+({_N}){_END}(?:{_ALONE}|\\s+with\\b)"))
# Lean's words (rcases / obtain, cases / induction) when the type split has no constructors to split by; rcases
# names what it split (a nested pattern fails on a part: `rcases h with ⟨a, ⟨b, c⟩⟩`, `x✝ : q → r`)
_RCASES_FAILED = "rcases tactic failed: {} : "
_NOT_INDUCTIVE = re.compile("is not an inductive datatype|major premise type is not an inductive type")


def cites_missing_name(tactic: str, state: ProofState) -> bool:
    """Whether ``tactic`` first cites a numbered name (``h₉``) of a kind the main goal's hypotheses have
    (``h₁``) but not that one; an inaccessible ``h₉✝`` cannot be cited, so it does not count."""
    m = _HEAD.match(tactic)
    if m is None or not state.goals:
        return False
    numbered = _NUMBERED.fullmatch(m.group(1))
    names = [h.name for h in state.goals[0].hypotheses]
    kinds = {k.group(1) for k in map(_NUMBERED.fullmatch, (n.split("✝")[0] for n in names)) if k}
    return numbered is not None and numbered.group(1) in kinds and m.group(1) not in names


def split_hypothesis(tactic: str) -> str | None:
    """The local that ``tactic`` starts by splitting into cases, if it does."""
    for pattern in _SPLITS:
        if m := pattern.match(tactic):
            return m.group(1)
    return None


def type_in_context(goal: Goal, name: str) -> str | None:
    """``name``'s type, then the declarations of the locals it mentions, theirs, and so on (None: no such local)."""
    decl = {h.name: h for h in goal.hypotheses}
    if name not in decl:
        return None
    parts, todo, seen = [], [name], {name}
    while todo:
        h = decl[todo.pop()]
        text = h.type if h.value is None else f"{h.type} := {h.value}"
        parts.append(text if h.name == name else f"{h.name} : {text}")
        for n in sorted(names_in(text) - seen):
            if n in decl:
                seen.add(n)
                todo.append(n)
    return "\n".join(parts[:1] + sorted(parts[1:]))


class Unsplittable:
    """Types Lean said are no inductive type, in one search: :meth:`learn` from each rejection, then
    :meth:`refuses` every later split of a hypothesis of one of them."""

    def __init__(self) -> None:
        self.types: set[str] = set()

    def learn(self, state: ProofState, tactic: str, error: str | None) -> None:
        name, first = split_hypothesis(tactic), (error or "").split("\n")[0]
        whole = not first.startswith("rcases") or first.startswith(_RCASES_FAILED.format(name))
        if name and state.goals and _NOT_INDUCTIVE.search(first) and whole:
            if (key := type_in_context(state.goals[0], name)) is not None:
                self.types.add(key)

    def refuses(self, state: ProofState, tactic: str) -> bool:
        name = split_hypothesis(tactic) if self.types else None
        return name is not None and bool(state.goals) and type_in_context(state.goals[0], name) in self.types
