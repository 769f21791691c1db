"""Keys under which two proof states are one for a search: the same goals, whatever they are called.

``table_key``: a single goal's text without its ``case`` tag. A tag names a goal, it does not
change what proves it (a proof script is assembled with ``·``, never by tag), so a search may
share one node, and its proof, between states with this key. Several goals keep their tags:
there ``case t => …`` picks one, and a tag may name a metavariable another goal mentions.

``alpha_key``: also blind to the names of hypotheses, and to a hypothesis that repeats an
earlier one's type and is used nowhere (``intro h₄`` when ``h₃`` already says the same).
States with one alpha key are provable together, but a tactic of one may not run on the other
(it names ``h₃``), so a search uses it to prune (a tactic back to an ancestor, two tactics with
one result), never to share proofs. Where renaming is unsure (a string literal), names stay: two
states then differ that might not, which costs pruning, never a proof. An inaccessible name
(``a✝``) stays one: ``intro`` and ``intro h`` differ, since only the latter can be cited.

A tactic that picks its goal by tag (``case left => …``) would break that sharing: it runs on the
node's first state and fails on another's (``names_a_tag``: a search never tries one on a single
goal, where ``case t => tac`` is ``tac``).
"""
from __future__ import annotations

import re

from leangym.backends.types import Goal, ProofState
from leangym.lexer import ID_FIRST, ID_REST

# a name with Lean's mark of an inaccessible one (`a✝¹`: one name, not `a`), ...
_PART = f"[{ID_FIRST}][{ID_REST}]*(?:✝[⁰¹²³⁴⁵⁶⁷⁸⁹]*)?"
# ... dotted parts included (`h.mp`, `Nat.succ`): a local is renamed only as the whole or first part, and never
# after `.` (a field: `(f x).h`), `?` (a metavariable: `?a`) or `'` (a character literal: `'a'`)
_NAME = re.compile(f"(?<![.?'])(?:{_PART})(?:\\.(?:{_PART}))*")
_FRESH = "\x00"  # canonical names are `\x00<i>`: no goal text holds the character
# `case left => …`, `case' h.2 => …` (`case _` picks any goal)
_CASE = re.compile(r"(?<![\w.'])case'?\s+(?:[^\s_]|_[\w'.])")


def table_key(state: ProofState) -> str:
    return _untagged(state.goals[0]) if len(state.goals) == 1 else state.text


def alpha_key(state: ProofState) -> str:
    return "\n\n".join(_alpha(g) for g in state.goals) if state.goals else "no goals"


def names_a_tag(tactic: str) -> bool:
    """Whether ``tactic`` picks a goal by its case tag, which the keys above ignore."""
    return _CASE.search(tactic) is not None


def _untagged(goal: Goal) -> str:
    return goal.to_text() if goal.tag is None else Goal(goal.hypotheses, goal.target).to_text()


def names_in(text: str) -> set[str]:
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
    # the last hypothesis each name is used in (len(hyps): the target), '"' for a string literal (names stay
    # there): a hypothesis used after its own line must stay (one pass: goals may hold hundreds)
    last: dict[str, int] = {}
    unsure: set[str] = set()  # names in a text with a string literal: _rename leaves it be, so they keep their names
    for i, text in enumerate([f"{h.type} {h.value or ''}" for h in hyps] + [goal.target]):
        found = names_in(text)
        last.update(dict.fromkeys(found | ({'"'} if '"' in text else set()), i))
        if '"' in text:
            unsure |= found
    # per type, the copy that stays: the first a tactic can cite, else the first (the types as printed: Lean
    # marks a name shadowed since with ✝, so equal texts say the same thing)
    stays: dict[str, int] = {}
    for i, h in enumerate(hyps):
        if h.value is None and (h.type not in stays or ("✝" in hyps[stays[h.type]].name and "✝" not in h.name)):
            stays[h.type] = i
    names: dict[str, str] = {}
    kept: list[str] = []
    for i, h in enumerate(hyps):
        # another copy of a hypothesis, that nothing after it refers to, adds nothing
        if (h.value is None and stays[h.type] != i and _NAME.fullmatch(h.name)
                and max(last.get(h.name, -1), last.get('"', -1)) <= i):
            continue
        type_ = _rename(h.type, names)
        value = None if h.value is None else _rename(h.value, names)
        # a name _rename would not rename where it is used (a string literal's text, `«a b»`) keeps its name
        renamed = _NAME.fullmatch(h.name) and h.name not in unsure
        names[h.name] = f"{_FRESH}{len(kept)}" + ("✝" if "✝" in h.name else "") if renamed else h.name
        kept.append(f"{names[h.name]} : {type_}" + ("" if value is None else f" := {value}"))
    return "\n".join(kept + [f"⊢ {_rename(goal.target, names)}"])
