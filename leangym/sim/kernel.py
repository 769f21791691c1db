"""Commands and declarations: what one simulated Lean process knows and checks.

:class:`Kernel` holds the environment (built-in lemmas plus the user's
``theorem``/``axiom`` declarations) and runs whole commands the way the Lean
REPL does, producing REPL-shaped messages (``pos`` line 1-based, column
0-based in code points). Helpers for other modules:

* :func:`check_proof` - does a tactic script prove a ``... := by sorry`` statement
  (no errors, no ``sorry``)?
* :func:`statement_formula` - the proposition a statement claims (hypotheses ->
  conclusion), for :func:`leangym.sim.formula.is_tautology` (re-exported here).
"""
from __future__ import annotations

import re
import time
from contextlib import contextmanager
from typing import NamedTuple

from leangym.sim.formula import NAT, PROP, SORTS, FragmentError, is_tautology
from leangym.sim.goals import TYPE_NAMES, ElabError, Goal, Hyp, elab_prop, goals_text
from leangym.sim.syntax import Parser
from leangym.sim.tokens import LeanSyntaxError, Tok, outside_fragment, tokenize
from leangym.sim.tactic_syntax import parse_tactic_seq_here
from leangym.sim.tactics import SYNTHETIC_SORRY, Engine, State, TacticError, Timeout
from leangym.sim.lemmas import BUILTINS, Const
from leangym.sim.terms import Elaborator

# Lean's own axioms exist in every environment, though this kernel has no use for them: declaring
# one of these names again is an error, as in Lean (an axiom named `propext : False` would otherwise
# pass the final check's allowed-axioms list).
LEAN_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})
COMMANDS = {"#", "theorem", "lemma", "example", "axiom", "import", "open", "set_option", "#print", "def", "namespace",
            "section", "end", "variable", "#check", "#eval", "noncomputable", "instance", "universe", "abbrev",
            "private", "protected", "@[", "attribute", "structure", "inductive", "class", "macro", "syntax"}
HEARTBEATS = ("(deterministic) timeout at `whnf`, maximum number of heartbeats (200000) has been reached\n"
              "Use `set_option maxHeartbeats <num>` to set the limit.\nAdditional diagnostic information may be "
              "available using the `set_option diagnostics true` command.")
COMMAND_STEPS = 2_000_000


class Decl(NamedTuple):
    """A parsed ``theorem``/``axiom`` header."""

    kind: str
    name: str | None
    name_tok: Tok
    hyps: tuple  # Hyp(...) for every binder, Prop variables included
    binders: tuple  # Const binders (for later use of the declaration)
    target: tuple


def _msg(severity: str, text: str, span) -> dict:
    l1, c1, l2, c2 = span
    return {"severity": severity, "pos": {"line": l1, "column": c1}, "endPos": {"line": l2, "column": c2}, "data": text}


class Kernel:
    """The environment of one process plus command execution.

    Declarations stay until :meth:`reset` (the protocol leaves open whether a Lean
    process keeps them, so the simulator takes the case that matters for soundness),
    and, as in Lean, a name is never declared twice. ``namespace N`` ... ``end N``
    puts ``N.`` before the names declared inside.
    """

    def __init__(self):
        self.env: dict[str, Const] = dict(BUILTINS)

    def reset(self) -> None:
        self.env = dict(BUILTINS)

    # ----------------------------------------------------------------- commands
    def run_command(self, source: str, declare: bool = True):
        """Run every command of ``source``. Returns ``(messages, sorries)``.

        ``sorries`` are ``(goal, span, env)`` for every ``sorry`` met, in order: ``env`` is the
        environment at that point (earlier commands of ``source`` included, the declaration being
        elaborated not), which tactics on that goal see, as in Lean.
        ``declare=False`` checks without adding declarations to the environment: the commands of
        ``source`` still see each other's declarations, in a copy.
        """
        if not declare:
            kept, self.env = self.env, dict(self.env)
            try:
                return self.run_command(source)
            finally:
                self.env = kept
        messages: list[dict] = []
        sorries: list = []
        try:
            toks = tokenize(source)
        except LeanSyntaxError as e:
            return [_msg("error", e.msg, (e.line, e.col, e.line, e.col))], []
        p = Parser(toks, parse_tactic_seq_here)
        p.command_keywords = COMMANDS
        declared_here: set[str] = set()
        namespaces: list[str] = []  # open `namespace`s, innermost last (they end with the command)
        while p.peek().kind != "eof":
            start = p.i
            try:
                self._command(p, source, messages, sorries, declare, declared_here, namespaces)
            except LeanSyntaxError as e:
                messages.append(_msg("error", e.msg, (e.line, e.col, e.line, e.col)))
                if p.i == start:
                    p.next()
                while p.peek().kind != "eof" and not (p.peek().bol and p.peek().col == 0 and p.peek().text in COMMANDS):
                    p.next()
        return messages, sorries

    def _command(self, p: Parser, source, messages, sorries, declare, declared_here, namespaces):
        t = p.peek()
        w = t.text
        if w in ("namespace", "end"):
            p.next()
            named = w == "namespace" or (p.peek().kind == "id" and not p.peek().bol)
            name = p.ident("namespace name").text if named else None
            if w == "namespace":
                namespaces.append(name)
            elif not namespaces:
                raise LeanSyntaxError("invalid 'end', insufficient scopes", t.line, t.col)
            elif name != namespaces[-1]:
                raise LeanSyntaxError(f"invalid 'end', name mismatch (expected {namespaces[-1]})", t.line, t.col)
            else:
                namespaces.pop()
            return
        if w in ("import", "open", "set_option", "universe"):
            p.next()
            # the rest of the line (or `... in` prefix) is accepted as a no-op
            while p.peek().kind != "eof" and not p.peek().bol:
                if p.peek().text == "in" and p.peek().kind == "id":
                    p.next()
                    return
                p.next()
            return
        if w == "#":
            p.next()
            word = p.peek()
            if not (word.kind == "id" and word.text == "print" and p.peek(1).text == "axioms"
                    and (word.line, word.col) == (t.line, t.col + 1)):  # `#print` is one token
                raise LeanSyntaxError("(sim) only '#print axioms NAME' is supported", t.line, t.col)
            p.next()
            p.next()
            n = p.ident()
            # relative to the open namespaces first, as Lean resolves names (`_root_.x`: only the root)
            scoped = ([n.text.removeprefix("_root_.")] if n.text.startswith("_root_.")
                      else [".".join(namespaces[:i] + [n.text]) for i in range(len(namespaces), -1, -1)])
            full = next((c for c in scoped if c in self.env), None)
            span = (t.line, t.col, n.eline, n.ecol)
            if full is None:
                messages.append(_msg("error", f"unknown constant '{n.text}'", (n.line, n.col, n.eline, n.ecol)))
            elif self.env[full].axioms:
                messages.append(_msg("info", f"'{full}' depends on axioms: [{', '.join(self.env[full].axioms)}]", span))
            else:
                messages.append(_msg("info", f"'{full}' does not depend on any axioms", span))
            return
        if w in ("private", "protected", "noncomputable"):
            p.next()
            return self._command(p, source, messages, sorries, declare, declared_here, namespaces)
        if w in ("theorem", "lemma", "example", "axiom"):
            return self._declaration(p, source, messages, sorries, declare, declared_here, namespaces)
        raise LeanSyntaxError(f"(sim) command '{w}' is not supported by the simulated kernel", t.line, t.col)

    def _declaration(self, p: Parser, source, messages, sorries, declare, declared_here, namespaces):
        decl = parse_header(p)
        # Declared under the open namespaces. Names inside a proof are still resolved from the root
        # only (the fragment has no use for namespace-relative lookup).
        name = (None if decl.name is None else decl.name.removeprefix("_root_.") if decl.name.startswith("_root_.")
                else ".".join(namespaces + [decl.name]))  # `_root_.x` is `x`, whatever namespace is open
        if name is not None and (name in declared_here or name in self.env or name in LEAN_AXIOMS):
            # as in Lean: an environment never redefines a name (a proof could otherwise cite
            # an earlier declaration of its own theorem, or the theorem itself)
            messages.append(_msg("error", f"'{name}' has already been declared", _tok_span(decl.name_tok)))
            name = None
        if decl.kind == "axiom":
            if name is not None and declare:
                self.env[name] = Const(name, _schema_binders(decl), _pattern(decl), (name,), "axiom")
                declared_here.add(name)
            return
        p.expect(":=", "':='")  # (parse_header has seen it)
        goal = Goal(decl.hyps, decl.target)
        axioms, errors = self._prove(p, source, goal, messages, sorries)
        explicit_sorry = "sorryAx" in axioms
        final = tuple(dict.fromkeys("sorryAx" if a == SYNTHETIC_SORRY else a for a in axioms))
        if explicit_sorry:
            messages.append(_msg("warning", "declaration uses 'sorry'", _tok_span(decl.name_tok)))
        if name is not None and declare:
            self.env[name] = Const(name, _schema_binders(decl), _pattern(decl), final, "theorem")
            declared_here.add(name)

    def _prove(self, p: Parser, source, goal: Goal, messages, sorries):
        """Elaborate the proof after ``:=``; returns (axioms, had_errors)."""
        deadline = time.monotonic() + 30.0
        engine = Engine(self.env, source, max_steps=COMMAND_STEPS, deadline=deadline, recover=True)
        t = p.peek()
        if t.kind == "id" and t.text == "by":
            p.next()
            seq = parse_tactic_seq_here(p)
            if p.peek().kind != "eof" and not (p.peek().bol and p.peek().col == 0):
                n = p.peek()
                raise LeanSyntaxError(f"unexpected token '{n.text}'; expected command", n.line, n.col)
            st = State((goal,))
            by_span = (t.line, t.col, seq[1][2], seq[1][3])
            try:
                # item by item, so that messages logged before a failing tactic survive (as in Lean)
                for item in seq[2]:
                    st = engine.run(item, st)
            except TacticError as e:
                # Lean reports the first error of the block and admits what is left
                st = st._replace(goals=(), axioms=st.axioms + (SYNTHETIC_SORRY,),
                                 log=st.log + (("error", e.msg, e.span or seq[1]),))
            except Timeout:
                st = st._replace(goals=(), axioms=st.axioms + (SYNTHETIC_SORRY,),
                                 log=st.log + (("error", HEARTBEATS, by_span),))
            errors = False
            for entry in st.log:
                if entry[0] == "error":
                    messages.append(_msg("error", entry[1], entry[2]))
                    errors = True
                else:
                    sorries.append((entry[1], entry[2], dict(self.env)))
            axioms = st.axioms
            if st.goals:
                messages.append(_msg("error", "unsolved goals\n" + goals_text(st.goals), by_span))
                axioms = axioms + (SYNTHETIC_SORRY,)
                errors = True
            return axioms, errors
        node = p.term()
        if p.peek().kind != "eof" and not (p.peek().bol and p.peek().col == 0):
            n = p.peek()
            raise LeanSyntaxError(f"unexpected token '{n.text}'; expected command", n.line, n.col)
        el = Elaborator(self.env, source, engine.run_by, engine.tick)
        if node[0] == "id" and node[2] == "sorry":
            sorries.append((goal, node[1], dict(self.env)))
        try:
            el.check(node, goal.target, goal.hyps)
        except (ElabError, TacticError) as e:
            messages.append(_msg("error", e.msg, e.span or node[1]))
            return tuple(el.axioms) + (SYNTHETIC_SORRY,), True
        except FragmentError as e:
            messages.append(_msg("error", str(e), node[1]))
            return tuple(el.axioms) + (SYNTHETIC_SORRY,), True
        except Timeout:
            messages.append(_msg("error", HEARTBEATS, node[1]))
            return (SYNTHETIC_SORRY,), True
        return tuple(el.axioms), False


def _tok_span(t: Tok):
    return (t.line, t.col, t.eline, t.ecol)


@contextmanager
def _statement_errors():
    """Tag the errors of a statement ``(sim)`` unless they are wrong in any Lean.

    The one place where statement errors get the tag: the fragment's parser and elaborator
    reject much of Lean (Mathlib's notation, types and constants, binders it does not model),
    and the simulator cannot tell that from text that is not Lean, so its verdict on a
    statement must not read as Lean's (``unknown identifier 'Nat.Prime'``,
    ``type expected, got (ℕ : Type)`` for ``x : ℕ → ℤ``). Errors it knows are genuine
    (``genuine=True``: a number or a proof used as a type, ...) keep Lean's own text.
    """
    try:
        yield
    except LeanSyntaxError as e:
        if e.genuine:
            raise
        raise LeanSyntaxError(outside_fragment(e.msg), e.line, e.col) from None


def parse_header(p: Parser) -> Decl:
    """``theorem NAME binders* : TYPE`` (also ``lemma``, ``example``, ``axiom``), elaborated.

    Errors are tagged ``(sim)`` where the fragment's limits may be the cause (:func:`_statement_errors`).
    """
    with _statement_errors():
        return _parse_header(p)


def _parse_header(p: Parser) -> Decl:
    kw = p.next()
    kind = "theorem" if kw.text in ("theorem", "lemma", "example") else "axiom"
    name, name_tok = None, kw
    if kw.text != "example":
        name_tok = p.ident("identifier")
        name = name_tok.text
    hyps: list = []
    binders: list = []
    nprops = 0
    while p.peek().kind == "sym" and p.peek().text in ("(", "{", "[", "⦃", "{{"):
        open_tok = p.next()
        close = {"(": ")", "{": "}", "[": "]", "⦃": "⦄"}[open_tok.text]
        if open_tok.text == "[":
            raise LeanSyntaxError("(sim) instance binders are outside the simulated fragment", open_tok.line, open_tok.col)
        names = []
        while p.peek().kind == "id":
            names.append(p.next())
        if not names:
            p.fail("expected identifier")
        p.expect(":")
        ty_node = p.term()
        p.expect(close, f"'{close}'")
        explicit = open_tok.text == "("
        is_prop = ty_node[0] == "id" and ty_node[2] == "Prop"
        is_nat = ty_node[0] == "id" and ty_node[2] in ("ℕ", "Nat")
        for n in names:
            if n.text in TYPE_NAMES:
                # the fragment reads these names as types wherever they stand (`(Nat : Prop) (x : Nat)`
                # would make x a number, where Lean makes it a proof of the variable `Nat`)
                raise LeanSyntaxError(f"(sim) a variable named '{n.text}' hides the type of that name; this is "
                                      "outside the simulated fragment", n.line, n.col)
            if any(h.name == n.text and (is_nat or is_prop or h.type in SORTS) for h in hyps):
                # formulas refer to Prop and ℕ variables by name: a shadowed one would be confused with
                # its shadower (Lean keeps them apart, `p✝` and `p`)
                raise LeanSyntaxError(f"(sim) reusing the name '{n.text}' of a Prop or ℕ variable is outside "
                                      "the simulated fragment", n.line, n.col)
            if is_prop or is_nat:
                hyps.append(Hyp(n.text, PROP if is_prop else NAT))
                binders.append(("P" if is_prop else "N", n.text, explicit, nprops))
                nprops += 1  # Prop and ℕ parameters share the schema's mvar indices
            else:
                if ty_node[0] == "id" and ty_node[2] in ("ℤ", "ℝ", "ℚ", "ℂ", "Int", "Real"):
                    raise LeanSyntaxError(f"(sim) variables of type {ty_node[2]} are outside the simulated fragment",
                                          n.line, n.col)
                f = _elab(ty_node, hyps)
                hyps.append(Hyp(n.text, f))
                binders.append(("H", n.text, f))
    p.expect(":", "':'")
    node = p.term()
    # As Lean does, parse the whole statement before elaborating it: a term cut short by notation
    # the fragment lacks (`7! % 23 = 3` read as `7`) must not be blamed on the part that was read.
    if kind == "theorem" and not p.is_sym(":="):
        if p.blocked():  # nothing follows the type: wrong in any Lean
            raise LeanSyntaxError("unexpected end of input; expected ':='", p.peek().line, p.peek().col, genuine=True)
        p.fail("expected ':='")
    after = p.peek()
    whole = kind == "theorem" or after.kind == "eof" or (after.bol and after.col == 0)
    try:
        target = _elab(node, hyps)
    except LeanSyntaxError as e:
        if whole:
            raise
        raise LeanSyntaxError(e.msg, e.line, e.col) from None  # (an axiom's type may be cut short: not genuine)
    return Decl(kind, name, name_tok, tuple(hyps), tuple(binders), target)


def _elab(node, hyps):
    try:
        return elab_prop(node, tuple(hyps))
    except ElabError as e:
        span = e.span or node[1]
        raise LeanSyntaxError(e.msg, span[0], span[1], genuine=e.genuine) from None


def _schematize(decl: Decl):
    """A substitution turning the declaration's Prop and ℕ variables into schema mvars
    (so later proofs can instantiate them)."""
    index = {b[1]: b[3] for b in decl.binders if b[0] == "P"}
    nindex = {b[1]: b[3] for b in decl.binders if b[0] == "N"}

    def term(t):
        k = t[0]
        if k == "nvar":
            return ("mvar", nindex[t[1]]) if t[1] in nindex else t
        if k == "op":
            return ("op", t[1], term(t[2]), term(t[3]))
        return t

    def sub(f):
        k = f[0]
        if k == "var":
            return ("mvar", index[f[1]]) if f[1] in index else f
        if k == "rel":
            return ("rel", f[1], term(f[2]), term(f[3])) if nindex else f
        if k in ("true", "false", "mvar"):
            return f
        return (k,) + tuple(sub(x) for x in f[1:])

    return sub


def _pattern(decl: Decl):
    return _schematize(decl)(decl.target)


def _schema_binders(decl: Decl):
    sub = _schematize(decl)
    return tuple(b if b[0] in ("P", "N") else ("H", b[1], sub(b[2])) for b in decl.binders)


_SORRY_TAIL = re.compile(r":=\s*(?:by\s+sorry|sorry|by)\s*$")


def with_proof(theorem_with_sorry: str, script: str) -> str:
    """Replace the final ``:= by sorry`` of a statement by ``:= by`` and the indented ``script``."""
    stmt = theorem_with_sorry.rstrip()
    m = _SORRY_TAIL.search(stmt)
    if m is None:
        raise ValueError("statement must end with ':= by sorry' (or ':= by')")
    body = "\n".join("  " + line if line.strip() else line for line in script.splitlines())
    return f"{stmt[:m.start()]}:= by\n{body}\n"


def check_proof(theorem_with_sorry: str, script: str) -> bool:
    """True iff ``script`` (a tactic block) proves the statement with no error and no ``sorry``.

    Also asks the kernel which axioms the declaration used (``#print axioms``'s answer),
    so that a ``sorry`` that reported nothing still fails.
    """
    kernel = Kernel()
    messages, _ = kernel.run_command(with_proof(theorem_with_sorry, script))
    if any(m["severity"] == "error" or "declaration uses 'sorry'" in m["data"] for m in messages):
        return False
    return not any("sorryAx" in c.axioms for name, c in kernel.env.items() if name not in BUILTINS)


def statement_formula(theorem_with_sorry: str):
    """The proposition a statement claims: its hypotheses imply its conclusion (Prop and ℕ variables free)."""
    toks = tokenize(theorem_with_sorry)
    p = Parser(toks, parse_tactic_seq_here)
    while p.peek().kind == "id" and p.peek().text in ("import", "open", "set_option"):
        line = p.peek().line
        while p.peek().kind != "eof" and p.peek().line == line:
            p.next()
    decl = parse_header(p)
    f = decl.target
    for h in reversed(decl.hyps):
        if h.type not in SORTS:
            f = ("imp", h.type, f)
    return f


__all__ = ["Kernel", "check_proof", "with_proof", "statement_formula", "is_tautology"]
