"""Issue 24, the command path: no proof text reaches Lean's command level unless that same text, whole, first
closed every goal in Lean's tactic mode (``try_apply_tactic`` of the whole script on the theorem's start state,
on the process of the check). Tactic mode must consume the whole text and has no command-level recovery, so a
command word no list knows cannot run. With every word list switched off, such a proof never reaches a
``/command`` through any entry point (soundness.verify, session.verify, the env, the harness's check and
recheck, the trainer's verify, the HTTP server of both simulated generations); a correct proof still passes,
and its command comes only after its tactic-mode pass."""
from __future__ import annotations

from pathlib import Path

import pytest

from leangym.backends.types import Outcome, TacticResult
from leangym.envs.lean_proof import LeanProofEnv
from leangym.session import VERIFY_CALLS, Budget, ProofSession
from leangym.sim.local import LocalProcess
from leangym.sim.process import SimProcess
from leangym.soundness import GATE_TIMEOUT_MS, SoundnessPolicy, verify
from leangym.theorem import Theorem

ONE = "theorem t (p : Prop) (hp : p) : p := by sorry"
NO_LISTS = SoundnessPolicy(banned=(), lemma_search=(), reject_commands=False)  # the structure alone
# a finished proof, then command words no list is assumed to know (the lists are off): each balances its
# brackets, so the first layer passes it; only tactic mode stands between it and Lean's command loop
UNLISTED = ["exact hp\nfuture_command (fun _ => pure ())", "exact hp\nset_premise_selector (fun _ _ => pure #[])",
            "exact hp\n#eval IO.println 1", "exact hp\naxiom cheat : False", "exact hp\nend\naxiom cheat : False",
            "exact hp\n@[simp] theorem x : True := trivial", "exact hp\nexample : True := trivial"]


class Recording(LocalProcess):
    """The simulator, recording what reaches it: ``("start" | "tactic" | "command", text)``."""

    def __init__(self, factorized: bool = False):
        super().__init__(factorized=factorized)
        self.sent: list[tuple[str, str]] = []

    def start_proof(self, source):
        self.sent.append(("start", source))
        return super().start_proof(source)

    def apply_tactic(self, state, tactic, timeout_ms=1000):
        self.sent.append(("tactic", tactic))
        return super().apply_tactic(state, tactic, timeout_ms)

    def run_command(self, source):
        self.sent.append(("command", source))
        return super().run_command(source)

    def commands(self) -> list[str]:
        return [text for kind, text in self.sent if kind == "command"]


def _gated_then_sent(process: Recording, script: str) -> None:
    """The control: ``script`` went whole through tactic mode, then (once) through the command path."""
    kinds = [kind for kind, _ in process.sent]
    assert ("tactic", script) in process.sent and len(process.commands()) == 1
    assert kinds.index("command") > process.sent.index(("tactic", script))
    assert script.splitlines()[0] in process.commands()[0]


def test_the_lists_are_off():
    assert all(NO_LISTS.check_script(s) is None for s in UNLISTED)


@pytest.mark.parametrize("factorized", [False, True])
@pytest.mark.parametrize("script", UNLISTED)
def test_verify_sends_no_command_for_an_unlisted_command_word(script, factorized):
    process = Recording(factorized)
    v = verify(process, Theorem(ONE), script, NO_LISTS)
    assert not v.ok and not v.server_failure and "tactic mode" in v.error
    assert process.commands() == [] and ("tactic", script) in process.sent


@pytest.mark.parametrize("factorized", [False, True])
def test_a_correct_proof_passes_after_its_tactic_mode_pass(factorized):
    process = Recording(factorized)
    script = "constructor\n· exact hp\n· exact hq"
    thm = Theorem("theorem t2 (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry")
    assert verify(process, thm, script, NO_LISTS).ok
    _gated_then_sent(process, script)


@pytest.mark.parametrize("script", UNLISTED[:4])
def test_session_verify_sends_no_command_and_is_charged(script):
    process = Recording()
    s = ProofSession(process, ONE, policy=NO_LISTS, budget=Budget(max_lean_calls=10))
    v = s.verify(script)
    assert not v.ok and "tactic mode" in v.error and process.commands() == []
    assert s.stats.lean_calls == VERIFY_CALLS  # the tactic-mode pass is charged as the check is
    assert s.verify("exact hp").ok and s.stats.lean_calls == 2 * VERIFY_CALLS
    _gated_then_sent(process, "exact hp")


class Lenient(Recording):
    """A backend whose *steps* (the per-tactic time limit) took the whole glued text as one tactic: the env's
    final check must still refuse it, on its own tactic-mode pass, before any command."""

    def apply_tactic(self, state, tactic, timeout_ms=1000):
        if timeout_ms != GATE_TIMEOUT_MS and tactic in UNLISTED:
            self.sent.append(("tactic", tactic))
            return TacticResult(tactic, Outcome.PROVED)
        return super().apply_tactic(state, tactic, timeout_ms)


@pytest.mark.parametrize("factorized", [False, True])
@pytest.mark.parametrize("script", UNLISTED[:4])
def test_the_env_s_final_check_sends_no_command_and_pays_nothing(script, factorized):
    made: list[Lenient] = []
    env = LeanProofEnv(ONE, process_factory=lambda: made.append(Lenient(factorized)) or made[-1], policy=NO_LISTS)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(script)
    assert reward == 0.0 and terminated and info["outcome"] == "check_failed" and "tactic mode" in info["error"]
    assert all(p.commands() == [] for p in made) and len(made) == 2  # the check ran on a fresh lease
    env.reset(seed=1)
    assert env.step("exact hp")[1] == 1.0  # the control
    _gated_then_sent(made[-1], "exact hp")
    env.close()


def test_the_harness_check_and_recheck_send_no_command():
    from leangym.harness.recheck import recheck
    from leangym.harness.records import AttemptResult, ResultSet, statement_hash
    from leangym.harness.run import _check

    thm, made = Theorem(ONE), []
    for script in UNLISTED[:4]:
        result = AttemptResult("t", 0, "t", "failed")
        _check(thm, NO_LISTS, Recording(), script, result, lambda: made.append(Recording()) or made[-1])
        assert result.status == "failed" and "tactic mode" in result.verify_error
    forged = [AttemptResult("t", i, "t", "proved", proof=p, statement_hash=statement_hash(thm))
              for i, p in enumerate(["exact hp", *UNLISTED])]
    rs = ResultSet(Path("results.jsonl"), {}, {(r.theorem, r.attempt): r for r in forged})
    out = recheck(rs, {"t": thm}, lambda: made.append(Recording()) or made[-1], NO_LISTS)
    assert [r.proof for r in out.held] == ["exact hp"] and len(out.failed) == len(UNLISTED)
    sent = [p for p in made if p.commands()]
    assert len(sent) == 1  # only the correct proof's process saw a command
    _gated_then_sent(sent[0], "exact hp")


def test_the_trainer_s_verify_sends_no_command():
    from agents.alphaproof.search import SearchConfig, _Search

    process = Recording()
    session = ProofSession(process, ONE, policy=NO_LISTS, budget=Budget(max_lean_calls=40))
    search = _Search(session, SearchConfig(num_simulations=1), None)
    for script in UNLISTED:
        ok, error = search._verify(script)
        assert not ok and "tactic mode" in error
    assert process.commands() == []
    assert search._verify("exact hp") == (True, None)
    _gated_then_sent(process, "exact hp")


class RecordingSim(SimProcess):
    """A simulated server's process that records every ``/command`` it runs (server side, over HTTP)."""

    commands: list[str] = []  # shared by the pool: what the whole server ran as commands

    def command(self, source):
        RecordingSim.commands.append(source)
        return super().command(source)


@pytest.mark.parametrize("factorized", [False, True])
def test_over_http_no_command_reaches_the_server(sim_server, factorized):
    from leangym.backends.leantree import LeanTreeClient

    RecordingSim.commands = []
    srv = sim_server(factorized=factorized, max_processes=2, process_factory=lambda f: RecordingSim(factorized=f))
    client = LeanTreeClient(srv.url, read_timeout=10)
    try:
        for script in UNLISTED[:3]:
            process = client.lease(timeout=10)
            try:
                v = verify(process, Theorem(ONE), script, NO_LISTS)
            finally:
                process.close()
            assert not v.ok and "tactic mode" in v.error
        assert RecordingSim.commands == []
        process = client.lease(timeout=10)
        try:
            assert verify(process, Theorem(ONE), "exact hp", NO_LISTS).ok
        finally:
            process.close()
        assert len(RecordingSim.commands) == 1 and "exact hp" in RecordingSim.commands[0]
    finally:
        client.close()


@pytest.mark.parametrize("factorized", [False, True])
@pytest.mark.parametrize("script, ok", [
    ("constructor\n· exact hp\n· exact hq", True), ("constructor\nexact hp\nexact hq", True),
    ("constructor <;> assumption", True), ("constructor; exact hp; exact hq", True),
    ("constructor\n· exact hp", False),  # a goal left open: not proved
    ("constructor\n· exact hp\n· exact hq\naxiom c : False", False), ("exact ⟨hp, hq⟩\n#eval 1", False),
    ("exact ⟨hp, hq⟩\nend", False), ("exact ⟨hp, hq⟩\nnamespace X", False),
])
def test_the_simulator_runs_a_whole_script_as_one_tactic_block(script, ok, factorized):
    """As Lean's tactic mode: a tactic sequence (lines, bullets, `;`, `<;>`); a command keyword is a parse error."""
    p = LocalProcess(factorized=factorized)
    thm = Theorem("theorem t2 (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry")
    result = p.apply_tactic(p.start_proof(thm.start_source()), script, GATE_TIMEOUT_MS)
    assert (result.outcome is Outcome.PROVED) == ok
    if not ok and "\n" in script and script.split("\n")[-1].split()[0] in ("axiom", "#eval", "end", "namespace"):
        assert result.outcome is Outcome.REJECTED and "unexpected token" in result.error
