"""Tactic syntax: Lean 4 tactic blocks parsed into tuples ``(kind, span, ...)``.

Layout follows Lean: the tactics of a sequence start at one column (the
column of the first one) or are separated by ``;``; a token that begins a
line at or left of that column ends the current tactic. ``t <;> u`` binds
tighter than sequencing. Parsed blocks of short texts are cached by their text
(a cache bounded in characters: :mod:`leangym.sim.text_cache`).
"""
from __future__ import annotations

from leangym.sim.syntax import Parser
from leangym.sim.tokens import LeanSyntaxError, numeral, outside_fragment, tokenize
from leangym.sim.text_cache import text_cache

# Tactics without arguments.
ATOMIC = {
    "constructor", "left", "right", "exfalso", "assumption", "contradiction", "trivial",
    "rfl", "decide", "skip", "done", "sorry", "admit",
}
SIMP_LIKE = {"norm_num", "simp", "norm_num1"}
ARITH = {"omega", "linarith", "ring", "ring1", "ring_nf"}  # ℕ arithmetic (leangym.sim.arith)
COMBINATORS = {"all_goals", "any_goals", "repeat", "try", "focus"}
# Real Lean/Mathlib tactics that the simulated kernel does not model: a clear refusal.
UNSUPPORTED = {
    "exact?", "apply?", "aesop", "tauto", "itauto", "nlinarith", "positivity",
    "field_simp", "simp_all", "norm_cast", "push_neg", "unfold", "rw", "rwa",
    "induction", "calc", "exists", "use", "existsi", "interval_cases", "nth_rewrite", "simpa",
    "gcongr", "bound", "polyrith", "subst", "injection", "funext", "ext", "congr", "symm",
    "apply_assumption", "solve_by_elim", "exact_mod_cast", "push_cast", "split", "split_ands",
    "iterate", "refine'", "choose", "set", "let", "generalize", "revert", "conv", "native_decide",
    "intro!", "contrapose", "contrapose!", "by_contra!", "absurd", "dsimp", "change_at", "lift",
    "infer_instance", "tfae_have", "tfae_finish", "wlog", "cases'",
}

# Keywords of Lean commands: tokens that no tactic holds, so in tactic mode (a whole script sent to
# `try_apply_tactic`, which Lean parses with `runParserCategory`, no command-level recovery) each is a
# parse error, as in Lean ("unexpected token 'axiom'; expected ..."), not a tactic the simulator lacks.
COMMAND_TOKENS = frozenset({
    "theorem", "lemma", "example", "axiom", "import", "def", "namespace", "section", "end", "variable",
    "noncomputable", "instance", "universe", "abbrev", "private", "protected", "attribute", "structure",
    "inductive", "class", "macro", "syntax", "macro_rules", "elab", "elab_rules", "notation", "infix", "infixl",
    "infixr", "prefix", "postfix", "opaque", "mutual", "deriving", "initialize", "include", "omit", "export",
    "unsafe", "partial", "prelude", "declare_syntax_cat"})

# Lean's scoped tactic forms `set_option NAME VALUE in TACS` and `open NS+ in TACS`. The options are the
# resource limits of Lean's elaborator (what leangym's soundness policy lets through, with ceilings):
# the simulated kernel keeps its own step budget, so their values change nothing here. Others are refused.
SCOPED = ("set_option", "open")
SIM_OPTIONS = ("maxHeartbeats", "maxRecDepth", "synthInstance.maxHeartbeats", "synthInstance.maxSize")


def _blocked(p: Parser, t) -> bool:
    """``p.blocked(t)``, except that ``set_option``/``open`` beginning an indented line inside a tactic
    block begin a tactic (the scoped forms), as in Lean: as commands they start at column 0."""
    if t.kind == "id" and t.text in SCOPED and t.bol and 0 < t.col and t.col > p.stop_col:
        return False
    return p.blocked(t)


def _type_and_value(p):
    """The optional ``: type`` and ``:= value`` of ``have``/``obtain``."""
    ty = val = None
    if p.is_sym(":"):
        p.next()
        ty = p.term()
    if p.is_sym(":="):
        p.next()
        val = p.term()
    return ty, val

def parse_tactic_seq_here(p: Parser):
    """A tactic sequence starting at the parser's current token (its column is the block's)."""
    first = p.peek()
    if _blocked(p, first):
        p.fail("expected tactic")
    col = first.col
    saved = p.stop_col
    items = []
    while True:
        p.stop_col = col
        items.append(_tactic_bin(p))
        t = p.peek()
        p.stop_col = saved
        if t.kind == "sym" and t.text == ";" and not p.blocked(t):
            p.next()
            n = p.peek()
            if _blocked(p, n) or (n.kind == "sym" and n.text in (")", "|", "<;>")) or (n.bol and n.col != col):
                break  # a trailing `;`
            continue
        if t.kind != "eof" and t.bol and t.col == col and not _blocked(p, t):
            continue
        break
    p.stop_col = saved
    return ("seq", p.span_from(first), tuple(items))


# A parse keeps ~50 bytes per character (up to ~170 for `a+a+...`): at most ~1M characters cached
# (~50-170 MB), none of a text over 1 kB (tactics are short; whole proofs sent as one block rarely
# repeat and parse in time linear in their length).
@text_cache(max_text=1024, max_chars=1_000_000, max_entries=65536)
def parse_tactic_block(text: str):
    """Parse a standalone tactic block (what ``try_apply_tactic`` receives). Raises LeanSyntaxError."""
    toks = tokenize(text)
    p = Parser(toks, parse_tactic_seq_here)
    if p.peek().kind == "eof":
        raise LeanSyntaxError("unexpected end of input; expected tactic", 1, 0)
    try:
        seq = parse_tactic_seq_here(p)
        if p.peek().kind != "eof":
            t = p.peek()
            raise LeanSyntaxError(f"unexpected token '{t.text}'; expected command", t.line, t.col)
    except LeanSyntaxError:
        named = _named_argument(toks)
        if named is not None:  # Lean parses these: a parse error here would read as Lean's verdict
            raise LeanSyntaxError(outside_fragment(
                f"named arguments and configurations ('({named.text} := ...)') are not simulated"),
                named.line, named.col) from None
        raise
    return seq


def _named_argument(toks):
    """The first ``(name :=`` of a token list (a named argument or a tactic configuration), or None."""
    for a, b, c in zip(toks, toks[1:], toks[2:]):
        if a.kind == "sym" and a.text == "(" and b.kind == "id" and c.kind == "sym" and c.text == ":=":
            return b
    return None


def _tactic_bin(p: Parser):
    t = _tactic(p)
    while p.is_sym("<;>"):
        start = p.next()
        u = _tactic(p)
        t = ("then_all", (t[1][0], t[1][1], u[1][2], u[1][3]), t, u, (start.line, start.col))
    return t


def _names(p: Parser) -> tuple[str, ...]:
    names = []
    while p.peek().kind == "id" and not p.blocked() and p.peek().text not in ("at", "with", "using"):
        names.append(p.next().text)
    return tuple(names)


def _tactic(p: Parser):
    t = p.peek()  # the sequence already checked the layout of this first token
    if t.kind == "eof":
        p.fail("expected tactic")
    if t.text in COMMAND_TOKENS or (t.kind == "sym" and t.text in ("#", "@[")):
        raise LeanSyntaxError(f"unexpected token '{t.text}'; expected tactic", t.line, t.col)
    if t.kind == "sym" and t.text in ("·", "."):
        p.next()
        seq = parse_tactic_seq_here(p)
        return ("bullet", p.span_from(t), seq, (t.line, t.col, t.eline, t.ecol))
    if t.kind == "sym" and t.text == "(":
        p.next()
        saved, p.stop_col = p.stop_col, -1
        seq = parse_tactic_seq_here(p)
        p.expect(")", "')'")
        p.stop_col = saved
        return ("paren", p.span_from(t), seq)
    if t.kind != "id":
        raise LeanSyntaxError(f"unexpected token '{t.text}'; expected tactic", t.line, t.col)
    w = t.text
    # `exact?`, `apply?` tokenize as identifiers ending in '?'
    if w in ("intro", "intros"):
        p.next()
        names = []
        while not p.blocked():
            n = p.peek()
            if n.kind == "id" and n.text not in ("at", "with"):
                names.append(p.next().text)
            elif n.kind == "sym" and n.text in ("⟨", "("):
                raise LeanSyntaxError("(sim) patterns in 'intro' are not supported; use 'intro h' then 'obtain'", n.line, n.col)
            else:
                break
        return (w, p.span_from(t), tuple(names))
    if w == "rintro":
        p.next()
        pats = []
        while not p.blocked() and (p.peek().kind == "id" or p.is_sym("⟨", "(", "-")):
            if p.peek().kind == "id" and p.peek().text in ("at", "with"):
                break
            pats.append(_pat(p))
        if not pats:
            p.fail("expected rintro pattern")
        return ("rintro", p.span_from(t), tuple(pats))
    if w in ("exact", "apply", "refine", "specialize"):
        p.next()
        e = p.term()
        return (w, p.span_from(t), e)
    if w in SCOPED:
        return _scoped(p)
    if w in ATOMIC:
        p.next()
        return ("atomic", p.span_from(t), w)
    if w in ARITH:
        p.next()
        extra = ()
        if w == "linarith" and p.is_sym("["):
            p.next()
            extra = p.comma_terms("]")
        n = p.peek()
        if not p.blocked() and not n.bol and (n.kind == "id" or p.is_sym("[", "(")):
            raise LeanSyntaxError(f"(sim) '{w} {n.text} ...' (options, 'only', 'at') is not supported by the simulated "
                                  "kernel", n.line, n.col)
        return ("arith", p.span_from(t), w, extra)
    if w in SIMP_LIKE:
        p.next()
        lemmas = ()
        only = False
        if p.is_kw("only"):
            p.next()
            only = True
        if p.is_sym("["):
            p.next()
            lemmas = p.comma_terms("]")
        locs = None
        if p.is_kw("at"):
            p.next()
            locs = []
            while not p.blocked() and (p.peek().kind == "id" or p.is_sym("⊢")):
                locs.append(p.next().text)
            if not locs:
                p.fail("expected location")
            locs = tuple(locs)
        return ("simp", p.span_from(t), w, lemmas, locs, only)
    if w == "cases":
        p.next()
        e = p.term()
        alts = None
        if p.is_kw("with"):
            p.next()
            alts = []
            while _bar_here(p):  # `| ctor names => tac`, also at the tactic's own column
                bar = p.next()
                ctor = p.ident("constructor name")
                names = _names(p)
                p.expect("=>")
                seq = parse_tactic_seq_here(p)
                alts.append((ctor.text, names, seq, (bar.line, bar.col, ctor.eline, ctor.ecol)))
            if not alts:
                p.fail("expected '|'")
            alts = tuple(alts)
        return ("cases", p.span_from(t), e, alts)
    if w == "rcases":
        p.next()
        terms = [p.term()]
        while p.is_sym(","):
            p.next()
            terms.append(p.term())
        pat = None
        if p.is_kw("with"):
            p.next()
            pat = _pat_lo(p)
        return ("rcases", p.span_from(t), tuple(terms), pat)
    if w == "obtain":
        p.next()
        pat = _pat_lo(p, allow_type=False)
        ty, val = _type_and_value(p)
        return ("obtain", p.span_from(t), pat, ty, val)
    if w == "by_contra":
        p.next()
        name = None
        if p.peek().kind == "id" and not p.blocked():
            name = p.next().text
        return ("by_contra", p.span_from(t), name)
    if w == "by_cases":
        p.next()
        name = None
        if p.peek().kind == "id" and p.peek(1).text == ":" and p.peek(1).kind == "sym":
            name = p.next().text
            p.next()
        e = p.term()
        return ("by_cases", p.span_from(t), name, e)
    if w == "have":
        p.next()
        name = None
        if p.peek().kind == "id" and not p.blocked():
            name = p.next().text
        elif p.is_sym("⟨"):
            raise LeanSyntaxError("(sim) patterns in 'have' are not supported; use 'obtain'", p.peek().line, p.peek().col)
        ty, val = _type_and_value(p)
        if ty is None and val is None:
            p.fail("expected ':' or ':='")
        return ("have", p.span_from(t), name, ty, val)
    if w in ("show", "change"):
        p.next()
        e = p.term()
        if p.is_kw("at"):
            raise LeanSyntaxError(f"(sim) '{w} ... at' is not supported", p.peek().line, p.peek().col)
        return ("show", p.span_from(t), e, w)
    if w in COMBINATORS:
        p.next()
        seq = parse_tactic_seq_here(p)
        return ("comb", p.span_from(t), w, seq)
    if w == "first":
        p.next()
        alts = []
        while _bar_here(p):
            p.next()
            alts.append(parse_tactic_seq_here(p))
        if not alts:
            p.fail("expected '|'")
        return ("first", p.span_from(t), tuple(alts))
    if w in ("case", "next"):
        p.next()
        tag = None
        if w == "case":
            tag = p.ident("case tag").text
        names = _names(p)
        p.expect("=>")
        seq = parse_tactic_seq_here(p)
        return ("case", p.span_from(t), tag, names, seq, (t.line, t.col, t.eline, t.ecol))
    if w in ("clear", "rename_i"):
        p.next()
        names = _names(p)
        if not names:
            p.fail("expected identifier")
        return (w, p.span_from(t), names)
    if w in UNSUPPORTED or (w.endswith("?") and w[:-1].isidentifier()):
        p.next()
        # its arguments run to the end of the tactic: inside `⟨by tac, …⟩` that is the list's `,` or bracket
        ends = (";", "<;>", ")") + ((",", p.closers[-1]) if p.closers else ())
        while not p.blocked() and not p.is_sym(*ends):
            if p.is_sym("(", "⟨", "["):
                p.atom() if not p.is_sym("[") else _skip_brackets(p)
            else:
                p.next()
        return ("unsupported", p.span_from(t), w)
    raise LeanSyntaxError(outside_fragment("unknown tactic"), t.line, t.col)  # Mathlib has hundreds more


def _scoped(p: Parser):
    """``set_option NAME VALUE in TACS`` -> ``("scoped", span, "set_option", (NAME, VALUE), seq)``;
    ``open [scoped] NS+ in TACS`` -> ``("scoped", span, "open" | "open scoped", (NS, ...), seq)``.

    As in Lean the sequence after ``in`` is a whole tactic block: on the same line, or on the next
    ones (at the enclosing block's column too, where it takes the rest of that block).
    """
    t = p.next()
    if t.text == "set_option":
        name = p.ident("option name")
        v = p.peek()
        if p.blocked(v) or not (v.kind == "num" or (v.kind == "id" and v.text in ("true", "false"))):
            p.fail("expected option value")
        p.next()
        if name.text not in SIM_OPTIONS or v.kind != "num":
            raise LeanSyntaxError(f"(sim) 'set_option {name.text} {v.text} in' is outside the simulated fragment "
                                  f"(it takes the limits {', '.join(SIM_OPTIONS)}, with a number, and ignores "
                                  "them: the simulated kernel has its own budget)", name.line, name.col)
        kind, args = "set_option", (name.text, numeral(v))
    else:
        kind, names = "open", []
        if p.is_kw("scoped"):
            p.next()
            kind = "open scoped"
        while p.peek().kind == "id" and not p.blocked() and p.peek().text != "in":
            n = p.next()
            if n.text in ("hiding", "renaming") and names:
                raise LeanSyntaxError(f"(sim) 'open ... {n.text}' is outside the simulated fragment (only "
                                      "'open [scoped] NS+ in')", n.line, n.col)
            names.append(n.text)
        if not names:
            p.fail("expected identifier")
        if p.is_sym("("):
            n = p.peek()
            raise LeanSyntaxError("(sim) 'open NS (names)' is outside the simulated fragment (only "
                                  "'open [scoped] NS+ in')", n.line, n.col)
        args = tuple(names)
    p.expect("in", "'in'")
    saved = p.stop_col
    n = p.peek()
    if n.bol and n.col == saved:
        p.stop_col = saved - 1  # the block after `in` may start below, at the enclosing block's column
    try:
        body = parse_tactic_seq_here(p)
    finally:
        p.stop_col = saved
    return ("scoped", p.span_from(t), kind, args, body)


def _bar_here(p: Parser) -> bool:
    t = p.peek()
    return t.kind == "sym" and t.text == "|" and not (t.bol and t.col < p.stop_col)


def _skip_brackets(p: Parser):
    depth = 0
    while True:
        t = p.next()
        if t.kind == "eof":
            return
        if t.text == "[":
            depth += 1
        elif t.text == "]":
            depth -= 1
            if depth == 0:
                return


# --------------------------------------------------------------------------- rcases patterns
# ('p_name', name) | ('p_any',) | ('p_clear',) | ('p_tuple', pats) | ('p_alts', pats)


def _pat_lo(p: Parser, allow_type: bool = True):
    pat = _pat_med(p)
    if allow_type and p.is_sym(":"):
        t = p.peek()
        raise LeanSyntaxError("(sim) typed rcases patterns are not supported", t.line, t.col)
    return pat


def _pat_med(p: Parser):
    alts = [_pat(p)]
    while p.is_sym("|"):
        p.next()
        alts.append(_pat(p))
    return alts[0] if len(alts) == 1 else ("p_alts", tuple(alts))


def _pat(p: Parser):
    t = p.peek()
    if p.blocked(t):
        p.fail("expected rcases pattern")
    if t.kind == "id":
        p.next()
        if t.text == "_":
            return ("p_any",)
        if t.text == "rfl":
            raise LeanSyntaxError("(sim) 'rfl' patterns are not supported", t.line, t.col)
        return ("p_name", t.text)
    if t.kind == "sym" and t.text == "-":
        p.next()
        return ("p_clear",)
    if t.kind == "sym" and t.text == "⟨":
        p.next()
        saved, p.stop_col = p.stop_col, -1
        items = []
        if not p.is_sym("⟩"):
            items.append(_pat_lo(p))
            while p.is_sym(","):
                p.next()
                items.append(_pat_lo(p))
        p.expect("⟩", "',' or '⟩'")
        p.stop_col = saved
        return ("p_tuple", tuple(items))
    if t.kind == "sym" and t.text == "(":
        p.next()
        saved, p.stop_col = p.stop_col, -1
        inner = _pat_lo(p)
        p.expect(")", "')'")
        p.stop_col = saved
        return inner
    p.fail("expected rcases pattern")
