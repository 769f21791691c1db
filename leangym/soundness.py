"""The sound proof check: what a proof must pass before any reward.

Two gates. Before a tactic is sent, :meth:`SoundnessPolicy.check_tactic`
rejects escape hatches (``sorry``, ``admit``, ``native_decide``, the
``exact?`` family, meta code such as ``run_tac`` or ``by_elab``) and anything
that would leave tactic mode (a new command such as
``theorem``/``axiom``/``#exit``/``end`` on a line of its own). Lean's scoped
tactic forms ``open Foo in tac`` and ``set_option OPTION N in tac`` pass, the
latter for a few resource limits only (``set_option debug.skipKernelTC true in``
would switch the kernel off). After
the goals are closed, :func:`verify` assembles the whole proof, checks it as
one command together with ``#print axioms``, and accepts it only with no
error, no ``sorry`` and no axiom outside the allowed set. Every rule is a
field of the policy; none is silent.

The check declares the theorem under a name of its own: its name plus a random
suffix (``t`` is checked as ``t_leangym_3fa9…``). A process may keep what
earlier commands declared (the protocol does not say it forgets them), and a
proof must not cite an earlier check of its own theorem, or of another one:
those names are unguessable. The same statement can be checked again on the
same process without Lean answering "already declared", and so can a theorem
that the environment already has (one extracted from Mathlib). The name keeps
its namespace (``Nat.foo``: ``Nat.foo_leangym_…``), so the proof sees the
namespace-relative names it would see under the original name.
"""
from __future__ import annotations

import functools
import re
import secrets
from dataclasses import dataclass

from leangym.backends.types import LeanProcess, ServerError
from leangym.theorem import Theorem

# Escape hatches, plus meta-programming that could forge messages or add declarations.
DEFAULT_BANNED = ("sorry", "admit", "native_decide", "+native", "apply?", "exact?", "sorryAx",
                  "run_tac", "run_cmd", "run_elab", "run_meta", "by_elab")
DEFAULT_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})
# Lean commands: none of them may start a line of a tactic.
COMMAND_KEYWORDS = (
    "theorem lemma def axiom example instance abbrev structure class inductive opaque "
    "noncomputable private protected partial unsafe namespace section end open export "
    "universe variable import set_option attribute macro macro_rules syntax elab "
    "elab_rules notation infix infixl infixr prefix postfix mutual deriving initialize"
).split()
_COMMAND_LINE = re.compile(r"^\s*(?:(?:" + "|".join(COMMAND_KEYWORDS) + r")(?![\w.'?!])|@\[|#[A-Za-z]\w*)", re.M)
_HASH_COMMAND = re.compile(r"(?<![\w#])#\s*[A-Za-z]\w*")
# `set_option OPTION N in tac` at the start of a line: resource limits only, each with a ceiling
# (`maxHeartbeats 0` means no limit, and the final check has no time limit in the protocol).
TACTIC_OPTIONS = {"maxRecDepth": 100_000, "maxHeartbeats": 1_000_000,
                  "synthInstance.maxHeartbeats": 1_000_000, "synthInstance.maxSize": 10_000}
_SCOPED_PREFIX = re.compile(
    r"^([ \t]*)(?:set_option[ \t]+([\w.]+)[ \t]+(\d+)|open(?:[ \t]+scoped)?(?:[ \t]+(?!in\b)[A-Za-z_][\w.']*)+)"
    r"[ \t]+in\b[ \t]*", re.M)
_AXIOMS_MSG = re.compile(r"depends on axioms: \[(.*?)\]", re.S)


@functools.lru_cache(maxsize=256)
def _banned_pattern(word: str) -> re.Pattern[str]:
    # A word, not a substring: `sorry` is banned, `sorry_free_h` and `mysorry` are fine names.
    # Only ASCII letters, `_` and `'` join it into a longer name: after a digit (`0sorry`), a
    # symbol (`ℕsorry`) or a dot (`_root_.sorryAx`) some tokenizer may still read the word, so
    # it is banned there too (a false alarm costs one rejected tactic, a miss costs soundness).
    return re.compile(r"(?<![A-Za-z_'])" + re.escape(word) + (r"(?![A-Za-z0-9_'])" if word[-1].isalnum() else ""))


@dataclass(frozen=True)
class SoundnessPolicy:
    banned: tuple[str, ...] = DEFAULT_BANNED
    reject_commands: bool = True
    allowed_axioms: frozenset[str] = DEFAULT_AXIOMS
    check_axioms: bool = True
    max_tactic_chars: int = 4096

    def check_tactic(self, tactic: str) -> str | None:
        """``None`` if the tactic may be sent to Lean, else why not (a clear error for ``info``)."""
        if not tactic.strip():
            return "leangym: empty tactic"
        if len(tactic) > self.max_tactic_chars:
            return f"leangym: tactic longer than {self.max_tactic_chars} characters"
        for word in self.banned:
            if _banned_pattern(word).search(tactic):
                return f"leangym soundness policy: '{word}' is not allowed in a proof"
        if self.reject_commands:
            body = _strip_scoped_prefixes(tactic)
            m = _COMMAND_LINE.search(body) or _HASH_COMMAND.search(body)
            if m:
                return (f"leangym soundness policy: {m.group(0).strip()!r} starts a Lean command; "
                        "a tactic may not leave tactic mode")
        return None


def _strip_scoped_prefixes(tactic: str) -> str:
    """``tactic`` without its allowed ``open ... in`` / ``set_option ... in`` prefixes (what is
    left of each line is checked as a line start, so a command hidden behind one is still found)."""
    def strip(m: re.Match[str]) -> str:
        option, value = m.group(2), m.group(3)
        if option is not None and not (option in TACTIC_OPTIONS and 0 < int(value) <= TACTIC_OPTIONS[option]):
            return m.group(0)  # not an allowed option: left for the command check to reject
        return m.group(1)

    while (shorter := _SCOPED_PREFIX.sub(strip, tactic)) != tactic:
        tactic = shorter
    return tactic


@dataclass(frozen=True)
class Verification:
    ok: bool
    source: str  # the whole proof as Lean source (checked as is, under a name of its own)
    axioms: tuple[str, ...] = ()
    error: str | None = None
    server_failure: bool = False  # the check could not run: not a verdict on the proof


def verify(process: LeanProcess, theorem: Theorem, script: str, policy: SoundnessPolicy) -> Verification:
    """Check ``script`` as the whole proof of ``theorem`` in one command (the only way to a reward)."""
    for line in script.splitlines():
        if line.strip() in ("·", ""):
            continue
        why = policy.check_tactic(line.lstrip("· "))
        if why:
            return Verification(False, "", error=why)
    source = theorem.source_with_proof(script)
    name = f"{theorem.decl_name}_leangym_{secrets.token_hex(8)}"  # see the module docstring
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
    infos = [m.text for m in result.messages
             if m.severity == "info" and (m.line is None or m.line > last_line)
             and f"'{name}'" in m.text and "axioms" in m.text]
    if len(infos) != 1:  # none: the check did not run; several: someone forged one
        return Verification(False, source, error=f"final check failed: '#print axioms' gave {len(infos)} answers, "
                                                 "expected exactly one")
    if "does not depend on any axioms" in infos[0]:
        return Verification(True, source)
    found = [m for m in (_AXIOMS_MSG.search(infos[0]),) if m]
    if not found:
        return Verification(False, source, error=f"final check failed: unreadable '#print axioms' answer {infos[0]!r}")
    axioms = tuple(a.strip() for a in found[0].group(1).split(",") if a.strip())
    bad = [a for a in axioms if a not in policy.allowed_axioms]
    if bad:
        return Verification(False, source, axioms, f"final check failed: proof uses disallowed axioms {bad}")
    return Verification(True, source, axioms)
