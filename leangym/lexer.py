"""Where Lean 4's tokenizer sees comments, string and character literals, and names.

The soundness checks look for command words and banned tactics in *code*: words
inside comments and literals do not count. That is only safe if the comments and
literals found here are exactly the ones Lean finds. A ``'`` is the hard case: in
``h'`` it is part of a name, in ``!'a'`` it starts a character literal, and a
character literal ``'"'`` must not open a string. So this module reads source
left to right token by token, as Lean's ``tokenFnAux`` does (``Lean/Parser/Basic.lean``):
names whole (a ``'`` continues one only inside it), numbers as ``numberFnAux``
reads them, literals with Lean's escapes.

Where Lean would stop with an error (a ``'`` that starts no character literal, an
escape Lean does not know, an unterminated string or ``«``), or where the reading
depends on more than tokens (a string holding ``{``, which may be an interpolated
string's code; a raw string), :func:`scan` says so instead of guessing: after a
parse error Lean's command loop recovers from a position this module cannot
predict, and a region taken here for a comment could be code to Lean there.
Callers then refuse the text or check it whole, comments included.
"""
from __future__ import annotations

import functools
import re

# --------------------------------------------------------------------------- Lean identifiers
# Lean 4's `isIdFirst` / `isIdRest` (Init/Meta): `Char.isAlpha` is ASCII only, other letters come
# from `isLetterLike` (Greek but λ Π Σ, Coptic, the letter-like block ℕ ℝ ..., script letters;
# recent Lean also Latin-1 and Latin Extended-A letters) and `isSubScriptAlnum`.
_LETTER_LIKE_ALWAYS = ("\u03b1-\u03ba\u03bc-\u03c9\u0391-\u039f\u03a1\u03a2\u03a4-\u03a9\u03ca-\u03fb"
                       "\u1f00-\u1ffe\u2100-\u214f\U0001d49c-\U0001d59f")
_LATIN = "\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017f"  # Latin-1 and Latin Extended-A letters: recent Lean only
_LETTER_LIKE = _LETTER_LIKE_ALWAYS + _LATIN
_SUBSCRIPT = "\u2080-\u2089\u2090-\u209c\u1d62-\u1d6a\u2c7c"
# What every Lean 4 version reads as (the start of / more of) a name. The soundness policy trusts a
# keyword to be part of a name only next to these (an older Lean ends a name at `é`; none at `λ`).
ID_FIRST_ALWAYS = f"A-Za-z_{_LETTER_LIKE_ALWAYS}"
ID_REST_ALWAYS = f"A-Za-z0-9_'!?{_LETTER_LIKE_ALWAYS}\u2080-\u2089\u2090-\u209c\u1d62-\u1d6a"  # (older: no ⱼ)
ID_FIRST = f"A-Za-z_{_LETTER_LIKE}"
ID_REST = f"A-Za-z0-9_'!?{_LETTER_LIKE}{_SUBSCRIPT}"
_ID_FIRST_CHAR = re.compile(f"[{ID_FIRST}]")
_ID_REST_RUN = re.compile(f"[{ID_REST}]*")
_ID_REST_CHAR = re.compile(f"[{ID_REST}]")
_VERSION_DEPENDENT = re.compile(f"[{_LATIN}\u2c7c]")  # name characters of recent Lean versions only

# A character literal as ``charLitFnAux`` reads it: one character, or ``\\`` and one of Lean's escapes.
_CHAR_LITERAL = re.compile(r"""'(\\(?:[\\"'rnt]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})|[^\\'\n])'""")
_STRING_ESCAPE = re.compile(r"""\\(?:[\\"'rnt]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|\n[ \t\r]*)""")
# Mathlib's notations ending in ' (`∑' n, f n`, `f ⁻¹' s`, `f '' s`): one symbol token each
_QUOTE_SYMBOLS = ("∑'", "∏'", "⁻¹'", "''")
_WHITESPACE = re.compile(r"[ \t\r\n]*")
# What a comment opener may follow directly: whitespace, or the end of a name, a numeral or a bracket (no
# symbol token goes on from these into `--` or `/-`; after other symbols one might: `<-` in `<--x`)
_ENDS_A_TOKEN = re.compile(f"[\\s{ID_REST.replace('!?', '')})\\]}}⟩»]")
_DIGITS = {"b": "01", "o": "01234567", "x": "0123456789abcdefABCDEF"}


@functools.lru_cache(maxsize=32)
def _banned_regex(words: tuple[str, ...]) -> re.Pattern[str]:
    """The words as one alternation of literals, longest first (see :func:`banned_word`)."""
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))


_NAME_CHAR = re.compile(r"[A-Za-z0-9_']")


def banned_word(words: tuple[str, ...], code: str) -> str | None:
    """The first of ``words`` in ``code`` as a word, not a substring: `sorry` is banned, `sorry_free_h`
    and `mysorry` are fine names.

    Only ASCII letters, `_` and `'` join it into a longer name: after a digit (`0sorry`), a
    symbol (`ℕsorry`) or a dot (`_root_.sorryAx`) some tokenizer may still read the word, so
    it is banned there too (a false alarm costs one rejected tactic, a miss costs soundness).
    A tactic keyword that is also a name component (`trace`, `Matrix.trace`) counts only as a
    token of its own: after a dot it is part of a name. (One search for all words; the
    boundaries are checked on the rare match.)
    """
    for m in _banned_regex(words).finditer(code):
        word, start, end = m.group(0), m.start(), m.end()
        before = code[start - 1:start]
        if before and (before.isascii() and (before.isalpha() or before in "_'")
                       or before == "." and word in _TACTIC_WORDS):
            continue
        if word[-1].isalnum() and end < len(code) and _NAME_CHAR.match(code[end]):
            continue
        return word
    return None


_TACTIC_WORDS = frozenset({"trace", "dbg_trace", "native", "stop", "plausible", "slim_check"})


def starts_token(code: str, i: int) -> bool:
    """Whether the word at ``i`` is a token of its own to Lean, not the rest of a name: the run of name
    characters before it (if any) must not start like a name (`x5def` is one name; `0syntax` is `0` then
    `syntax`; `'a'macro` a character literal then `macro`), and a `.` before it must not follow a name
    (`x.elab` is a field; `.elab_rules` at the start of a command is the keyword)."""
    if not _ID_FIRST_CHAR.match(code[i:i + 1]):
        return True  # `#eval`, `@[`: never the rest of a name
    if i and code[i - 1] == "«":
        return False
    j = i
    while j and _ID_REST_CHAR.match(code[j - 1]):
        j -= 1
    if j < i:
        return not _ID_FIRST_CHAR.match(code[j])
    if i and code[i - 1] == ".":
        k = i - 1
        while k and _ID_REST_CHAR.match(code[k - 1]):
            k -= 1
        return not (k < i - 1 and _ID_FIRST_CHAR.match(code[k])) and not (k == i - 1 and code[k - 1:k] == "»")
    return True


def strip_comments(source: str, *, strings: bool = False) -> str:
    """``source`` with its comments (``-- ...``, nested ``/- ... -/``) blanked out; with ``strings``,
    the insides of string and char literals too. Same length, newlines kept, so positions found in
    the result hold in ``source``. Where :func:`scan` finds a risk, the result is its best reading;
    callers that must not be fooled check :func:`scan`'s risk first."""
    return scan(source, strings=strings)[0]


def scan(source: str, *, strings: bool = False, docs_are_comments: bool = True) -> tuple[str, str | None]:
    """``(blanked, risk)``: :func:`strip_comments`'s text, and ``None`` when every comment and literal
    in ``source`` is one Lean reads the same way, else what could make Lean read it otherwise.

    ``docs_are_comments=False`` reads a doc comment's body (``/-- ... -/``, ``/-! ... -/``) as code.
    To Lean it is code where the grammar takes no doc comment: its opener is a token there, the
    parse fails, and the command loop reads on right after it. What a doc comment may hide must
    therefore pass the checks in that reading too.
    """
    out: list[str] = []
    risk: str | None = None
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c in "-/" and source.startswith(("--", "/-"), i) and i and not _ENDS_A_TOKEN.match(source[i - 1]):
            # Lean looks for comments between tokens only and reads the longest symbol it knows: `<--x`
            # is `<-` then `-x`, `//-n` is `//` then `-n`. Glued to what precedes it, this may be no comment.
            risk = risk or f"a comment opener glued to the text before it (at {_context(source, i)})"
        if not docs_are_comments and source.startswith(("/--", "/-!"), i):
            j = i + 3  # the opener token; what follows is read on as code
            out.append(source[i:j])
        elif source.startswith("/-", i):
            after = _WHITESPACE.match(source, i + 3).group() if source.startswith(("/--", "/-!"), i) else None
            if after is not None and source.startswith(("--", "/-"), i + 3 + len(after)):
                # Lean's whitespace after the opener token reads this comment (a `/-X` skipping X): the
                # doc comment's body, and so its end, is not what the nesting count from the opener gives
                risk = risk or f"a comment right after a doc comment opener (at {_context(source, i)})"
            if after and ("\t" in after or "\r" in after):
                # a doc comment's opener is a token: Lean's whitespace after it refuses tabs and CRs
                risk = risk or f"a tab or carriage return after a doc comment opener (at {_context(source, i)})"
            j, closed = _block_comment_end(source, i)
            out.append(_blank(source[i:j]))
            if not closed:
                risk = risk or "an unterminated comment"
        elif source.startswith("--", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
        elif c == '"':
            j, why = _string_end(source, i)
            inside = source[i + 1:j - 1 if why is None else j]
            out.append('"' + (_blank(inside) if strings else inside) + ('"' if why is None else ""))
            risk = risk or why or ("a string literal holding '{' (an interpolated string's code part is code)"
                                   if "{" in inside else None)
        elif c == "'":
            if (m := _CHAR_LITERAL.match(source, i)) is not None:
                j = m.end()
                out.append("'" + (_blank(m.group(1)) if strings else m.group(1)) + "'")
            else:
                j = i + (2 if source.startswith("''", i) else 1)
                out.append(source[i:j])
                if j == i + 1:
                    risk = risk or f"a ' that begins no character literal (at {_context(source, i)})"
                elif j < n and source[j] in "'\"\\":  # (Mathlib's `''`; without Mathlib, quotes pair otherwise)
                    risk = risk or f"a quote right after '' (at {_context(source, i)})"
        elif c == "r" and _raw_string_start(source, i + 1):
            j = _raw_string_end(source, i)
            out.append(source[i:j])
            risk = risk or "a raw string literal (r\"...\")"
        elif "0" <= c <= "9":
            j, why = _number_end(source, i)
            out.append(source[i:j])
            risk = risk or why
        elif c == "«" or _ID_FIRST_CHAR.match(c):
            j, why = _name_end(source, i)
            out.append(source[i:j])
            risk = risk or why
        elif c in "\t\r":  # Lean's whitespace refuses both: an error, then a read from somewhere else
            j = i + 1
            out.append(c)
            risk = risk or ("a tab" if c == "\t" else "a carriage return not followed by a line feed"
                            if not source.startswith("\r\n", i) else "a carriage return (CRLF line ends)")
        elif c == "#" and _hash_word_risk(source, i):
            # `#check'"'` is the token `#check` then a character literal to Lean, `#evalr"x"` is `#eval`
            # then a raw string (if `#check`, `#eval` are tokens): not the name this module would read
            j = i + 1
            out.append(c)
            risk = risk or f"a #word followed by a quote (at {_context(source, i)})"
        else:
            sym = next((s for s in _QUOTE_SYMBOLS if source.startswith(s, i)), c)
            j = i + len(sym)
            out.append(sym)
            if sym != c and j < n and source[j] in "'\"\\":
                # Mathlib's notation tokens; without Mathlib (or after them) a quote could pair otherwise
                risk = risk or f"a quote right after {sym!r} (at {_context(source, i)})"
        i = j
    return "".join(out), risk


def _hash_word_risk(source: str, i: int) -> bool:
    run = _ID_REST_RUN.match(source, i + 1).group()
    after = source[i + 1 + len(run):i + 2 + len(run)]
    return "'" in run or (run.endswith("r") and after in ('"', "#"))


def _block_comment_end(source: str, i: int) -> tuple[int, bool]:
    """Index past the ``-/`` closing the comment opening at ``i`` (else ``len(source)``), and whether it
    closes: nested ``/-`` count, and the character right after the opener is skipped, as Lean's
    ``whitespace`` does (so ``/-/- c -/`` is one comment, closed at its first ``-/``)."""
    depth, i = 1, i + 3
    while i < len(source):
        two = source[i:i + 2]
        if two == "-/":
            depth -= 1
            i += 2
            if not depth:
                return i, True
        elif two == "/-":
            depth += 1
            i += 2
        else:
            i += 1
    return len(source), False


def _string_end(source: str, start: int) -> tuple[int, str | None]:
    """Index past the string literal opening at ``start`` (``strLitFnAux``), and a risk if Lean stops on it."""
    i = start + 1
    while i < len(source):
        if source[i] == "\\":
            m = _STRING_ESCAPE.match(source, i)
            if m is None:
                return len(source), f"an escape Lean does not know in a string (at {_context(source, i)})"
            if m.group().startswith("\\\n") and source.startswith("\n", m.end()):
                # a string gap holds exactly one line break: Lean stops at a second one
                return len(source), f"a string gap over two lines (at {_context(source, i)})"
            i = m.end()
        elif source[i] == '"':
            return i + 1, None
        else:
            i += 1
    return len(source), "an unterminated string literal"


def _raw_string_start(source: str, i: int) -> bool:
    """``isRawStrLitStart``: ``#``s then ``"`` at ``i`` (just after an ``r`` that starts a token)."""
    while i < len(source) and source[i] == "#":
        i += 1
    return i < len(source) and source[i] == '"'


def _raw_string_end(source: str, i: int) -> int:
    """Index past the raw string whose ``r`` is at ``i`` (``r#"..."#``: as many ``#`` close as opened)."""
    j = i + 1
    while source[j] == "#":
        j += 1
    close = source.find('"' + "#" * (j - i - 1), j + 1)
    return len(source) if close < 0 else close + j - i


def _number_end(source: str, i: int) -> tuple[int, str | None]:
    """Index past the numeral at ``i`` as ``numberFnAux`` reads it (``_`` separators, ``0x``/``0b``/``0o``,
    ``1.5``, ``2e-3``), and a risk where Lean stops with an error."""
    n = len(source)
    if source[i] == "0" and i + 1 < n and source[i + 1].lower() in _DIGITS:
        j, ok = _digits(source, i + 2, _DIGITS[source[i + 1].lower()], need=True)
        return j, None if ok else f"a numeral Lean cannot read (at {_context(source, i)})"
    j, ok = _digits(source, i, "0123456789", need=False)
    if not ok:  # `1_`: a separator needs a digit after it
        return j, f"a numeral Lean cannot read (at {_context(source, i)})"
    if j < n and source[j] == ".":
        j += 1
        if j < n and "0" <= source[j] <= "9":
            j, _ = _digits(source, j, "0123456789", need=False)
    if j < n and source[j] in "eE":
        j += 1 + (j + 1 < n and source[j + 1] in "+-")
        if not (j < n and "0" <= source[j] <= "9"):
            return j, f"a numeral Lean cannot read (at {_context(source, i)})"
        j, _ = _digits(source, j, "0123456789", need=False)
    return j, None


def _digits(source: str, i: int, digits: str, need: bool) -> tuple[int, bool]:
    """``takeDigitsFn``: digits and ``_`` separators; ``False`` if a digit was still needed."""
    while i < len(source):
        if source[i] == "_":
            need = True
        elif source[i] in digits:
            need = False
        else:
            break
        i += 1
    return i, not need


def _name_end(source: str, i: int) -> tuple[int, str | None]:
    """Index past the name starting at ``i`` (``identFnAux``: ``«...»`` or plain parts joined by ``.``),
    and a risk: an unterminated ``«``, or a ``'`` in a name whose other characters older Lean versions
    do not read as a name's (there, that ``'`` could start a character literal)."""
    start, n = i, len(source)
    while True:
        if source[i] == "«":
            close = source.find("»", i + 1)
            if close < 0:
                return n, "an unterminated «name»"
            i = close + 1
        else:
            i = _ID_REST_RUN.match(source, i + 1).end()
        if i + 1 < n and source[i] == "." and (source[i + 1] == "«" or _ID_FIRST_CHAR.match(source[i + 1])):
            i += 1
            continue
        plain = re.sub("«[^»]*»", "", source[start:i])
        if "'" in plain and _VERSION_DEPENDENT.search(plain):
            return i, f"a name mixing ' with letters older Lean versions do not take for a name's ({plain})"
        return i, None


def _context(source: str, i: int) -> str:
    return repr(source[max(0, i - 12):i + 12])


def _blank(text: str) -> str:
    return "".join(c if c == "\n" else " " for c in text)
