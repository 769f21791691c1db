"""The generator's formulas: tuples, printed with Lean 4's precedences and minimal parentheses.

``("var", i)`` ``("true",)`` ``("false",)`` ``("arith", text)``
``("not", a)`` ``("and", a, b)`` ``("or", a, b)`` ``("imp", a, b)`` ``("iff", a, b)``.
"""
from __future__ import annotations

from typing import Mapping, Sequence

TRUE = ("true",)
FALSE = ("false",)
PREC = {"iff": 20, "imp": 25, "or": 30, "and": 35}
_SYM = {"iff": "↔", "imp": "→", "or": "∨", "and": "∧"}
VAR_NAMES = ("p", "q", "r", "s", "t")


def render(f: tuple, names: Sequence[str] = VAR_NAMES, prec: int = 0) -> str:
    """``f`` in Lean 4 syntax with minimal parentheses, as an argument of precedence ``prec``."""
    tag = f[0]
    if tag == "var":
        return names[f[1]]
    if tag == "true":
        return "True"
    if tag == "false":
        return "False"
    if tag == "arith":  # `=`, `<`, `≤` are precedence 50
        return f[1] if prec <= 50 else f"({f[1]})"
    if tag == "not":  # notation:max "¬" p:40
        return "¬" + render(f[1], names, 40)
    p = PREC[tag]
    left = p + 1
    right = p + 1 if tag == "iff" else p
    s = f"{render(f[1], names, left)} {_SYM[tag]} {render(f[2], names, right)}"
    return s if prec <= p else f"({s})"


def depth(f: tuple) -> int:
    """Connective depth: atoms 0, ``¬a`` and ``a ∘ b`` one more than their arguments."""
    n = len(f)
    if n == 1 or f[0] in ("var", "arith"):
        return 0
    if n == 2:
        return 1 + depth(f[1])
    return 1 + max(depth(f[1]), depth(f[2]))


def vars_in_order(f: tuple, out: list[int]) -> None:
    """Append the variables of ``f`` not yet in ``out``, in order of first appearance."""
    tag = f[0]
    if tag == "var":
        if f[1] not in out:
            out.append(f[1])
    elif tag == "not":
        vars_in_order(f[1], out)
    elif len(f) == 3 and tag != "arith":
        vars_in_order(f[1], out)
        vars_in_order(f[2], out)


def rename_vars(f: tuple, m: Mapping[int, int]) -> tuple:
    tag = f[0]
    if tag == "var":
        return ("var", m[f[1]])
    if tag == "not":
        return ("not", rename_vars(f[1], m))
    if tag in PREC:
        return (tag, rename_vars(f[1], m), rename_vars(f[2], m))
    return f


def has_echo(f: tuple) -> bool:
    """``a ∘ a`` somewhere in ``f`` (``p ∧ p``, ``q → q``): legal but reads as noise."""
    if len(f) == 3 and f[0] in PREC:
        return f[1] == f[2] or has_echo(f[1]) or has_echo(f[2])
    return f[0] == "not" and has_echo(f[1])


def halves(goal: tuple) -> tuple[tuple, tuple]:
    """The two goals ``constructor`` leaves on ``a ∧ b`` (``a``, ``b``) or ``a ↔ b`` (``a → b``, ``b → a``)."""
    if goal[0] == "and":
        return goal[1], goal[2]
    return ("imp", goal[1], goal[2]), ("imp", goal[2], goal[1])
