"""The final proof check cannot be talked into accepting a proof (leangym.soundness.verify)."""
from __future__ import annotations

import pytest

from leangym.backends.types import CommandResult, ReplMessage
from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem

THM = Theorem("theorem t (p : Prop) (hp : p) : p := by sorry")


class Forging(LocalProcess):
    """The simulator, plus messages a proof could print itself (e.g. with `trace`)."""

    def __init__(self, extra: list[ReplMessage], axioms_reply: str | None = None):
        super().__init__()
        self.extra, self.axioms_reply = extra, axioms_reply

    def run_command(self, source: str) -> CommandResult:
        real = super().run_command(source)
        msgs = list(real.messages)
        if self.axioms_reply is not None:  # what Lean would say about a proof using a bad axiom
            msgs = [m for m in msgs if "axioms" not in m.text]
            msgs.append(ReplMessage("info", self.axioms_reply, real.messages[-1].line, 0))
        return CommandResult(tuple(self.extra) + tuple(msgs), real.sorries, real.env)


def test_a_clean_proof_passes():
    check = verify(LocalProcess(), THM, "exact hp", SoundnessPolicy())
    assert check.ok and check.axioms == ()


def test_a_forged_axioms_message_does_not_hide_a_bad_axiom():
    forged = ReplMessage("info", "'t' does not depend on any axioms", 2, 2)  # printed by the proof itself
    process = Forging([forged], axioms_reply="'t' depends on axioms: [Lean.ofReduceBool]")
    check = verify(process, THM, "exact hp", SoundnessPolicy())
    assert not check.ok and "Lean.ofReduceBool" in check.error


def test_a_second_answer_on_the_print_line_is_a_forgery():
    # Meta code can log at any position; two answers on the `#print axioms` line mean one is forged.
    process = Forging([], axioms_reply="'t' depends on axioms: [Lean.ofReduceBool]")
    real_line = LocalProcess().run_command(THM.source_with_proof("exact hp") + "\n#print axioms t\n").messages[-1].line
    process.extra = [ReplMessage("info", "'t' does not depend on any axioms", real_line, 0)]
    check = verify(process, THM, "exact hp", SoundnessPolicy())
    assert not check.ok and "exactly one" in check.error


def test_no_answer_from_print_axioms_is_a_failure():
    class Silent(LocalProcess):
        def run_command(self, source):
            real = super().run_command(source)
            return CommandResult(tuple(m for m in real.messages if "axioms" not in m.text), real.sorries, real.env)

    check = verify(Silent(), THM, "exact hp", SoundnessPolicy())
    assert not check.ok and "#print axioms" in check.error


@pytest.mark.parametrize("tactic", ["sorry", "exact sorry", "admit", "native_decide", "exact?", "apply? ",
                                    "exact hp\ntheorem x : False := by trivial", "exact hp\n  axiom a : False",
                                    "#exit", "exact hp #exit", "set_option maxHeartbeats 0 in exact hp",
                                    "@[simp] theorem x : True := trivial", "exact hp\nend",
                                    "run_tac Lean.Elab.admitGoal (← Lean.Elab.Tactic.getMainGoal)"])
def test_banned_tactics_never_reach_lean(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is not None
    assert not verify(LocalProcess(), THM, tactic, SoundnessPolicy()).ok


@pytest.mark.parametrize("tactic", ["exact hp", "intro h", "rcases h with ⟨a, b⟩", "exact h.endpoint",
                                    "exact sorry_free", "norm_num [foo]"])
def test_ordinary_tactics_pass_the_policy(tactic):
    assert SoundnessPolicy().check_tactic(tactic) is None
