"""The final proof check cannot be talked into accepting a proof (leangym.soundness.verify)."""
from __future__ import annotations

import dataclasses

import pytest

from leangym.backends.types import CommandResult, ReplMessage
from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem

THM = Theorem("theorem t (p : Prop) (hp : p) : p := by sorry")


class Forging(LocalProcess):
    """The simulator, plus messages a proof could print itself (e.g. with `trace`).

    ``{name}`` in a message stands for the name the check declares (the worst case:
    a forger who guessed its random suffix).
    """

    def __init__(self, extra: list[ReplMessage], axioms_reply: str | None = None):
        super().__init__()
        self.extra, self.axioms_reply = extra, axioms_reply
        self.commands: list[str] = []

    def run_command(self, source: str) -> CommandResult:
        self.commands.append(source)
        name = source[source.index("#print axioms "):].split()[2]
        real = super().run_command(source)
        msgs = list(real.messages)
        if self.axioms_reply is not None:  # what Lean would say about a proof using a bad axiom
            msgs = [m for m in msgs if "axioms" not in m.text]
            msgs.append(ReplMessage("info", self.axioms_reply.format(name=name), real.messages[-1].line, 0))
        extra = [dataclasses.replace(m, text=m.text.format(name=name)) for m in self.extra]
        return CommandResult(tuple(extra) + tuple(msgs), real.sorries, real.env)


def test_a_clean_proof_passes():
    check = verify(LocalProcess(), THM, "exact hp", SoundnessPolicy())
    assert check.ok and check.axioms == ()


def test_a_forged_axioms_message_does_not_hide_a_bad_axiom():
    forged = ReplMessage("info", "'{name}' does not depend on any axioms", 2, 2)  # printed by the proof itself
    process = Forging([forged], axioms_reply="'{name}' depends on axioms: [Lean.ofReduceBool]")
    check = verify(process, THM, "exact hp", SoundnessPolicy())
    assert not check.ok and "Lean.ofReduceBool" in check.error


def test_a_second_answer_on_the_print_line_is_a_forgery():
    # Meta code can log at any position; two answers on the `#print axioms` line mean one is forged.
    process = Forging([], axioms_reply="'{name}' depends on axioms: [Lean.ofReduceBool]")
    verify(process, THM, "exact hp", SoundnessPolicy())
    real_line = LocalProcess().run_command(process.commands[-1]).messages[-1].line
    process.extra = [ReplMessage("info", "'{name}' does not depend on any axioms", real_line, 0)]
    check = verify(process, THM, "exact hp", SoundnessPolicy())
    assert not check.ok and "exactly one" in check.error


def test_no_answer_from_print_axioms_is_a_failure():
    class Silent(LocalProcess):
        def run_command(self, source):
            real = super().run_command(source)
            return CommandResult(tuple(m for m in real.messages if "axioms" not in m.text), real.sorries, real.env)

    check = verify(Silent(), THM, "exact hp", SoundnessPolicy())
    assert not check.ok and "#print axioms" in check.error


@pytest.mark.parametrize("tactic, why", [
    ("set_option maxHeartbeats 0 in omega", "'set_option maxHeartbeats 0 in' is outside the allowed range 1..4000000"),
    ("set_option maxRecDepth 200000 in omega", "'set_option maxRecDepth 200000 in' is outside the allowed range"),
    ("set_option pp.all 1 in omega", "'set_option pp.all ... in' is not allowed in a proof; a tactic may scope "
                                     "only the resource limits maxRecDepth, maxHeartbeats"),
    ("set_option maxHeartbeats 1000 in\naxiom x : False", "'axiom' starts a Lean command"),
])
def test_a_refused_scoped_option_says_what_is_allowed(tactic, why):
    assert why in SoundnessPolicy().check_tactic(tactic)


@pytest.mark.parametrize("tactic", ["sorry", "exact sorry", "admit", "native_decide", "exact?", "apply? ",
                                    "exact hp\ntheorem x : False := by trivial", "exact hp\n  axiom a : False",
                                    "#exit", "exact hp #exit", "set_option maxHeartbeats 0 in exact hp",
                                    "@[simp] theorem x : True := trivial", "exact hp\nend",
                                    "run_tac Lean.Elab.admitGoal (← Lean.Elab.Tactic.getMainGoal)",
                                    # a tokenizer may split these before the word
                                    "exact Nat.lt_irrefl 0sorry", "exact ℕsorry", "exact _root_.sorryAx _ false",
                                    "exact sorry₁",
                                    # meta code in term position; native evaluation; options off the list
                                    "exact by_elab (pure (Lean.mkConst ``True.intro))", "decide +native",
                                    "set_option debug.skipKernelTC true in exact hp",
                                    "set_option maxRecDepth 0 in exact hp",
                                    "set_option maxHeartbeats 99999999 in exact hp",
                                    # a command behind an allowed prefix is still a command
                                    "open Nat in\ntheorem x : False := by trivial",
                                    "open Real in set_option debug.skipKernelTC true in exact hp",
                                    "set_option maxRecDepth 100 in open Nat in #exit"])
def test_banned_tactics_never_reach_lean(tactic):
    policy = SoundnessPolicy()
    why = policy.check_tactic(tactic)
    assert why is not None
    process = Recording()
    check = verify(process, THM, tactic, policy)
    assert not check.ok and not check.server_failure
    assert process.calls == []  # nothing at all was sent to Lean
    # the verdict is the policy's, not the kernel's
    assert check.error == policy.check_script(tactic) == why and check.error.startswith("leangym")
    assert check.source == ""


class Recording(LocalProcess):
    """The simulator, recording every call that would reach Lean."""

    def __init__(self):
        super().__init__()
        self.calls: list[tuple[str, object]] = []

    def start_proof(self, theorem_with_sorry):
        self.calls.append(("start_proof", theorem_with_sorry))
        return super().start_proof(theorem_with_sorry)

    def apply_tactic(self, state, tactic, timeout_ms=1000):
        self.calls.append(("apply_tactic", tactic))
        return super().apply_tactic(state, tactic, timeout_ms)

    def apply_tactics(self, state, tactics, timeout_ms=1000):
        self.calls.append(("apply_tactics", tuple(tactics)))
        return super().apply_tactics(state, tactics, timeout_ms)

    def run_command(self, source):
        self.calls.append(("run_command", source))
        return super().run_command(source)


def test_the_recording_process_sees_an_allowed_proof():
    # the control for test_banned_tactics_never_reach_lean: an allowed proof is sent, whole, in tactic mode
    # first (on the statement it started), then once as a command
    process = Recording()
    assert verify(process, THM, "exact hp", SoundnessPolicy()).ok
    assert [kind for kind, _ in process.calls] == ["start_proof", "apply_tactic", "run_command"]
    assert process.calls[1][1] == "exact hp" and "exact hp" in process.calls[2][1]


@pytest.mark.parametrize("tactic", ["exact hp", "intro h", "rcases h with ⟨a, b⟩", "exact h.endpoint",
                                    "exact sorry_free", "exact mysorry", "norm_num [foo]",
                                    # Lean's scoped tactic forms, as LLM provers write them
                                    "set_option maxRecDepth 10000 in norm_num", "open Real in nlinarith [sq_nonneg x]",
                                    "open scoped BigOperators in simp", "set_option maxHeartbeats 400000 in\n  omega",
                                    "open Nat Real in set_option maxRecDepth 5000 in decide"])
def test_ordinary_tactics_pass_the_policy(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is None


def test_a_proof_cannot_cite_an_earlier_check():
    """Earlier checks on the same process (which may keep their declarations) cannot be cited."""
    process = LocalProcess()
    assert verify(process, THM, "exact hp", SoundnessPolicy()).ok
    cite = verify(process, THM, "exact t p hp", SoundnessPolicy())
    assert not cite.ok and "unknown identifier 't'" in cite.error
    assert verify(process, THM, "exact hp", SoundnessPolicy()).ok  # and no "already declared" either
    small = Theorem("example (p : Prop) (hp : p) : p := by sorry")
    other = Theorem("example (p q : Prop) (hp : p) (hq : q) : q := by sorry")
    assert verify(process, small, "exact hp", SoundnessPolicy()).ok
    assert not verify(process, other, "exact leangym_example q hq", SoundnessPolicy()).ok


def test_a_theorem_the_environment_already_has_can_be_checked():
    """As one extracted from Mathlib: Lean would answer "already declared" to its own name."""
    process = LocalProcess()
    assert not process.run_command(THM.source_with_proof("exact hp")).errors  # now `t` is declared
    assert verify(process, THM, "exact hp", SoundnessPolicy()).ok
    dotted = Theorem("theorem Foo.bar (p : Prop) (hp : p) : p := by sorry")
    assert verify(process, dotted, "exact hp", SoundnessPolicy()).ok  # checked as Foo.bar_leangym_…


def test_an_error_inside_a_nested_by_is_reported():
    """Not only the axioms check catches it: the kernel reports the error itself."""
    false = Theorem("theorem f : False := by sorry")
    check = verify(LocalProcess(), false, "exact (by\n  · skip)", SoundnessPolicy(check_axioms=False))
    assert not check.ok and "final check failed" in check.error


def test_a_malformed_check_reply_is_a_server_failure_not_a_verdict():
    class Garbled(LocalProcess):
        def run_command(self, source):
            from leangym.backends.types import parse_command

            return parse_command({"messages": [{"severity": "error", "pos": "1:2", "data": "x"}]})

    check = verify(Garbled(), THM, "exact hp", SoundnessPolicy())
    assert not check.ok and check.server_failure and "malformed" in check.error


def test_statements_hold_exactly_one_theorem():
    from leangym.theorem import TheoremError

    for stmt in ("theorem a (p : Prop) (hp : p) : p := by sorry\ntheorem b : True := by sorry",
                 "axiom x : False\ntheorem b : False := by sorry"):
        with pytest.raises(TheoremError, match="exactly one theorem|one theorem: put other commands in `header`"):
            Theorem(stmt)


class Answers(LocalProcess):
    """The simulator's check, with Lean's exact '#print axioms' answer replaced by ``answer``."""

    def __init__(self, answer):
        super().__init__()
        self.answer = answer

    def run_command(self, source):
        real = super().run_command(source)
        name = source.rsplit("#print axioms ", 1)[1].strip()
        msgs = tuple(m if "axioms" not in m.text else dataclasses.replace(m, text=self.answer.format(name=name))
                     for m in real.messages)
        return CommandResult(msgs, real.sorries, real.env)


@pytest.mark.parametrize("answer", [
    "'{name}' depends on axioms: [«does not depend on any axioms»]",  # an axiom named like the pass
    "'{name}' depends on axioms: [Classical.choice]✝]",  # Lean prints `«choice]✝»` unescaped
    "'{name}' depends on axioms: [Classical.«choice», cheat]",
    "'{name}' does not depend on any axioms, but note: [cheat]",
    "'{name}' depends on axioms: [propext] and more",
])
def test_the_axioms_answer_is_read_whole(answer):
    check = verify(Answers(answer), THM, "exact hp", SoundnessPolicy())
    assert not check.ok, answer
    assert not check.server_failure
    assert check.error.startswith("final check failed: unreadable '#print axioms' answer"), check.error


def test_a_namespaced_or_private_theorem_verifies():
    for answer in ("'Foo.{name}' does not depend on any axioms",
                   "'_private.Mathlib.Foo.0.{name}' depends on axioms: [propext, Classical.choice]",
                   "'{name}' depends on axioms: [propext,\n Quot.sound]"):
        check = verify(Answers(answer), THM, "exact hp", SoundnessPolicy())
        assert check.ok, (answer, check.error)


@pytest.mark.parametrize("tactic", [
    "exact hp axiom cheat : False", "exact hp; theorem x : True := trivial", "exact hp end Foo",
    "/- -/ axiom cheat : False", "local notation \"x\" => 1", "alias foo := bar",
    "skip; set_option debug.skipKernelTC true in exact hp",
    "exact Lean.ofReduceBool _ _ rfl", "exact hp @[command_elab Lean.Parser.Command.printAxioms] def forge := 1",
    # a raw string, which the comment scanner does not read: no text is taken for a comment
    "exact hp r#\"a\"b\"# -- \" axiom cheat : False",
])
def test_commands_anywhere_in_a_tactic_are_rejected(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is not None


@pytest.mark.parametrize("tactic", [
    "nlinarith [sq_nonneg x] -- by the theorem of AM-GM, see the example above",
    "/- we end the proof here: an example of `open` -/ exact hp", "skip; open Real in simp",
    "have h' : p := hp -- theorem h'", "exact h.end_pos", "exact Nat.theorem_x",
])
def test_command_words_in_comments_and_names_pass(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is None


def test_comments_are_comments_as_lean_tokenizes_them():
    thm = Theorem("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry")
    script = "constructor -- for example, split the conjunction\n· exact hp -- hp is the left part\n· exact hq"
    assert verify(LocalProcess(), thm, script, SoundnessPolicy()).ok
    # a `"` inside a `--` comment is prose (issue 24: it used to make the comment's words count)
    assert verify(LocalProcess(), thm, '-- for example, split "p ∧ q"\nexact ⟨hp, hq⟩', SoundnessPolicy()).ok
    # a `'` that starts no character literal: leangym cannot be sure how Lean reads on, so it refuses
    why = SoundnessPolicy().check_script("exact ⟨hp, hq⟩ ' -- for example")
    assert why is not None and "cannot be sure how Lean's tokenizer reads" in why, why
    # a quote inside a comment is the comment's: Lean skips a `--` comment to the end of its line
    assert verify(LocalProcess(), thm, "-- for example, 'hp' and 'hq'\nexact ⟨hp, hq⟩", SoundnessPolicy()).ok


@pytest.mark.parametrize("tactic", [
    'exact hp r"a" -- axiom cheat : False',  # a raw string: nothing is taken for a comment
    'exact hp r#"a"b"# -- theorem x : False',  # (a scanner misreading it could hide code)
    "exact hp \"a -- b\" axiom cheat : False",  # `--` inside a string is no comment
])
def test_literals_cannot_hide_a_command_behind_a_comment(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is not None


@pytest.mark.parametrize("tactic", [
    "exact (fun _ => hp) '\"' -- \" the end",  # a char literal holding a quote, then a comment
    'exact hp "\\"" -- " an example',  # an escaped quote inside a string, then a comment
])
def test_literals_read_right_leave_their_comment_prose(tactic):
    """Literals the lexer reads as Lean does end before the comment: its prose ('the end', 'an example')
    is no command. (Where the lexer could misread a literal, `0'"'` or a raw string, it refuses instead.)"""
    assert SoundnessPolicy().check_tactic(tactic) is None
    assert SoundnessPolicy().check_tactic(tactic.replace("-- ", "")) is not None  # the same words as code


def test_root_names_are_read_as_lean_prints_them():
    assert verify(Answers("'{name}' does not depend on any axioms"), THM, "exact hp", SoundnessPolicy()).ok


# ---------------------------------------------------------------------------- red-team findings (real Lean)
@pytest.mark.parametrize("tactic", [
    # an interpolated string holds terms with literals of their own: `s!"{"--"}"` is one string to
    # Lean, but paired as plain strings its middle reads as a comment that hides what follows
    'have _s : String := s!"{"--"}"; sorry',
    'have _s : String := s!"{"/-"}"\nrun_tac do pure ()',
    # a command right after a name, a numeral or a char literal: Lean's tokenizer splits them
    'exact hp#eval IO.Process.run {}', 'exact hp\nrotate_left 0axiom ax : False',
    "exact hp 1.axiom ax : False", "exact 'a'axiom ax : False",
    # `open ... in` does not take command words for namespaces
    "exact hp open Foo set_option debug.skipKernelTC true in", "exact hp open Foo namespace Bar in",
    # more commands
    'exact hp notation3 "x" => 1', "exact hp unif_hint foo", "exact hp register_option x : Bool := {}",
    # code the proof wrote, compiled and run on the server
    "trace ((IO.Process.run { cmd := \"id\" }).run' ())", "decide (native := true)", "dbg_trace \"x\"",
    "plausible", "slim_check", "exact (unsafeBaseIO (pure 1)).succ_pos", "stop",
])
def test_red_team_escapes_are_rejected(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is not None


@pytest.mark.parametrize("tactic", [
    "rw [Matrix.trace_mul_comm]", "simp [Matrix.trace]", "exact h.stop", "exact ⟨2.5, by norm_num⟩",
    "linarith [h₀ 0, h₁ 1]", "exact h.1.symm", "norm_num [Nat.factorial] at h0 ⊢",
    "set_option maxRecDepth 1000 in omega", "open Nat in simp",
])
def test_names_and_numerals_near_the_new_rules_still_pass(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is None


@pytest.mark.parametrize("stmt", [
    "private axiom propext : False\ntheorem t : False := by sorry",
    "protected axiom propext : False\ntheorem t : False := by sorry",
    "noncomputable axiom propext : False\ntheorem t : False := by sorry",
    "@[simp] axiom propext : False\ntheorem t : False := by sorry",
])
def test_a_statement_cannot_declare_an_axiom_before_its_theorem(stmt):
    from leangym.theorem import TheoremError

    with pytest.raises(TheoremError, match="before its theorem"):
        Theorem(stmt)
    # commands that declare nothing may still come first
    assert Theorem("set_option maxHeartbeats 400000\nopen Real\ntheorem t : True := by sorry").decl_name == "t"


@pytest.mark.parametrize("header", ["axiom propext : False", "namespace Classical\naxiom choice (p : Prop) : p\nend Classical",
                                    "axiom Quot.sound : False"])
def test_lean_s_own_axioms_cannot_be_declared_again(header):
    """A header may not declare an axiom at all (the allow-list); and the simulator knows Lean's three axioms
    exist: an axiom of the same name is a redeclaration (else it would pass the allowed-axiom list)."""
    from leangym.theorem import TheoremError

    with pytest.raises(TheoremError, match="holds 'axiom', which a header may not hold"):
        Theorem("theorem t (p : Prop) : p := by sorry", header=header)
    assert LocalProcess().run_command(header + "\ntheorem t (p : Prop) : p := sorry").errors


# ---------------------------------------------------------------------------- red-team, second round
@pytest.mark.parametrize("tactic", [
    # a comment opener glued to the token before it may be no comment: `<--x` is `<-` then `-x`
    'first | rw [<--x] | run_tac do IO.println "pwned"', 'exact hp <-- #eval IO.println "pwned"',
    'have _h : {n : Int //-n = -n} := ⟨0, rfl⟩\nnative_decide',
    # numerals of every kind end before a keyword
    'exact hp 0b1axiom cheat : False', 'exact hp 0o7axiom cheat : False',
    'exact hp 0x1instance : Inhabited Nat := ⟨0⟩', 'exact hp 0xfinstance : Inhabited Nat := ⟨0⟩',
    'exact hp 2.5axiom cheat : False', 'exact (fun _ => hp) 1e5axiom cheat : False', 'exact hp 1e5end',
    'exact hp 2.5def x := 1', 'exact hp 0b1set_option debug.skipKernelTC true',
    "exact (fun _ => hp) 0'a'axiom cheat : False", 'exact hp 1_000axiom cheat : False',
    # characters Python counts as letters and Lean does not put in names
    'exact (fun _ => hp) (∅ : Set ℕ)ᶜaxiom cheat : False', 'exact hp λelab "pwn" : command => do pure ()',
    'exact hp аdef x := 1', 'exact hp open Fooλaxiom in skip', 'exact hp (x)ᶜend',
])
def test_second_round_escapes_are_rejected(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is not None


@pytest.mark.parametrize("tactic", [
    "rw [← h]", "rw [←h]", "exact hdef", "exact «axiom»", "field_simp [h₁.ne']", "exact ⟨0x10, rfl⟩",
    "simp only [Finset.sum_range_succ] -- expand the sum (by definition)", "intro x hx\n-- the open case\nexact hx",
    "exact h.end_pos", "exact Nat.theorem_x", "nlinarith [sq_nonneg (x - 1), sq_abs x]",
])
def test_ordinary_proofs_pass_the_second_round_rules(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is None


# ---------------------------------------------------------------------------- red-team, third round
@pytest.mark.parametrize("tactic", [
    # after a numeral Lean reads a char literal (`0'"'`): a scanner pairing quotes otherwise blanked code
    'exact (fun _ _ _ => hp) 0\'"\' "a -- " #eval IO.FS.writeFile "/tmp/pwned" "x"',
    'exact (fun _ _ _ => hp) 2.5\'"\' "a -- " axiom cheat : False',
    'exact (fun _ _ _ => hp) 0\'«\' "» -- " #eval 1', 'exact (fun _ _ => hp) 0r"\\" "a -- " #eval 1',
    'exact (fun _ _ => hp) !\'"\' "a -- " #eval 1', 'exact (fun _ _ _ h => h) 0\'"\' "a -- " sorry',
    # command words: `?` ends no name, longer real commands, a subscript older Lean does not know
    "exact hp variable? x", "exact hp dsimproc_decl x", "exact hp register_builtin_option x",
    "exact hp mk_iff_of_inductive_prop x", "exact hp gen_injective_theorems% Foo", "exact hp xⱼaxiom cheat : False",
    # a term an elaborator evaluates may not do IO
    "simp (config := (IO.FS.writeFile \"x\" \"y\").run' ())",
])
def test_third_round_escapes_are_rejected(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is not None


@pytest.mark.parametrize("tactic", ["exact h!", "exact foo?", "simp (config := {decide := true})",
                                    "norm_num [Nat.Prime] -- the end", "exact h.variable_x"])
def test_ordinary_proofs_pass_the_third_round_rules(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is None


# ---------------------------------------------------------------------------- red-team, fourth round
@pytest.mark.parametrize("tactic", [
    # a broken char literal: Lean reports it past the next character and its recovery reads on
    "exact hp ' -- axiom cheat : False", "exact hp ' -- #eval IO.Process.exit 3",
    "exact hp ' /-\n#eval IO.Process.exit 3\n-/", "constructor\n· exact hp\n· exact hq ' -- theorem x : False",
    "exact hp 0' -- axiom x : False",
])
def test_fourth_round_escapes_are_rejected(tactic):
    assert SoundnessPolicy().check_script(tactic) is not None


def test_a_quote_that_ends_a_name_keeps_comments_blanked():
    for tactic in ("exact h' -- by the theorem", "exact h₁' -- by the theorem", "field_simp [hx'] -- the end"):
        assert SoundnessPolicy().check_tactic(tactic) is None


# ---------------------------------------------------------------------------- red-team, fifth round: statements
@pytest.mark.parametrize("stmt", [
    # Lean reads `open Nat in axiom bad : False` as a command of its own, then `in theorem ...`
    "open Nat in axiom bad : False in theorem t : 1 = 2 := by sorry",
    "open Nat in def helper : Nat := 1 in theorem t : helper = 1 := by sorry",
    "open Nat in @[simp] def h : Nat := 1 in theorem t : h = 1 := by sorry",
    "open Nat in #eval 1 in theorem t : True := by sorry",
    # an option that switches the final check off
    "set_option debug.skipKernelTC true in theorem t : True := by sorry",
    "open Nat in set_option debug.skipKernelTC true in theorem t : True := by sorry",
    "set_option debug.skipKernelTC true\ntheorem t : True := by sorry",
])
def test_a_statement_cannot_smuggle_a_command_or_a_debug_option(stmt):
    from leangym.theorem import TheoremError

    with pytest.raises(TheoremError):
        Theorem(stmt)


@pytest.mark.parametrize("stmt", ["open Nat Real in theorem t : True := by sorry",
                                  "open scoped BigOperators in theorem t : True := by sorry",
                                  "set_option maxHeartbeats 400000 in\ntheorem t : True := by sorry"])
def test_ordinary_statement_prefixes_still_load(stmt):
    assert Theorem(stmt).decl_name == "t"


@pytest.mark.parametrize("header", ["", "namespace X"])
def test_a_root_theorem_passes_the_final_check(header):
    """Lean declares and prints `_root_.t` as `t`: the check must look for that answer (and the
    simulator prints it as Lean does, so this runs the real path)."""
    thm = Theorem("theorem _root_.t (p : Prop) (hp : p) : p := by sorry", header=header)
    check = verify(LocalProcess(), thm, "exact hp", SoundnessPolicy())
    assert check.ok and check.axioms == (), check.error
