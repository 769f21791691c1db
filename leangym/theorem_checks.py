"""The text checks a theorem's statement and header must pass, and the word lists they use.

:class:`leangym.theorem.Theorem` runs them when it is created: Lean's command words, ``#commands``, options
that switch checks off, ``sorry``, words that run code, the attributes a header may give, and the header's
allow-list (:func:`header_refusal`). :mod:`leangym.soundness` reads the same word lists for tactics. Apart
from ``theorem.py`` (which parses a declaration and holds :class:`~leangym.theorem.Theorem`) so that each
module stays small; these checks read text only and need nothing of it. Every name here is re-exported from
:mod:`leangym.theorem`.
"""
from __future__ import annotations

import re

from leangym.lexer import banned_word, scan, starts_token

# --------------------------------------------------------------------------- command words
# The words that begin a Lean command (and modifiers before one). They are keywords, so no
# identifier is spelled like them: neither a tactic (leangym.soundness) nor the text of a
# statement after its own head may hold one. A second layer (a proof is placed where no command
# can parse: leangym.soundness); where each word is declared: tests/data/command_words.tsv.
COMMAND_KEYWORDS = (
    "theorem lemma def axiom example instance abbrev structure class inductive opaque "
    "noncomputable private protected partial unsafe namespace section end open export "
    "universe variable import set_option attribute macro macro_rules syntax elab "
    "elab_rules notation infix infixl infixr prefix postfix mutual deriving initialize "
    "alias irreducible_def declare_syntax_cat simproc dsimproc builtin_initialize add_decl_doc "
    "omit include unseal seal notation3 unif_hint binder_predicate simproc_decl register_option test_extern "
    "declare_simp_like_tactic grind_pattern compile_inductive compile_def local scoped recall proof_wanted "
    "library_note assert_not_exists register_simp_attr register_label_attr initialize_simps_projections "
    "suppress_compilation declare_aesop_rule_sets add_aesop_rules "
    # Lean core, Mathlib and Aesop commands a red-team found missing (names with ? or % included)
    "register_builtin_option declare_config_elab declare_command_config_elab builtin_simproc "
    "builtin_simproc_decl builtin_dsimproc builtin_dsimproc_decl dsimproc_decl simproc_pattern "
    "builtin_simproc_pattern gen_injective_theorems init_quot register_tactic_tag tactic_extension "
    "recommended_spelling register_linter_set register_error_explanation grind_propagator "
    "builtin_grind_propagator elab_stx_quot show_panel_widgets with_weak_namespace coinductive public meta "
    "nonrec declare_uint_theorems declare_int_theorems declare_bitwise_uint_theorems declare_uint_simprocs "
    "declare_sint_simprocs mk_iff_of_inductive_prop count_heartbeats whatsnew guard_min_heartbeats "
    "assert_not_imported deprecated_module extend_docs unsuppress_compilation register_hint "
    "insert_to_additive_translation unlock_limits unset_option sudo erase_aesop_rules declare_aesop_exception "
    "run_cmd run_elab run_meta variables reset_grind_attrs% "
    # missing before issue 24 (an independent review): set_premise_selector evaluates its argument
    "set_premise_selector set_library_suggestions lrat_proof reprove init_grind_norm assert_no_sorry "
    "name_poly_vars deprecate prelude module "
    # from a Lean v4.25 reserved-token dump and mathlib4-help's command list (tests/data/command_words.tsv)
    "assert_exists norm_cast_add_elim register_parser_alias declare_bitwise_int_theorems docs_to_verso"
).split()
NOT_NAME_BEFORE, NOT_NAME_AFTER = r"(?<![\w.'«])", r"(?![\w.'?!»])"  # a whole token, not part of a name


# --------------------------------------------------------------------------- code and options in the text
# Options that switch checks off: never in a statement or a header (the final check would run without them).
_UNSAFE_OPTION = re.compile(r"set_option\s+(?:debug\.|trust\b)")  # searched with «» removed (`«debug».x`)
def _unescaped(code: str) -> str:
    """``code`` with name escapes dropped: ``set_option «debug».skipKernelTC`` is the same option to Lean."""
    return code.replace("«", "").replace("»", "")


# Header commands that change how Lean reads later commands or run code: not in a header.
# A #command: `#` and a word (`# Title` in a module doc's markdown is none; nor is Mathlib's `#s`, the card of a
# set named by one letter: no command's name is one letter)
HASH_WORD = r"#(?![A-Za-z](?![\w'!?]))[A-Za-z]\w*"
_HEADER_META = re.compile(r"(?:macro|macro_rules|elab|elab_rules|syntax|command_elab|term_elab|"
                          r"initialize|builtin_initialize|run_cmd|run_elab|run_meta|simproc|dsimproc|simproc_decl|"
                          r"dsimproc_decl|add_aesop_rules|erase_aesop_rules|declare_aesop_rule_sets)" + NOT_NAME_AFTER
                          + r"|" + HASH_WORD + r"|@\[[^\]]*\btactic\b")  # (`@[tactic x] def`)
# `#eval`, `#guard` ... run code; `#exit` ends the file: no #command in a statement or a header (`#[1, 2]` is fine)
HASH_COMMAND = re.compile(HASH_WORD)


def _doc_comment_danger(text: str) -> str | None:
    """What a doc comment in ``text`` would let Lean run if its body were read as code (see
    :func:`leangym.lexer.scan`), or None. By Lean's parser a doc comment's body is never code once its
    opener is read as one (leangym's lexer refuses what changes where it ends), so this is a second line
    of defence, kept narrow: #commands, debug options and the words that run code; prose that merely
    names a command (``the open interval``, ``the syntax of``) passes."""
    if "/--" not in text and "/-!" not in text:
        return None
    code, risk = scan(text, docs_are_comments=False)
    code = text if risk else code  # (a reading it cannot be sure of: every word counts)
    m = _UNSAFE_OPTION.search(_unescaped(code)) or HASH_COMMAND.search(code)
    return m.group(0).strip() if m else banned_word(CODE_RUNNING_WORDS, code)


# What makes a statement unprovable under the final check (leangym.soundness.verify rejects
# any command that reports "declaration uses 'sorry'" or depends on sorryAx).
_SORRY_WORDS = ("sorry", "admit", "sorryAx")


def _find_sorry(code: str) -> str | None:
    return banned_word(_SORRY_WORDS, code)


# What runs code or switches a check off when Lean elaborates a statement or header: a `by` block in a
# statement runs its tactics (`run_tac`), an attribute swaps a definition's code (`implemented_by`, `extern`
# FFI), a term is compiled and run (`native_decide`, `eval%`) or does IO. (The proof's own tactics pass the
# soundness policy; these are for the text a dataset supplies.)
CODE_RUNNING_WORDS = ("native_decide", "+native", "ofReduceBool", "run_tac", "run_cmd", "run_elab", "run_meta",
                      "by_elab", "command_elab", "eval%", "unsafeBaseIO", "unsafeIO", "unsafeEIO", "unsafeCast",
                      "IO", "BaseIO", "EIO", "evalExpr", "addDecl", "implemented_by", "extern", "plausible",
                      "slim_check", "polyrith", "include_str")
# The attributes a header may give (`@[simp] lemma`, `attribute [local instance] foo`). An allow-list: many
# attributes register code that Lean then compiles and runs (`@[delab]`, `@[app_unexpander]`, any
# `@[..._parser]`, Mathlib's `@[norm_num ...]` and `@[positivity ...]` extensions).
HEADER_ATTRIBUTES = frozenset(
    "simp reducible irreducible semireducible instance inline noinline macro_inline specialize ext norm_cast "
    "push_cast coe symm refl trans congr mono gcongr continuity measurability fun_prop simps to_additive nolint "
    "deprecated elab_as_elim induction_eliminator cases_eliminator match_pattern class default_instance "
    "local scoped nontriviality inherit_doc reassoc pp_nodot mk_iff field_simps bound grind".split())
_ATTRIBUTE_OPENER = re.compile(r"@\[|attribute\s*\[")


def _code_attribute(code: str) -> str | None:
    """The first attribute in ``code`` (``@[...]`` or ``attribute [...]``) not in :data:`HEADER_ATTRIBUTES`.
    Brackets are matched and ``«escaped names»`` skipped (a `]` in `«x]»` ends no list)."""
    for m in _ATTRIBUTE_OPENER.finditer(code):
        if not starts_token(code, m.start()):
            continue
        items, depth, current, i = [], 0, [], m.end()
        while i < len(code):
            c = code[i]
            if c == "«":
                close = code.find("»", i)
                close = len(code) if close < 0 else close
                current.append(code[i:close + 1])
                i = close + 1
                continue
            if c in "[(⟨{":
                depth += 1
            elif c in "])⟩}":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                items.append("".join(current))
                current = []
                i += 1
                continue
            current.append(c)
            i += 1
        items.append("".join(current))
        for item in items:
            words = [w for w in re.split(r"[\s(\[]+", item.strip()) if w]
            while words and words[0] in ("local", "scoped"):
                words = words[1:]
            if words and words[0].lstrip("-") not in HEADER_ATTRIBUTES:
                return words[0]
    return None


# --------------------------------------------------------------------------- the header allow-list
# What a header may hold, command by command (a command starts at a command word, :data:`COMMAND_KEYWORDS`):
# scoping, a few options, and declarations whose bodies pass the checks above (no sorry, no code-running word,
# literal configurations, no lemma search, balanced brackets). Never `variable`/`include`/`omit` (a hypothesis
# such as `(h : False)` or `[Fact False]` would join the statement), `axiom`, notations, macros, elaborators,
# `local`/`scoped` declarations, `unsafe`/`partial` code, or any command not listed here.
HEADER_COMMANDS = frozenset("open namespace section end universe set_option attribute def theorem lemma abbrev instance "
                            "example structure class inductive".split())
HEADER_MODIFIERS = frozenset("private protected noncomputable local scoped".split())  # (`local instance`, `open scoped`)
# options a header may set: resource limits and how goals print (the final check reads no printed goal)
HEADER_OPTIONS = re.compile(r"(?:maxHeartbeats|maxRecDepth|synthInstance\.maxHeartbeats|synthInstance\.maxSize|"
                            r"autoImplicit|relaxedAutoImplicit|pp\.[\w.]+|linter\.[\w.]+)")
# Tactics that search the whole environment for a lemma (docs/soundness.md: banned in proofs and headers, and
# harmless anyway: a final check runs on a process nothing earlier touched, so what an earlier check or episode
# declared is not there to find). Run them in your own Lean, then write the lemma's name.
LEMMA_SEARCH = ("exact?", "apply?", "rw?", "rw??", "rw_search", "library_search", "hint", "observe",
                "observe?", "have?", "propose", "says", "unfold?", "suggest_premises", "exact?%")
_HEAD_WORD = re.compile("(?:" + "|".join(sorted(COMMAND_KEYWORDS, key=len, reverse=True)) + ")" + NOT_NAME_AFTER
                        + r"|@\[|" + HASH_WORD)


def header_refusal(text: str) -> str | None:
    """Why a header (its preamble) is refused by the allow-list, naming the line and what to do; else None."""
    code = scan(text, strings=True)[0]
    in_attribute = _attribute_spans(code)
    heads = [m for m in _HEAD_WORD.finditer(code) if starts_token(code, m.start())
             and not (m.group(0) in ("local", "scoped", "instance") and in_attribute(m.start()))]
    for k, m in enumerate(heads):
        word = m.group(0)
        line = code.count("\n", 0, m.start()) + 1
        shown = text.splitlines()[line - 1].strip()[:80]
        where = f"the header's line {line} ({shown!r})"
        if word in HEADER_MODIFIERS or word == "@[":
            continue  # a modifier: the command word after it is checked
        if word not in HEADER_COMMANDS:
            advice = {"variable": "state hypotheses in the theorem itself: a variable joins every statement after it",
                      "include": "state hypotheses in the theorem itself", "omit": "state hypotheses in the theorem itself",
                      "axiom": "a header may not assume anything: prove it as a lemma"}.get(
                word, "a header may hold imports, open, namespace/section/end, universe, set_option of a resource "
                      "limit, and def/theorem/lemma/abbrev/instance/structure/class/inductive declarations")
            return f"{where} holds '{word}', which a header may not hold; {advice}"
        if word == "set_option":
            option = re.match(r"set_option\s+([\w.]+)", code[m.start():])
            if option is None or not HEADER_OPTIONS.fullmatch(option.group(1)):
                return (f"{where} sets an option a header may not set; allowed: maxHeartbeats, maxRecDepth, "
                        "synthInstance.maxHeartbeats/maxSize, autoImplicit, relaxedAutoImplicit, pp.*, linter.*")
        end = heads[k + 1].start() if k + 1 < len(heads) else len(code)
        body = code[m.end():end]
        if word := banned_word(LEMMA_SEARCH, body):
            return f"{where} uses '{word}', which searches the environment for a lemma; write the lemma's name"
        if _unbalanced(body) and not body.rstrip().endswith(" in"):
            return f"{where}: its brackets do not balance as Lean reads them; close each bracket inside its declaration"
    return None


def _attribute_spans(code: str):
    """A test: is position i directly inside an attribute list (``@[...]``, ``attribute [...]``), where
    ``local``, ``scoped`` and ``instance`` are attribute syntax (``attribute [local instance] f``)?"""
    inside, stack = set(), []
    for i, c in enumerate(code):
        if c in "([{⟨":
            stack.append(c == "[" and (code[i - 1:i] == "@" or re.search(r"(?:^|\s)attribute\s*$", code[:i]) is not None))
        elif c in ")]}⟩" and stack:
            stack.pop()
        elif stack and stack[-1]:
            inside.add(i)
    return lambda i: i in inside


def _unbalanced(code: str) -> bool:
    pairs, stack = {")": "(", "]": "[", "}": "{", "⟩": "⟨"}, []
    for c in re.sub("«[^»]*»", "", code):
        if c in "([{⟨":
            stack.append(c)
        elif c in pairs and (not stack or stack.pop() != pairs[c]):
            return True
    return bool(stack)
