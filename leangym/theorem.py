"""A theorem to prove: a Lean statement ending in ``:= by sorry`` plus the header before it.

The statement is read the way Lean reads a declaration: optional ``open ... in`` /
``set_option ... in`` prefixes, modifiers (doc comment, ``@[...]`` attributes,
``private``/``protected``, ``noncomputable``, ``unsafe``, ``partial``/``nonrec``), the keyword,
the name as a Lean identifier (dotted, ``«...»`` components allowed) and an optional
universe list ``.{u, v}``. Comments and string literals are blanked before any of this is
matched, so a ``--`` or ``theorem`` inside them changes nothing.
"""
from __future__ import annotations

import dataclasses
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, Mapping

from leangym.lexer import (ID_FIRST, ID_FIRST_ALWAYS, ID_REST, ID_REST_ALWAYS, banned_word, scan, starts_token,
                           strip_comments)
from leangym.named_args import named_argument_refusal
# The statement's and header's text checks and their word lists, split out of this module: re-exported here,
# private ones included
from leangym.theorem_checks import (_ATTRIBUTE_OPENER, _HEAD_WORD, _HEADER_META, _SORRY_WORDS, _UNSAFE_OPTION,
                                    CODE_RUNNING_WORDS, COMMAND_KEYWORDS, HASH_COMMAND, HASH_WORD, HEADER_ATTRIBUTES,
                                    HEADER_COMMANDS, HEADER_MODIFIERS, HEADER_OPTIONS, LEMMA_SEARCH, NOT_NAME_AFTER,
                                    NOT_NAME_BEFORE, _attribute_spans, _code_attribute, _doc_comment_danger,
                                    _find_sorry, _unbalanced, _unescaped, header_refusal)

# --------------------------------------------------------------------------- Lean identifiers
_PLAIN = f"[{ID_FIRST}][{ID_REST}]*"
_COMPONENT = f"(?:«[^»]*»|{_PLAIN})"
IDENT = f"{_COMPONENT}(?:\\.{_COMPONENT})*"
_IDENT_FULL = re.compile(IDENT)
_PARTS = re.compile(f"«([^»]*)»|({_PLAIN})")
# Words that Lean reads as keywords even where an identifier is expected: such a name
# component keeps its guillemets (`«end»`), or the declaration would not parse.
_KEYWORDS = frozenset(
    "theorem lemma def example axiom abbrev instance structure class inductive opaque where "
    "namespace section end open in at by fun let have show from do then else if match with "
    "for unless return mut calc suffices obtain Type Sort Prop import universe variable "
    "private protected noncomputable partial unsafe nonrec deriving extends".split())

def _token_search(pattern: re.Pattern[str], code: str, pos: int = 0, endpos: int | None = None):
    """The first match of ``pattern`` in ``code[pos:endpos]`` that starts a token (see :func:`leangym.lexer.starts_token`)."""
    for m in pattern.finditer(code, pos, len(code) if endpos is None else endpos):
        if starts_token(code, m.start()):
            return m
    return None
_COMMAND_WORD = re.compile("(?:" + "|".join(COMMAND_KEYWORDS) + ")" + NOT_NAME_AFTER)
# The command words that declare something (or change how later text is read).
_DECLARING = re.compile("(?:" + "|".join(
    w for w in COMMAND_KEYWORDS if w not in ("open", "set_option", "universe", "variable", "section", "namespace",
                                             "end", "import", "omit", "include", "private", "protected",
                                             "noncomputable", "partial", "unsafe", "local", "scoped", "export",
                                             "nonrec", "public", "meta"))  # (modifiers of the theorem)
    + ")" + NOT_NAME_AFTER)

# --------------------------------------------------------------------------- declarations
# One level of nested brackets in attributes (`@[aesop safe (rule_sets := [Foo])]`); brackets
# inside string arguments (`@[to_additive "x [y]"]`) are blanked before this is matched.
_ATTRIBUTES = r"@\[(?:[^\[\]]|\[[^\[\]]*\])*\]"
# `open Real in` / `set_option maxHeartbeats 400000 in` scope the command that follows.
# (`open` takes namespace names only: a lazy `open ... in` would also take `open Nat in axiom x : False in`,
# which Lean reads as a command of its own before the theorem)
def open_in(space: str) -> str:
    """Regex text of Lean's ``open [scoped] NS+ in`` (``space``: the whitespace allowed between words).

    The namespaces are names: neither ``in`` nor a command word (the tactic policy strips these
    prefixes before its command check, and a statement may start with them)."""
    return (rf"open(?:{space}+scoped)?(?:{space}+(?!(?:in|" + "|".join(COMMAND_KEYWORDS)
            + rf")(?![{ID_REST_ALWAYS}.]))[{ID_FIRST_ALWAYS}][{ID_REST_ALWAYS}.]*)+{space}+in")


_IN_PREFIX = "(?:" + open_in(r"[ \t]") + r"|set_option[ \t]+[\w.]+[ \t]+\S+[ \t]+in)(?![\w.'?!])"
DECLARATION = re.compile(
    rf"^[ \t]*(?P<prefix>(?:{_IN_PREFIX}\s+)*(?:{_ATTRIBUTES}\s*)?(?:(?:private|protected)\s+)?"
    r"(?:noncomputable\s+)?(?:unsafe\s+)?(?:(?:partial|nonrec)\s+)?)"
    r"(?P<kind>theorem|lemma|example)(?![\w.'?!])", re.M)
_NAME = re.compile(rf"\s*(?P<name>{IDENT})(?P<universes>\s*\.\{{[^{{}}]*\}})?")
_TAIL = re.compile(r":=\s*(?:by(?:\s+sorry)?|sorry)\s*$")
_OTHER_DECL = re.compile(r"^\s*(?:axiom|def|abbrev|instance|#\w+)\b", re.M)
# Header lines that declare nothing a second run of the header could collide with: the scoping
# commands alone on their line (`open Nat in theorem ...` declares: ` in ` followed by more is not safe).
_SAFE_HEADER_LINE = re.compile(r"\s*(?:(?:open|set_option|namespace|section|end|noncomputable\s+section|variable)\b"
                               r"(?!.*\bin\s+\S).*)?$")
# What lives in a scope (a REPL may or may not carry it between commands), or scopes the next line.
_SCOPED_EFFECT = re.compile(r"(?:local|scoped|notation|infix|infixl|infixr|prefix|postfix|attribute|"
                            r"export)" + NOT_NAME_AFTER)
# A block's own line: `namespace X`, `section [X]`, `noncomputable section`, `end [X]`, alone on it.
_BLOCK_LINE = re.compile(r"(?:noncomputable\s+)?(namespace|section|end)(?:\s+[^\s;]+)?\s*$")
_SCOPE_LINE = re.compile(r"\s*(?:namespace|section|end|noncomputable\s+section|variable|universe)(?![\w.'?!])")


class TheoremError(ValueError):
    """A statement that leangym cannot turn into a proof goal."""


def _spell(component: str) -> str:
    """One name component as Lean prints it: plain when it is an identifier, else ``«...»``."""
    if re.fullmatch(_PLAIN, component) and component not in _KEYWORDS:
        return component
    if "»" in component or "\n" in component:
        raise TheoremError(f"{component!r} cannot be part of a Lean name (it contains '»' or a newline)")
    return f"«{component}»"


def as_identifier(name: str) -> str:
    """``name`` if it is a Lean identifier, else the one-component identifier ``«name»``
    (a file stem such as ``2021-amc-p3`` names a theorem as ``«2021-amc-p3»``, ``end`` as ``«end»``)."""
    if _IDENT_FULL.fullmatch(name) and not any(p in _KEYWORDS for _, p in _PARTS.findall(name)):
        return name
    return _spell(name)


@dataclass(frozen=True)
class _Head:
    kind: str
    kind_span: tuple[int, int]
    name: str | None
    name_span: tuple[int, int] | None


def _parse(stmt: str) -> tuple[_Head, re.Match[str]]:
    """The declaration head and the ``:= by sorry`` tail of ``stmt``, or a TheoremError."""
    code, risk = scan(stmt, strings=True)
    if risk:
        raise TheoremError(f"the statement holds {risk}: leangym cannot be sure Lean reads its comments and "
                           f"literals as it does, so it does not check it; write it without: {stmt[:120]!r}")
    decl = DECLARATION.search(code)
    if decl is None:
        raise TheoremError(f"expected a 'theorem NAME ... := by sorry' statement, got {stmt[:120]!r}")
    before = code[:decl.start()]
    if before.strip() and (header_refusal(stmt[:decl.start()]) or any(
            m.group(0) not in ("open", "set_option", "universe", "scoped") for m in _HEAD_WORD.finditer(before)
            if starts_token(before, m.start()))):
        # `variable (h : False)` before the theorem would join its statement: only `open`, `set_option` (of the
        # header's short list) and `universe` lines may stand before it, besides its own prefixes
        raise TheoremError(f"the statement holds {code[:decl.start()].strip()[:60]!r} before its theorem; a statement "
                           f"holds one theorem: put other commands in `header` (an allow-list): {stmt[:120]!r}")
    tail = _TAIL.search(code)
    if tail is None:
        raise TheoremError(f"statement must end with ':= by sorry' (or ':= by', ':= sorry'): {stmt[-80:]!r}")
    # Exactly one theorem: no declaration before its head (`private axiom propext : False` on the
    # line above; `open`/`set_option` lines may stay), and no command word after it.
    if _UNSAFE_OPTION.search(_unescaped(code)):
        raise TheoremError(f"the statement sets a debug option, which would switch the final check off: {stmt[:120]!r}")
    if word := banned_word(CODE_RUNNING_WORDS, code):
        raise TheoremError(f"the statement holds '{word}', which runs code when Lean elaborates it: {stmt[:120]!r}")
    if danger := _doc_comment_danger(stmt):
        raise TheoremError(f"the statement holds {danger!r} in a doc comment, which Lean reads as code where no "
                           f"doc comment belongs: {stmt[:120]!r}")
    if m := HASH_COMMAND.search(code):
        # Lean reads `#eval` (and `#` + any word that starts with a command's name) as a command of its
        # own wherever it stands: it ends the theorem, and runs
        raise TheoremError(f"the statement holds {m.group(0)!r}, which Lean runs as a command of its own; a "
                           f"statement holds one theorem and no #commands: {stmt[:120]!r}")
    if (_token_search(_DECLARING, code, 0, decl.start("kind")) or "#" in code[:decl.start("kind")]
            or DECLARATION.search(code, decl.end(), tail.start())
            or _OTHER_DECL.search(code) or _token_search(_COMMAND_WORD, code, decl.end(), tail.start())):
        raise TheoremError("a statement holds exactly one theorem; put definitions and lemmas it needs "
                           f"in `header`: {stmt[:120]!r}")
    word = _find_sorry(code[:tail.start()])
    if word:
        raise TheoremError(f"the statement contains '{word}' outside its final ':= by sorry': the final check "
                           "rejects any proof of a statement that uses sorry; state it in full (for a "
                           f"PutnamBench-style solution stub, fill in the solution first): {stmt[:120]!r}")
    name = _NAME.match(code, decl.end()) if decl.group("kind") != "example" else None
    if name is None:  # `example` (or a theorem without a name): the caller gives it one
        return _Head(decl.group("kind"), decl.span("kind"), None, None), tail
    return _Head(decl.group("kind"), decl.span("kind"), stmt[slice(*name.span("name"))], name.span("name")), tail


@dataclass(frozen=True)
class Theorem:
    """One statement. ``formal_statement`` always ends in ``:= by sorry`` (normalised on creation).

    Statements ending in ``:= by`` (the DeepSeek-Prover variant) or in term-mode ``:= sorry``
    (PutnamBench) are accepted; ``example`` gets a name (``name``, else ``leangym_example``) so
    that ``#print axioms`` can name it. ``decl_name`` is the declared name as spelled in the
    statement (``foo``, ``Nat.foo``, ``«my thm»``; a universe list ``.{u}`` is not part of it).
    """

    formal_statement: str
    name: str = ""
    header: str = ""
    split: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    decl_name: str = field(init=False, default="", repr=False, compare=False)  # set from the statement

    def __post_init__(self) -> None:
        # CRLF line ends (a file saved on Windows) as Lean reads them: recent Lean normalises them, older
        # Lean refuses a CR, and the lexer counts one as a risk
        object.__setattr__(self, "header", self.header.replace("\r\n", "\n"))
        stmt = self.formal_statement.replace("\r\n", "\n").strip()
        head, tail = _parse(stmt)
        # a `by` block's configuration runs at elaboration (the theorem's own attributes before its keyword
        # are read as attribute syntax: `@[aesop safe (rule_sets := [Foo])]`)
        if why := named_argument_refusal(stmt[head.kind_span[0]:], strict=True):
            raise TheoremError(f"the statement holds {why.removeprefix('leangym soundness policy: ')}: {stmt[:120]!r}")
        self._check_header()
        stmt = stmt[:tail.start()] + ":= by sorry"  # drops a trailing comment too
        name = head.name
        if name is None:  # `example`, or a theorem without a name
            name = as_identifier(self.name) if self.name else "leangym_example"
            stmt = stmt[:head.kind_span[0]] + f"theorem {name}" + stmt[head.kind_span[1]:]
        object.__setattr__(self, "formal_statement", stmt)
        object.__setattr__(self, "name", self.name or name)
        object.__setattr__(self, "decl_name", name)

    def _check_header(self) -> None:
        """Refuse a header that could run code, switch a check off or change how Lean reads the check. Read
        is the text that reaches Lean (:attr:`preamble`: the header less its ``import`` lines), so that no
        line dropped on the way can change what the rest means (a comment opened on one)."""
        text = self.preamble
        bare, risk = scan(text, strings=True)
        if risk:
            raise TheoremError(f"the header holds {risk}: leangym cannot be sure Lean reads its comments and "
                               "literals as it does, and the final check runs the header; write it without")
        word = _find_sorry(bare)
        if word:
            raise TheoremError(f"the header contains '{word}': the final check runs the header too and rejects "
                               "every proof when it uses sorry; for a PutnamBench-style solution stub "
                               "(`abbrev solution : ℕ := sorry`), fill in the solution first")
        header = strip_comments(text)
        if word := banned_word(CODE_RUNNING_WORDS, bare):
            raise TheoremError(f"the header holds '{word}', which runs code when Lean elaborates it; a header may "
                               "not run code or switch Lean's checks off (the final check runs the header)")
        if danger := _doc_comment_danger(text):
            raise TheoremError(f"the header holds {danger!r} in a doc comment, which Lean reads as code where no doc "
                               "comment belongs; a header may not run code or switch Lean's checks off")
        if m := (_UNSAFE_OPTION.search(_unescaped(header)) or _token_search(_HEADER_META, header)):
            # the final check runs the header: it must not switch the check off, nor change how Lean
            # reads the check's own commands (a macro or elaborator for `#print axioms` can forge its answer)
            raise TheoremError(f"the header contains {m.group(0).strip()!r}: a header may not switch Lean's checks off "
                               "or define macros, elaborators or code to run (the final check runs the header)")
        if attribute := _code_attribute(bare):
            raise TheoremError(f"the header gives the attribute {attribute!r}, which leangym does not allow in a header: "
                               "attributes that register code (delaborators, parsers, norm_num or positivity "
                               "extensions ...) run it on the server; allowed: " + ", ".join(sorted(HEADER_ATTRIBUTES)))
        if why := named_argument_refusal(text, strict=True):
            raise TheoremError(f"the header holds {why.removeprefix('leangym soundness policy: ')}")
        lines, code = self.header.splitlines(keepends=True), strip_comments(self.header).splitlines(keepends=True)
        as_written = "".join("\n" if seen.lstrip().startswith("import ") else line for line, seen in zip(lines, code))
        if why := header_refusal(as_written):  # (the preamble with its import lines blank: line numbers as written)
            raise TheoremError(why)

    def check_name(self, suffix: str) -> str:
        """The name to declare this theorem under for a check of its own: ``decl_name`` with
        ``suffix`` appended to its last component, spelled as Lean prints it (``foo_leangym_ab12``,
        ``Foo.«my thm_leangym_ab12»``; ``«foo»`` becomes ``foo_leangym_ab12``). Pass it to
        :meth:`renamed` and to ``#print axioms``."""
        if not re.fullmatch(f"[{ID_REST}]+", suffix):
            raise TheoremError(f"suffix {suffix!r} must be identifier characters (letters, digits, '_')")
        parts = [g or p for g, p in _PARTS.findall(self.decl_name)]
        parts[-1] += suffix
        return ".".join(_spell(p) for p in parts)

    def renamed(self, decl_name: str) -> "Theorem":
        """The same statement, declared as ``decl_name`` (a Lean identifier, e.g. from
        :meth:`check_name`); the universe list, modifiers and attributes stay as they are."""
        if not _IDENT_FULL.fullmatch(decl_name):
            raise TheoremError(f"{decl_name!r} is not a Lean identifier; build the new name with "
                               "Theorem.check_name(suffix)")
        head, _ = _parse(self.formal_statement)
        start, end = head.name_span
        stmt = self.formal_statement[:start] + decl_name + self.formal_statement[end:]
        return dataclasses.replace(self, formal_statement=stmt)

    @property
    def header_declares(self) -> bool:
        """Whether the header may declare something: every check declares it again, which Lean refuses
        on a process that has it already. Conservative: any line but a plain ``open``, ``set_option``,
        ``namespace``/``section``/``end`` or ``variable`` line counts (a wrong "yes" costs a lease)."""
        return not all(_SAFE_HEADER_LINE.match(line) and not _token_search(_DECLARING, line) and "#" not in line
                       and "@[" not in line  # Lean needs no line break: `namespace Foo theorem helper ...`
                       for line in strip_comments(self.preamble).splitlines())

    @property
    def preamble_key(self) -> str:
        """The preamble as Lean reads it, for telling headers apart: comments, blank lines and indentation
        dropped (theorems of one file often differ only there)."""
        return "\n".join(line.strip() for line in strip_comments(self.preamble).splitlines() if line.strip())

    @property
    def repeatable_preamble(self) -> str | None:
        """What of the header a check may run again on a process that ran all of it (the check's own proof
        start, or a session's, declared it there): its top-level ``open`` and ``set_option`` lines, the same
        whether or not the process kept them. Lines inside ``namespace``/``section`` ... ``end`` blocks are
        dropped: the statement comes after the blocks close, where nothing they opened applies. None when a
        block is left open (the statement's names would depend on it), for ``variable``/``universe`` lines,
        and when the header has ``local``/``scoped`` declarations, notations, attributes or a line that scopes
        the next one (``open Nat in``): such a check must run on a clean process, with the whole header."""
        code = [line.strip() for line in strip_comments(self.preamble).splitlines() if line.strip()]
        kept, depth = [], 0
        for line in code:
            if m := _BLOCK_LINE.match(line):
                depth += -1 if m.group(1) == "end" else 1
                if depth < 0:
                    return None
            elif (_SCOPE_LINE.match(line) or line.endswith(" in")
                  or not (_SAFE_HEADER_LINE.match(line) and not _token_search(_DECLARING, line)
                          and "#" not in line and "@[" not in line) and _token_search(_SCOPED_EFFECT, line)):
                return None
            elif depth == 0 and _SAFE_HEADER_LINE.match(line) and not _token_search(_DECLARING, line) \
                    and "#" not in line and "@[" not in line:
                kept.append(line)
        return None if depth else "".join(line + "\n" for line in kept)

    @property
    def preamble(self) -> str:
        """The header without ``import`` lines: a leased process has run its imports already,
        and the REPL rejects ``import`` after the first command. Ends with a newline when not
        empty, so that the statement after it starts a line of its own. An import line is one
        whose code (comments and literals read as Lean does) starts with ``import``. The header's
        checks read this text, the one sent (dropping a line can change what the rest means)."""
        lines, code = self.header.splitlines(keepends=True), strip_comments(self.header).splitlines(keepends=True)
        text = "".join(line for line, seen in zip(lines, code) if not seen.lstrip().startswith("import "))
        return text if not text or text.endswith("\n") else text + "\n"

    @property
    def statement_without_proof(self) -> str:
        """The statement up to and including ``:= by``."""
        return self.formal_statement[: -len(" sorry")]

    def source_with_proof(self, script: str) -> str:
        """Preamble + statement with ``script`` (a tactic block) in place of ``sorry``, inside the
        brackets of Lean's tactic ``( tacs )``: a script whose brackets balance (the soundness policy
        refuses any other) cannot close them, so no text of it can leave the tactic block
        (:mod:`leangym.soundness`)."""
        body = "\n".join("    " + line if line.strip() else line for line in script.splitlines())
        return f"{self.preamble}{self.statement_without_proof}\n  (\n{body}\n  )\n"

    @property
    def source_with_sorry(self) -> str:
        """Preamble + statement, as written."""
        return f"{self.preamble}{self.formal_statement}"

    def fresh_name(self) -> str:
        """A name to declare this theorem under that no process has seen: ``check_name`` with a random
        suffix (``t_leangym_3fa9…``). Proof starts and final checks use one each."""
        return self.check_name(f"_leangym_{secrets.token_hex(8)}")

    def start_source(self) -> str:
        """What a proof start (``proof_from_sorry``) sends: the preamble and the statement under a fresh
        name of its own (``t_leangym_<random>``), as the final check does (``soundness``). A process may
        keep what it ran (LeanTree's do), so the theorem's own name may be taken there already: by an
        earlier start of it, or by the environment (a theorem from Mathlib). A header that declares
        something still needs a process that has not declared it (``header_declares``)."""
        return self.renamed(self.fresh_name()).source_with_sorry

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Theorem":
        """From a ``{name, header, formal_statement, [split], ...}`` mapping (miniF2F JSONL shape)."""
        if "formal_statement" not in row:
            raise TheoremError(f"row has no 'formal_statement' field (keys: {sorted(row)})")
        known = {"name", "header", "formal_statement", "split"}
        return cls(
            formal_statement=str(row["formal_statement"]),
            name=str(row.get("name") or ""),
            header=str(row.get("header") or ""),
            split=row.get("split"),
            extra={k: v for k, v in row.items() if k not in known},
        )
