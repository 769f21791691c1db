"""LeanProof-v0 over the simulated LeanTree server (both server generations): API shape, steps and
rewards, the final check, theorem sources, the search API, rendering, episodes on one process.
(Server trouble and leases: test_env_lean_proof_server.py.)"""
from __future__ import annotations

import json

import gymnasium as gym
import pytest
import requests
from gymnasium.utils.env_checker import check_env

import leangym
from leangym.backends.leantree import LeanTreeClient
from leangym.backends.types import (
    CommandResult, Goal, ProofState, ReplMessage, ServerError, ServerIdentity,
)
from leangym.envs.lean_proof import LeanProofEnv
from leangym.envs.spaces import TRUNCATION_MARKER, clip_text
from leangym.proof import ProofTree
from leangym.session import Budget, BudgetExhausted, ProofSession
from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy
from leangym.theorem import Theorem

from conftest import ScriptedProcess

AND = "theorem t_and (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
ONE = "theorem t (p q : Prop) (hp : p) (hq : q) : q := by sorry"
ONE_OBS = "p q : Prop\nhp : p\nhq : q\n⊢ q"
BOTH = pytest.mark.parametrize("factorized", [False, True], ids=["single-branch", "factorized"])


def used(srv) -> int:
    return requests.get(srv.url + "/status", timeout=5).json()["used_processes"]


def make(srv, theorem=AND, **kw) -> gym.Env:
    return gym.make("LeanProof-v0", theorem=theorem, server=srv.url, **kw)


@pytest.fixture
def scripted(sim_server):
    """A server of predictable ScriptedProcess objects (conftest): `split` makes two goals."""
    def start(factorized: bool = False, **kw):
        return sim_server(factorized=factorized, process_factory=ScriptedProcess, **kw)
    return start


NO_AXIOM_CHECK = SoundnessPolicy(check_axioms=False)  # ScriptedProcess does not answer #print axioms


# ----------------------------------------------------------------------------- API shape

@BOTH
def test_check_env_passes(sim_server, factorized):
    srv = sim_server(factorized=factorized)
    env = make(srv, render_mode="ansi")
    check_env(env.unwrapped)
    env.close()
    assert used(srv) == 0


def test_reset_observation_and_info(sim_server):
    srv = sim_server()
    env = make(srv, theorem=ONE)
    obs, info = env.reset(seed=0)
    assert obs == ONE_OBS
    assert env.observation_space.contains(obs)
    assert isinstance(info["goals"][0], Goal) and info["goals"][0].target == "q"
    assert isinstance(info["states"][0], ProofState) and info["states"][0].goals == info["goals"]
    assert isinstance(info["theorem"], Theorem) and info["theorem"].name == "t"
    assert info["steps"] == 0 and info["outcome"] == "reset"
    assert isinstance(info["server"], ServerIdentity) and info["server"].url == srv.url
    env.close()


@pytest.mark.parametrize("bad", [{"max_steps": 0}, {"tactic_timeout_ms": -5}, {"tactic_timeout_ms": 0},
                                 {"max_text_length": 10}])
def test_a_setting_that_cannot_work_is_refused_at_construction(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=f"{name} must be at least"):
        LeanProofEnv(AND, process_factory=lambda: None, **bad)


def test_observation_space_holds_real_lean_text_and_long_text_is_cut():
    env = LeanProofEnv(AND, process_factory=lambda: None, max_text_length=64)
    space = env.observation_space
    text = "x y : ℝ\nh₀ : x + y = 10\nf : ℕ → ℝ\n⊢ ∀ ε > 0, ∃ δ, ‖f n‖ ≤ √2 ∧ ⌊x⌋ ≠ π⁻¹ ∧ 𝓝 x ≤ ∑ i ∈ s, i"
    assert all(c in space.character_set for c in text)  # every char of real goal text is in the charset
    assert space.contains(text[:64]) and space.contains("名前 : ℕ") and not space.contains(text * 2)
    cut = clip_text(text * 2, 64)
    assert len(cut) == 64 and cut.endswith(TRUNCATION_MARKER) and space.contains(cut)
    assert isinstance(env.action_space.sample(), str)


# ----------------------------------------------------------------------------- steps

def test_full_proof_is_rewarded_and_verified(sim_server):
    srv = sim_server()
    env = make(srv, theorem=ONE)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("exact hq")
    assert (obs, reward, terminated, truncated) == ("no goals", 1.0, True, False)
    assert info["verified"] is True and info["outcome"] == "proved"
    assert info["proof"] == "theorem t (p q : Prop) (hp : p) (hq : q) : q := by\n  (\n    exact hq\n  )\n"
    assert info["proof_script"] == "exact hq"
    env.close()


def test_rejected_tactic_leaves_state_unchanged(sim_server):
    srv = sim_server()
    env = make(srv, theorem=ONE, reward_rejected=-0.1, reward_step=-0.01)
    obs0, info0 = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("exact foo")
    assert obs == obs0 and info["states"] == info0["states"]
    assert reward == pytest.approx(-0.11) and not terminated and not truncated
    assert info["outcome"] == "rejected" and "foo" in info["error"]
    env.close()


@BOTH
def test_timeout_is_an_ordinary_failed_step(scripted, factorized):
    srv = scripted(factorized)
    env = make(srv, policy=NO_AXIOM_CHECK)
    obs0, _ = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("slow")
    assert (obs, reward, terminated, truncated) == (obs0, 0.0, False, False)
    assert info["outcome"] == "timeout" and "timed out" in info["error"]
    env.close()


@BOTH
def test_multiple_goals_are_focused_and_the_assembled_proof_rechecked(sim_server, factorized):
    srv = sim_server(factorized=factorized)
    env = make(srv)
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step("constructor")
    assert len(info["goals"]) == 2 and obs.count("⊢") == 2 and (r, term, trunc) == (0.0, False, False)
    assert len(info["states"]) == (2 if factorized else 1)
    obs, r, term, trunc, info = env.step("exact hp")  # the FIRST goal, as in Lean
    assert obs.endswith("⊢ q") and obs.count("⊢") == 1 and not term
    obs, r, term, trunc, info = env.step("exact hq")
    assert (obs, r, term, trunc) == ("no goals", 1.0, True, False) and info["verified"]
    expected = "constructor\n· exact hp\n· exact hq" if factorized else "constructor\nexact hp\nexact hq"
    assert info["proof_script"] == expected
    if factorized:
        tree = ProofTree("constructor", (ProofTree("exact hp"), ProofTree("exact hq")), (1, 1))
    else:
        tree = ProofTree("constructor", (ProofTree("exact hp", (ProofTree("exact hq"),), (1,)),), (2,))
    assert env.unwrapped.proof_tree() == tree
    env.close()


@pytest.mark.parametrize("tactic", [
    "sorry", "admit", "native_decide", "exact?", "exact hp\ntheorem x : False := by trivial", "#exit",
    "constructor\n#exit", "exact hp\naxiom boom : False",
])
def test_banned_tactics_and_injected_commands_are_rejected(sim_server, tactic):
    srv = sim_server()
    env = make(srv)
    obs0, _ = env.reset(seed=0)
    before = env.unwrapped.session.stats.lean_calls
    obs, reward, terminated, truncated, info = env.step(tactic)
    assert (obs, reward, terminated, truncated) == (obs0, 0.0, False, False)
    assert info["outcome"] == "rejected" and info["error"].startswith("leangym")
    assert env.unwrapped.session.stats.lean_calls == before  # never sent to Lean
    env.close()


class FailingCheck:
    """A LeanProcess whose final whole-proof check reports a Lean error (tactics still work)."""

    def __init__(self, inner):
        self.inner, self.process_id = inner, inner.process_id

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run_command(self, source):
        return CommandResult((ReplMessage("error", "kernel: type mismatch in the assembled proof", 3, 2),))


@BOTH
def test_goals_closed_but_final_check_fails_is_not_rewarded(sim_server, factorized):
    srv = sim_server(factorized=factorized)
    client = LeanTreeClient(srv.url)
    env = LeanProofEnv(AND, process_factory=lambda: FailingCheck(client.lease()))
    env.reset(seed=0)
    env.step("constructor")
    env.step("exact hp")
    obs, reward, terminated, truncated, info = env.step("exact hq")
    assert obs == "no goals" and reward == 0.0 and terminated and not truncated
    assert info["verified"] is False and info["outcome"] == "check_failed" and "proof" not in info
    assert "type mismatch" in info["error"]
    with pytest.raises(RuntimeError, match="reset"):
        env.step("exact hq")
    env.close()
    assert used(srv) == 0


class CheckServerDown(FailingCheck):
    def run_command(self, source):
        raise ServerError("LeanTree server at http://x answered HTTP 500 on /command: REPL died")


def test_server_failure_during_the_final_check_truncates(sim_server):
    srv = sim_server()
    client = LeanTreeClient(srv.url)
    env = LeanProofEnv(ONE, process_factory=lambda: CheckServerDown(client.lease()))
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("exact hq")
    assert reward == 0.0 and truncated and not terminated and info["verified"] is False
    assert info["outcome"] == "server_failure" and "REPL died" in info["error"]
    env.close()


@pytest.mark.parametrize("allowed, rewarded", [(None, True), ([], False)])
def test_allowed_axioms(sim_server, allowed, rewarded):
    srv = sim_server()
    env = make(srv, theorem="theorem dn (p : Prop) (h : ¬¬p) : p := by sorry", allowed_axioms=allowed)
    env.reset(seed=0)
    env.step("by_contra hn")
    _, reward, terminated, _, info = env.step("exact h hn")
    assert terminated and info["verified"] is rewarded and reward == float(rewarded)
    assert "Classical.choice" in info["axioms"]
    if not rewarded:
        assert "disallowed axioms" in info["error"]
    env.close()


def test_max_steps_and_budget_truncate(sim_server):
    srv = sim_server()
    env = make(srv, max_steps=2)
    env.reset(seed=0)
    assert env.step("exact foo")[3] is False
    *_, truncated, info = env.step("exact foo")
    assert truncated and info["truncated_by"] == "max_steps"
    env.close()
    env = make(srv, budget=Budget(max_lean_calls=2))
    env.reset(seed=0)
    assert env.step("exact foo")[3] is False
    *_, terminated, truncated, info = env.step("exact foo")  # the step that spends the last call ends it
    assert truncated and not terminated and info["truncated_by"] == "budget" and info["outcome"] == "rejected"
    env.close()
    env = make(srv, budget=Budget(max_seconds=0.0))  # a time budget is found spent when a step would run
    env.reset(seed=0)
    *_, terminated, truncated, info = env.step("exact bar")
    assert truncated and not terminated and info["outcome"] == info["truncated_by"] == "budget" and "budget" in info["error"]
    env.close()


# ----------------------------------------------------------------------------- theorems

def test_theorem_sources_jsonl_list_options_and_header(sim_server, tmp_path):
    srv = sim_server()
    rows = [{"name": f"n{i}", "header": "import Mathlib\n", "formal_statement": f"theorem n{i} : {i} + {i} = {2 * i} := by sorry"}
            for i in range(5)]
    path = tmp_path / "thms.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    env = make(srv, theorem=str(path))
    names = [env.reset(seed=s)[1]["theorem"].name for s in range(8)]
    assert set(names) <= {r["name"] for r in rows} and len(set(names)) > 1
    assert names == [env.reset(seed=s)[1]["theorem"].name for s in range(8)]  # seeded
    assert env.reset(options={"index": 3})[1]["theorem"].name == "n3"
    _, info = env.reset(options={"theorem": ONE})
    assert info["theorem"].name == "t"
    env.close()
    env = make(srv, theorem="proplogic-heldout:4")  # any leangym.datasets theorem set
    assert {env.reset(seed=s)[1]["theorem"].name for s in range(12)} <= {t.name for t in env.unwrapped.theorems}
    assert len(env.unwrapped.theorems) == 4
    env.close()
    env = make(srv, theorem=[AND, Theorem(ONE)], header="open Nat\n")
    assert {env.reset(seed=s)[1]["theorem"].name for s in range(10)} == {"t_and", "t"}
    assert env.unwrapped.theorems[0].header == "open Nat\n"
    env.close()


# ----------------------------------------------------------------------------- search API, render

def test_session_search_api_next_to_step(sim_server):
    srv = sim_server(factorized=True)
    env = make(srv)
    env.reset(seed=0)
    session = env.unwrapped.session
    root = session.root
    env.step("constructor")
    results = session.apply_many(root, ["exact foo", "constructor", "exact ⟨hp, hq⟩"])  # an earlier state
    assert [r.outcome.value for r in results] == ["rejected", "progress", "proved"]
    assert session.verify(["exact ⟨hp, hq⟩"]).ok
    assert len(env.unwrapped.states) == 2  # the env's walk is untouched
    env.close()


def test_open_session_returns_its_lease(sim_server):
    srv = sim_server()
    with leangym.open_session(ONE, server=srv.url) as s:
        assert used(srv) == 1
        assert s.apply(s.root, "exact hq").outcome.value == "proved"
        assert s.verify("exact hq").ok
    assert used(srv) == 0


def test_open_session_on_a_given_process_leaves_it_open():
    process = LocalProcess()
    with leangym.open_session(AND, process=process) as s:
        r = s.apply(s.root, "constructor")
        assert [len(x.goals) for x in r.states] == [2]
    assert s.process.process_id == process.process_id and process.start_proof(AND).goals  # still usable


def test_render_modes(sim_server, capsys):
    srv = sim_server()
    env = make(srv, theorem=ONE, render_mode="ansi")
    env.reset(seed=0)
    env.step("exact foo")
    text = env.render()
    assert "[t] step 1: rejected" in text and "tactic: exact foo" in text and "⊢ q" in text
    env.close()
    env = make(srv, theorem=ONE, render_mode="human")
    env.reset(seed=0)  # "human" renders during reset and step without being asked (Gymnasium's rule)
    assert "[t] step 0: reset" in capsys.readouterr().out
    env.step("exact foo")
    assert "[t] step 1: rejected" in capsys.readouterr().out
    assert env.render() is None and "⊢ q" in capsys.readouterr().out
    env.close()


def test_a_later_episode_cannot_cite_an_earlier_proof():
    """Episodes share the process by default; the theorem proven in the first is not citable in the second."""
    env = LeanProofEnv(AND, process_factory=LocalProcess)
    env.reset(seed=0)
    assert env.step("exact ⟨hp, hq⟩")[1] == 1.0
    env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step("exact t_and p q hp hq")
    assert reward == 0.0 and info["outcome"] == "rejected" and "unknown identifier 't_and'" in info["error"]
    env.reset(seed=2)
    assert env.step("exact ⟨hp, hq⟩")[1] == 1.0  # the same proof checks again on the same process
    env.close()


def test_an_empty_or_odd_theorem_argument_is_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "Evil.lean").write_text("theorem evil : True := by sorry\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # an empty string once meant "every .lean file here"
    with pytest.raises(ValueError, match="theorem is empty"):
        LeanProofEnv("", process_factory=LocalProcess)
    with pytest.raises(TypeError, match="not int"):
        LeanProofEnv(42, process_factory=LocalProcess)


def test_info_learns_the_server_generation_from_tactic_replies():
    """A real LeanTree server does not say its generation; the client learns it from replies,
    so ``info["server"]`` must not keep the "unknown" it had at reset."""
    class Unsaid(LocalProcess):  # a server that makes no claim: the generation shows after a tactic
        seen = False

        def apply_tactic(self, state, tactic, timeout_ms=1000):
            self.seen = True
            return super().apply_tactic(state, tactic, timeout_ms)

        def identity(self):
            return ServerIdentity("x", "single-branch" if self.seen else "unknown")

    env = LeanProofEnv(ONE, process_factory=Unsaid)
    _, info = env.reset()
    assert info["server"].generation == "unknown"
    _, _, _, _, info = env.step("intro x")
    assert info["server"].generation == "single-branch"
    env.close()


def test_the_sessions_process_is_metered():
    """A prover that calls ``session.process`` directly pays like one that calls ``apply_many``:
    the budget, the soundness policy and the statistics cannot be side-stepped."""
    from leangym.session import BudgetExhausted, ProofSession, RawAccessRefused

    s = ProofSession(LocalProcess(), AND, budget=Budget(max_lean_calls=3))
    results = s.process.apply_tactics(s.root, ["constructor", "sorry"])
    assert [r.outcome.value for r in results] == ["progress", "rejected"] and s.stats.lean_calls == 1
    assert s.stats.policy_rejected == 1
    assert s.process.apply_tactic(s.root, "intro x").outcome.value == "rejected" and s.stats.lean_calls == 2
    with pytest.raises(RawAccessRefused):  # commands and proof starts do not pass the gate at all
        s.process.run_command("example : True := trivial")
    with pytest.raises(RawAccessRefused):
        s.process.start_proof(AND)
    assert s.stats.lean_calls == 2
    s.apply(s.root, "constructor")
    with pytest.raises(BudgetExhausted):
        s.process.apply_tactics(s.root, ["constructor", "exact hp"])
    with pytest.raises(BudgetExhausted):  # a prover's check is a Lean call too: whole candidates are not free
        s.verify("constructor\n· exact hp\n· exact hq")
    assert s.stats.lean_calls == 3


def test_a_prover_s_verify_costs_two_lean_calls():
    # the whole script in tactic mode, then the command: both charged, as any Lean call is
    s = ProofSession(LocalProcess(), AND, budget=Budget(max_lean_calls=4))
    assert s.verify("constructor\n· exact hp\n· exact hq").ok and s.stats.lean_calls == 2
    assert not s.verify("exact hp").ok and s.stats.lean_calls == 4
    with pytest.raises(BudgetExhausted):
        s.verify("exact hp")


def test_a_header_with_declarations_is_proved_again_and_again():
    # The final check declares the header again: on a process that keeps what it declared,
    # the second episode's check would fail with "already declared" unless it gets a fresh lease.
    thm = Theorem("theorem uses (q : Prop) (hq : q) : q := by sorry",
                  header="theorem helper (p : Prop) (hp : p) : p := by\n  exact hp\n")
    env = LeanProofEnv(thm, process_factory=LocalProcess)
    rewards = []
    for _ in range(3):
        env.reset()
        rewards.append(env.step("exact helper q hq")[1])
    assert rewards == [1.0, 1.0, 1.0]
    env.close()


@BOTH
def test_the_same_theorem_again_and_again_on_one_lease(sim_server, factorized):
    # A proof start declares its statement on the process (LeanTree's REPL runs each command in the
    # environment the last one left, and so does the simulator): starting `t_and` again on the kept
    # lease was Lean's "'t_and' has already been declared", every second reset
    srv = sim_server(factorized=factorized)
    env = make(srv)
    rewards = []
    for seed in range(3):
        env.reset(seed=seed)
        rewards.append(env.step("exact ⟨hp, hq⟩")[1])
        assert used(srv) == 1  # one lease all along
    assert rewards == [1.0, 1.0, 1.0]
    env.close()


def test_a_header_with_declarations_is_rewarded_over_a_server(sim_server):
    # the start declared the header on the lease already: the check, which declares it again, runs on a clean one
    srv = sim_server()
    thm = Theorem("theorem uses (q : Prop) (hq : q) : q := by sorry",
                  header="theorem helper (p : Prop) (hp : p) : p := by\n  exact hp\n")
    env = make(srv, theorem=thm)
    for seed in range(2):
        env.reset(seed=seed)
        _, reward, _, _, info = env.step("exact helper q hq")
        assert (reward, info["outcome"]) == (1.0, "proved"), info.get("error")
    env.close()
    assert used(srv) == 0


@BOTH
def test_a_session_s_own_check_of_a_header_declaring_theorem(sim_server, factorized):
    # the proof start declared the header on the session's process already (as LeanTree's processes keep
    # what they ran): the session's own check (a prover's verify, the search's final check) must not fail
    # on declaring it again
    from agents.alphaproof.search import SearchConfig, run_search
    from agents.alphaproof.interfaces import Evaluation, per_state

    thm = Theorem("theorem uses (q : Prop) (hq : q) : q := by sorry",
                  header="open Nat\ntheorem helper (p : Prop) (hp : p) : p := by\n  exact hp\n")
    srv = sim_server(factorized=factorized)
    with leangym.open_session(thm, server=srv.url) as s:
        v = s.verify("exact helper q hq")
        assert v.ok and v.source.startswith("open Nat\ntheorem helper")  # the whole proof, header included
        assert not s.verify("exact hq_nonsense").ok

    class Proposes:
        def evaluate(self, states, k):
            return [Evaluation(("exact helper q hq",)[:n], (0.0,)[:n], 0.5) for n in per_state(k, len(states))]

    r = run_search(ProofSession(LocalProcess(factorized=factorized), thm), Proposes(), SearchConfig(num_simulations=4))
    assert r.solved and r.verified, r.verify_error


@pytest.mark.parametrize("header, declares", [
    ("import Mathlib\nopen BigOperators Real Nat Topology Rat\nset_option maxHeartbeats 400000\n", False),
    ("-- a note\n/- theorem x : True -/\nnamespace Foo\nend Foo\nnoncomputable section\n", False),
    ("theorem helper (p : Prop) (hp : p) : p := by\n  exact hp\n", True),
    # a declaration after a scoping prefix or a doc comment on its line, and declarations of other kinds
    ("open Nat in theorem helper : True := trivial\n", True),
    ("set_option maxRecDepth 100 in\ntheorem helper : True := trivial\n", True),
    ("/-- doc -/ theorem helper : True := trivial\n", True),
    ("local instance : Inhabited ℕ := ⟨0⟩\n", True), ("universe u\n", True), ("abbrev two : ℕ := 2\n", True),
])
def test_which_headers_declare_something(header, declares):
    # a header that declares something cannot run twice on one process (the env's and the benchmark's
    # fresh leases rest on this): when in doubt, it declares
    assert Theorem("theorem u (q : Prop) (hq : q) : q := by sorry", header=header).header_declares is declares


def test_copying_an_env_over_a_server_says_what_to_do_instead(sim_server):
    import copy
    import pickle

    env = make(sim_server())
    env.reset(seed=0)
    for copier in (copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match=r"cannot be copied or pickled: make another with gym.make\(env.spec\)"):
            copier(env.unwrapped)
    env.close()
    local = LeanProofEnv(AND, process_factory=LocalProcess)  # in process: copies as before
    local.reset(seed=0)
    assert copy.deepcopy(local).theorem.name == "t_and"


def test_open_session_takes_exactly_one_theorem():
    for theorem, says in ((None, "needs a theorem"), ([ONE, AND], "takes one theorem, got 2")):
        with pytest.raises(ValueError, match=says):
            with leangym.open_session(theorem, process=LocalProcess()):
                pass
