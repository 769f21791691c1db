"""Lean 4 surface syntax for the simulated kernel: tokens and term syntax trees.

The tokenizer keeps line/column positions (columns count code points, as
Lean's do) because error messages carry them and because Lean's tactic blocks
are layout sensitive: a tactic sequence continues on a new line only at the
block's column, and a term's arguments on later lines must sit to the right of
it. The term parser is a Pratt parser using Lean's own precedences.

Syntax nodes are plain tuples ``(kind, span, *children)`` with
``span = (line, col, end_line, end_col)``. They are cheap, hashable and
immutable, so parsed scripts can be cached by their text.

Tactic syntax lives in :mod:`leangym.sim.tactic_syntax`; it shares the
:class:`Parser` defined here (terms may contain ``by`` blocks and vice versa).
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


# --------------------------------------------------------------------------- terms

MAX_PREC = 1024
# binary operator -> (precedence, associativity 'l' | 'r' | 'n', canonical spelling)
BINOPS: dict[str, tuple[int, str, str]] = {
    "↔": (20, "n", "↔"), "<->": (20, "n", "↔"),
    "→": (25, "r", "→"), "->": (25, "r", "→"),
    "∨": (30, "r", "∨"), "\\/": (30, "r", "∨"),
    "∧": (35, "r", "∧"), "/\\": (35, "r", "∧"),
    "=": (50, "n", "="), "≠": (50, "n", "≠"), "≤": (50, "n", "≤"), "<=": (50, "n", "≤"),
    "<": (50, "n", "<"), "≥": (50, "n", "≥"), ">=": (50, "n", "≥"), ">": (50, "n", ">"),
    "∣": (50, "n", "∣"),
    "+": (65, "l", "+"), "-": (65, "l", "-"),
    "*": (70, "l", "*"), "/": (70, "l", "/"), "%": (70, "l", "%"),
    "^": (75, "r", "^"),
    "<|": (10, "r", "<|"),
}
_ARG_START_SYMS = {"(", "⟨", "?", "@", "ℕ", "."}
_TERMINATORS = {")", "⟩", ",", ":=", "]", "}", ";", "<;>", "|", "=>", "↦", "from", "with", "at", "using", "by"}


class Parser:
    """Recursive-descent/Pratt parser over a token list, aware of Lean's layout rules.

    ``stop_col``: a token that begins a line at a column <= stop_col ends the
    current term or tactic (it belongs to an enclosing block). -1 disables.
    ``closers``: the brackets of ``⟨…⟩``/``[…]`` lists being read, innermost last.
    """

    command_keywords: frozenset = frozenset()  # a command keyword at a line start ends any tactic/term

    def __init__(self, toks: list[Tok]):
        self.toks = toks
        self.i = 0
        self.stop_col = -1
        self.closers: list[str] = []

    # ----------------------------------------------------------------- helpers
    def peek(self, k: int = 0) -> Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def blocked(self, t: Tok | None = None) -> bool:
        t = t or self.peek()
        return t.kind == "eof" or (t.bol and (t.col <= self.stop_col or t.text in self.command_keywords))

    def next(self) -> Tok:
        t = self.toks[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def is_sym(self, *syms: str) -> bool:
        t = self.peek()
        return t.kind == "sym" and t.text in syms and not self.blocked(t)

    def is_kw(self, *words: str) -> bool:
        t = self.peek()
        return t.kind == "id" and t.text in words and not self.blocked(t)

    def expect(self, sym: str, what: str | None = None) -> Tok:
        t = self.peek()
        if t.text != sym or t.kind not in ("sym", "id") or self.blocked(t):
            self.fail(f"expected '{sym}'" if what is None else f"expected {what}")
        return self.next()

    def comma_terms(self, close: str) -> tuple:
        """Comma-separated terms up to ``close`` (the opening bracket already read).

        Inside brackets the layout rule is off: a term may go on over several lines.
        """
        saved, self.stop_col = self.stop_col, -1
        self.closers.append(close)
        items = []
        if not self.is_sym(close):
            items.append(self.term())
            while self.is_sym(","):
                self.next()
                items.append(self.term())
        self.closers.pop()
        self.expect(close, f"',' or '{close}'")
        self.stop_col = saved
        return tuple(items)

    def fail(self, expected: str):
        t = self.peek()
        if t.kind == "eof" or self.blocked(t):
            raise LeanSyntaxError(f"unexpected end of input; {expected}", t.line, t.col)
        raise LeanSyntaxError(f"unexpected token '{t.text}'; {expected}", t.line, t.col)

    def ident(self, what: str = "identifier") -> Tok:
        t = self.peek()
        if t.kind != "id" or self.blocked(t):
            self.fail(f"expected {what}")
        return self.next()

    def end_span(self):
        t = self.toks[self.i - 1] if self.i else self.peek()
        return (t.eline, t.ecol)

    def span_from(self, t: Tok):
        el, ec = self.end_span()
        return (t.line, t.col, el, ec)

    # ----------------------------------------------------------------- terms
    def term(self, min_prec: int = 0):
        """A term; binary operators with precedence >= min_prec are absorbed."""
        first = self.peek()
        left, left_prec = self.leading()
        while True:
            t = self.peek()
            if self.blocked(t) or t.kind != "sym" or t.text not in BINOPS:
                break
            prec, assoc, op = BINOPS[t.text]
            lhs_need = prec if assoc == "l" else prec + 1
            if prec < min_prec or left_prec < lhs_need:
                break
            self.next()
            rhs = self.term(prec if assoc == "r" else prec + 1)
            if op == "<|":
                left = ("app", self.span_from(first), left, (rhs,))
            else:
                left = ("bin", self.span_from(first), op, left, rhs)
            left_prec = prec
        return left

    def leading(self):
        """A leading term and its precedence (``MAX_PREC`` for atoms and applications)."""
        t = self.peek()
        if self.blocked(t):
            self.fail("expected term")
        if t.kind == "sym" and t.text == "¬":
            self.next()
            arg = self.term(40)
            return ("not", self.span_from(t), arg), MAX_PREC
        if t.kind == "sym" and t.text == "-":
            self.next()
            arg = self.term(75)
            return ("neg", self.span_from(t), arg), 75
        if t.kind == "sym" and t.text in ("∀", "∃"):
            return self.binder_term(), 0
        if (t.kind == "sym" and t.text == "λ") or (t.kind == "id" and t.text == "fun"):
            return self.fun(), 0
        if t.kind == "id" and t.text == "by":
            return self.by_block(), 0
        if t.kind == "id" and t.text == "show":
            self.next()
            ty = self.term()
            if self.is_kw("from"):
                self.next()
                body = self.term()
            elif self.is_kw("by"):
                body = self.by_block()
            else:
                self.fail("expected 'from' or 'by'")
            return ("show", self.span_from(t), ty, body), 0
        head = self.atom()
        args = []
        while True:
            a = self.peek()
            if self.blocked(a):
                break
            if a.kind in ("id", "num", "sci") and a.text not in _TERMINATORS and a.text not in ("then", "else"):
                if a.text in ("fun", "by"):
                    args.append(self.leading()[0])
                    break
                args.append(self.atom())
            elif a.kind == "sym" and (a.text in _ARG_START_SYMS or a.text == "λ"):
                if a.text == "λ":
                    args.append(self.fun())
                    break
                args.append(self.atom())
            else:
                break
        if args:
            if head[0] == "num":
                raise LeanSyntaxError("function expected", head[1][0], head[1][1])
            return ("app", self.span_from(t), head, tuple(args)), MAX_PREC
        return head, MAX_PREC

    def atom(self):
        """An argument-level term: identifier, literal, bracketed term, hole; then `.field`s."""
        t = self.peek()
        if self.blocked(t):
            self.fail("expected term")
        if t.kind == "id":
            self.next()
            node = ("hole", self.span_from(t)) if t.text == "_" else ("id", self.span_from(t), t.text)
        elif t.kind == "num":
            self.next()
            node = ("num", self.span_from(t), numeral(t))
        elif t.kind == "sci":
            self.next()
            node = ("sci", self.span_from(t), t.text)
        elif t.text in ("ℕ", "ℤ", "ℚ", "ℝ", "ℂ"):
            self.next()
            node = ("id", self.span_from(t), t.text)
        elif t.text == "." and self.peek(1).kind == "id" and not self.peek(1).ws:
            self.next()
            n = self.next()
            node = ("dotid", self.span_from(t), n.text)
        elif t.text == "?":
            self.next()
            n = self.peek()
            if n.kind != "id" or n.ws:
                self.fail("expected identifier or '_'")
            self.next()
            node = ("shole", self.span_from(t), n.text)
        elif t.text == "@":
            self.next()
            n = self.ident()
            node = ("id", self.span_from(t), n.text)
        elif t.text == "(":
            node = self.paren()
        elif t.text == "⟨":
            self.next()
            node = ("anon", self.span_from(t), self.comma_terms("⟩"))
        else:
            self.fail("expected term")
        # projections `.1`, `.mp` written right after the term (no whitespace)
        while True:
            d = self.peek()
            if d.kind == "sym" and d.text == "." and not d.ws:
                f = self.peek(1)
                if f.kind in ("id", "num") and not f.ws:
                    self.next()
                    self.next()
                    for part in f.text.split("."):
                        node = ("proj", self.span_from(t), node, part)
                    continue
            break
        return node

    def paren(self):
        t = self.expect("(")
        saved, self.stop_col = self.stop_col, -1
        if self.is_sym(")"):
            self.fail("expected term")
        inner = self.term()
        if self.is_sym(":"):
            self.next()
            ty = self.term()
            inner = ("asc", self.span_from(t), inner, ty)
        elif self.is_sym(","):
            raise LeanSyntaxError("(sim) tuples (products) are outside the simulated fragment", t.line, t.col)
        self.expect(")", "')'")
        self.stop_col = saved
        if inner[0] != "asc":
            inner = ("paren", self.span_from(t), inner)
        return inner

    def fun(self):
        t = self.next()  # `fun` or `λ`
        binders = []
        while not (self.is_sym("=>", "↦")):
            b = self.peek()
            if self.blocked(b):
                self.fail("expected '=>'")
            if b.kind == "id":
                self.next()
                binders.append(("bname", self.span_from(b), b.text, None))
            elif b.text == "⟨":
                binders.append(("bpat", self.span_from(b), self.atom()))
            elif b.text == "(":
                self.next()
                names = [self.ident().text]
                while self.peek().kind == "id":
                    names.append(self.next().text)
                self.expect(":")
                ty = self.term()
                self.expect(")")
                for nm in names:
                    binders.append(("bname", self.span_from(b), nm, ty))
            else:
                self.fail("expected '=>'")
        if not binders:
            self.fail("expected identifier")
        self.next()
        body = self.term()
        return ("fun", self.span_from(t), tuple(binders), body)

    def binder_term(self):
        t = self.next()  # ∀ / ∃
        names = []
        ty = None
        if self.is_sym("("):
            self.next()
            while self.peek().kind == "id":
                names.append(self.next().text)
            self.expect(":")
            ty = self.term()
            self.expect(")")
        else:
            while self.peek().kind == "id" and not self.blocked():
                names.append(self.next().text)
            if self.is_sym(":"):
                self.next()
                ty = self.term(1)
        self.expect(",")
        body = self.term()
        return ("binder", self.span_from(t), t.text, tuple(names), ty, body)

    def by_block(self):
        t = self.next()  # `by`
        from leangym.sim.tactic_syntax import parse_tactic_seq_here

        seq = parse_tactic_seq_here(self)
        return ("by", self.span_from(t), seq)


_WS = re.compile(r"\s+")


def squash(text: str) -> str:
    return _WS.sub(" ", text).strip()
