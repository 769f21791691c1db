"""Session, env and reply-parsing behaviour pinned one rule at a time (a mutation audit found each of these
could change with no test failing): budgets, what marks a process as touched, lease churn after a failure,
Gymnasium's terminated/truncated, sorry detection from either signal, malformed server replies."""
from __future__ import annotations

import time

import pytest

from leangym.backends.types import (Outcome, ServerError, ServerTimeout, TacticResult, parse_command, parse_start,
                                    parse_tactic_reply)
from leangym.envs.lean_proof import LeanProofEnv
from leangym.session import Budget, BudgetExhausted, ProofSession, RawAccessRefused
from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem

NO_LISTS = SoundnessPolicy(banned=(), lemma_search=(), reject_commands=False)  # the structure alone

AND = "theorem t_and (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
ONE = "theorem t (p : Prop) (hp : p) : p := by sorry"
HELPER = Theorem("theorem uses (q : Prop) (hq : q) : q := by sorry",
                 header="theorem helper (p : Prop) (hp : p) : p := by\n  exact hp\n")


# ---------------------------------------------------------------------------- the session
def test_a_spent_time_budget_stops_tactics_checks_and_commands():
    s = ProofSession(LocalProcess(), AND, budget=Budget(max_seconds=0.01))
    time.sleep(0.05)
    for call in (lambda: s.apply(s.root, "constructor"), lambda: s.verify("constructor\n· exact hp\n· exact hq"),
                 lambda: s.process.apply_tactic(s.root, "constructor")):
        with pytest.raises(BudgetExhausted, match="time budget"):
            call()
    assert s.stats.lean_calls == 0


def test_a_proof_start_or_command_through_the_gate_is_refused_and_costs_nothing():
    s = ProofSession(LocalProcess(), AND, budget=Budget(max_lean_calls=5))
    with pytest.raises(RawAccessRefused, match="tactics only"):
        s.process.start_proof(Theorem(AND).start_source())
    with pytest.raises(RawAccessRefused, match="tactics only"):
        s.process.run_command("example : True := trivial")
    assert s.stats.lean_calls == 0


def test_a_lemma_declared_through_the_meter_cannot_be_cited_by_the_sessions_own_check():
    """A proof start runs its whole source: after one, the process is not the session's any more, and its
    check must not retry without the header (the proof would cite what the prover declared)."""
    s = ProofSession(LocalProcess(), HELPER, allow_raw=True)
    s.raw_process().start_proof("theorem mine (p : Prop) (hp : p) : p := hp\ntheorem x : True := by sorry")
    v = s.verify("exact mine q hq")
    assert not v.ok and "raw_process() was used" in v.error and not v.isolated
    assert not verify(LocalProcess(), HELPER, "exact mine q hq", SoundnessPolicy()).ok


def test_a_server_failure_of_the_sessions_check_is_not_retried_as_a_second_command():
    class FlakyOnce(LocalProcess):
        commands = 0

        def run_command(self, source):
            FlakyOnce.commands += 1
            if FlakyOnce.commands == 1:
                raise ServerError("HTTP 503")
            return super().run_command(source)

    v = ProofSession(FlakyOnce(), HELPER).verify("exact helper q hq")
    assert v.server_failure and not v.ok and FlakyOnce.commands == 1


def test_a_session_s_own_check_retries_without_the_header_only_on_an_untouched_process():
    thm = Theorem("theorem uses (q : Prop) (hq : q) : q := by sorry",
                  header="theorem helper (p : Prop) (hp : p) : p := by\n  exact hp\n")
    s = ProofSession(LocalProcess(), thm, allow_raw=True)
    assert s.verify("exact helper q hq").ok
    s.raw_process().run_command("theorem other : True := trivial")  # a command could have declared what helper means
    v = s.verify("exact helper q hq")
    assert not v.ok and "raw_process() was used" in v.error


def test_a_session_s_own_check_reruns_only_the_headers_open_and_set_option_lines():
    """The check after a proof start (the session's, or verify's own tactic-mode start) keeps the header's
    top-level `open`/`set_option` lines (a REPL may not carry them between commands); closed namespace and
    section blocks are dropped (the statement comes after them); a header that leaves a namespace open gets
    no re-run at all: its check runs with the whole header on a second clean process (`spare`), or fails."""
    opens = Theorem("theorem uses (q : Prop) (hq : q) : q := by sorry",
                    header="open Nat\nset_option maxHeartbeats 400000\ntheorem helper (p : Prop) (hp : p) : p := hp\n")
    assert opens.repeatable_preamble == "open Nat\nset_option maxHeartbeats 400000\n"
    assert ProofSession(LocalProcess(), opens).verify("exact helper q hq").ok
    closed = Theorem("theorem uses (q : Prop) (hq : q) : q := by sorry",
                     header="open Nat\nnamespace Foo\nopen Real\ntheorem helper (p : Prop) (hp : p) : p := hp\nend Foo\n")
    assert closed.repeatable_preamble == "open Nat\n"
    assert ProofSession(LocalProcess(), closed).verify("exact Foo.helper q hq").ok
    assert verify(LocalProcess(), closed, "exact Foo.helper q hq", SoundnessPolicy()).ok  # on a clean process
    left_open = Theorem("theorem uses (q : Prop) (hq : q) : q := by sorry",
                        header="namespace Foo\ntheorem helper (p : Prop) (hp : p) : p := hp\n")
    assert left_open.repeatable_preamble is None
    v = ProofSession(LocalProcess(), left_open).verify("exact Foo.helper q hq")
    assert not v.ok and "cannot be declared again" in v.error
    assert not verify(LocalProcess(), left_open, "exact Foo.helper q hq", SoundnessPolicy()).ok
    spares: list[LocalProcess] = []
    assert verify(LocalProcess(), left_open, "exact Foo.helper q hq", SoundnessPolicy(),
                  spare=lambda: spares.append(LocalProcess()) or spares[-1]).ok
    assert len(spares) == 1 and spares[0]._closed  # the second clean process, given back
    assert not verify(LocalProcess(), left_open, "exact hq\nfuture_cmd x", NO_LISTS, spare=LocalProcess).ok


# ---------------------------------------------------------------------------- the env's leases
class Failing(LocalProcess):
    """'boom' is a server failure; 'hang' a hang after which the process answers no proof start."""

    hung = False

    def apply_tactic(self, state, tactic, timeout_ms=1000):
        if tactic in ("boom", "hang"):
            self.hung = tactic == "hang"
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), "read timed out",
                                cause="ServerTimeout" if self.hung else None)
        return super().apply_tactic(state, tactic, timeout_ms)

    def start_proof(self, source):
        if self.hung:
            raise ServerTimeout("the Lean process does not answer")
        return super().start_proof(source)


def counting(cls):
    made = []

    def factory():
        made.append(cls())
        return made[-1]
    return factory, made


def test_one_server_failure_costs_one_new_lease_not_one_per_episode():
    factory, made = counting(Failing)
    env = LeanProofEnv(ONE, process_factory=factory)
    env.reset(seed=0)
    assert env.step("boom")[4]["outcome"] == "server_failure"
    for i in range(4):
        env.reset(seed=i)
        assert env.step("exact nothing")[4]["outcome"] == "rejected"  # (a proof's check takes a fresh lease)
    assert len(made) == 2


@pytest.mark.parametrize("where", ["step", "final check"])
def test_a_hung_lease_is_not_used_again_by_the_next_reset(where):
    """A vector env's autoreset must not raise ServerTimeout because the env kept a lease that hung."""
    class HangsAtCheck(Failing):
        def run_command(self, source):
            self.hung = True
            raise ServerTimeout("read timed out")

    factory, made = counting(Failing if where == "step" else HangsAtCheck)
    env = LeanProofEnv(ONE, process_factory=factory)
    env.reset(seed=0)
    assert env.step("hang" if where == "step" else "exact hp")[4]["outcome"] == "server_failure"
    env.reset(seed=1)
    assert len(made) == (2 if where == "step" else 3)  # (the final check ran on a fresh lease, which hung)


def test_a_proof_on_the_last_allowed_step_is_terminated_not_truncated():
    env = LeanProofEnv(ONE, process_factory=LocalProcess, max_steps=2)
    env.reset(seed=0)
    env.step("intro_nonsense")
    _, reward, terminated, truncated, info = env.step("exact hp")
    assert (reward, terminated, truncated) == (1.0, True, False) and "truncated_by" not in info


def test_info_holds_the_tactic_as_sent():
    env = LeanProofEnv(ONE, process_factory=LocalProcess)
    env.reset(seed=0)
    assert env.step("\n    exact hp")[4]["tactic"] == "exact hp"


def test_every_final_check_runs_on_a_fresh_lease_which_then_serves_the_next_episode():
    factory, made = counting(LocalProcess)
    env = LeanProofEnv(ONE, process_factory=factory, episodes_per_lease=2)
    env.reset(seed=0)
    assert env.step("exact hp")[1] == 1.0 and len(made) == 2  # the check moved to a fresh lease
    for i in range(2):
        env.reset(seed=i + 1)
        assert len(made) == 2 + i  # the episode starts on the lease of the last check
        env.step("exact hp")
    assert len(made) == 4


def test_the_episode_s_session_stays_after_a_check_on_a_clean_lease():
    env = LeanProofEnv(HELPER, process_factory=LocalProcess)
    env.reset(seed=0)
    assert env.step("exact helper q hq")[1] == 1.0 and env.session is not None
    with pytest.raises(RuntimeError, match="the episode is over"):
        env.step("exact hq")


# ---------------------------------------------------------------------------- replies
@pytest.mark.parametrize("reply", [
    {"env": 1, "messages": [{"severity": "warning", "pos": {"line": 1, "column": 8}, "data": "declaration uses 'sorry'"}]},
    {"env": 1, "sorries": [{"pos": {"line": 2, "column": 2}, "goal": "⊢ False"}]},
])
def test_either_sorry_signal_alone_fails_a_check(reply):
    """Lean's REPL may report one without the other; with check_axioms=False it is the only guard."""
    result = parse_command(reply)
    assert result.uses_sorry

    class Answers:  # tactic mode says the proof closed every goal: only the command's answer can refuse it
        process_id, commands = 0, 0

        def start_proof(self, source):
            return parse_start(0, {"value": {"proof_state_id": 0, "goals": [{"type": "False", "hypotheses": []}]}})

        def apply_tactic(self, state, tactic, timeout_ms=1000):
            return TacticResult(tactic, Outcome.PROVED)

        def run_command(self, source):
            self.commands += 1
            return result

    process = Answers()
    assert not verify(process, Theorem("theorem f : False := by sorry"), "exact foo",
                      SoundnessPolicy(check_axioms=False)).ok
    assert process.commands == 1


@pytest.mark.parametrize("payload", [
    {"value": [{"proof_state_id": 1, "goals": [{"hypotheses": []}]}]},
    {"value": [{"proof_state_id": 1, "goals": ["⊢ p"]}]},
    {"value": [{"proof_state_id": 1, "goals": [{"type": "p", "hypotheses": 5}]}]},
    {"value": [{"proof_state_id": 1, "goals": [{"type": "p", "hypotheses": ["hp : p"]}]}]},
    {"value": ""}, {"value": {}}, [], None,
])
def test_a_malformed_tactic_reply_is_a_server_failure_never_a_proof(payload):
    assert parse_tactic_reply(0, "t", payload).outcome is Outcome.SERVER_FAILURE


@pytest.mark.parametrize("payload", [{"val": 1}, {"env": 1, "messages": 5}, {"env": 1, "sorries": 5}])
def test_a_malformed_start_or_command_reply_is_a_server_error(payload):
    with pytest.raises(ServerError):
        (parse_start(0, payload) if "val" in payload else parse_command(payload))


def test_a_boolean_is_no_line_number():
    assert parse_command({"env": 0, "messages": [{"severity": "info", "pos": {"line": True}, "data": "x"}]}) \
        .messages[0].line is None
