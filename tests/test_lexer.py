"""leangym.lexer reads comments, literals and names token by token as Lean 4's tokenizer does, and says
where Lean could read them otherwise. Red-team round eight: a `'` after `!`, `?` or a lone subscript
starts a character literal to Lean (the old scanner took it for part of a name), so a comment it blanked
could be code to Lean."""
from __future__ import annotations

import pytest

from leangym.datasets import DatasetError, load_theorems
from leangym.lexer import scan
from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem, TheoremError


@pytest.mark.parametrize("source, blanked", [
    ("exact h' -- fine", "exact h'        "),  # a ' inside a name
    ("exact h₁' -- fine", "exact h₁'        "),
    ("x.y' -- c", "x.y'     "),
    ("`h' -- c", "`h'     "),  # a name literal
    ("f '' { x | 0 ≤ f x }", "f '' { x | 0 ≤ f x }"),  # Mathlib's image notation, not a char literal
    ("∑' n, f n -- c", "∑' n, f n     "),  # Mathlib's tsum, one token
    ("f ⁻¹' s -- c", "f ⁻¹' s     "),
    ("'a' -- c", "' '     "),
    ("'\\x41' '\\u0041' '\\''", "'    ' '      ' '  '"),  # Lean's escapes
    ("(!'\"' == 'a') -- c", "(!' ' == ' ')     "),  # after `!` a ' starts a char literal: '"' opens no string
    ("2h'\"' -- \"#eval", "2h'\"     \"#eval"),  # `2` then the name `h'`: the `"` opens a string
    ("1_000 + 0x1F + 2.5e-3 -- c", "1_000 + 0x1F + 2.5e-3     "),
    ("/- a /- b -/ c -/ d", "                  d"),
    ("/-/- c -/ d", "          d"),  # Lean skips the character after `/-`: one comment, closed at its first -/
    ("/-- doc -/ theorem", "           theorem"),
])
def test_comments_and_literals_end_where_lean_ends_them(source, blanked):
    assert scan(source, strings=True) == (blanked, None)


@pytest.mark.parametrize("source, risk", [
    ("exact !' -- #eval IO.Process.exit 7", "begins no character literal"),  # Lean: a broken char literal
    ("exact ?' -- x", "begins no character literal"),
    ("exact h ₀' -- x", "begins no character literal"),  # a subscript starts no name
    ("«a b»' -- x", "begins no character literal"),  # a ' after `»` is not the name's
    ("h.2' -- c", "begins no character literal"),
    ("'\\q'", "begins no character literal"),  # an escape Lean does not know
    ('"ab\\q" -- c', "escape Lean does not know"),
    ('"a{b}"', "interpolated"),
    ('r#"x"# -- c', "raw string"),
    ("1e -- x", "numeral"),
    ("0x -- x", "numeral"),
    ('"unterminated', "unterminated string"),
    ("«open", "unterminated «name»"),
    ("hé' -- x", "older Lean"),  # `é` is a name's letter to recent Lean only
    # red-team round eight, second part (a review and a differential fuzz against a model of Lean's lexer)
    ("x <-- #eval", "glued"),  # `<-` then `-x` to Lean: no comment
    ("{x : ℕ //- \n#eval\n-- -/", "glued"),  # `//` then `-`
    ("p \\/-q-/ r", "glued"),
    ("trivial\n/-!\t#eval 1\n-- -/", "a tab"),  # after a doc opener Lean's whitespace refuses the tab
    ("/--\r#eval 1 -/", "carriage return"),
    ('"\\\n\n#eval 1\n-- " = ""', "string gap over two lines"),
    ("#check'\"' -- x", "#word followed by a quote"),
    ('#evalr"x" -- y', "#word followed by a quote"),
    ("''\"' #eval 1 --\"", "quote right after ''"),  # without Mathlib, '' is no token
    ("/- a", "unterminated comment"),
    ("1_ -- x", "numeral"),
])
def test_what_lean_could_read_otherwise_is_reported(source, risk):
    assert risk in (scan(source)[1] or "")


@pytest.mark.parametrize("script", [
    "exact !' -- #eval IO.Process.exit 7",
    "exact ?' -- #eval IO.Process.exit 7",
    "exact h ₀' -- #eval IO.Process.exit 7",
    "exact !' -- axiom boom : False",
    "intro h\nexact !' -- #eval (IO.Process.spawn {cmd := (String.mk [Char.ofNat 115])} : IO Unit)",
])
def test_a_broken_char_literal_cannot_hide_a_command_from_the_final_check(script):
    """Lean's command loop recovers from the broken literal inside `--` and runs the `#eval`: the check
    must see it (recheck sends an untrusted results file's proofs to a server the agent never reached)."""
    sent: list[str] = []

    class Recording(LocalProcess):
        def run_command(self, source):
            sent.append(source)
            return super().run_command(source)

    thm = Theorem("theorem t (p : Prop) : p → p := by sorry")
    result = verify(Recording(), thm, script, SoundnessPolicy())
    assert not result.ok and "leangym soundness policy" in result.error and not sent


def test_a_char_literal_cannot_hide_a_second_theorem_in_a_statement():
    stmt = ("theorem t : (!'\"' == 'a') = true := by rfl\n#eval IO.Process.exit 7\naxiom boom : False\n"
            "theorem u : (!'\"' == 'a') = true := by sorry")
    with pytest.raises(TheoremError, match="exactly one theorem|#commands|runs code"):
        Theorem(stmt)


def test_a_char_literal_cannot_hide_commands_in_a_header(tmp_path):
    header = ("def a : Bool := !'\"' == 'a'\ndef b : String := \"/-\"\n#eval (IO.Process.exit 7 : IO Unit)\n"
              "set_option debug.skipKernelTC true\ndef c : String := \"-/\"")
    with pytest.raises(TheoremError, match="set_option debug|#eval|runs code"):
        Theorem("theorem t : True := by sorry", header=header)
    (tmp_path / "a.lean").write_text(header + "\n\ntheorem t : True := by sorry\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="set_option debug|#eval|runs code"):
        load_theorems(str(tmp_path / "a.lean"))


def test_text_lean_could_read_otherwise_is_refused_in_statements_headers_and_files(tmp_path):
    with pytest.raises(TheoremError, match="begins no character literal"):
        Theorem("theorem t : ((!' ) = ' ') := by sorry")
    with pytest.raises(TheoremError, match="header holds a raw string"):
        Theorem("theorem t : True := by sorry", header='def s := r"\\" -- "')
    (tmp_path / "b.lean").write_text("def s := \"{\"\ntheorem t : True := by sorry\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="interpolated"):
        load_theorems(str(tmp_path / "b.lean"))
    # what real statements hold reads as before: names with ', Mathlib's '' and ∑'
    Theorem("theorem t (f : ℕ → ℕ) (f' : ℕ → ℕ) (h₀' : f' 0 = 0) : f '' {0} = f '' {0} := by sorry")
    Theorem("theorem t (f : ℕ → ℝ) : ∑' n, f n = ∑' n, f n := by sorry")


def test_mathlibs_variables_is_a_command_word():
    assert "starts a Lean command" in SoundnessPolicy().check_script("exact hp\nvariables (x : Nat) [inst : Fact False]")
    assert SoundnessPolicy().check_script("exact hp -- the variables are fine in a comment") is None


@pytest.mark.parametrize("statement, header", [
    ("theorem t : True /-/- c -/ #eval (IO.Process.exit 7 : IO Unit) -- -/\n := by sorry", ""),
    ("theorem t : True #eval (IO.Process.exit 7 : IO Unit) := by sorry", ""),  # no comment needed at all
    ("theorem t (h : Nonempty {x : Nat //- \n#eval (IO.Process.exit 7 : IO Unit) -- -/\n x = x}) : True := by sorry",
     ""),
    ("theorem t : True <-- #eval (IO.Process.exit 7 : IO Unit)\n := by sorry", ""),
    ("theorem t : True := by sorry", "open Nat <-- #eval (IO.Process.exit 7 : IO Unit)"),
    ("theorem t : True := by sorry", "/-/- c -/ #eval (IO.Process.exit 7 : IO Unit)\nopen Nat"),
    ("/-!\t#eval 1\n-- -/\ntheorem foo : True := by sorry", ""),
    ("theorem t : True := by sorry", "import Mathlib\n/-!\taxiom ax : False\n-- -/\nopen Nat"),
    ('theorem t (h : "\\\n\n#eval 1\n-- " = "") : True := by sorry', ""),
    ("theorem t : True := by sorry", "/-- a \" -/ #eval x \"\ndef y := 1"),
    ("/-- #eval (IO.Process.exit 7 : IO Unit) -/\ntheorem t : True := by sorry", ""),  # code after a bad header
    # a comment right after a doc opener: Lean's whitespace reads it, so the doc comment ends elsewhere
    ("/-! /-/-/ x -- -/ #eval (IO.Process.exit 0 : IO Unit) -- -/ -/\ntheorem foo : True := by sorry", ""),
    ("theorem t : True := by sorry", "/-! /-/-/ x -- -/ set_option debug.skipKernelTC true -- -/ -/"),
    # a `by` block in a statement runs its tactics when Lean elaborates the statement
    ('theorem foo : (by run_tac do IO.println "x"; exact True) := by sorry', ""),
    ("theorem t : True := by sorry", '@[extern "system"] opaque sys : String → UInt32'),
    ("theorem t : True := by sorry", "/-!\tset_option debug.skipKernelTC true\n-- -/"),
])
def test_comment_tricks_cannot_hide_a_command_in_statements_and_headers(statement, header):
    """Each hides `#eval`/`axiom` where leangym used to see a comment and Lean (by its source) sees code."""
    with pytest.raises(TheoremError):
        Theorem(statement, header=header)


def test_a_doc_comment_tab_cannot_hide_a_command_in_a_proof():
    assert SoundnessPolicy().check_script("trivial\n/-!\t#eval 1\n-- -/") is not None
    assert SoundnessPolicy().check_script("exact hp /-- #eval 1 -/") is not None  # (a doc comment in a proof)


def test_what_real_statements_hold_still_loads():
    for statement, header in (
            ("theorem t (s : Finset ℕ) (p : ℕ → Prop) [DecidablePred p] : #(s.filter p) ≤ #s := by sorry", ""),
            ("theorem t (A : Matrix (Fin 2) (Fin 2) ℝ) : Matrix.trace A = Matrix.trace A := by sorry", "open Matrix"),
            ("theorem t (h : (2 : ℝ) > 0 := by norm_num) : True := by sorry", ""),
            ("theorem t : True := by sorry\r\n", "open Nat\r\nset_option maxHeartbeats 400000\r\n"),  # CRLF
            ("theorem t (x : ℕ) (h : x = 1)-- a note\n : x = 1 := by sorry", ""),
            ("/-- The syntax of a macro, as Lean shows it -/\ntheorem t : True := by sorry", "")):
        Theorem(statement, header=header)


def test_docstrings_before_a_theorem_still_load():
    t = Theorem("/-- The sum of two evens is even; the open interval is open. -/\n"
                "theorem t (a b : ℕ) (h : a = b) : b = a := by sorry", header="/-! # Problems\nfrom a book -/\nopen Nat")
    assert t.decl_name == "t"
