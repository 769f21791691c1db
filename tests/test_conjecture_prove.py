"""ConjectureProve-v0: PettingZoo's API test, one scripted round per outcome, the rewards, seeding,
statement refusals, and leases on a failing server (simulated LeanTree server)."""
from __future__ import annotations

import pytest
import requests
from pettingzoo.test import api_test

import leangym
from leangym.envs.conjecture_prove import ConjectureProveEnv, conjecture_key, env as make_env
from leangym.sim.process import SimProcess
from leangym.theorem import Theorem

SEED = {"name": "s", "formal_statement": "theorem s (p q : Prop) (h₁ : p) : p ∨ q := by sorry",
        "proof": ["left", "exact h₁"]}
HARDER = "theorem c (p q : Prop) (h₁ : p) : q → p ∧ q := by sorry"  # intro, then ⟨h₁, h⟩
PROOF = ["intro h", "exact ⟨h₁, h⟩"]
WRONG = ["exact h₁", "exact h₁"]  # refused twice: max_steps (2) ends the attempt


def make(**kw) -> ConjectureProveEnv:
    kw = {"theorem": [SEED], "attempts": 4, "max_steps": 2, **kw}
    e = ConjectureProveEnv(**kw)
    e.reset(seed=0)
    return e


def play(e: ConjectureProveEnv, conjecture: str, attempts: list[list[str]] = ()) -> dict:
    """One round: the conjecture, then each attempt's tactics. Returns the rewards summed per agent."""
    total = {"conjecturer": 0.0, "prover": 0.0}
    e.step(conjecture)
    for tactics in attempts:
        for t in tactics:
            assert e.agent_selection == "prover" and not e.terminations["prover"]
            e.step(t)
            total["prover"] += e.rewards["prover"]
    total["conjecturer"] = e._cumulative_rewards["conjecturer"]  # (it has not acted since: all of its round)
    return total


def finish(e) -> None:
    """The dead steps that end the round, in PettingZoo's order."""
    while e.agents:
        assert e.terminations[e.agent_selection] or e.truncations[e.agent_selection]
        e.step(None)


def test_pettingzoo_api_test_passes():
    api_test(make_env(theorem=[SEED]), num_cycles=100)
    api_test(leangym.make_multi("ConjectureProve-v0", num_seeds=4), num_cycles=100)  # the registry's defaults


def test_registry_builds_it_and_gymnasium_does_not_hold_it():
    import gymnasium as gym

    e = leangym.make_multi("ConjectureProve-v0", theorem=[SEED], attempts=2)
    assert isinstance(e.unwrapped, ConjectureProveEnv) and e.unwrapped.attempts == 2
    assert "ConjectureProve-v0" not in gym.registry and "ConjectureProve-v0" not in leangym.ENV_IDS
    with pytest.raises(ValueError, match="gymnasium.make"):
        leangym.make_multi("LeanProof-v0")
    e.close()


def test_observations_seed_text_then_goals():
    e = make()
    obs, reward, term, trunc, info = e.last()
    assert obs == SEED["formal_statement"] + "\n-- proof:\n  left\n  exact h₁"
    assert info["seed"].name == "s" and info["seed_proof"] == ("left", "exact h₁")
    e.step(HARDER)
    assert e.agent_selection == "prover"
    assert e.last()[0] == "p q : Prop\nh₁ : p\n⊢ q → p ∧ q"
    assert e.session is not None and e.session.theorem.formal_statement.endswith(": q → p ∧ q := by sorry")


@pytest.mark.parametrize("statement", [
    "theorem c (p : Prop) : p ∧ := by sorry",  # Lean (the simulator) cannot parse it
    "theorem c (p : Prop) : p := by sorry\n#eval 1",  # a #command
    "axiom ax : False\ntheorem c : False := by sorry",  # a new axiom
    "theorem c : 1 = 1 := by native_decide",  # code-running word
    "theorem c (p : Prop) (h : p ∧ sorry) : p := by sorry",  # sorry in the statement
    "set_option debug.skipKernelTC true in\ntheorem c (p : Prop) : p := by sorry",  # switches the check off
    "not Lean at all",
])
def test_invalid_statement_is_a_penalised_move(statement):
    e = make()
    e.step(statement)  # never raises
    info = e.infos["conjecturer"]
    assert info["outcome"] == "invalid" and info["error"]
    assert e._cumulative_rewards == {"conjecturer": -1.0, "prover": 0.0}
    assert all(e.terminations.values()) and not any(e.truncations.values())
    assert e.agent_selection == "conjecturer" and e.last()[1] == -1.0
    finish(e)


def test_a_statement_over_max_statement_chars_is_refused_before_lean(monkeypatch):
    e = make(max_statement_chars=64)
    monkeypatch.setattr(e.prover_env, "reset", lambda **kw: pytest.fail("sent to Lean"))
    e.step("theorem c (p : Prop) (h : p) : " + " ∧ ".join(["p"] * 40) + " := by sorry")
    info = e.infos["conjecturer"]
    assert info["outcome"] == "invalid" and "max_statement_chars=64" in info["error"]
    assert e._cumulative_rewards["conjecturer"] == -1.0
    finish(e)
    assert e.action_space("prover") == e.prover_env.action_space  # the prover's limit is LeanProof-v0's


@pytest.mark.parametrize("band", [(0.5, 0.1), (0.2, 0.2), (-0.1, 0.5), (0.0, 1.5), (0.1,)])
def test_a_band_no_pass_rate_fits_is_refused(band):
    with pytest.raises(ValueError, match="band must be"):
        ConjectureProveEnv(theorem=[SEED], band=band)


def test_duplicate_up_to_names_and_whitespace():
    e = make()
    e.step("theorem other   (a b : Prop)\n (hx : a) : a ∨ b := by sorry")  # the seed, renamed
    assert e.infos["conjecturer"]["outcome"] == "duplicate" and e.rewards["conjecturer"] == -1.0
    finish(e)
    e.reset()
    e.step(HARDER)  # new: accepted
    assert e.agent_selection == "prover"
    e.reset()
    e.step(HARDER.replace("(p q : Prop)", "(x y : Prop)").replace("p ∧ q", "x ∧ y").replace("h₁ : p", "h₁ : x")
           .replace("q →", "y →"))
    assert e.infos["conjecturer"]["outcome"] == "duplicate"
    key = conjecture_key(Theorem(HARDER))
    assert key in e.known and "x0" in key and " c " not in key


def test_trivial_statement():
    e = make()
    e.step("theorem c (p q : Prop) (h₁ : p) (h₂ : q) : q := by sorry")
    info = e.infos["conjecturer"]
    assert info["outcome"] == "trivial" and "'trivial' proves it in one step" in info["error"]
    assert e._cumulative_rewards["conjecturer"] == -1.0
    finish(e)


def test_in_band_round_rewards_both_agents():
    e = make()
    total = play(e, HARDER, [PROOF, WRONG, WRONG, WRONG])
    info = e.infos["conjecturer"]
    assert info["outcome"] == "in_band" and info["pass_rate"] == 0.25
    assert info["proofs"] == ["intro h\nexact ⟨h₁, h⟩"]
    assert total == {"conjecturer": 1.0, "prover": 1.0}
    assert e.agent_selection == "conjecturer" and all(e.terminations.values())
    finish(e)
    assert e.agents == []


def test_unproved_and_too_easy_rounds_pay_the_conjecturer_nothing():
    e = make()
    total = play(e, HARDER, [WRONG] * 4)
    assert e.infos["conjecturer"]["outcome"] == "unproved" and e.infos["conjecturer"]["pass_rate"] == 0.0
    assert total == {"conjecturer": 0.0, "prover": 0.0}
    finish(e)
    e.reset()
    total = play(e, HARDER.replace("theorem c", "theorem d").replace("p ∧ q", "p ∧ q ∧ q"),
                 [["intro h", "exact ⟨h₁, h, h⟩"]] * 2 + [WRONG] * 2)
    assert e.infos["conjecturer"]["outcome"] == "out_of_band" and e.infos["conjecturer"]["pass_rate"] == 0.5
    assert total == {"conjecturer": 0.0, "prover": 2.0}


def test_each_attempt_is_a_fresh_leanproof_episode():
    e = make()
    e.step(HARDER)
    e.step("intro h")
    e.step("exact h₁")  # refused: the second step ends attempt 1 (max_steps)
    info = e.infos["prover"]
    assert info["outcome"] == "rejected" and info["truncated_by"] == "max_steps" and info["next_attempt"] == 2
    assert e.last()[0] == "p q : Prop\nh₁ : p\n⊢ q → p ∧ q"  # attempt 2 starts over


def test_configurable_rewards():
    e = make(conjecturer_reward=lambda rate: 10 * rate, reward_refused=-0.5, reward_proved=2.0)
    total = play(e, HARDER, [PROOF, PROOF, WRONG, WRONG])
    assert total == {"conjecturer": 5.0, "prover": 4.0}
    finish(e)
    e.reset()
    e.step("#eval 1")
    assert e.rewards["conjecturer"] == -0.5
    e = make(band=(0.4, 1.0))
    assert play(e, HARDER, [PROOF, PROOF, WRONG, WRONG])["conjecturer"] == 1.0


def test_seeding_is_reproducible():
    seeds = [SEED, {**SEED, "name": "t", "formal_statement": "theorem t (p : Prop) (h₁ : p) : p ∧ p := by sorry"},
             {**SEED, "name": "u", "formal_statement": "theorem u (q : Prop) (h₁ : q) : q ∨ q := by sorry"}]

    def run(seed):
        e = ConjectureProveEnv(theorem=seeds)
        out = []
        for i in range(5):
            e.reset(seed=seed if i == 0 else None)
            out.append((e.last()[0], e.action_space("conjecturer").sample()))
        return out

    assert run(7) == run(7)
    assert run(7) != run(8)
    a, b = ConjectureProveEnv(num_seeds=6), ConjectureProveEnv(num_seeds=6)
    assert [s.formal_statement for s, _ in a.seeds] == [s.formal_statement for s, _ in b.seeds]


# ----------------------------------------------------------------------------- a failing server

def used(srv) -> int:
    return requests.get(srv.url + "/status", timeout=5).json()["used_processes"]


class FailingStart(SimProcess):
    """Starts fail (an HTTP 500 from the server) while ``failing`` is set, pool-wide."""

    failing = False

    def proof_from_sorry(self, theorem):
        if FailingStart.failing:
            raise RuntimeError("REPL process died")
        return super().proof_from_sorry(theorem)


def test_no_lease_left_after_a_failing_server(sim_server, monkeypatch):
    srv = sim_server(process_factory=FailingStart, max_processes=4)
    e = make(server=srv.url, lease_timeout_s=2.0, read_timeout_s=5.0)
    e.step(HARDER)
    assert e.agent_selection == "prover" and used(srv) == 1
    e.step(PROOF[0])
    e.step(PROOF[1])  # attempt 1 proved (checked on the server)
    assert e.rewards["prover"] == 1.0
    monkeypatch.setattr(FailingStart, "failing", True)
    e.step(WRONG[0])
    e.step(WRONG[1])  # attempt 2 over: attempt 3's start fails on every lease
    info = e.infos["conjecturer"]
    assert info["outcome"] == "server_failure" and "REPL process died" in info["error"]
    assert all(e.truncations.values()) and e._cumulative_rewards["conjecturer"] == 0.0
    assert used(srv) == 0  # given back at the failure, not at close
    finish(e)
    e.reset()
    e.step(HARDER.replace("theorem c", "theorem c2").replace("p ∧ q", "q ∧ p"))  # the conjecture's start fails
    assert e.infos["conjecturer"]["outcome"] == "server_failure" and used(srv) == 0
    monkeypatch.setattr(FailingStart, "failing", False)
    finish(e)
    e.reset()
    e.step(HARDER.replace("theorem c", "theorem c3").replace("p ∧ q", "q ∧ p ∧ p"))
    assert e.agent_selection == "prover" and used(srv) == 1
    e.close()
    assert used(srv) == 0


def test_server_killed_mid_round_truncates_it_and_keeps_no_lease(sim_server):
    srv = sim_server(max_processes=2)
    e = make(server=srv.url, lease_timeout_s=2.0, read_timeout_s=5.0)
    e.step(HARDER)
    srv.stop()
    e.step("intro h")  # never raises
    assert e.infos["conjecturer"]["outcome"] == "server_failure" and all(e.truncations.values())
    assert e.infos["prover"]["outcome"] == "server_failure"
    finish(e)
    srv.restart()
    e.reset()
    total = play(e, HARDER.replace("theorem c", "theorem c4").replace("p ∧ q", "q ∧ p"), [["intro h", "exact ⟨h, h₁⟩"]]
                 + [WRONG] * 3)
    assert total["prover"] == 1.0 and e.infos["conjecturer"]["outcome"] == "in_band"
    e.close()
    assert used(srv) == 0
