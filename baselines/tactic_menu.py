"""A fixed menu of tactic templates, filled with the current goal's hypotheses, and a syntax mask.

The menu turns "write a tactic" into "pick one of K": template ``j`` with
hypothesis slot ``i`` is always action number ``f(j, i)``, whatever the goal,
so a policy over ``Discrete(K)`` can learn what each slot means. Slots are the
last ``n_slots`` proof hypotheses of the first goal (the most recent ones:
what ``intro``/``rcases`` just produced), in goal order.

The mask keeps a candidate only when the goal's SHAPE allows it: ``left`` on a
disjunction, ``rcases h with a | b`` on ``h : _ ∨ _``, ``exact h.1`` on a
conjunction or iff, ``exact h g`` when ``h`` is an implication or a negation
(``p → False`` counts as ``¬p``, as it unfolds to it). It reads the top-level
connective of the printed formula, never asks Lean, and allows anything it
cannot parse. It also leaves out moves that cannot change the goal, though Lean
accepts them: ``exfalso``/``by_contra`` on ``False``, ``rcases h with a | b`` on
a conjunction (one constructor: a renaming). ``assumption``/``trivial``/
``norm_num``/``decide`` are never masked, so the mask is never all false.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from leangym.backends.types import Goal

NULLARY = ("intro {new}", "constructor", "left", "right", "exfalso", "by_contra {new}",
           "assumption", "trivial", "norm_num", "decide")
ONE_HYP = ("exact {h}", "exact {h}.1", "exact {h}.2", "apply {h}",
           "rcases {h} with ⟨{new}, {new2}⟩", "rcases {h} with {new} | {new2}")
TWO_HYPS = ("exact {h} {g}", "exact absurd {h} {g}", "exact ⟨{h}, {g}⟩")
NO_CANDIDATE = "fail"  # sent for an empty slot (only a mask-ignoring caller picks one): Lean rejects it

_BINARY = (("↔", "iff"), ("→", "imp"), ("∨", "or"), ("∧", "and"))  # lowest precedence first
_RELATIONS = ("=", "≠", "≤", "<", "≥", ">")
_OPEN, _CLOSE = "([{⟨", ")]}⟩"


def _strip_parens(text: str) -> str:
    text = text.strip()
    while text[:1] == "(" and _matching(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def _matching(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        depth += (text[i] in _OPEN) - (text[i] in _CLOSE)
        if depth == 0:
            return i
    return -1


def shape(formula: str) -> str:
    """The top-level connective: iff imp or and not forall exists rel false true atom."""
    text = _strip_parens(formula)
    if text.startswith("∀"):
        return "forall"
    if text.startswith("∃"):
        return "exists"
    depth, heads = 0, set()
    for ch in text:
        depth += (ch in _OPEN) - (ch in _CLOSE)
        if depth == 0:
            heads.update(name for sym, name in _BINARY if ch == sym)
            if ch in _RELATIONS:
                heads.add("rel")
    for _, name in _BINARY:  # the loosest connective outside brackets is the head
        if name in heads:
            if name == "imp" and _strip_parens(_after_first_arrow(text)) == "False":
                return "not"  # `p → False` is `¬p` unfolded (→ groups to the right: only the first arrow)
            return name
    if "rel" in heads:  # `=`, `<`, `≤` bind tighter than every connective
        return "rel"
    if text.startswith("¬"):
        return "not"
    return {"False": "false", "True": "true"}.get(text, "atom")


def _after_first_arrow(text: str) -> str:
    depth = 0
    for k, ch in enumerate(text):
        depth += (ch in _OPEN) - (ch in _CLOSE)
        if depth == 0 and ch == "→":
            return text[k + 1:].strip()
    return ""


def hypothesis_slots(goal: Goal, n_slots: int) -> list[tuple[str, str]]:
    """(name, type) of the last ``n_slots`` usable proof hypotheses (no ``✝``, no ``p : Prop``)."""
    usable = [(h.name, h.type) for h in goal.hypotheses
              if h.name and "✝" not in h.name and h.type not in ("Prop", "Type") and not h.type.startswith("Sort")]
    return usable[-n_slots:]


def fresh_names(goals: Sequence[Goal], n: int = 2) -> list[str]:
    used = {h.name for g in goals for h in g.hypotheses}
    out, i = [], 0
    while len(out) < n:
        if f"h{i}" not in used:
            out.append(f"h{i}")
        i += 1
    return out


@dataclass(frozen=True)
class Menu:
    tactics: tuple[str | None, ...]  # None: an empty hypothesis slot
    mask: np.ndarray  # bool, True = allowed by the goal's shape


class TacticMenu:
    """``size`` actions: the nullary templates, then one per (template, slot), then per (template, slot pair)."""

    def __init__(self, n_slots: int = 8) -> None:
        self.n_slots = n_slots
        self.size = len(NULLARY) + len(ONE_HYP) * n_slots + len(TWO_HYPS) * n_slots * n_slots

    def build(self, goals: Sequence[Goal]) -> Menu:
        """The candidates for the FIRST of ``goals`` (the one a tactic acts on)."""
        tactics: list[str | None] = [None] * self.size
        mask = np.zeros(self.size, dtype=bool)
        if not goals:  # nothing to prove: only the never-masked finishers stay selectable
            for j, tpl in enumerate(NULLARY):
                tactics[j] = tpl
                mask[j] = tpl in ("assumption", "trivial", "norm_num", "decide")
            return Menu(tuple(tactics), mask)
        goal = goals[0]
        target = shape(goal.target)
        new, new2 = fresh_names(goals)
        names = dict(new=new, new2=new2)
        unknown = target == "atom" and not goal.target.isidentifier()  # an expression this parser misreads
        nullary_ok = {
            "intro {new}": target in ("imp", "not", "forall") or unknown,
            # (on `∨` Lean 4's constructor takes the first one that applies: Or.inl, as `left` does)
            "constructor": target in ("and", "iff", "exists", "true", "or") or unknown,
            "left": target == "or" or unknown, "right": target == "or" or unknown,
            "exfalso": target != "false", "by_contra {new}": target != "false",
        }
        for j, tpl in enumerate(NULLARY):
            tactics[j] = tpl.format(**names)
            mask[j] = nullary_ok.get(tpl, True)
        slots = hypothesis_slots(goal, self.n_slots)
        kinds = [shape(t) for _, t in slots]
        base = len(NULLARY)
        for j, tpl in enumerate(ONE_HYP):
            for i, ((h, _), kind) in enumerate(zip(slots, kinds)):
                a = base + j * self.n_slots + i
                tactics[a] = tpl.format(h=h, **names)
                mask[a] = self._one_ok(j, kind)
        base += len(ONE_HYP) * self.n_slots
        for j, tpl in enumerate(TWO_HYPS):
            for i, ((h, _), kh) in enumerate(zip(slots, kinds)):
                for m, ((g, _), kg) in enumerate(zip(slots, kinds)):
                    a = base + (j * self.n_slots + i) * self.n_slots + m
                    tactics[a] = tpl.format(h=h, g=g)
                    mask[a] = i != m and self._two_ok(j, kh, kg, target)
        return Menu(tuple(tactics), mask)

    @staticmethod
    def _one_ok(j: int, kind: str) -> bool:
        template = ONE_HYP[j]
        if template == "exact {h}":
            return True  # any hypothesis may be the proof (up to definitional unfolding)
        if template in ("exact {h}.1", "exact {h}.2"):
            return kind in ("and", "iff")
        if template == "apply {h}":
            return True  # like exact h when h's type is the goal; with premises left as new goals otherwise
        if template.endswith("⟩"):
            return kind in ("and", "iff", "exists")
        return kind == "or"  # rcases h with a | b

    @staticmethod
    def _two_ok(j: int, kh: str, kg: str, target: str) -> bool:
        template = TWO_HYPS[j]
        if template == "exact {h} {g}":
            return kh in ("imp", "not", "forall")
        if template == "exact absurd {h} {g}":
            return kg == "not"
        return target in ("and", "iff", "exists")  # exact ⟨h, g⟩

    def tactic(self, menu: Menu, action: int) -> str:
        """The tactic of ``action``; :data:`NO_CANDIDATE` for an empty slot or an out-of-range action."""
        if 0 <= action < self.size and menu.tactics[action] is not None:
            return menu.tactics[action]
        return NO_CANDIDATE
