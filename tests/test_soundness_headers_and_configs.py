"""Red-team round seven: what a theorem's header may do (and how the env's leases keep headers apart), and
tactic configurations, which Lean compiles and runs on the server."""
from __future__ import annotations

import pytest

from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem, TheoremError

def test_a_lease_that_ran_another_theorems_header_is_not_kept():
    """The env kept its lease whenever the *new* theorem's header declared nothing, so B's proof could cite
    a lemma A's header had declared there (rewarded, though it fails on a clean process); on real Lean a
    header's instances, notations or options would change what B's statement means."""
    from leangym.envs.lean_proof import LeanProofEnv

    a = Theorem("theorem a (p : Prop) (hp : p) : p := by sorry",
                header="theorem helper (p q : Prop) (hp : p) : p ∨ q := Or.inl hp")
    b = Theorem("theorem b (p q : Prop) (hp : p) : p ∨ q := by sorry")
    env = LeanProofEnv([a, b], process_factory=LocalProcess)
    for first in (0, 1):  # A's episode, or A's episode after B's on the same lease
        env.reset(options={"index": first})
        env.reset(options={"index": 0})
        env.reset(options={"index": 1})
        _, reward, *_, info = env.step("exact helper p q hp")
        assert reward == 0.0 and not info.get("verified"), info
        assert not verify(LocalProcess(), b, "exact helper p q hp", SoundnessPolicy()).ok
    env.reset(options={"index": 1})  # B after B: the same header (none) keeps the lease, and B still proves
    _, reward, *_ = env.step("exact Or.inl hp")
    assert reward == 1.0


@pytest.mark.parametrize("header", ["open Nat def helper : Nat := 5",
                                    "namespace Foo theorem helper (p : Prop) (hp : p) : p := hp",
                                    "set_option maxHeartbeats 400000 theorem cheat : True := trivial",
                                    "end Foo def x : Nat := 1", "universe u theorem foo : True := trivial",
                                    "open Nat @[simp] def x := 1"])
def test_a_declaration_on_a_scoping_commands_line_declares(header):
    """Lean needs no line break between commands: such a header declares (a second run on the same
    process is "already declared": every check after the first failed, in the env and the benchmark)."""
    assert Theorem("theorem t : True := by sorry", header=header).header_declares


@pytest.mark.parametrize("header", ["set_option debug.skipKernelTC true", "open Nat\nset_option trust 0",
                                    'macro "x" : tactic => `(tactic| rfl)', "#eval IO.println 1",
                                    "@[command_elab Lean.Parser.Command.printAxioms] def f : Unit := ()",
                                    "elab \"y\" : command => pure ()", "macro_rules | `(tactic| rfl) => `(tactic| trivial)",
                                    # an escaped name is the same option; tactic elaborators and simprocs run code
                                    "set_option «debug».skipKernelTC true", "set_option «trust» 0",
                                    "@[tactic foo] def x : Lean.Elab.Tactic.Tactic := fun _ => pure ()",
                                    "simproc foo (_) := fun _ => return .continue"])
def test_a_header_cannot_switch_checks_off_or_redefine_how_they_read(header):
    from leangym.theorem import TheoremError

    with pytest.raises(TheoremError, match="header"):
        Theorem("theorem t : True := by sorry", header=header)


@pytest.mark.parametrize("tactic", [
    # IO without the word IO: an IO action is a function of the world token `()`, run by a config term
    "simp (config := ((Lean.mkEmptyEnvironment >>= fun e => Lean.writeModule e \"/tmp/x.olean\").run' ()).elim {})",
    "simp (config := ((System.FilePath.pathExists \"/etc/passwd\").run' ()).elim {} fun b => {})",
    "simp (config := (Lean.Core.CoreM.toIO (pure ()) {fileName := \"\"} {env := e}).run' ())",
    "simp («config» := (f ()).run' ())", "decide (kernel := (g ()))", "simp (config := { zeta := f () })",
    "simp (config := (cfg) ())", "rw (occs := .pos (f ())) [h]", "rw (occs := .pos [f ()]) [h]", "simp (x := g () + 1)", "try simp (config := f ())",
    "all_goals nlinarith (discharger := fun _ => g ())", "apply (config := mk ()) foo", "exact (f a) (x := g ())",
    "exact Nat.rec (motive := fun _ => True) (by simp (config := f ())) h",  # a configuration inside a term argument
])
def test_configuration_terms_must_be_literals(tactic):
    why = SoundnessPolicy().check_tactic(tactic)
    assert why is not None and "must be a literal" in why, why


@pytest.mark.parametrize("tactic", [
    "exact Finset.sum_le_sum (f := fun i => (i : ℝ)) h", "exact Nat.rec (motive := fun _ => True) trivial (fun _ _ => h) n",
    "exact @Nat.le_induction (P := fun n _ => 0 < n) m h1 h2", "exact le_of_lt (h := lt_of_le_of_lt h1 h2)",
    "refine mul_pos (ha := by positivity) ?_", "have h := Finset.prod_congr (f := fun i => i ^ 2) rfl h2",
    "exact h.trans (c := fun x => x + 1)", "exact foo (h := by simp) (k := g () + 1)",
    "exact Finset.sum_le_sum (f := fun i => i) (g := fun i => i + 1) h",  # a chain of named arguments
])
def test_a_named_argument_of_a_term_may_be_any_term(tactic):
    """A term's named argument is elaborated and kernel-checked, never compiled and run (named_args' docstring)."""
    assert SoundnessPolicy().check_tactic(tactic) is None


@pytest.mark.parametrize("tactic", ["decide (config/- -/:= f ())", 'exact "x" (config /- c -/ := f ())',
                                    'exact "--" (config/- -/:= evil ())', "simp (config -- c\n := f ())"])
def test_a_comment_cannot_hide_a_configuration_term(tactic):
    """Lean allows a comment between the name and `:=`; the check used to read comment-stripped text only
    when no string could be misread, so a comment there (with a string in the tactic) hid the term."""
    why = SoundnessPolicy().check_tactic(tactic)
    assert why is not None and "comment inside" in why, why


@pytest.mark.parametrize("tactic", ["simp (config := { decide := true, maxSteps := 100000 })", "decide (kernel := true)",
                                    "exact foo (α := ℝ) (n := 5)", "simp (disch := norm_num) [h]",
                                    "rw [Nat.succ_le_of_lt (n := 3)]", "exact f (x := { a := { b := 1 } })",
                                    "apply le_trans (b := 2 * n)", "exact foo (n := n + 1)", "refine foo (h := ?_) ?_",
                                    "exact f (k := (n - 1) ^ 2)"])
def test_literal_configurations_and_named_arguments_pass(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is None


def test_headers_that_differ_only_in_comments_share_a_lease():
    """Theorems of one .lean file differ in comments and blank lines: the same header to Lean, one lease."""
    from leangym.envs.lean_proof import LeanProofEnv

    made = []

    def factory():
        made.append(1)
        return LocalProcess()

    a = Theorem("theorem a (p : Prop) (hp : p) : p := by sorry", header="open Nat\n")
    b = Theorem("theorem b (p : Prop) (hp : p) : p := by sorry", header="-- b's note\n\nopen Nat  \n")
    c = Theorem("theorem c (p : Prop) (hp : p) : p := by sorry", header="open Real\n")
    env = LeanProofEnv([a, b, c], process_factory=factory)
    for i in (0, 1, 0, 1):
        env.reset(options={"index": i})
        assert env.step("exact nothing")[4]["outcome"] == "rejected"  # (a proof's check would move to a fresh lease)
    assert len(made) == 1
    env.reset(options={"index": 2})  # another header: another lease
    assert len(made) == 2


@pytest.mark.parametrize("header", ["open Nat in\ntheorem helper : True := trivial\n",
                                    "local instance : Inhabited ℕ := ⟨0⟩\ntheorem helper : True := trivial\n",
                                    "attribute [local simp] Nat.add_comm\ntheorem helper : True := trivial\n",
                                    "attribute [simp] Nat.add_comm\ntheorem helper : True := trivial\n"])
def test_no_bare_retry_for_a_header_whose_effects_are_scoped(header):
    """A REPL may not carry scoped effects (a local instance, a notation, `open X in` on the next line)
    from command to command: a check without them could read the statement otherwise."""
    assert Theorem("theorem t : True := by sorry", header=header).repeatable_preamble is None


def test_open_scoped_lines_are_rerun():
    thm = Theorem("theorem t : True := by sorry",
                  header="open scoped BigOperators\nopen Real\nabbrev s : ℕ := 5\n")
    assert thm.repeatable_preamble == "open scoped BigOperators\nopen Real\n"


@pytest.mark.parametrize("tactic", [
    # `-` and `/` are arithmetic, `--` and `/-` open comments: Lean reads past the `)` the check stopped at
    'simp (config := id /-1) -/ ((System.FilePath.pathExists "/etc/passwd").run\' ()))',
    "simp (config := 1 -- x\n + f ())",
    "simp («a(b» := f ())",
])
def test_a_comment_or_an_escaped_name_cannot_end_a_configuration_early(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is not None


@pytest.mark.parametrize("value", ["(" * 1000 + "1" + ")" * 1000, "- " * 900 + "1"], ids=["brackets", "minus signs"])
def test_a_deeply_nested_configuration_is_refused_not_a_crash(value):
    why = SoundnessPolicy().check_tactic(f"simp (n := {value})")
    assert why is not None and "must be a literal" in why


# ---------------------------------------------------------------------------- red team nine: datasets


@pytest.mark.parametrize("header", [
    # the header sent is the header less its import lines: a comment opened on one hid what follows
    "import Mathlib /-\nimport Foo -/\n#eval (IO.Process.exit 7 : IO Unit)\naxiom cheat : False\nimport Bar /-\n-/",
    # configurations run when Lean elaborates a header's proofs, as in a proof
    "lemma l : True := by simp (config := (fun _ => {} : Unit → Lean.Meta.Simp.Config) ())",
    # attributes that register code Lean compiles and runs (an allow-list decides)
    "@[app_unexpander Foo] def u : Lean.PrettyPrinter.Unexpander := fun _ => pure default",
    "@[norm_num _ + _] def ext : Mathlib.Meta.NormNum.NormNumExt := sorry_free_ext",
    "attribute [delab app] foo",
    # a command word after a digit, a dot or a character literal is a token of its own to Lean
    ".elab_rules : tactic | `(tactic| foo) => pure ()",
    "'a'macro_rules | `(tactic| foo) => `(tactic| rfl)",
    '0syntax "foo" : term',
    ".attribute [delab app.foo] d",
    # an escaped name holding `]` does not end an attribute list
    "def «x]» := 0\n@[deprecated «x]», delab app.Nat.succ]\ndef d : Nat := 0",
    # a configuration named by the header's own definition runs that definition's code
    "def evil : Lean.Meta.Simp.Config := {}\ntheorem helper : True := by simp (config := evil)",
    "add_aesop_rules safe tactic foo",
])
def test_a_dataset_header_cannot_run_code_by_these_roads(header):
    with pytest.raises(TheoremError):
        Theorem("theorem t : True := by sorry", header=header)


@pytest.mark.parametrize("statement", [
    "theorem t (h : True := by decide (kernel := (fun _ => true) ())) : True := by sorry",
    "theorem t (h : True := by plausible) : True := by sorry",
])
def test_a_dataset_statement_cannot_run_code_in_a_by_block(statement):
    with pytest.raises(TheoremError):
        Theorem(statement)


def test_headers_with_ordinary_attributes_and_a_file_of_documented_theorems_load(tmp_path):
    from leangym.datasets import load_theorems

    for header in ("@[simp, norm_cast] lemma l : True := trivial", "attribute [local instance] Classical.propDecidable",
                   '@[to_additive "doc"] lemma l2 : True := trivial', "import Mathlib -- the library\nopen Nat"):
        Theorem("theorem t : True := by sorry", header=header)
    (tmp_path / "a.lean").write_text("import Mathlib\n\n/-- first -/\ntheorem a : True := by sorry\n\n"
                                     "/-- second -/\ntheorem b : True := by sorry\n", encoding="utf-8")
    a, b = load_theorems(str(tmp_path / "a.lean"))
    # each theorem's header ends with its own doc comment only (two in a row: Lean refuses the check)
    assert "first" in a.header and "first" not in b.header and "second" in b.header


def test_a_list_of_names_is_a_literal_and_an_application_in_it_is_not():
    from leangym.named_args import named_argument_refusal

    assert named_argument_refusal("@[aesop safe (rule_sets := [Foo, Bar])]") is None
    for value in ("[f x]", "[Foo, g x]", "[Foo] x"):
        assert named_argument_refusal(f"simp (config := {value})") is not None, value


def test_review_four_ordinary_headers_still_load():
    for header in ('@[deprecated (since := "2024-01-01")] lemma l : True := trivial', "@[inherit_doc] def x := 1",
                   "import Mathlib -- see /- below\nopen Nat", "lemma l (n : ℕ) : n = n := by simp (config := {})"):
        Theorem("theorem t : True := by sorry", header=header)
    with pytest.raises(TheoremError, match="exactly one theorem"):
        Theorem("theorem s : 'a'macro \"zz\" : tactic => `(tactic| rfl) := by sorry")


def test_a_keyword_inside_a_name_is_no_command():
    """`x5def` is one name to Lean (a digit inside a name joins it): fresh check names end in random hex and
    held `...5def` now and then; `x.syntax` is a field, `h'macro` a name."""
    Theorem("theorem prop_d3_01070_leangym_09838229bfdb5def (p : Prop) (h : p) : p := by sorry")
    for header in ("def x5def := 1", "def h'macro := 1", "abbrev y (x : Foo) := x.syntax"):
        Theorem("theorem t : True := by sorry", header=header)
    theorem = Theorem("theorem t (p : Prop) (h : p) : p := by sorry")
    for _ in range(200):
        Theorem(theorem.renamed(theorem.fresh_name()).formal_statement)
