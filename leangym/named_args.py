"""What a ``(NAME := VALUE)`` may hold in text that reaches Lean, by where it stands.

"Runs code" means: Lean compiles VALUE and evaluates it (``evalExpr``) on the server. That happens to
a tactic's configuration item, ``simp (config := {...})``, ``decide (kernel := true)``,
``nlinarith (discharger := ...)``: Lean's ``optConfig`` elaborates each item and evaluates it, and a
value of an ``IO``-like type (or a function field of the configuration, such as a discharger) runs
whatever it holds. It never happens to a *named argument of a term*, ``Finset.sum_le_sum (f := fun i
=> (i : ℝ)) h``: that VALUE is elaborated and type-checked like any argument, and the kernel checks the
result; nothing is compiled or evaluated. (Code inside VALUE that an elaborator itself runs, ``by``
blocks' configurations, ``eval%``, ``run_tac``, is found where it stands by the same checks.)

So the rule reads the token before the ``(``. A *term position* is one Lean can only read as an
application's argument: after a dotted or ``@`` name (``Nat.rec``, ``h.trans``, ``@foo``: no tactic
keyword holds a dot), after a name right after ``exact``/``refine``/``refine'``/``apply``/``:=``
(``exact le_of_lt (h := ...)``), or after an earlier term-position group (``f (a := x) (b := y)``).
There VALUE may be any term (a lambda, an application of names). Anywhere else, a bare word that may be
a tactic keyword above all, it is a *configuration position* and VALUE must be a literal: a numeral, a
name, a hole, those combined by arithmetic, or ``{ field := literal, ... }``; nothing applied to
anything (an ``IO`` action runs only when applied to the world token). Doubt counts as configuration.
Proofs (:mod:`leangym.soundness`), statements and headers (:mod:`leangym.theorem`) are read by this rule.
"""
from __future__ import annotations

import re

from leangym.lexer import strip_comments

__all__ = ["named_argument_refusal"]

# `(NAME := VALUE)`: a tactic's configuration (`simp (config := {...})`, `decide (kernel := true)`), which
# Lean compiles and runs (evalExpr) on the server, or a named argument of a term. An IO action needs
# no word the banned list could know: `IO` unfolds to a function of the world token `()`, so any effect
# (`Lean.writeModule ...`, `System.FilePath.pathExists ...`) runs from a config term applied to `()`.
# So the value must be a literal: a numeral, a name (`true`, `.reducible`, `ℝ`, `norm_num`), a hole, those
# combined by arithmetic (`2 * n + 1`), or a structure instance of literals (`{ decide := true, maxSteps := 10 }`):
# nothing applied to anything (an IO action runs only when applied to the world token).
_NAME_ONLY = re.compile(r"\s*(?:«[^»]*»|[^\W\d][\w.'?!]*)(?:\.(?:«[^»]*»|[^\W\d][\w.'?!]*))*\s*")
# tokens of a literal: `:=`, brackets and `,`, arithmetic, then an atom (a numeral, a name, a hole `?_`)
_LITERAL_TOKEN = re.compile(r"\s*(?:(:=)|([{},()\[\]])|([-+*/%^])|(\d+(?:\.\d+)?|\??\.?[^\W\d][\w.'?!]*|\?_"
                            r'|"(?:[^"\\\n]|\\.)*"))')
# In text a dataset supplies (a statement, a header), a name may be one the header defines, whose code the
# evaluation of the configuration then runs (`def evil : Simp.Config := ...; simp (config := evil)`): there
# an atom must be a value in itself.
_SELF_EVIDENT = re.compile(r'\d+(?:\.\d+)?|true|false|\?_|\.[^\W\d][\w\'?!]*|".*"', re.S)
_ARITHMETIC = frozenset("+-*/%^")
_CLOSERS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩"}


def named_argument_refusal(script: str, *, strict: bool = False) -> str | None:
    """Why a ``(NAME := VALUE)`` of ``script`` is refused: its value is not a literal (see above).

    Read on the raw text, comments included: every ``:=`` after a ``(`` with only a name between
    them is one (Lean allows comments there too: ``(config/- -/:= e)``, so a comment between them
    is refused outright); a ``:=`` after anything else (``(by have h := e; ...)``) is not.
    """
    code, term_groups = strip_comments(script), set()
    for m in re.finditer(":=", script):
        opened = script.rfind("(", 0, m.start())
        if opened < 0:
            continue
        head = script[opened + 1:m.start()]
        if ")" in strip_comments(head):  # that `(` closed before the `:=` (`(h : p) -- c\n : q := by`)
            continue
        if "/-" in head or "--" in head:
            return ("leangym soundness policy: a comment inside a '(name := value)' argument is not allowed "
                    "(write the name and ':=' without one)")
        if "»" in head and "«" not in head:  # the `(` found is inside an escaped name: `(«a(b» := …)`
            return "leangym soundness policy: a '(' inside an escaped «name» of a named argument is not allowed"
        if not _NAME_ONLY.fullmatch(head):
            continue
        value = _bracketed(script, m.end())
        if value is not None and _term_position(code, opened, term_groups):
            term_groups.add(opened)  # (a group after it is a term argument too)
            continue
        if value is None or not _is_literal(value, strict):
            shown = (value if value is not None else script[m.end():])[:60].strip()
            return (f"leangym soundness policy: '({head.strip()} := {shown})': a named argument or tactic "
                    "configuration must be a literal (a numeral, a name, or { field := literal, ... }): Lean "
                    "compiles and runs configuration terms on the server (a named argument of a function may be "
                    "any term after its dotted or @ name, or after exact/refine/apply NAME)")
    return None


_NAME_AT_END = re.compile(r"(@?)(?:«[^»]*»|[^\W\d][\w'!?]*)(?:\.(?:«[^»]*»|[^\W\d][\w'!?]*))*$")
_TERM_TAKERS = re.compile(r"(?:^|[^\w'!?.])(?:exact|refine|refine'|apply)$|:=$")


def _term_position(code: str, opened: int, term_groups: set[int]) -> bool:
    """Whether the ``(`` at ``opened`` (in ``code``, comments blanked) can only be an application's named
    argument (see the module docstring); False where in doubt."""
    before = code[:opened].rstrip()
    if before.endswith(")"):
        depth, i = 0, len(before) - 1
        while i >= 0:
            depth += {")": 1, "(": -1}.get(before[i], 0)
            if depth == 0:
                return i in term_groups
            i -= 1
        return False
    m = _NAME_AT_END.search(before)
    if m is None or not m.group(0):
        return False
    name, start = m.group(0), m.start()
    if m.group(1) or "." in _ESCAPES.sub("", name) or before[start - 1:start] == ".":
        return True  # `@foo`, `Nat.rec`, `h.trans`, `.inl`: a term
    return bool(_TERM_TAKERS.search(before[:start].rstrip()))


_ESCAPES = re.compile("«[^»]*»")


def _bracketed(code: str, start: int) -> str | None:
    """The text from ``start`` to the ``)`` that closes the parenthesis before it (None: unbalanced)."""
    stack = [")"]
    for i in range(start, len(code)):
        c = code[i]
        if c in _CLOSERS:
            stack.append(_CLOSERS[c])
        elif c in ")]}⟩":
            if c != stack.pop():
                return None
            if not stack:
                return code[start:i]
    return None


def _is_literal(text: str, strict: bool = False) -> bool:
    """``text`` is a literal: names, numerals and holes (``?_``) combined by arithmetic (``2 * n + 1``),
    in parentheses, or ``{ name := literal, ... }``; never one thing applied to another (see above)."""
    if "--" in text or "/-" in text or "-/" in text:  # a comment: Lean reads the value otherwise than we would
        return False
    tokens, texts, at = [], [], 0
    while at < len(text.rstrip()):
        m = _LITERAL_TOKEN.match(text, at)
        if not m or m.end() == at:
            return False
        tokens.append("atom" if m.lastindex == 4 else m.group(m.lastindex))
        texts.append(m.group(m.lastindex))
        at = m.end()
        if len(tokens) > 200:  # a configuration is short; the parse below recurses per bracket
            return False
    if strict and any(kind == "atom" and not _SELF_EVIDENT.fullmatch(text)
                      and not (k + 1 < len(tokens) and tokens[k + 1] == ":=")  # (a field's name)
                      for k, (kind, text) in enumerate(zip(tokens, texts))):
        return False  # a name there may be the header's own definition

    def term(i: int) -> int:  # the index after one literal term starting at tokens[i], or -1
        i = unit(i)
        while i >= 0 and i < len(tokens) and tokens[i] in _ARITHMETIC:
            i = unit(i + 1)
        return i

    def unit(i: int) -> int:
        if i >= len(tokens):
            return -1
        if tokens[i] == "atom":
            if not strict and texts[i].startswith(".") and i + 1 < len(tokens) and tokens[i + 1] in ("[", "atom"):
                # `.pos [2]`: a constructor of the option's own type (its namespace only) applied to a literal;
                # as trusted as a bare name, so not in a dataset's text (strict), where the header could define it
                return unit(i + 1)
            return i + 1
        if tokens[i] == "-":  # a negative number
            return unit(i + 1)
        if tokens[i] == "(":
            i = term(i + 1)
            return i + 1 if 0 <= i < len(tokens) and tokens[i] == ")" else -1
        if tokens[i] == "[":  # a list of literals (`(rule_sets := [Foo, Bar])`)
            i += 1
            while 0 <= i < len(tokens) and tokens[i] != "]":
                i = term(i)
                if 0 <= i < len(tokens) and tokens[i] == ",":
                    i += 1
                elif not (0 <= i < len(tokens) and tokens[i] == "]"):
                    return -1  # two things side by side: one applied to the other
            return i + 1 if 0 <= i < len(tokens) else -1
        if tokens[i] == "{":
            i += 1
            while i < len(tokens) and tokens[i] != "}":
                if tokens[i] != "atom" or i + 1 >= len(tokens) or tokens[i + 1] != ":=":
                    return -1
                i = term(i + 2)
                if i < 0:
                    return -1
                if i < len(tokens) and tokens[i] == ",":
                    i += 1
            return i + 1 if i < len(tokens) else -1
        return -1

    return term(0) == len(tokens)
