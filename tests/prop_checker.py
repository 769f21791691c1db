"""An independent reference checker for PropLogic proofs (used by ``test_generator.py``).

A Lean 4 precedence parser of the printed statements and an interpreter of
exactly the tactics the generator uses, with Lean's goal order (strict: no
unfolding of ``¬``, no ``trivial`` beyond ``True``). It shares no code with the
generator or the simulated kernel, so it checks both of them, thousands of
theorems fast.
"""
from __future__ import annotations

import re

class CheckError(AssertionError):
    pass


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9'₀-₉]*)|(.))")
_INFIX = {"∧": ("and", 35, 36, 35), "∨": ("or", 30, 31, 30), "→": ("imp", 25, 26, 25), "↔": ("iff", 20, 21, 21)}
_REL = {"=", "<", "≤"}


def _tokens(text: str) -> list[str]:
    out = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m, text[pos:]
        out.append(m.group(0).strip())
        pos = m.end()
    return [t for t in out if t]


class Parser:
    """Pratt parser with Lean 4's notations: ``¬`` max (argument at 40), infixr ∧ 35, ∨ 30, → 25, infix ↔ 20."""

    def __init__(self, text: str, variables: dict[str, int]):
        self.toks = _tokens(text)
        self.i = 0
        self.vars = variables

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str:
        t = self.toks[self.i]
        self.i += 1
        return t

    def parse(self, prec: int = 0) -> tuple:
        t = self.take()
        if t == "(":
            lhs = self.parse(0)
            assert self.take() == ")"
            lhs_prec = 1024
        elif t == "¬":
            lhs, lhs_prec = ("not", self.parse(40)), 1024
        elif t == "True":
            lhs, lhs_prec = ("true",), 1024
        elif t == "False":
            lhs, lhs_prec = ("false",), 1024
        elif t.isdigit():
            lhs, lhs_prec = self.arith(t), 50
        else:
            assert t in self.vars, f"unknown identifier {t!r}"
            lhs, lhs_prec = ("var", self.vars[t]), 1024
        while True:
            op = self.peek()
            if op not in _INFIX:
                break
            tag, p, lp, rp = _INFIX[op]
            if p < prec:
                break
            assert lhs_prec >= lp, f"ambiguous: {op} after a term of precedence {lhs_prec}"
            self.take()
            lhs, lhs_prec = (tag, lhs, self.parse(rp)), p
        return lhs

    def arith(self, first: str) -> tuple:
        toks = [first]
        while self.peek() is not None and (self.peek().isdigit() or self.peek() in {"+", "*"} | _REL):
            toks.append(self.take())
        text = " ".join(toks)
        lhs, rel, rhs = re.fullmatch(r"(.+?) (=|<|≤) (.+)", text).groups()
        value = {"=": lambda a, b: a == b, "<": lambda a, b: a < b, "≤": lambda a, b: a <= b}[rel](eval(lhs), eval(rhs))
        return ("arith", text, value)


def parse_statement(stmt: str) -> tuple[dict[str, tuple], tuple]:
    """``theorem NAME binders : goal := by sorry`` -> (hypotheses by name, goal)."""
    m = re.fullmatch(r"theorem \S+ (.*) := by sorry", stmt.strip(), re.S)
    assert m, stmt
    rest = m.group(1)
    variables: dict[str, int] = {}
    hyps: dict[str, tuple] = {}
    while rest.startswith("("):
        level, end = 0, None
        for k, ch in enumerate(rest):
            level += {"(": 1, ")": -1}.get(ch, 0)
            if level == 0:
                end = k
                break
        assert end is not None, rest
        names, _, typ = rest[1:end].partition(" : ")
        names = names.split()
        if typ == "Prop":
            for n in names:
                variables[n] = len(variables)
        else:
            for n in names:
                p = Parser(typ, variables)
                hyps[n] = p.parse()
                assert p.peek() is None, typ
        rest = rest[end + 1:].lstrip()
    assert rest.startswith(": "), rest
    p = Parser(rest[2:], variables)
    goal = p.parse()
    assert p.peek() is None, rest
    return hyps, goal


def _type_of(term: str, ctx: dict[str, tuple]) -> tuple:
    term = term.strip()
    m = re.fullmatch(r"(\S+)\.([12])", term)
    if m:
        f = ctx[m.group(1)]
        if f[0] == "and":
            return f[int(m.group(2))]
        if f[0] == "iff":
            a, b = f[1], f[2]
            return ("imp", a, b) if m.group(2) == "1" else ("imp", b, a)
        raise CheckError(f"{term}: projection of {f}")
    parts = term.split()
    if len(parts) == 1:
        if term not in ctx:
            raise CheckError(f"unknown identifier {term}")
        return ctx[term]
    if len(parts) == 2:
        f, a = ctx[parts[0]], ctx[parts[1]]
        if f[0] == "imp" and f[1] == a:
            return f[2]
        if f[0] == "not" and f[1] == a:
            return ("false",)
        raise CheckError(f"{term}: cannot apply {f} to {a}")
    raise CheckError(f"unsupported term {term}")


def _apply_premises(h: tuple, target: tuple) -> list[tuple] | None:
    premises = []
    while True:
        if h == target:
            return premises
        if h[0] == "imp":
            premises.append(h[1])
            h = h[2]
        elif h[0] == "not":
            premises.append(h[1])
            h = ("false",)
        else:
            return None


def check_proof(stmt: str, proof: tuple[str, ...] | list[str]) -> None:
    """Run ``proof`` on ``stmt`` with Lean's semantics (main goal first); raise CheckError if it fails."""
    hyps, goal = parse_statement(stmt)
    goals: list[tuple[dict[str, tuple], tuple]] = [(dict(hyps), goal)]
    for step, tac in enumerate(proof):
        if not goals:
            raise CheckError(f"step {step} {tac!r}: no goals")
        ctx, target = goals.pop(0)
        new: list[tuple[dict[str, tuple], tuple]]
        t = tac.strip()
        if m := re.fullmatch(r"intro (\S+)", t):
            if target[0] == "imp":
                new = [({**ctx, m.group(1): target[1]}, target[2])]
            elif target[0] == "not":
                new = [({**ctx, m.group(1): target[1]}, ("false",))]
            else:
                raise CheckError(f"{tac}: goal {target} is no implication")
        elif m := re.fullmatch(r"exact ⟨(\S+), (\S+)⟩", t):
            a, b = ctx[m.group(1)], ctx[m.group(2)]
            ok = (target[0] == "and" and (a, b) == target[1:]) or (
                target[0] == "iff" and (a, b) == (("imp", target[1], target[2]), ("imp", target[2], target[1])))
            if not ok:
                raise CheckError(f"{tac}: {a}, {b} do not build {target}")
            new = []
        elif m := re.fullmatch(r"exact absurd (\S+) (\S+)", t):
            a, n = ctx[m.group(1)], ctx[m.group(2)]
            if n != ("not", a):
                raise CheckError(f"{tac}: {n} is not the negation of {a}")
            new = []
        elif m := re.fullmatch(r"exact (.+)", t):
            if _type_of(m.group(1), ctx) != target:
                raise CheckError(f"{tac}: type {_type_of(m.group(1), ctx)} is not {target}")
            new = []
        elif t == "constructor":
            if target[0] == "and":
                new = [(ctx, target[1]), (ctx, target[2])]
            elif target[0] == "iff":
                new = [(ctx, ("imp", target[1], target[2])), (ctx, ("imp", target[2], target[1]))]
            elif target == ("true",):
                new = []
            else:
                raise CheckError(f"constructor on {target}")
        elif t in ("left", "right"):
            if target[0] != "or":
                raise CheckError(f"{t} on {target}")
            new = [(ctx, target[1] if t == "left" else target[2])]
        elif m := re.fullmatch(r"apply (\S+)", t):
            premises = _apply_premises(ctx[m.group(1)], target)
            if premises is None:
                raise CheckError(f"{tac}: {ctx[m.group(1)]} does not conclude {target}")
            new = [(ctx, p) for p in premises]
        elif m := re.fullmatch(r"rcases (\S+) with ⟨(\S+), (\S+)⟩", t):
            h = ctx[m.group(1)]
            rest = {k: v for k, v in ctx.items() if k != m.group(1)}
            if h[0] == "and":
                a, b = h[1], h[2]
            elif h[0] == "iff":
                a, b = ("imp", h[1], h[2]), ("imp", h[2], h[1])
            else:
                raise CheckError(f"{tac}: {h}")
            new = [({**rest, m.group(2): a, m.group(3): b}, target)]
        elif m := re.fullmatch(r"rcases (\S+) with (\S+) \| (\S+)", t):
            h = ctx[m.group(1)]
            if h[0] != "or":
                raise CheckError(f"{tac}: {h}")
            rest = {k: v for k, v in ctx.items() if k != m.group(1)}
            new = [({**rest, m.group(2): h[1]}, target), ({**rest, m.group(3): h[2]}, target)]
        elif t == "exfalso":
            new = [(ctx, ("false",))]
        elif t == "trivial":
            if target != ("true",):
                raise CheckError(f"trivial on {target}")
            new = []
        elif t == "assumption":
            if target not in ctx.values():
                raise CheckError(f"assumption: no {target}")
            new = []
        elif m := re.fullmatch(r"by_contra (\S+)", t):
            if target[0] == "not" or (target[0] == "imp" and target[2] == ("false",)):
                raise CheckError("by_contra on a negation (Mathlib would introduce the positive form)")
            new = [({**ctx, m.group(1): ("not", target)}, ("false",))]
        elif t in ("norm_num", "decide"):
            if target[0] != "arith" or not target[2]:
                raise CheckError(f"{t} on {target}")
            new = []
        else:
            raise CheckError(f"unknown tactic {tac!r}")
        for c, _ in new:
            if len(set(c)) != len(c):
                raise CheckError("duplicate names")
        goals[:0] = new
    if goals:
        raise CheckError(f"{len(goals)} goals left: {goals[0][1]}")
