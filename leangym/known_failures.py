"""Tactics a search may count rejected without sending them: any Lean would reject them.

``cites_missing_name``: a tactic that starts by citing a hypothesis the goal does not have (``apply h₉``
beside ``h₁ … h₄``): nothing in the tactic came before to bind the name, and a numbered name of the
context's own kind is no library constant.

``KnownFailures``: what one rejection says about other states of the same search. A tactic that reads
only some things fails wherever those are the same (``failure_key``): ``intro``, ``constructor``,
``left``, ``right`` read the target; ``apply h``, ``exact h h'`` the target and the cited hypotheses'
types; a case split (``rcases h₁ with ⟨a, b⟩``, any pattern that splits; ``cases h₁`` apart) the hypothesis's
type, once Lean has said it is no inductive type. A type or target counts with the declarations of the names it
mentions, all the way down (a shadowed ``p`` is another ``p``). Pruning only: a wrong answer here costs
a tactic, never a proof.
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
_CASES = re.compile(f"\\s*cases\\s+({_N}){_END}(?:{_ALONE}|\\s+with\\b)")  # kept apart from rcases (failure_key)
_SPLITS = (re.compile(f"\\s*rcases\\s+({_N}){_END}\\s+with\\s*(?:⟨|{_N}\\s*\\|)"),
           re.compile(f"\\s*obtain\\s*(?:⟨|{_N}\\s*\\|)[^:]*:=\\s*({_N}){_END}{_ALONE}"),
           _CASES)
# Lean's words (rcases / obtain, cases / induction) when the type split has no constructors to split by; rcases
# names what it split (a nested pattern fails on a part: `rcases h with ⟨a, ⟨b, c⟩⟩`, `x✝ : q → r`), in older and
# recent words ("Tactic `rcases` failed: `x✝ : q → r` is not …")
_RCASES_FAILED = re.compile("rcases tactic failed: (.*?) : |Tactic `rcases` failed: `(.*?) : ")
_NOT_INDUCTIVE = re.compile("is not an inductive datatype|major premise type is not an inductive type")
_THEN = re.compile("[;\n]|=>")  # a tactic run after the split (`; cases b`, `| inl a => …`) may be what failed
# no answer on the state: leangym's policy refused the tactic, or Lean could not parse it (`intro h with`: no name)
# (a server may wrap Lean's words: `REPL returned error messages: [{"data": "unexpected token …`)
_UNREAD = re.compile("^leangym|^expected |unexpected ")
# tactics that read the target alone (`intro a b`: how many binders), and `apply` / `exact` of locals alone
_ON_TARGET = re.compile(f"\\s*(intro|constructor|left|right)((?:\\s+{_N})*)\\s*")
_CITING = re.compile(f"\\s*(apply|exact)((?:\\s+{_N}{_END})+)\\s*")


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
    return None if name not in decl else in_context(goal, _declared(decl[name]))


def in_context(goal: Goal, text: str) -> str:
    """``text``, then the declarations of the locals it mentions, theirs, and so on: equal keys, equal meanings."""
    decl = {h.name: h for h in goal.hypotheses}
    parts, todo, seen = [], [text], set()
    while todo:
        for n in sorted(names_in(todo.pop()) - seen):
            if n in decl:
                seen.add(n)
                parts.append(f"{n} : {_declared(decl[n])}")
                todo.append(_declared(decl[n]))
    return "\n".join([text] + sorted(parts))


def _declared(h) -> str:
    return h.type if h.value is None else f"{h.type} := {h.value}"


def failure_key(state: ProofState, tactic: str) -> tuple | None:
    """What ``tactic``'s failure on ``state`` rests on, where that is all it reads (None: it reads more, or more
    than this can tell): a split, the hypothesis's type; ``intro x``, ``constructor``, ``left``, ``right``, the
    target; ``apply h``, ``exact h h'``, the target and the cited hypotheses' types."""
    if not state.goals:
        return None
    goal = state.goals[0]
    if (name := split_hypothesis(tactic)) is not None:
        # rcases / obtain and cases apart: rcases splits a `Quot`, cases takes a type's `@[cases_eliminator]`
        family = "cases" if _CASES.match(tactic) else "rcases"
        return None if (t := type_in_context(goal, name)) is None else ("split", family, t)
    if m := _ON_TARGET.fullmatch(tactic):
        return ("target", m.group(1), len(m.group(2).split()), in_context(goal, goal.target))
    if m := _CITING.fullmatch(tactic):
        types = tuple(type_in_context(goal, n) for n in m.group(2).split())
        return None if None in types else ("cite", m.group(1), types, in_context(goal, goal.target))
    return None


class KnownFailures:
    """What Lean's rejections in one search say about other states: :meth:`learn` from each rejection, then
    :meth:`refuses` each later tactic whose failure rests on the same things (see :func:`failure_key`)."""

    def __init__(self) -> None:
        self.keys: set[tuple] = set()

    def learn(self, state: ProofState, tactic: str, error: str | None) -> None:
        key = None if _UNREAD.search(error or "") else failure_key(state, tactic)
        if key is not None and key[0] == "split":  # another pattern may fail for another reason: only this one counts
            first = (error or "").split("\n")[0]
            m = _RCASES_FAILED.match(first)
            whole = split_hypothesis(tactic) in m.groups() if m else _CASES.match(tactic) is not None
            key = key if _NOT_INDUCTIVE.search(first) and whole and not _THEN.search(tactic) else None
        if key is not None:
            self.keys.add(key)

    def refuses(self, state: ProofState, tactic: str) -> bool:
        return bool(self.keys) and failure_key(state, tactic) in self.keys
