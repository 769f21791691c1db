"""The threaded vector env of LeanProof-v0 (gym.make_vec)."""
from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest
import requests
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import leangym  # noqa: F401  (registers the ids)
from leangym.envs.vector import LeanVectorEnv
from leangym.session import ProofSession
from leangym.soundness import SoundnessPolicy
from leangym.theorem import Theorem

from conftest import ScriptedProcess

AND = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
START = "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q"
KW = dict(theorem=AND, policy=SoundnessPolicy(check_axioms=False))  # ScriptedProcess has no #print axioms


def used(srv) -> int:
    return requests.get(srv.url + "/status", timeout=5).json()["used_processes"]


@pytest.fixture
def srv(sim_server):
    return sim_server(process_factory=ScriptedProcess, max_processes=8, latency_ms=20)


def test_make_vec_four_envs_autoreset_next_step(srv):
    envs = gym.make_vec("LeanProof-v0", num_envs=4, server=srv.url, **KW)
    assert isinstance(envs, LeanVectorEnv) and envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, infos = envs.reset(seed=0)
    assert obs == (START,) * 4 and envs.observation_space.contains(obs)
    assert used(srv) == 4  # one lease each
    sessions = envs.sessions
    assert len({id(s) for s in sessions}) == 4 and all(isinstance(s, ProofSession) for s in sessions)
    assert len({s.process.process_id for s in sessions}) == 4

    obs, rew, term, trunc, infos = envs.step(["split", "exact foo", "assumption", "slow"])
    assert rew.tolist() == [0.0, 0.0, 1.0, 0.0] and term.tolist() == [False, False, True, False]
    assert not trunc.any() and obs[2] == "no goals" and obs[1] == START and "⊢ q" in obs[0]
    assert list(infos["outcome"]) == ["progress", "rejected", "proved", "timeout"]
    assert infos["_verified"].tolist() == [False, False, True, False] and infos["verified"][2]

    obs, rew, term, trunc, infos = envs.step(["assumption", "assumption", "ignored", "assumption"])
    assert infos["outcome"][2] == "reset" and obs[2] == START and rew[2] == 0.0  # autoreset, next step
    assert term.tolist() == [True, True, False, True]
    envs.close()
    assert used(srv) == 0


def test_more_envs_than_server_processes_is_an_error_at_once(sim_server):
    """Else the envs beyond the pool would wait ``lease_timeout_s`` each at their first reset, then fail."""
    srv = sim_server(process_factory=ScriptedProcess, max_processes=2)
    with pytest.raises(ValueError, match="runs at most 2: restart it with --max-processes 3"):
        gym.make_vec("LeanProof-v0", num_envs=3, server=srv.url, **KW)
    envs = gym.make_vec("LeanProof-v0", num_envs=2, server=srv.url, **KW)
    envs.reset(seed=0)
    assert used(srv) == 2
    envs.close()


def test_lean_calls_of_the_envs_overlap(sim_server):
    """The sub-envs' Lean calls run together (threads), not one by one: each process's tactic call
    waits at a 4-party barrier, which only opens if all four are in flight at once (if they ran one
    by one, the barrier would time out and break, and the calls fail)."""
    barrier = threading.Barrier(4, timeout=30)

    class Waiting(ScriptedProcess):
        def try_apply_tactic(self, proof_state_id, tactic, timeout_ms=1000):
            if tactic == "exact foo":
                barrier.wait()
            return super().try_apply_tactic(proof_state_id, tactic, timeout_ms)

    srv = sim_server(process_factory=Waiting, max_processes=4)
    envs = gym.make_vec("LeanProof-v0", num_envs=4, server=srv.url, **KW)
    try:
        envs.reset(seed=0)
        _, _, _, _, infos = envs.step(["exact foo"] * 4)
    finally:
        barrier.abort()  # a server thread still waiting (the test failed) goes on at once
        envs.close()
    assert list(infos["outcome"]) == ["rejected"] * 4, infos.get("error")


def test_sync_vectorization_fallback(srv):
    envs = gym.make_vec("LeanProof-v0", num_envs=2, vectorization_mode="sync", server=srv.url, **KW)
    assert isinstance(envs, SyncVectorEnv) and not isinstance(envs, LeanVectorEnv)
    obs, _ = envs.reset(seed=0)
    assert obs == (START, START)
    _, rew, term, _, _ = envs.step(["assumption", "exact foo"])
    assert rew.tolist() == [1.0, 0.0] and term.tolist() == [True, False]
    envs.close()
    assert used(srv) == 0


def test_reset_mask_same_step_mode_and_time_limit(srv):
    envs = gym.make_vec("LeanProof-v0", num_envs=2, server=srv.url, autoreset_mode=AutoresetMode.SAME_STEP,
                        max_episode_steps=2, **KW)
    envs.reset(seed=0)
    obs, rew, term, trunc, infos = envs.step(["assumption", "exact foo"])
    assert term.tolist() == [True, False] and obs[0] == START  # reset in the same step
    assert infos["final_obs"][0] == "no goals" and infos["final_info"]["verified"][0]
    obs, rew, term, trunc, infos = envs.step(["exact foo", "exact foo"])
    assert trunc.tolist() == [False, True]  # the TimeLimit of max_episode_steps=2
    obs, infos = envs.reset(options={"reset_mask": np.array([False, True])})
    assert infos["_outcome"].tolist() == [False, True] and obs[1] == START
    envs.close()


def test_server_failure_in_a_sub_env_truncates_it(sim_server):
    srv = sim_server(process_factory=ScriptedProcess)
    envs = gym.make_vec("LeanProof-v0", num_envs=2, server=srv.url, **KW)
    envs.reset(seed=0)
    srv.stop()
    _, rew, term, trunc, infos = envs.step(["split", "split"])
    assert trunc.all() and not term.any() and all("server failure" in e for e in infos["error"])
    srv.restart()
    obs, _ = envs.reset(seed=1)
    assert obs == (START, START)
    envs.close()
    assert used(srv) == 0


def test_a_faulty_server_never_breaks_the_vector_env(sim_server):
    """Random HTTP 500s, dropped connections and jitter, with autoreset: no step raises, a
    failure truncates with its error, reward comes only with a verified proof, and every
    lease goes back at the end."""
    srv = sim_server(process_factory=ScriptedProcess, max_processes=8, error_rate=0.1, drop_rate=0.05,
                     jitter_ms=5, seed=0)
    envs = gym.make_vec("LeanProof-v0", num_envs=4, server=srv.url, max_episode_steps=6, reset_attempts=8, **KW)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    menu = ["split", "assumption", "exact foo", "intro h", "slow", "exact ⟨hp, hq⟩"]
    for _ in range(40):
        _, rew, term, trunc, infos = envs.step([str(t) for t in rng.choice(menu, 4)])
        for i in np.flatnonzero(infos["_outcome"]):
            outcome = infos["outcome"][i]
            assert (rew[i] > 0) == (outcome == "proved") and (rew[i] == 0 or (term[i] and infos["verified"][i]))
            if outcome == "server_failure":
                assert trunc[i] and not term[i] and infos["error"][i]
    # Which calls failed above depends on how the envs' threads interleaved their draws from the
    # server's fault RNG. So the failure and the recovery are also forced, one step each:
    faults = srv.server.config  # read by the server at every Lean call
    faults.error_rate = 1.0  # every Lean call fails: the tactic, or the reset (all its attempts)
    _, rew, term, trunc, infos = envs.step(["split"] * 4)
    assert list(infos["outcome"]) == ["server_failure"] * 4 and trunc.all() and not term.any(), infos
    assert not rew.any() and all(infos["error"])
    faults.error_rate = faults.drop_rate = 0.0
    _, _, _, trunc, infos = envs.step(["split"] * 4)  # the autoresets go through
    assert list(infos["outcome"]) == ["reset"] * 4 and not trunc.any(), infos
    _, rew, term, _, infos = envs.step(["assumption"] * 4)
    assert list(infos["outcome"]) == ["proved"] * 4 and term.all() and rew.tolist() == [1.0] * 4
    assert all(infos["verified"])
    envs.close()
    assert used(srv) == 0


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_autoreset_during_a_server_outage_does_not_raise(sim_server, mode):
    """The server dies; the episodes end (truncated), the autoresets fail (truncated, with the
    error) without raising from step, and once the server is back the envs reset and go on."""
    srv = sim_server(process_factory=ScriptedProcess)
    envs = RecordEpisodeStatistics(gym.make_vec("LeanProof-v0", num_envs=2, server=srv.url, autoreset_mode=mode,
                                                **KW))
    envs.reset(seed=0)
    srv.stop()
    obs, _, term, trunc, infos = envs.step(["split", "split"])  # the episodes end
    assert trunc.all() and not term.any()
    if mode == AutoresetMode.SAME_STEP:  # ... and their autoreset, in the same step, fails
        assert obs == ("", "") and all("reset failed" in e for e in infos["error"])
        assert all("server failure" in e for e in infos["final_info"]["error"])
    same_step = mode == AutoresetMode.SAME_STEP
    for _ in range(2):  # the reset is tried at every step while the server is down
        obs, rew, term, trunc, infos = envs.step(["split", "split"])
        assert obs == ("", "") and trunc.all() and not term.any() and rew.tolist() == [0.0, 0.0]
        assert all("reset failed" in e and "No LeanTree server answers" in e for e in infos["error"])
        if same_step:  # every done step of SAME_STEP carries what ended: the empty stand-in observation
            assert list(infos["final_obs"]) == ["", ""] and all(infos["_final_obs"])
            assert list(infos["final_info"]["outcome"]) == ["server_failure"] * 2
    srv.restart()
    obs, rew, term, trunc, infos = envs.step(["split", "split"])  # the reset goes through
    assert obs == (START, START) and list(infos["outcome"]) == ["reset", "reset"]
    # NEXT_STEP: a reset step, as after any episode. SAME_STEP: the stand-in ends in this step, which resets
    assert trunc.all() == same_step and not trunc.any() == (not same_step)
    assert ("final_obs" in infos) == same_step
    _, rew, term, _, infos = envs.step(["assumption", "assumption"])  # the new episode's first action counts
    assert term.all() and rew.tolist() == [1.0, 1.0]
    assert infos["episode"]["l"].tolist() == [1, 1]  # (SAME_STEP used to count the stand-in's step: 2)
    envs.close()
    assert used(srv) == 0


def test_a_statement_lean_rejects_at_autoreset_does_not_raise():
    """A theorem set with a statement outside what the server can elaborate: that draw fails, the run goes on."""
    from leangym.sim.local import LocalProcess

    bad = "theorem r (x : ℝ) : x = x := by sorry"  # the simulator has no ℝ
    envs = LeanVectorEnv([lambda: gym.make("LeanProof-v0", theorem=AND, process_factory=LocalProcess)])
    envs.reset(seed=0)
    _, _, term, _, _ = envs.step(["exact ⟨hp, hq⟩"])
    assert term.all()
    envs.envs[0].unwrapped.theorems = [Theorem(bad)]
    obs, _, _, trunc, infos = envs.step(["skip"])  # the autoreset draws `bad`
    assert obs == ("",) and trunc.all() and infos["outcome"][0] == "statement_rejected"
    assert "outside the simulated fragment" in infos["error"][0]
    envs.envs[0].unwrapped.theorems = [Theorem(AND)]
    obs, _, _, trunc, infos = envs.step(["skip"])  # the next reset draws again
    assert obs == (START,) and not trunc.any()
    envs.close()
