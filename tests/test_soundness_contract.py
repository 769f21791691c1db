"""The soundness policy's lists and limits pinned one entry at a time (a mutation audit found that dropping
most single entries broke no test): every banned word, every command keyword, every option ceiling, the
line-break guard, and the name forms that must still pass."""
from __future__ import annotations

import dataclasses

import pytest

from leangym.proof import ProofTree, assemble
from leangym.sim.local import LocalProcess
from leangym.soundness import DEFAULT_BANNED, TACTIC_OPTIONS, SoundnessPolicy, normalise_tactic, verify
from leangym.lexer import strip_comments
from leangym.theorem import _KEYWORDS, COMMAND_KEYWORDS, Theorem, as_identifier


@pytest.mark.parametrize("word", DEFAULT_BANNED)
def test_each_banned_word_is_refused_on_its_own(word):
    # reject_commands=False: the command check must not be what refuses `run_cmd` & co.
    why = SoundnessPolicy(reject_commands=False).check_tactic(f"exact ({word} x)")
    assert why is not None and word.lstrip("+") in why, why  # (`+native` may be named as `native`)


def test_the_banned_list_and_option_ceilings_are_what_the_docs_say():
    assert TACTIC_OPTIONS == {"maxRecDepth": 100_000, "maxHeartbeats": 4_000_000,
                              "synthInstance.maxHeartbeats": 4_000_000, "synthInstance.maxSize": 10_000}
    assert {"sorry", "admit", "native_decide", "sorryAx", "IO", "trace", "evalExpr"} <= set(DEFAULT_BANNED)


@pytest.mark.parametrize("option, ceiling", sorted(TACTIC_OPTIONS.items()))
def test_each_scoped_option_has_its_ceiling(option, ceiling):
    policy = SoundnessPolicy()
    assert policy.check_tactic(f"set_option {option} {ceiling} in simp") is None
    for bad in (ceiling + 1, 0):
        why = policy.check_tactic(f"set_option {option} {bad} in simp")
        assert why is not None and "outside the allowed range" in why, why


def test_an_option_outside_the_list_is_named_in_the_refusal():
    why = SoundnessPolicy().check_tactic("open Foo in set_option pp.all 1 in simp")
    assert why is not None and "'set_option pp.all ... in' is not allowed" in why, why


@pytest.mark.parametrize("keyword", sorted(COMMAND_KEYWORDS))
def test_each_command_keyword_is_refused_inside_a_tactic(keyword):
    assert SoundnessPolicy().check_tactic(f"exact hp {keyword} x") is not None


@pytest.mark.parametrize("tactic", ["exact h.end", "exact x.y.axiom", "exact Nat.theorem_x", "exact «end».x",
                                    "exact «axiom» h", "exact my_def", "exact definition"])
def test_names_that_hold_a_keyword_pass(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is None


def test_two_dots_end_a_name():
    """Lean reads `h..axiom` as `h`, `..`, `axiom`: a command keyword (it used to pass as a name)."""
    assert SoundnessPolicy().check_tactic("exact h..axiom x : False") is not None


@pytest.mark.parametrize("sep", ["\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
def test_a_line_break_lean_does_not_read_is_refused(sep):
    """str.splitlines() breaks there and Lean does not: the checked proof would not be the tactics that ran."""
    why = SoundnessPolicy().check_script(f"exact hp{sep}exact hq")
    assert why is not None and "may break lines only with" in why, why
    thm = Theorem("theorem t (p q : Prop) (hp : p) (hq : q) : p := by sorry")
    assert not verify(LocalProcess(), thm, f"exact hp{sep}exact hq", SoundnessPolicy()).ok


def test_normalise_drops_leading_blank_lines_and_indentation():
    assert normalise_tactic("\n\n  exact h\n") == "exact h"
    assert normalise_tactic("\n  exact h") == "exact h"
    assert normalise_tactic("\r\n  intro h\r\n  exact h") == "intro h\nexact h"


def test_a_verdict_cannot_be_edited():
    v = verify(LocalProcess(), Theorem("theorem t (p : Prop) (hp : p) : p := by sorry"), "exact hq", SoundnessPolicy())
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.ok = True  # type: ignore[misc]


def test_a_tree_without_goal_counts_focuses_each_child():
    assert assemble(ProofTree("constructor", (ProofTree("exact a"), ProofTree("exact b")))) == \
        "constructor\n· exact a\n· exact b"


@pytest.mark.parametrize("word", sorted(_KEYWORDS))
def test_a_name_that_is_a_keyword_is_escaped(word):
    """A dataset row named `def` or `instance` would otherwise declare `theorem def : ...`, which Lean cannot parse."""
    assert as_identifier(word) == f"«{word}»"
    assert Theorem("example : True := by sorry", name=word).decl_name == f"«{word}»"


def test_nested_block_comments_are_blanked_whole():
    assert strip_comments("/- a /- b -/ c -/x") == " " * 17 + "x"
