"""Goals (local context + target + case tag) and elaboration of propositions in a context.

Hypotheses are ``Hyp(name, type, inacc)``: ``type`` is a formula, ``PROP``
for a variable ``p : Prop`` or ``NAT`` for a variable ``n : ℕ``. ``inacc`` marks names the user cannot refer to
(Lean's ``a✝``). Display names follow Lean's ``sanitizeNames``: walking from
the newest hypothesis to the oldest, an inaccessible or shadowed name ``h``
becomes ``h✝``, the next one with that stem ``h✝¹``, and so on.
"""
from __future__ import annotations

from typing import NamedTuple

from leangym.backends.types import render_goal
from leangym.sim.formula import CONNECTIVES, FALSE, NAT, PROP, RELATIONS, SORTS, TRUE, show
from leangym.sim.tokens import unknown_identifier

_SUPER = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


class ElabError(Exception):
    """A Lean error with the span of the syntax it is about (None: the whole tactic).

    ``genuine``: the text is wrong in any Lean, not merely outside the fragment (a statement's
    other errors are tagged ``(sim)``: :func:`leangym.sim.tokens.outside_fragment`).
    """

    def __init__(self, msg: str, span=None, genuine: bool = False):
        super().__init__(msg)
        self.msg, self.span, self.genuine = msg, span, genuine


class Hyp(NamedTuple):
    name: str
    type: tuple
    inacc: bool = False


class Goal:
    """One immutable goal. JSON/text renderings are computed once and cached."""

    __slots__ = ("hyps", "target", "tag", "_json")

    def __init__(self, hyps: tuple, target: tuple, tag: str | None = None):
        self.hyps = hyps
        self.target = target
        self.tag = tag
        self._json = None

    def with_target(self, target, tag: str | None | bool = False) -> "Goal":
        return Goal(self.hyps, target, self.tag if tag is False else tag)

    def add(self, *hyps: Hyp, target=None, tag: str | None | bool = False) -> "Goal":
        return Goal(self.hyps + hyps, self.target if target is None else target, self.tag if tag is False else tag)

    def lookup(self, name: str) -> Hyp | None:
        return lookup(self.hyps, name)

    # ----------------------------------------------------------------- display
    def display_names(self) -> list[str]:
        seen: set[str] = set()
        stem_idx: dict[str, int] = {}
        out = [""] * len(self.hyps)
        for i in range(len(self.hyps) - 1, -1, -1):
            h = self.hyps[i]
            if h.inacc or h.name in seen:
                idx = stem_idx.get(h.name, 0)
                stem_idx[h.name] = idx + 1
                out[i] = h.name + "✝" + (str(idx).translate(_SUPER) if idx else "")
            else:
                out[i] = h.name
            seen.add(h.name)
        return out

    def to_json(self) -> dict:
        if self._json is None:
            names = self.display_names()
            ren = tuple((h.name, n) for h, n in zip(self.hyps, names) if h.type in SORTS and n != h.name)
            hyps = [
                {"user_name": n, "type": "Prop" if h.type == PROP else "ℕ" if h.type == NAT else show(h.type, ren)}
                for h, n in zip(self.hyps, names)
            ]
            d = {"type": show(self.target, ren), "hypotheses": hyps}
            if self.tag:
                d["tag"] = self.tag
            self._json = d
        return self._json

    def text(self) -> str:
        """Lean's rendering (the client's: :func:`leangym.backends.types.render_goal`)."""
        j = self.to_json()
        return render_goal(self.tag, [(h["user_name"], h["type"], None) for h in j["hypotheses"]], j["type"])

    def __repr__(self) -> str:
        return f"Goal({self.text()!r})"


def lookup(hyps, name: str) -> Hyp | None:
    for i in range(len(hyps) - 1, -1, -1):
        h = hyps[i]
        if h.name == name and not h.inacc:
            return h
    return None


def goals_text(goals) -> str:
    return "\n\n".join(g.text() for g in goals) if goals else "no goals"


# --------------------------------------------------------------------------- elaborating propositions

_CONN_APPS = {"Not": 1, "And": 2, "Or": 2, "Iff": 2}
_NAT_TYPES = {"ℕ", "Nat"}
_OTHER_TYPES = {"ℤ", "ℚ", "ℝ", "ℂ", "Int", "Rat", "Real", "Complex"}
TYPE_NAMES = frozenset({"Prop", "Type", "Sort"} | _NAT_TYPES | _OTHER_TYPES)  # read as types wherever they stand


def elab_prop(node, hyps) -> tuple:
    """The formula denoted by term syntax ``node`` in local context ``hyps``."""
    k = node[0]
    if k == "id":
        name = node[2]
        h = lookup(hyps, name)  # first, as in Lean: a variable named `True` hides the constant
        if h is None and name in ("True", "False"):
            return TRUE if name == "True" else FALSE
        if h is None:
            if name in TYPE_NAMES:
                raise ElabError(f"type expected, got\n  ({name} : Type)" if name != "Prop" else
                                "type mismatch: expected a proposition, got the sort Prop", node[1])
            raise ElabError(unknown_identifier(name), node[1])
        if h.type == PROP:
            return ("var", name)
        # a variable of the context is a number or a proof, never a type (in any Lean)
        raise ElabError(f"type expected, got\n  ({name} : {'ℕ' if h.type == NAT else show(h.type)})", node[1],
                        genuine=True)
    if k == "paren":
        return elab_prop(node[2], hyps)
    if k == "asc":
        ty = node[3]
        if not (ty[0] == "id" and ty[2] == "Prop"):
            raise ElabError("(sim) only propositions (: Prop) are supported here", ty[1])
        return elab_prop(node[2], hyps)
    if k == "not":
        return ("not", elab_prop(node[2], hyps))
    if k == "bin":
        op = node[2]
        if op in CONNECTIVES:
            return (CONNECTIVES[op], elab_prop(node[3], hyps), elab_prop(node[4], hyps))
        if op in RELATIONS:
            return ("rel", op, elab_nat(node[3], hyps), elab_nat(node[4], hyps))
        raise ElabError("failed to synthesize\n  HAdd Prop Prop ?m" if op == "+" else
                        f"(sim) '{op}' does not produce a proposition", node[1])
    if k == "app":
        head, args = node[2], node[3]
        if head[0] == "id" and head[2] in _CONN_APPS and lookup(hyps, head[2]) is None:  # a local hides it
            n = _CONN_APPS[head[2]]
            if len(args) != n:
                raise ElabError(f"(sim) '{head[2]}' expects {n} arguments", node[1])
            xs = [elab_prop(a, hyps) for a in args]
            return {"Not": lambda: ("not", xs[0]), "And": lambda: ("and", *xs),
                    "Or": lambda: ("or", *xs), "Iff": lambda: ("iff", *xs)}[head[2]]()
        if head[0] == "id" and lookup(hyps, head[2]) is None and head[2] not in ("Eq", "Ne", "LE.le", "LT.lt"):
            raise ElabError(unknown_identifier(head[2]), head[1])
        raise ElabError("(sim) this proposition is outside the simulated fragment", node[1])
    if k == "num":
        raise ElabError(f"failed to synthesize\n  OfNat Prop {node[2]}\nnumerals are polymorphic in Lean, but the "
                        f"numeral `{node[2]}` cannot be used in a context where the expected type is\n  Prop\ndue to "
                        f"the absence of the instance above", node[1], genuine=True)
    if k == "binder":
        raise ElabError("(sim) quantifiers (∀/∃) are outside the simulated fragment", node[1])
    if k in ("hole", "shole"):
        raise ElabError("(sim) placeholders in propositions are not supported", node[1])
    raise ElabError("(sim) this proposition is outside the simulated fragment", node[1])


def elab_nat(node, hyps) -> tuple:
    """A ℕ term: numerals, variables ``n : ℕ`` of the context, + - * / % ^, parentheses, ``(t : ℕ)``."""
    k = node[0]
    if k == "num":
        return ("num", node[2])
    if k == "paren":
        return elab_nat(node[2], hyps)
    if k == "asc":
        ty = node[3]
        if ty[0] == "id" and ty[2] in _NAT_TYPES:
            return elab_nat(node[2], hyps)
        if ty[0] == "id" and ty[2] in _OTHER_TYPES:
            raise ElabError(f"(sim) only natural numbers (ℕ) are supported, not {ty[2]}", ty[1])
        raise ElabError("(sim) only natural numbers (ℕ) are supported", ty[1])
    if k == "bin" and node[2] in ("+", "-", "*", "/", "%", "^"):
        return ("op", node[2], elab_nat(node[3], hyps), elab_nat(node[4], hyps))
    if k == "neg":
        raise ElabError("failed to synthesize\n  Neg ℕ\nAdditional diagnostic information may be available "
                        "using the `set_option diagnostics true` command.", node[1])
    if k == "sci":
        raise ElabError("failed to synthesize\n  OfScientific ℕ\nAdditional diagnostic information may be "
                        "available using the `set_option diagnostics true` command.", node[1])
    if k == "id":
        name = node[2]
        h = lookup(hyps, name)
        if h is None:
            raise ElabError(unknown_identifier(name), node[1])
        if h.type == NAT:
            return ("nvar", name)
        raise ElabError("(sim) only variables of type ℕ may appear in arithmetic", node[1])
    raise ElabError("(sim) this ℕ term is outside the simulated fragment", node[1])
