"""Warm-start data for the conjecturer: related statements made from a seed by small edits.

STP warm-starts its conjecturer on (theorem, proof) -> lemma pairs mined from Mathlib. Here the
pairs are edits of a seed's statement (``(binders) : goal``), each a guess at a related and
usually harder statement, never checked: the env judges them (invalid, duplicate, trivial, in band):

* ``curry``:  move the last hypothesis into the goal (``(h : A) : G`` -> ``: A → G``; one ``intro`` more);
* ``weaken``: ``G`` -> ``G ∨ v`` for a variable ``v`` (one ``left`` more);
* ``pair``:   ``G`` -> ``G ∧ A`` for a hypothesis type ``A`` (a ``constructor`` and an ``exact`` more);
* ``drop``:   drop a hypothesis (often unprovable: the band rule pays nothing for it).

``mutations(body, rng, n)`` applies ``n`` of them in a row.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

__all__ = ["Signature", "parse_body", "body_of", "goal_text", "statement", "mutate", "mutations", "EDITS"]

_CONNECTIVE = re.compile(r"[∧∨→↔]")


@dataclass(frozen=True)
class Signature:
    """``(p q : Prop) (h₁ : A) ... : G`` as its variable group(s), hypotheses and goal (text)."""

    variables: tuple[str, ...]  # binder groups that are not hypotheses, as written: "(p q : Prop)"
    hypotheses: tuple[tuple[str, str], ...]  # (name, type)
    goal: str

    def text(self) -> str:
        parts = list(self.variables) + [f"({n} : {t})" for n, t in self.hypotheses]
        return " ".join(parts + [":", self.goal])

    @property
    def props(self) -> list[str]:
        return [name for group in self.variables if group.endswith(": Prop)")
                for name in group[1:group.rindex(":")].split()]


def _closing(text: str, i: int) -> int:
    """Index of the bracket closing the one at ``i``."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] in "([{⟨":
            depth += 1
        elif text[j] in ")]}⟩":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"unbalanced brackets in {text!r}")


def parse_body(body: str) -> Signature:
    """``(binders) : goal`` -> :class:`Signature`; ValueError if it is not of that shape."""
    text, i, variables, hyps = body.strip(), 0, [], []
    while i < len(text) and text[i] in "([{":
        j = _closing(text, i)
        group = text[i:j + 1]
        names, sep, typ = group[1:-1].partition(":")
        if not sep:
            raise ValueError(f"binder without a type: {group!r}")
        if typ.strip() in ("Prop", "ℕ", "Nat", "ℤ", "Int") or len(names.split()) != 1:
            variables.append(group)
        else:
            hyps.append((names.strip(), typ.strip()))
        i = j + 1
        while i < len(text) and text[i] == " ":
            i += 1
    if not text[i:].startswith(":"):
        raise ValueError(f"expected ': goal' after the binders of {body!r}")
    return Signature(tuple(variables), tuple(hyps), text[i + 1:].strip())


def goal_text(body: str) -> str:
    """The proof start a signature gives, laid out as Lean shows goals (``p q : Prop``, ``h₁ : A``,
    ``⊢ G``; brackets as written, where Lean's printer drops redundant ones): what the prover's value
    head reads, before Lean has seen the statement."""
    s = parse_body(body)
    return "\n".join([g[1:-1].strip() for g in s.variables] + [f"{n} : {t}" for n, t in s.hypotheses]
                     + [f"⊢ {s.goal}"])


def body_of(formal_statement: str) -> str:
    """The part of ``theorem NAME body := by sorry`` between the name and ``:= by sorry``."""
    rest = formal_statement.strip().split(None, 2)[2]
    return rest[: rest.rindex(":=")].strip()


def statement(name: str, body: str) -> str:
    """A conjecture's statement (the env's action) from its body."""
    return f"theorem {name} {body.strip()} := by sorry"


def _wrap(formula: str) -> str:
    return f"({formula})" if _CONNECTIVE.search(formula) else formula


def _curry(s: Signature, rng: random.Random) -> Signature | None:
    if not s.hypotheses:
        return None
    (_, typ), rest = s.hypotheses[-1], s.hypotheses[:-1]
    return Signature(s.variables, rest, f"{_wrap(typ)} → {s.goal}")


def _weaken(s: Signature, rng: random.Random) -> Signature | None:
    if not s.props:
        return None
    v = s.props[int(rng.random() * len(s.props))]
    return Signature(s.variables, s.hypotheses, f"{_wrap(s.goal)} ∨ {v}")


def _pair(s: Signature, rng: random.Random) -> Signature | None:
    if not s.hypotheses:
        return None
    _, typ = s.hypotheses[int(rng.random() * len(s.hypotheses))]
    return Signature(s.variables, s.hypotheses, f"{_wrap(s.goal)} ∧ {_wrap(typ)}")


def _drop(s: Signature, rng: random.Random) -> Signature | None:
    if not s.hypotheses:
        return None
    i = int(rng.random() * len(s.hypotheses))
    return Signature(s.variables, s.hypotheses[:i] + s.hypotheses[i + 1:], s.goal)


EDITS = {"curry": _curry, "weaken": _weaken, "pair": _pair, "drop": _drop}
_WEIGHTS = (("curry", 0.35), ("weaken", 0.25), ("pair", 0.3), ("drop", 0.1))


def mutate(s: Signature, rng: random.Random) -> Signature:
    """One edit, drawn by weight among those that apply (the signature itself when none does)."""
    options = [(name, w) for name, w in _WEIGHTS if EDITS[name](s, random.Random(0)) is not None]
    if not options:
        return s
    u, acc = rng.random() * sum(w for _, w in options), 0.0
    for name, w in options:
        acc += w
        if u < acc:
            return EDITS[name](s, rng)
    return EDITS[options[-1][0]](s, rng)


def mutations(body: str, rng: random.Random, n: int = 1) -> str:
    """``body`` after ``n`` edits in a row."""
    s = parse_body(body)
    for _ in range(n):
        s = mutate(s, rng)
    return s.text()
