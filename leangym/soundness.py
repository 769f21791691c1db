"""The sound proof check: what a proof must pass before any reward (docs/soundness.md says it all).

Structure first. The final check (:func:`verify`) places the proof inside a tactic block's brackets,
``:= by (`` PROOF ``)`` (:meth:`Theorem.source_with_proof`), and :meth:`SoundnessPolicy.check_script`
refuses a proof whose brackets do not balance as Lean's tokenizer reads them (comments and literals
read as :func:`leangym.lexer.scan` reads them; where it cannot be sure, the proof is refused). So the
proof cannot close that bracket: any command word in it, known or not yet written, is a parse error
inside a tactic block, and a check with an error is never a pass. After a parse error Lean's command
parser recovers (it tries a command at each following position), so before any command is sent the
same text, whole, must close every goal in Lean's tactic mode (one ``try_apply_tactic``, which parses
the whole text as tactics and has no command-level recovery): nothing unchecked reaches command level.
The word lists (banned tactics, command words: :data:`leangym.theorem_checks.COMMAND_KEYWORDS`, sources in
``tests/data/command_words.tsv``) are a second layer. Headers go through the command path (the
proof start, the command) and are covered by their allow-list (:func:`leangym.theorem_checks.header_refusal`).

Every path to Lean passes the same policy: ``step``, ``ProofSession.apply``/``apply_many``, the
gated ``session.process``/``env.process``, :func:`verify` (``session.verify``, the env's reward,
the benchmark's final check and ``recheck``, the trainer's verdicts). :func:`verify` then runs the
proof in tactic mode and checks it as one command with ``#print axioms`` under a fresh random name, and accepts it only
with no error, no ``sorry`` and no axiom outside the allowed set (its answer read whole, as Lean
writes it). Every rule is a field of the policy; none is silent.
"""
from __future__ import annotations

import dataclasses
import re
import textwrap
from dataclasses import dataclass
from typing import Callable

from leangym.backends.types import LeanError, LeanProcess, Outcome, ProofState, ServerError, goals_to_text
from leangym.lexer import ID_FIRST_ALWAYS, ID_REST_ALWAYS, banned_word, scan
from leangym.named_args import named_argument_refusal
from leangym.theorem import COMMAND_KEYWORDS, HASH_WORD, LEMMA_SEARCH, NOT_NAME_AFTER, NOT_NAME_BEFORE, Theorem, open_in

# Escape hatches, plus meta-programming that could forge messages or add declarations.
DEFAULT_BANNED = ("sorry", "admit", "native_decide", "+native", "native", "ofReduceBool", "ofReduceNat",
                  "sorryAx", "stop", "run_tac", "run_cmd", "run_elab", "run_meta", "by_elab", "command_elab",
                  # tactics that compile and run a term the proof wrote (code execution on the server):
                  # Mathlib's `trace e`, `eval% e`, and the counterexample searches
                  "trace", "dbg_trace", "eval%", "plausible", "slim_check",
                  # Mathlib's polyrith sends the goal over the network (curl to a SageMath server)
                  "polyrith",
                  "unsafeBaseIO", "unsafeIO", "unsafeEIO", "unsafeCast",
                  # a proof has no use for IO or for meta code that adds declarations: a term that an
                  # elaborator evaluates (a `(config := ...)`) could otherwise run it
                  "IO", "BaseIO", "EIO", "evalExpr", "addDecl",
                  # reads a file of the server at elaboration (Lean core's `include_str "path"`)
                  "include_str")
DEFAULT_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})
# Lean commands (theorem_checks.COMMAND_KEYWORDS, the second layer): none may appear in a tactic, anywhere;
# Lean needs no line break between commands (`exact h axiom x : False` ends a proof and declares an axiom).
# Found anywhere a keyword is not certainly part of a name (see _command_word).
_KEYWORD = re.compile("|".join(sorted(COMMAND_KEYWORDS, key=len, reverse=True)))
_ID_FIRST_CHAR, _ID_REST_CHAR = re.compile(f"[{ID_FIRST_ALWAYS}]"), re.compile(f"[{ID_REST_ALWAYS}]")
# `#` + a word of two letters or more, anywhere (no name holds '#': `hp#eval` is two tokens); `#s` with one
# letter is Mathlib's card notation (`#s ≤ 4`), and no command's name has one letter. `@[` starts attributes.
_HASH_COMMAND = re.compile(HASH_WORD + r"|@\[")
# Lean's scoped tactic forms `open Foo in tac` and `set_option OPTION N in tac` pass; the latter for
# resource limits only, each with a ceiling (`maxHeartbeats 0` means no limit, and the final check
# has no time limit in the protocol; `debug.skipKernelTC` would switch the kernel off). The ceilings
# are what Mathlib-style proofs write (`set_option maxHeartbeats 400000 in`, up to 4000000).
TACTIC_OPTIONS = {"maxRecDepth": 100_000, "maxHeartbeats": 4_000_000,
                  "synthInstance.maxHeartbeats": 4_000_000, "synthInstance.maxSize": 10_000}
_SCOPED_PREFIX = re.compile(
    NOT_NAME_BEFORE + r"(?:set_option\s+([\w.]+)\s+(\d+)\s+in|" + open_in(r"\s") + ")" + NOT_NAME_AFTER)
_ODD_LINE_BREAK = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_OPENERS, _CLOSERS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩"}, {")": "(", "]": "[", "}": "{", "⟩": "⟨"}
_ESCAPED_NAME = re.compile("«[^»]*»")


def normalise_tactic(tactic: str) -> str:
    """A tactic as it is sent and recorded: ``\\r\\n`` line ends as ``\\n``, no leading blank lines, no
    common indentation, no trailing whitespace. In an assembled proof an indented line continues
    the previous tactic (``intro h`` then ``  exact h`` reads ``intro h exact h``), so a step must
    not start indented."""
    lines = tactic.replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return textwrap.dedent("\n".join(lines)).rstrip()


def read_as_lean(script: str) -> tuple[str | None, str | None]:
    """``(code, None)``: ``script`` with comments and the insides of literals blanked, as Lean's tokenizer
    reads them (:func:`leangym.lexer.scan`: a ``"`` inside a ``--`` comment is prose), or ``(None, why)``
    where leangym cannot be sure how Lean reads it (then the script is refused, never guessed at)."""
    if "/--" in script or "/-!" in script:
        return None, "a doc comment (/-- or /-!), which has no place in a proof: write -- or /- -/"
    code, risk = scan(script, strings=True)
    return (None, risk) if risk else (code, None)


def bracket_refusal(code: str) -> str | None:
    """Why the brackets ``( [ { ⟨`` of ``code`` (from :func:`read_as_lean`) do not nest and balance, or None.
    A proof that balances cannot close the bracket :func:`verify` puts around it (see the module doc)."""
    stack: list[tuple[str, int]] = []
    for i, c in enumerate(_ESCAPED_NAME.sub(lambda m: " " * len(m.group()), code)):
        if c in _OPENERS:
            stack.append((c, i))
        elif c in _CLOSERS:
            if not stack or stack[-1][0] != _CLOSERS[c]:
                return (f"leangym soundness policy: the {c!r} at {_context(code, i)} closes no bracket the proof "
                        "opened; a proof's brackets must balance (it is checked inside a bracket it may not close)")
            stack.pop()
    if stack:
        c, i = stack[-1]
        return (f"leangym soundness policy: the {c!r} at {_context(code, i)} is never closed; a proof's brackets "
                "must balance")
    return None


def _context(text: str, i: int) -> str:
    return repr(text[max(0, i - 15):i + 15])


def _strip_scoped_prefixes(code: str) -> str:
    """``code`` without its allowed ``open ... in`` / ``set_option ... in`` (what follows each is
    then checked like any other text, so a command hidden behind one is still found)."""
    def strip(m: re.Match[str]) -> str:
        option, value = m.group(1), m.group(2)
        if option is not None and not (option in TACTIC_OPTIONS and 0 < int(value) <= TACTIC_OPTIONS[option]):
            return m.group(0)  # not an allowed option: left for the command check to reject
        return " "

    while (shorter := _SCOPED_PREFIX.sub(strip, code)) != code:
        code = shorter
    return code


def _command_word(code: str) -> str | None:
    """The first command keyword in ``code`` that Lean may read as one, else None.

    A keyword is passed over only when it is certainly part of a name: followed by a character
    that continues a name, or ending a run of name characters that starts like a name (``h.end``,
    ``my_def``, ``«axiom»``). After a numeral (``0axiom``, ``0x1instance``, ``2.5def``, ``1e5end``),
    a char literal (``'a'axiom``) or a symbol (``ᶜaxiom``, ``λdef``) it counts: Lean's tokenizer
    ends the token before it there. Doubt counts as a command (a false alarm costs one tactic).
    """
    for m in _KEYWORD.finditer(code):
        start, end = m.span()
        if end < len(code) and code[end] not in "!?" and _ID_REST_CHAR.match(code[end]):
            continue  # the name goes on (`definition`, `end_pos`; but `variable?` is a keyword of its own)
        j = start
        while j and (_ID_REST_CHAR.match(code[j - 1]) or (code[j - 1] == "." and code[j - 2:j - 1] != ".")):
            j -= 1  # (`h..axiom` is `h`, `..`, `axiom` to Lean: no name holds two dots in a row)
        run = code[j:start]
        if run and _ID_FIRST_CHAR.match(run[0]):
            continue  # the end of a name (`h.end`, `my_def`, `Nat.theorem_x`)
        if not run and code[start - 1:start] == "«" and code[end:end + 1] == "»":
            continue  # an escaped name
        return m.group(0)
    return None


@dataclass(frozen=True)
class SoundnessPolicy:
    """What tactics may reach Lean, and what a final check accepts.

    ``check_axioms=False`` trusts Lean's "declaration uses 'sorry'" warning alone, which Lean gives
    only for a ``sorry`` written in the checked declaration itself: a proof that cites a declaration
    proved by ``sorry`` is then accepted. Only ``#print axioms`` sees through that: keep it on.
    """

    banned: tuple[str, ...] = DEFAULT_BANNED
    lemma_search: tuple[str, ...] = LEMMA_SEARCH  # refused too (see LEMMA_SEARCH)
    reject_commands: bool = True
    literal_named_arguments: bool = True  # see leangym.named_args
    allowed_axioms: frozenset[str] = DEFAULT_AXIOMS
    check_axioms: bool = True
    max_tactic_chars: int = 4096

    def check_tactic(self, tactic: str) -> str | None:
        """``None`` if the tactic may be sent to Lean, else why not (a clear error for ``info``).

        Give it the tactic as it will be sent (:func:`normalise_tactic`).
        """
        if not tactic.strip():
            return "leangym: empty tactic"
        if len(tactic) > self.max_tactic_chars:
            return f"leangym: tactic longer than {self.max_tactic_chars} characters"
        return self.check_script(tactic)

    def check_script(self, script: str) -> str | None:
        """The rules of :meth:`check_tactic` for a whole proof script (bullets and all), at any length.

        In order: line breaks Lean reads as Python does; a reading of comments and literals leangym is
        sure of (:func:`read_as_lean`); brackets that balance (the structural guarantee); no banned or
        lemma-search word; named arguments that cannot run code (:mod:`leangym.named_args`); no command
        word (the second layer).
        """
        if m := _ODD_LINE_BREAK.search(script):
            # Python's splitlines() breaks there and Lean does not: the assembled proof would not be
            # the tactics that ran
            return f"leangym: a tactic may break lines only with '\\n' (found {m.group(0)!r})"
        code, risk = read_as_lean(script)
        if code is None:
            return (f"leangym soundness policy: leangym cannot be sure how Lean's tokenizer reads this proof "
                    f"({risk}); write it without that")
        if why := bracket_refusal(code):
            return why
        words = tuple(self.banned) + tuple(self.lemma_search)
        if words and (word := banned_word(words, code)):
            if word in self.lemma_search:
                return (f"leangym soundness policy: '{word}' searches the environment for a lemma, which a proof may "
                        "not do; run it in your own Lean to find the lemma, then write the lemma's name")
            return f"leangym soundness policy: '{word}' is not allowed in a proof"
        if self.literal_named_arguments and (why := named_argument_refusal(script)):
            return why
        if self.reject_commands:
            body = _strip_scoped_prefixes(code)
            word = _command_word(body) or ((m := _HASH_COMMAND.search(body)) and m.group(0))
            if word:
                # a refused `set_option ... in` gets its own reason; any other command word, the general one
                return (word.strip() == "set_option" and _scoped_option_refusal(code)) or (
                    f"leangym soundness policy: {word.strip()!r} starts a Lean command; "
                    "a tactic may not leave tactic mode")
        return None


def _scoped_option_refusal(code: str) -> str | None:
    """Why a ``set_option OPTION N in tac`` of ``code`` is refused, if one is (a clearer word than
    "starts a Lean command" for a tactic that only asked for an option outside the allowed ones)."""
    for m in _SCOPED_PREFIX.finditer(code):
        option, value = m.group(1), m.group(2)
        if option is None:
            continue
        if option not in TACTIC_OPTIONS:
            return (f"leangym soundness policy: 'set_option {option} ... in' is not allowed in a proof; a tactic "
                    f"may scope only the resource limits {', '.join(TACTIC_OPTIONS)}")
        if not 0 < int(value) <= TACTIC_OPTIONS[option]:
            return (f"leangym soundness policy: 'set_option {option} {value} in' is outside the allowed range "
                    f"1..{TACTIC_OPTIONS[option]}")
    return None


@dataclass(frozen=True)
class Verification:
    ok: bool
    source: str  # the whole proof as Lean source (checked as is, under a name of its own)
    axioms: tuple[str, ...] = ()
    error: str | None = None
    server_failure: bool = False  # the check could not run: not a verdict on the proof
    # the check ran on a process that nothing but this proof's own session touched: ProofSession.verify says
    # so from the process's record; a caller of verify() chooses the process (the env, the harness and
    # recheck pass fresh leases). Rewards and "proved" verdicts rest only on such checks.
    isolated: bool = True


# How long the tactic-mode pass of the final check may take (ms): the whole proof in one call, where
# the steps that found it each had the session's per-tactic limit.
GATE_TIMEOUT_MS = 60_000


def verify(process: LeanProcess, theorem: Theorem, script: str, policy: SoundnessPolicy, *,
           root: ProofState | None = None, timeout_ms: int = GATE_TIMEOUT_MS,
           spare: Callable[[], LeanProcess] | None = None) -> Verification:
    """Check ``script`` as the whole proof of ``theorem`` (the only way to a reward), in three layers:

    1. the policy (:meth:`SoundnessPolicy.check_script`: brackets, word lists);
    2. tactic mode: the whole script, as one ``try_apply_tactic``, on ``root`` (the theorem's start state on
       ``process``; started here under a fresh name when None) must close every goal. Lean's tactic mode
       (``Parser.runParserCategory env `tactic``) must consume the whole text and has no command-level
       recovery, so no text of it can run as a command, whatever words it holds;
    3. only then the command: the proof inside the bracket it cannot close, under a fresh random name,
       with ``#print axioms`` after it (errors, ``sorry`` warnings and axioms read whole).

    Nothing reaches the command path that did not pass 2 on this same ``process``. Give it a process nothing
    earlier touched for a verdict a reward rests on (costs: one proof start when ``root`` is None, one
    tactic call, one command). A header that declares something is on ``process`` after the start: the
    command re-runs only its :attr:`Theorem.repeatable_preamble`, or, where none can be re-run (a
    namespace left open ...), runs with the whole header on ``spare()``, a second clean process (closed
    after), where the same header makes the same parser, so the text that passed 2 reads the same."""
    if type(script) is not str:
        if not isinstance(script, str):
            raise TypeError(f"a proof script is a str, not {type(script).__name__}")
        # the characters themselves: a str subclass could answer splitlines() (which builds the
        # source) otherwise than the text the policy reads
        script = str.__str__(script)
    why = policy.check_script(script)
    if why:
        return Verification(False, "", error=why)
    source = theorem.source_with_proof(script)
    refused = _tactic_mode_refusal(process, theorem, script, root, timeout_ms)
    if refused is not None:
        return dataclasses.replace(refused, source=source)
    if not theorem.header_declares:
        verdict = _command_check(process, theorem, script, policy)
    elif (again := theorem.repeatable_preamble) is not None:
        verdict = _command_check(process, dataclasses.replace(theorem, header=again), script, policy)
    elif spare is not None:
        verdict = _on_spare(spare, theorem, script, policy)
    else:
        verdict = Verification(False, source, error=(
            "final check failed: the header declares something and leaves a namespace or section open (or has "
            "scoped effects), so it cannot be declared again on the process the proof started on; check it "
            "with leangym.soundness.verify(..., spare=<a factory of clean processes>)"))
    return dataclasses.replace(verdict, source=source)


def _on_spare(spare: Callable[[], LeanProcess], theorem: Theorem, script: str, policy: SoundnessPolicy) -> Verification:
    try:
        process = spare()
    except ServerError as e:
        return Verification(False, "", error=f"server failure during the final check: no second clean process: {e}",
                            server_failure=True)
    try:
        return _command_check(process, theorem, script, policy)
    finally:
        process.close()


def _tactic_mode_refusal(process: LeanProcess, theorem: Theorem, script: str, root: ProofState | None,
                         timeout_ms: int) -> Verification | None:
    """None when ``script``, whole, closes every goal of ``theorem`` in Lean's tactic mode on ``process``;
    else the failed verdict (layer 2 of :func:`verify`)."""
    if root is None:
        try:
            root = process.start_proof(theorem.start_source())
        except LeanError as e:
            return Verification(False, "", error=f"final check failed: Lean rejected the statement: {e}")
        except ServerError as e:
            return Verification(False, "", error=f"server failure during the final check: {e}", server_failure=True)
    result = process.apply_tactic(root, script, timeout_ms)
    if result.outcome is Outcome.PROVED:
        return None
    if result.outcome is Outcome.SERVER_FAILURE:
        return Verification(False, "", error=f"server failure during the final check: {result.error}",
                            server_failure=True)
    why = {Outcome.PROGRESS: f"unsolved goals\n{goals_to_text(result.goals)}",
           Outcome.TIMEOUT: f"it timed out ({timeout_ms} ms)"}.get(result.outcome, result.error)
    return Verification(False, "", error=f"final check failed: in tactic mode (the whole proof as one tactic "
                                         f"block, before any command is sent): {why}")


def _command_check(process: LeanProcess, theorem: Theorem, script: str, policy: SoundnessPolicy) -> Verification:
    """Layer 3 of :func:`verify`: the proof as one command under a fresh name, then ``#print axioms``."""
    source = theorem.source_with_proof(script)
    name = theorem.fresh_name()  # see the module docstring
    checked = theorem.renamed(name).source_with_proof(script)
    command = checked + (f"\n#print axioms {name}\n" if policy.check_axioms else "")
    try:
        result = process.run_command(command)
    except ServerError as e:
        return Verification(False, source, error=f"server failure during the final check: {e}", server_failure=True)
    if result.errors:
        return Verification(False, source, error="final check failed: " + "; ".join(m.text for m in result.errors))
    if result.uses_sorry:
        return Verification(False, source, error="final check failed: declaration uses 'sorry'")
    if not policy.check_axioms:
        return Verification(True, source)
    # Only an answer positioned after the proof counts: a proof can print any text itself
    # (`trace`, `logInfo`), including a forged "does not depend on any axioms", but only at
    # its own lines. (`> last_line`, not `== last_line + 2`, so that a server counting lines
    # from 0 works too; a message without a position is taken as the command's.)
    last_line = checked.count("\n")
    infos = [m.text.strip() for m in result.messages
             if m.severity == "info" and (m.line is None or m.line > last_line) and f"{_printed(name)}'" in m.text]
    if len(infos) != 1:  # none: the check did not run; several: someone forged one
        return Verification(False, source, error=f"final check failed: '#print axioms' gave {len(infos)} answers, "
                                                 "expected exactly one")
    axioms = _axioms_of(infos[0], name)
    if axioms is None:
        return Verification(False, source, error=f"final check failed: unreadable '#print axioms' answer {infos[0]!r}")
    bad = [a for a in axioms if a not in policy.allowed_axioms]
    if bad:
        return Verification(False, source, axioms, f"final check failed: proof uses disallowed axioms {bad}")
    return Verification(True, source, axioms)


def _printed(name: str) -> str:
    """``name`` as Lean prints it: it declares and prints ``_root_.foo`` as ``foo``."""
    return name.removeprefix("_root_.")


_PLAIN_NAME = re.compile(r"[^\W\d][\w']*(?:\.[^\W\d][\w']*)*")


def _axioms_of(answer: str, name: str) -> tuple[str, ...] | None:
    """The axioms in Lean's whole ``#print axioms`` answer for ``name``; None if it is not one.

    The answer is matched whole, as Lean writes it: ``'NS.name' does not depend on any axioms``
    or ``'NS.name' depends on axioms: [a, b]`` (``NS.``: the namespace the header opened, or
    ``_private...`` for a private theorem). Each axiom must be a plain dotted name: an axiom
    named ``«does not depend on any axioms»`` or ``Classical.«choice]✝»`` must not read as a pass.
    """
    m = re.fullmatch(r"'(?:[^\n]*\.)?" + re.escape(_printed(name)) + r"' (?:(does not depend on any axioms)|"
                     r"depends on axioms: \[([^\[\]]*)\])", answer, re.S)
    if m is None:
        return None
    if m.group(1):
        return ()
    axioms = tuple(a.strip() for a in m.group(2).split(","))
    return axioms if all(_PLAIN_NAME.fullmatch(a) for a in axioms) else None
