"""Independent model of Lean 4's tokenizer (src/Lean/Parser/Basic.lean, Init/Meta/Defs.lean),
written from Lean's source, for a differential test of leangym.lexer.

Lean has no lexer pass; the command parser calls tokenFn where tokens start and `whitespace`
(comments included) after every token.  Outside special parsers (interpolated strings, fieldIdx,
rawIdent after `.`), the token start positions form one stream: ws, tok, ws, tok, ...
On a lexical error Lean's command loop (Module.lean parseCommand) resumes at the error position
(or, with no progress, after one token / one char via consumeInput), so we model recovery too.

Output: mask list per char: 'c' comment, 's' literal interior (string/char), 'q' literal quote/delim,
'x' code.  Plus a list of errors (pos, msg).
"""
from __future__ import annotations

NEW_VERSION = True  # Latin-1/Latin-ExtA letters and U+2C7C in names (recent Lean)


def is_letter_like(c: str) -> bool:
    v = ord(c)
    r = ((0x3b1 <= v <= 0x3c9 and v != 0x3bb) or (0x391 <= v <= 0x3a9 and v not in (0x3a0, 0x3a3))
         or (0x3ca <= v <= 0x3fb) or (0x1f00 <= v <= 0x1ffe) or (0x2100 <= v <= 0x214f)
         or (0x1d49c <= v <= 0x1d59f))
    if NEW_VERSION:
        r = r or (0xc0 <= v <= 0xff and v not in (0xd7, 0xf7)) or (0x100 <= v <= 0x17f)
    return r


def is_subscript_alnum(c: str) -> bool:
    v = ord(c)
    return (0x2080 <= v <= 0x2089) or (0x2090 <= v <= 0x209c) or (0x1d62 <= v <= 0x1d6a) or (NEW_VERSION and v == 0x2c7c)


def is_alpha(c): return ('a' <= c <= 'z') or ('A' <= c <= 'Z')
def is_digit(c): return '0' <= c <= '9'
def is_id_first(c): return is_alpha(c) or c == '_' or is_letter_like(c)
def is_id_rest(c): return is_alpha(c) or is_digit(c) or c in "_'!?" or is_letter_like(c) or is_subscript_alnum(c)
def is_ws(c): return c in " \t\r\n"


# A Mathlib-like token table (symbols only; keyword tokens matter only where longer than an ident)
SYMBOLS = set("""( ) [ ] { } ⟨ ⟩ , . .. ... : :: := ; <;> | || && & + ++ - * ** / // % ^ = == != ≠ < > <= >= ≤ ≥
<- -> <-> => ← → ↔ ∘ $ <| |> <|> |>. @ @[ # #[ ! ? _ · ∀ ∃ ∃! λ ↦ × ⁻¹ '' ⁻¹' ∑ ∏ ∑' ∏' ∫ ∈ ∉ ∩ ∪ ⊆ ⊂ ⊇
\\ \\/ /\\ ¬ ∧ ∨ ‹ › ‖ ⌊ ⌋ ⌈ ⌉ ∣ • ∞ √ ⊢ ℝ≥0 ℝ≥0∞ -[ +1] `( ``( `[ ` /-- /-! %[ ~ ~~~ ⬝ ∅ ⊤ ⊥ ⊔ ⊓ ≈ ≃ ≅ ⋯
s! m! f! sorry by fun have show from at with if then else do let in match Type Sort Prop theorem lemma def
axiom example where open end namespace section #eval #check #print #exit""".split())
MAXLEN = max(len(s) for s in SYMBOLS)
INTERP = {"s!", "m!", "f!"}


def match_prefix(src, i):
    for L in range(min(MAXLEN, len(src) - i), 0, -1):
        if src[i:i + L] in SYMBOLS:
            return src[i:i + L]
    return None


class LexErr(Exception):
    def __init__(self, pos, msg):
        self.pos, self.msg = pos, msg


class Model:
    def __init__(self, src):
        self.s = src
        self.n = len(src)
        self.mask = ['x'] * self.n
        self.errors = []

    def get(self, i):  # String.get past the end is default 'A'
        return self.s[i] if i < self.n else 'A'

    # ---------------- whitespace (comments) ----------------
    def whitespace(self, i):
        s, n = self.s, self.n
        while i < n:
            c = s[i]
            if c == '\t':
                raise LexErr(i, "tab")
            if c == '\r':
                raise LexErr(i, "isolated CR")
            if is_ws(c):
                i += 1
            elif c == '-':
                if self.get(i + 1) == '-':
                    j = s.find('\n', i)
                    j = n if j < 0 else j
                    self.mark(i, j, 'c')
                    i = j
                else:
                    return i
            elif c == '/':
                if self.get(i + 1) == '-':
                    if self.get(i + 2) in '-!' and i + 2 < n:
                        return i  # doc comment token
                    j = self.finish_comment(i + 2, 1, i)
                    self.mark(i, j, 'c')
                    i = j
                else:
                    return i
            else:
                return i
        return i

    def finish_comment(self, i, nesting, start):
        s, n = self.s, self.n
        while True:
            if i >= n:
                self.mark(start, n, 'c')
                raise LexErr(n, "unterminated comment")
            c = s[i]
            i += 1
            if c == '-':
                if i >= n:
                    self.mark(start, n, 'c')
                    raise LexErr(n, "unterminated comment")
                if s[i] == '/':
                    if nesting == 1:
                        return i + 1
                    nesting -= 1
                    i += 1
            elif c == '/':
                if i >= n:
                    self.mark(start, n, 'c')
                    raise LexErr(n, "unterminated comment")
                if s[i] == '-':
                    nesting += 1
                    i += 1

    def mark(self, a, b, k):
        for p in range(a, min(b, self.n)):
            self.mask[p] = k

    # ---------------- literals ----------------
    def hexdigit(self, i):
        c = self.get(i) if i < self.n else None
        if c is None:
            raise LexErr(i, "eoi")
        if is_digit(c) or 'a' <= c <= 'f' or 'A' <= c <= 'F':
            return i + 1
        raise LexErr(i, "invalid hex")

    def quoted_char(self, i, in_string, interp=False):
        if i >= self.n:
            raise LexErr(i, "eoi")
        c = self.s[i]
        if c in "\\\"'rnt" or (interp and c == '{'):
            return i + 1
        if c == 'x':
            return self.hexdigit(self.hexdigit(i + 1))
        if c == 'u':
            return self.hexdigit(self.hexdigit(self.hexdigit(self.hexdigit(i + 1))))
        if in_string and c == '\n':
            return self.string_gap(i)
        raise LexErr(i, "invalid escape")

    def string_gap(self, i):
        seen = False
        while i < self.n:
            c = self.s[i]
            if c == '\n':
                if seen:
                    raise LexErr(i, "additional newline in string gap")
                seen = True
                i += 1
            elif is_ws(c):
                i += 1
            elif seen:
                return i
            else:
                raise LexErr(i, "expecting newline in gap")
        return i

    def str_lit(self, start):
        i = start + 1
        while True:
            if i >= self.n:
                raise LexErr(start, "unterminated string")
            c = self.s[i]
            i += 1
            if c == '"':
                self.mark(start, i, 's')
                self.mask[start] = self.mask[i - 1] = 'q'
                return i
            if c == '\\':
                i = self.quoted_char(i, True)

    def char_lit(self, start):
        i = start + 1
        if i >= self.n:
            raise LexErr(i, "eoi")
        c = self.s[i]
        i += 1
        if c == '\\':
            i = self.quoted_char(i, False)
        c2 = self.get(i)
        i += 1
        if c2 == "'":
            self.mark(start, i, 's')
            self.mask[start] = self.mask[i - 1] = 'q'
            return i
        raise LexErr(i, "missing end of char literal")

    def raw_start(self, i):
        while i < self.n and self.s[i] == '#':
            i += 1
        return i < self.n and self.s[i] == '"'

    def raw_str(self, start):
        i = start + 1
        num = 0
        while self.s[i] == '#':
            num += 1
            i += 1
        i += 1  # the "
        while True:
            if i >= self.n:
                raise LexErr(start, "unterminated raw string")
            c = self.s[i]
            i += 1
            if c == '"':
                if num == 0:
                    break
                k = 0
                ok = False
                while i < self.n and self.s[i] == '#' and k < num:
                    k += 1
                    i += 1
                if k == num:
                    break
                # closingState: a '"' restarts counting, other char -> normal
                # (approximation faithful: loop continues; a '"' will be re-examined)
        self.mark(start, i, 's')
        self.mask[start] = 'q'
        self.mask[i - 1] = 'q'
        return i

    def take_digits(self, i, pred, need):
        while True:
            if i >= self.n:
                if need:
                    raise LexErr(i, "eoi digits")
                return i
            c = self.s[i]
            if c == '_':
                need = True
                i += 1
            elif pred(c):
                need = False
                i += 1
            elif need:
                raise LexErr(i, "unexpected char in number")
            else:
                return i

    def number(self, i):
        s = self.s
        if s[i] == '0':
            c = self.get(i + 1)
            if c in 'bB':
                return self.take_digits(i + 2, lambda c: c in '01', True)
            if c in 'oO':
                return self.take_digits(i + 2, lambda c: '0' <= c <= '7', True)
            if c in 'xX':
                return self.take_digits(i + 2, lambda c: is_digit(c) or 'a' <= c <= 'f' or 'A' <= c <= 'F', True)
            j = i + 1
        else:
            j = i + 1
        j = self.take_digits(j, is_digit, False)
        if j < self.n and self.s[j] in '.eE':
            if self.get(j) == '.':
                j += 1
                if j < self.n and is_digit(self.s[j]):
                    j = self.take_digits(j, is_digit, False)
            if j < self.n and self.get(j) in 'eE':
                k = j + 1
                if self.get(k) in '+-' and k < self.n:
                    k += 1
                if k < self.n and is_digit(self.s[k]):
                    j = self.take_digits(k, is_digit, False)
                else:
                    raise LexErr(j, "missing exponent digits")
        return j

    def ident(self, i, tk):
        start = i
        s, n = self.s, self.n
        while True:
            c = s[i]
            if c == '«':
                sp = i + 1
                k = s.find('»', sp)
                if k < 0:
                    raise LexErr(sp, "unterminated identifier escape")
                i = k + 1
            elif is_id_first(c):
                i += 1
                while i < n and is_id_rest(s[i]):
                    i += 1
            else:
                if tk is None:
                    raise LexErr(start, "token expected")
                return start + len(tk), tk
            if i < n and s[i] == '.' and i + 1 < n and (is_id_first(s[i + 1]) or s[i + 1] == '«'):
                i += 1
                continue
            if tk is not None and len(tk) >= i - start:
                return start + len(tk), tk
            return i, None

    # ---------------- one token ----------------
    def token(self, i):
        s = self.s
        c = s[i]
        if c == '"':
            return self.str_lit(i), 'str'
        if c == "'" and self.get(i + 1) != "'":
            return self.char_lit(i), 'char'
        if is_digit(c):
            return self.number(i), 'num'
        if c == '`' and (is_id_first(self.get(i + 1)) or self.get(i + 1) == '«') and i + 1 < self.n:
            j, _ = self.ident(i + 1, None)
            return j, 'name'
        if c == 'r' and self.raw_start(i + 1):
            return self.raw_str(i), 'str'
        tk = match_prefix(s, i)
        j, t = self.ident(i, tk)
        return j, (t if t is not None else 'ident')

    def doc_comment(self, i, tk_end):
        # `/--` token, its trailing whitespace, then commentBody = finishCommentBlock 1
        j = self.whitespace(tk_end)
        j = self.finish_comment(j, 1, i)
        self.mark(i, j, 'c')
        return j

    def interp(self, i):
        # interpolatedStrFn: i at '"'
        s, n = self.s, self.n
        start = i
        i += 1
        while True:
            if i >= n:
                raise LexErr(i, "unterminated interpolated string")
            c = s[i]
            i += 1
            if c == '"':
                self.mark(start, i, 's'); self.mask[start] = 'q'; self.mask[i - 1] = 'q'
                return i
            if c == '\\':
                i = self.quoted_char(i, True, interp=True)
            elif c == '{':
                self.mark(start, i, 's'); self.mask[start] = 'q'; self.mask[i - 1] = 'q'
                # term: tokens until a '}' at depth 0
                i = self.whitespace(i)
                depth = 0
                while True:
                    if i >= n:
                        raise LexErr(i, "eoi in interpolant")
                    if s[i] == '}' and depth == 0:
                        break
                    j, kind = self.token(i)
                    if kind in ('{', '(', '[', '⟨'):
                        depth += 1
                    elif kind in ('}', ')', ']', '⟩'):
                        depth -= 1
                    if kind == '/--' or kind == '/-!':
                        j = self.doc_comment(i, j)
                    i = self.whitespace(j)
                start = i
                i += 1

    def run(self):
        i = 0
        prev = None
        while True:
            attempt = i
            try:
                i = self.whitespace(i)
                if i >= self.n:
                    return self
                tok_start = i
                j, kind = self.token(i)
                if kind in ('/--', '/-!'):
                    j = self.doc_comment(i, j)
                elif kind in INTERP or kind == 'throwError':
                    k = self.whitespace(j)
                    if k < self.n and self.s[k] == '"':
                        j = self.interp(k)
                i = j
            except LexErr as e:
                self.errors.append((e.pos, e.msg))
                # recovery: resume at the error position; no progress -> one char further
                i = e.pos if e.pos > attempt else attempt + 1
                if e.pos >= self.n:
                    return self


def model(src):
    return Model(src).run()
