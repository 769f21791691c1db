"""Issue 24, one gate: every path that sends text to Lean passes the same policy, is charged, and only a
check on a process nothing earlier touched pays a reward or says "proved". Each class of attack is tried
through each entry point: the env (step, env.process), the session (apply, apply_many, session.process,
verify), the harness (run_attempt, the CLI with a malicious dataset row, recheck) and the trainer's verify."""
from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

from leangym.backends.types import Outcome
from leangym.envs.lean_proof import LeanProofEnv
from leangym.session import VERIFY_CALLS, Budget, ProofSession, RawAccessRefused, process_record
from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem, TheoremError

ONE = "theorem t (p : Prop) (hp : p) : p := by sorry"

# a finished proof with a command glued after it: known words, and words no list may ever know
GLUED = ["exact hp\nset_premise_selector (fun _ _ => pure #[])", "exact hp\nlrat_proof foo", "exact hp reprove t",
         "exact hp\ninit_grind_norm", "exact hp\nassert_no_sorry t", "exact hp\nname_poly_vars X", "exact hp\ndeprecate to x",
         "exact hp\n#eval IO.println 1", "exact hp\naxiom cheat : False",
         # an unknown command word cannot leave the bracket: it closes nothing (`)` unbalanced)
         "exact hp)\nsome_future_command (fun _ => pure ())\nexample : True := (trivial",
         "exact hp\n) future_cmd x (", "(exact hp))\nfuture_cmd\n((", "exact hp -- )\n)\nfuture_cmd"]
# the escape hatches and the environment searches
BANNED = ["sorry", "native_decide", "exact?", "apply?", "hint", "observe h : 1 + 1 = 2", "rw?", "rw_search",
          "library_search", "run_tac pure ()", "decide +native", "simp (config := f ())"]
ATTACKS = GLUED + BANNED


@pytest.mark.parametrize("script", ATTACKS)
def test_every_attack_is_refused_by_the_policy(script):
    assert SoundnessPolicy().check_script(script) is not None


@pytest.mark.parametrize("script", ATTACKS)
def test_the_env_step_refuses_and_never_rewards(script):
    env = LeanProofEnv(ONE, process_factory=LocalProcess)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(script)
    assert reward == 0.0 and info["outcome"] == "rejected" and not terminated
    assert env.session.stats.lean_calls == 0 and env.session.stats.policy_rejected == 1
    env.close()


@pytest.mark.parametrize("route", ["apply", "apply_many", "session.process", "env.process"])
@pytest.mark.parametrize("script", ATTACKS[:6] + BANNED[:4])
def test_every_tactic_route_passes_the_gate(route, script):
    env = LeanProofEnv(ONE, process_factory=LocalProcess)
    env.reset(seed=0)
    s = env.session
    send = {"apply": lambda: s.apply(s.root, script), "apply_many": lambda: s.apply_many(s.root, [script])[0],
            "session.process": lambda: s.process.apply_tactic(s.root, script),
            "env.process": lambda: env.process.apply_tactic(s.root, script)}[route]
    assert send().outcome is Outcome.REJECTED and s.stats.lean_calls == 0


@pytest.mark.parametrize("script", ATTACKS)
def test_session_verify_refuses_and_is_charged(script):
    s = ProofSession(LocalProcess(), ONE, budget=Budget(max_lean_calls=5))
    v = s.verify(script)
    assert not v.ok and v.error and s.stats.lean_calls == VERIFY_CALLS  # charged as a check is


@pytest.mark.parametrize("route", ["session.process", "env.process", "an earlier episode's session"])
@pytest.mark.parametrize("call", ["run_command", "start_proof"])
def test_commands_do_not_pass_the_gate_by_any_route(route, call):
    env = LeanProofEnv(ONE, process_factory=LocalProcess)
    env.reset(seed=0)
    kept = env.session
    env.reset(seed=1)
    process = {"session.process": env.session.process, "env.process": env.process,
               "an earlier episode's session": kept.process}[route]
    with pytest.raises(RawAccessRefused):
        getattr(process, call)("#eval IO.FS.writeFile \"/tmp/x\" \"\"")
    assert env.session.stats.lean_calls == 0


def test_raw_access_is_an_opt_in_that_makes_the_episode_unrewardable():
    made = []
    env = LeanProofEnv(ONE, process_factory=lambda: made.append(LocalProcess()) or made[-1])
    env.reset(seed=0)
    with pytest.raises(RawAccessRefused, match="allow_raw_process=True"):
        env.raw_process()
    env.close()
    env = LeanProofEnv(ONE, process_factory=lambda: made.append(LocalProcess()) or made[-1], allow_raw_process=True)
    env.reset(seed=0)
    raw = env.raw_process()
    assert not raw.run_command("theorem helper (q : Prop) (h : q) : q := h").errors
    _, reward, terminated, _, info = env.step("exact hp")
    assert reward == 0.0 and terminated and info["outcome"] == "check_failed" and "raw_process()" in info["error"]
    assert process_record(raw).raw
    n = len(made)
    env.reset(seed=1)  # that lease goes back; the next episode starts on a fresh one
    assert len(made) == n + 1 and env.step("exact hp")[1] == 1.0
    env.close()


def test_the_env_s_final_check_runs_on_a_fresh_lease_every_time():
    """Isolation: the check's process ran nothing before it (no earlier episode, check or header)."""
    class Recording(LocalProcess):
        def __init__(self):
            super().__init__()
            self.sent = []

        def start_proof(self, source):
            self.sent.append(("start", source))
            return super().start_proof(source)

        def run_command(self, source):
            self.sent.append(("command", source))
            return super().run_command(source)

    made: list[Recording] = []
    env = LeanProofEnv(ONE, process_factory=lambda: made.append(Recording()) or made[-1])
    for i in range(3):
        env.reset(seed=i)
        assert env.step("exact hp")[1] == 1.0
    checks = [(p, k) for p in made for k, (kind, _) in enumerate(p.sent) if kind == "command"]
    # each check's process ran nothing before it but the check's own tactic-mode pass (its proof start)
    assert len(checks) == 3 and all(k == 1 and p.sent[0][0] == "start" for p, k in checks)
    env.close()


def test_lemma_search_is_banned_and_harmless_through_isolation():
    """A name an earlier session declared (its header's lemma) is on a kept process, where a search would
    find it; the session's own verdict says it is not isolated, and a fresh process does not know it."""
    process = LocalProcess()
    first = ProofSession(process, Theorem("theorem a (q : Prop) (hq : q) : q := by sorry",
                                          header="theorem helper (q : Prop) (hq : q) : q := hq\n"))
    assert first.verify("exact helper q hq").isolated
    second = ProofSession(process, ONE)
    assert second.apply(second.root, "exact helper p hp").outcome is Outcome.PROVED  # found on this process
    v = second.verify("exact helper p hp")
    assert not v.isolated  # not a verdict a reward may rest on
    assert not verify(LocalProcess(), Theorem(ONE), "exact helper p hp", SoundnessPolicy()).ok  # fresh: unknown
    for search in ("exact?", "apply?", "hint", "observe h : p", "rw?", "rw_search", "library_search"):
        why = second.apply(second.root, search).error
        assert "searches the environment" in why, why


# ---------------------------------------------------------------------------- headers (dataset rows)
@pytest.mark.parametrize("header, word", [
    ("variable (h : False)\ninclude h", "variable"), ("variable [Fact False]", "variable"),
    ("omit h", "omit"), ("axiom cheat : False", "axiom"), ("local notation \"x\" => 1", "notation"),
    ("opaque c : ℕ", "opaque"), ("set_premise_selector (fun _ _ => pure #[])", "set_premise_selector"),
    ("open Nat\nunsafe def f : ℕ := 1", "unsafe"), ("open Nat\n\nnotation \"y\" => 2", "notation"),
])
def test_a_header_is_read_by_an_allow_list_and_a_refusal_names_its_line(header, word):
    with pytest.raises(TheoremError) as e:
        Theorem("theorem t : (1 : ℕ) = 2 := by sorry", header=header)
    line = next(i for i, text in enumerate(header.splitlines(), 1) if word in text)
    assert f"line {line}" in str(e.value) and repr(word) in str(e.value).replace('"', "'"), str(e.value)


@pytest.mark.parametrize("header", [
    "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen BigOperators Real Nat Topology Rat\n",
    "open Nat\ntheorem helper (p : Prop) (hp : p) : p := by\n  exact hp\n",
    "noncomputable section\nopen Real\n@[simp] lemma foo : (1 : ℕ) = 1 := rfl\nend",
    "namespace Foo\ndef f (n : ℕ) : ℕ := n + 1\nend Foo", "abbrev solution : ℕ := 3", "universe u",
    "instance : Fact (1 < 2) := ⟨by norm_num⟩", "set_option autoImplicit false\nset_option pp.all true",
])
def test_headers_datasets_use_are_allowed(header):
    Theorem("theorem t : (1 : ℕ) = 1 := by sorry", header=header)


@pytest.mark.parametrize("statement", ["variable (h : False)\ntheorem t : (1 : ℕ) = 2 := by sorry",
                                       "include h\ntheorem t : (1 : ℕ) = 2 := by sorry",
                                       "namespace X\ntheorem t : (1 : ℕ) = 2 := by sorry"])
def test_a_statement_holds_nothing_before_its_theorem(statement):
    with pytest.raises(TheoremError, match="before its theorem"):
        Theorem(statement)


def test_the_harness_cli_refuses_a_malicious_dataset_row(tmp_path: Path, capsys):
    from scripts import benchmark

    rows = [{"name": "ok", "header": "", "formal_statement": "theorem ok (p : Prop) (hp : p) : p := by sorry"},
            {"name": "evil", "header": "import Mathlib\nvariable (h : False)\ninclude h",
             "formal_statement": "theorem evil : (1 : ℕ) = 2 := by sorry"}]
    data = tmp_path / "evil.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rc = benchmark.main(["--dataset", str(data), "--sim", "--agent", "hammer", "--out", str(tmp_path / "o.jsonl"),
                         "--quiet", "--plot", "none"])
    err = capsys.readouterr().err
    assert rc != 0 and "evil.jsonl:2" in err and "line 2" in err and "'variable'" in err, err
    assert not (tmp_path / "o.jsonl").exists() or "evil" not in (tmp_path / "o.jsonl").read_text()


@pytest.mark.parametrize("script", GLUED)
def test_the_harness_never_counts_a_glued_command(script):
    from leangym.harness.run import Task, run_attempt

    class Glues:
        def prove(self, theorem, session, budget):
            return script

    task = Task(Theorem(ONE), 0)
    r = run_attempt(Glues(), LocalProcess(), task, Budget(max_lean_calls=5), clean_process=LocalProcess)
    assert r.status == "failed" and not r.solved and r.verify_error


def test_recheck_passes_the_same_gate():
    from leangym.harness.recheck import recheck
    from leangym.harness.records import AttemptResult, ResultSet, statement_hash

    thm = Theorem(ONE)
    forged = [AttemptResult("t", i, "t", "proved", proof=p, statement_hash=statement_hash(thm))
              for i, p in enumerate(["exact hp", *GLUED[:4]])]
    rs = ResultSet(Path("results.jsonl"), {}, {(r.theorem, r.attempt): r for r in forged})
    out = recheck(rs, {"t": thm}, LocalProcess)
    assert [r.proof for r in out.held] == ["exact hp"] and len(out.failed) == 4


def test_the_trainer_s_verify_passes_the_gate_and_is_isolated():
    from agents.alphaproof.search import SearchConfig, _Search

    session = ProofSession(LocalProcess(), ONE, budget=Budget(max_lean_calls=20))  # one fresh process per task
    search = _Search(session, SearchConfig(num_simulations=1), None)
    for script in GLUED[:5] + ["sorry", "exact?"]:
        ok, error = search._verify(script)
        assert not ok and error
    assert search._verify("exact hp") == (True, None)
    assert session.verify("exact hp").isolated


def test_the_trainer_s_verdict_needs_a_process_no_other_session_touched():
    from agents.alphaproof.search import SearchConfig, _Search

    process = LocalProcess()
    ProofSession(process, ONE)  # an earlier session on the same process
    search = _Search(ProofSession(process, ONE, budget=Budget(max_lean_calls=10)), SearchConfig(num_simulations=1), None)
    ok, error = search._verify("exact hp")
    assert not ok and "other sessions" in error


@pytest.mark.parametrize("row", [
    {"name": "v", "header": "variable (h : False)\ninclude h", "formal_statement": "theorem v : (1 : ℕ) = 2 := by sorry"},
    {"name": "f", "header": "variable [Fact False]", "formal_statement": "theorem f : (1 : ℕ) = 2 := by sorry"},
    {"name": "s", "header": "", "formal_statement": "variable (h : False)\ntheorem s : (1 : ℕ) = 2 := by sorry"},
])
def test_the_env_and_a_session_refuse_a_malicious_row(row):
    with pytest.raises(TheoremError):
        LeanProofEnv(row, process_factory=LocalProcess)
    with pytest.raises(TheoremError):
        ProofSession(LocalProcess(), Theorem.from_row(row))


NO_LISTS = SoundnessPolicy(banned=(), lemma_search=(), reject_commands=False)  # the structure alone


@pytest.mark.parametrize("script", [
    "exact hp\naxiom cheat : False", "exact hp\ntheorem x : False := sorry", "exact hp\nfuture_command x",
    "exact hp\n#print axioms t", "exact hp\nend\naxiom cheat : False",
])
def test_with_every_word_list_off_a_command_in_the_bracket_is_still_an_error(script):
    """Structure, not lists: inside the check's bracket a command (listed or not) is a parse error."""
    thm = Theorem("theorem t (p : Prop) (hp : p) : p := by sorry")
    assert NO_LISTS.check_script(script) is None  # the lists are off: it reaches Lean
    assert not verify(LocalProcess(), thm, script, NO_LISTS).ok


@pytest.mark.parametrize("script", ["exact hp)\naxiom cheat : False\nexample : True := (trivial",
                                    "exact hp\n)\n(", "(exact hp", "exact hp]", "exact ⟨hp, hq)"])
def test_with_every_word_list_off_a_proof_still_cannot_close_the_bracket(script):
    why = NO_LISTS.check_script(script)
    assert why is not None and "bracket" in why, why
