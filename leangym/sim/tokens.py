"""Lean 4 surface syntax for the simulated kernel, part one: tokens, and the errors of parsing.

The tokenizer keeps line/column positions (columns count code points, as
Lean's do) because error messages carry them and because Lean's tactic blocks
are layout sensitive: a tactic sequence continues on a new line only at the
block's column, and a term's arguments on later lines must sit to the right of
it. The parser of terms is :mod:`leangym.sim.syntax`, of tactics
:mod:`leangym.sim.tactic_syntax`.
"""
from __future__ import annotations

import re
import sys
from typing import NamedTuple

# Python refuses to convert longer digit strings (sys.get_int_max_str_digits(), 4300 by default),
# and converting them takes quadratic time; Lean takes any numeral. Longer ones are a `(sim)`
# rejection; an interpreter set to a lower limit lowers this one too.
MAX_NUMERAL_DIGITS = 4300


class LeanSyntaxError(Exception):
    """A parse error, reported the way Lean's parser reports it.

    ``genuine``: the text is wrong in any Lean (the simulator knows it), not merely outside
    the fragment; see :func:`outside_fragment`.
    """

    def __init__(self, msg: str, line: int, col: int, genuine: bool = False):
        super().__init__(msg)
        self.msg, self.line, self.col, self.genuine = msg, line, col, genuine


FRAGMENT_NOTE = "not in the simulated fragment (or not Lean)"


def outside_fragment(msg: str) -> str:
    """``msg`` tagged ``(sim)``: an error that may come from the simulator's limits.

    The simulator cannot tell text that is not Lean from Lean (Mathlib's notation,
    types and constants) that it does not model, so such errors must not read as
    Lean's verdict. A message that already starts with ``(sim)`` is kept as is.
    """
    if msg.startswith("(sim)"):
        return msg
    return f"(sim) {msg}" + (f"\n{FRAGMENT_NOTE}" if "\n" in msg else f": {FRAGMENT_NOTE}")


def numeral(tok: "Tok") -> int:
    """The value of a ``num`` token; a LeanSyntaxError (a rejection, not a crash) for a numeral
    too long for the simulator."""
    digits = tok.text.lstrip("0") or "0"
    limit = min(MAX_NUMERAL_DIGITS, sys.get_int_max_str_digits() or MAX_NUMERAL_DIGITS)
    if len(digits) > limit:
        raise LeanSyntaxError(f"(sim) numeral of {len(digits)} digits is too long for the simulator "
                              f"(at most {limit} digits)", tok.line, tok.col)
    return int(digits)


def unknown_identifier(name: str) -> str:
    """The error for a name the simulator does not know: Lean's text, tagged ``(sim)`` (Mathlib may have it)."""
    return outside_fragment(f"unknown identifier '{name}'")


class Tok(NamedTuple):
    kind: str  # 'id' | 'num' | 'sci' | 'sym' | 'eof'
    text: str
    line: int
    col: int
    eline: int
    ecol: int
    bol: bool  # first token on its line
    ws: bool  # whitespace (or start of text) right before it


# Longest first, so that e.g. '<;>' wins over '<'.
_SYMBOLS = sorted(
    """<;> := => <-> -> <= >= != /\\ \\/ <| |> ⟨ ⟩ ( ) [ ] { } , : ; | · . ? + - * / % ^ = ≠ ≤ < ≥ >
    ∧ ∨ ¬ → ↔ ∀ ∃ λ ↦ @ # ℕ ℤ ℚ ℝ ℂ ← $ ! ∘ × & ~ ∣ • ⁻¹""".split(),
    key=len,
    reverse=True,
)
_NOT_ID_START = set("λΠΣℕℤℚℝℂ")
_SUBSCRIPTS = set("₀₁₂₃₄₅₆₇₈₉ₐₑₒₓₔₕₖₗₘₙₚₛₜᵢᵣᵤᵥᵦᵧᵨᵩᵪⱼ")



def _ascii_digit(c: str) -> bool:
    # str.isdigit() is also true for subscripts (`h₈`), which Lean lexes as identifier characters.
    return "0" <= c <= "9"

def _id_start(c: str) -> bool:
    return (c.isalpha() or c == "_") and c not in _NOT_ID_START


def _id_rest(c: str) -> bool:
    return (c.isalnum() or c in "_'!?" or c in _SUBSCRIPTS) and c not in _NOT_ID_START


def tokenize(text: str, line0: int = 1, col0: int = 0) -> list[Tok]:
    """Tokens of ``text``; comments are skipped. Positions start at (line0, col0)."""
    toks: list[Tok] = []
    i, n = 0, len(text)
    line, col = line0, col0
    bol, ws = True, True
    while i < n:
        c = text[i]
        if c == "\n":
            i, line, col, bol, ws = i + 1, line + 1, 0, True, True
            continue
        if c == " " or (c == "\r" and text.startswith("\n", i + 1)):
            i, col, ws = i + 1, col + 1, True
            continue
        if c == "\t":  # Lean's whitespace is ' ', '\n' and '\r\n' only: a tab is an error there
            raise LeanSyntaxError("tabs are not allowed; please configure your editor to expand them", line, col,
                                  genuine=True)
        if text.startswith("--", i):
            while i < n and text[i] != "\n":
                i += 1
            ws = True
            continue
        if text.startswith("/-", i):
            depth, i, col = 1, i + 2, col + 2
            while i < n and depth:
                if text.startswith("/-", i):
                    depth, i, col = depth + 1, i + 2, col + 2
                elif text.startswith("-/", i):
                    depth, i, col = depth - 1, i + 2, col + 2
                elif text[i] == "\n":
                    i, line, col = i + 1, line + 1, 0
                else:
                    i, col = i + 1, col + 1
            if depth:
                raise LeanSyntaxError("unterminated comment", line, col, genuine=True)
            ws = True
            continue
        start = i
        if _id_start(c):
            # Dotted names (`Or.inl`, `h.mp`, `h.1`): components are identifiers or digits.
            i += 1
            while True:
                while i < n and _id_rest(text[i]):
                    i += 1
                if i + 1 < n and text[i] == "." and (_id_start(text[i + 1]) or _ascii_digit(text[i + 1])):
                    i += 1
                    continue
                break
            kind = "id"
        elif _ascii_digit(c):
            while i < n and _ascii_digit(text[i]):
                i += 1
            kind = "num"
            if i + 1 < n and text[i] == "." and _ascii_digit(text[i + 1]):
                i += 1
                while i < n and _ascii_digit(text[i]):
                    i += 1
                kind = "sci"
        else:
            for s in _SYMBOLS:
                if text.startswith(s, i):
                    i += len(s)
                    kind = "sym"
                    break
            else:
                # Lean's lexer knows Mathlib's notation (`∑`, `↑`, `∈`, ...); this one only the fragment's
                raise LeanSyntaxError(outside_fragment(f"unexpected character '{c}'"), line, col)
        word = text[start:i]
        toks.append(Tok(kind, word, line, col, line, col + len(word), bol, ws))
        col += len(word)
        bol = ws = False
    toks.append(Tok("eof", "", line, col, line, col, True, True))
    return toks


_WS = re.compile(r"\s+")


def squash(text: str) -> str:
    return _WS.sub(" ", text).strip()
