"""Lean 4 surface syntax for the simulated kernel, part two: term syntax trees (tokens: :mod:`leangym.sim.tokens`).

The term parser is a Pratt parser using Lean's own precedences. Syntax nodes
are plain tuples ``(kind, span, *children)`` with ``span = (line, col,
end_line, end_col)``. They are cheap, hashable and immutable, so parsed
scripts can be cached by their text.

Tactic syntax lives in :mod:`leangym.sim.tactic_syntax`; it shares the
:class:`Parser` defined here (terms may contain ``by`` blocks and vice versa: a Parser is
given the tactic grammar's entry point, ``Parser(toks, parse_tactic_seq_here)``).
"""
from __future__ import annotations

from typing import Any, Callable

from leangym.sim.tokens import LeanSyntaxError, Tok, numeral


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

    def __init__(self, toks: list[Tok], tactic_seq: Callable[["Parser"], Any]):
        self.toks = toks
        # parses the tactics of a `by` block (tactic_syntax.parse_tactic_seq_here): terms hold tactic blocks and
        # tactics hold terms, so the tactic grammar is handed in rather than imported (no import cycle)
        self.tactic_seq = tactic_seq
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
        seq = self.tactic_seq(self)
        return ("by", self.span_from(t), seq)
