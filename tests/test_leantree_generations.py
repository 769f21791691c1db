"""Every LeanTree server generation (1 single-branch, 2 factorized, 3 the branch API) against the client, the
env, the vector env, training and the benchmark harness; leases the server loses (reclaimed when idle,
recycled past a deadline, lost under an older generation); warm-up."""
from __future__ import annotations

import json
import logging
import time

import gymnasium as gym
import pytest
import requests
from gymnasium.utils.env_checker import check_env

import leangym  # noqa: F401  (registers the ids)
from conftest import scripted
from leangym.backends.leantree import LeanTreeClient, live_leases
from leangym.backends.types import Outcome, ServerWarmingUp, parse_tactic_reply
from leangym.sim.server import INJECTED_ERROR_TEXT
from leangym.session import ProofSession
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem

AND = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
NAMES = {1: "single-branch", 2: "factorized", 3: "branch-api"}
GENS = pytest.mark.parametrize("gen", [1, 2, 3], ids=["gen1", "gen2", "gen3"])


def used(srv) -> int:
    return requests.get(srv.url + "/status", timeout=5).json()["used_processes"]


def wait_until(cond, what: str, limit_s: float = 20.0) -> None:
    """Poll ``cond`` (no timing assertion: the limit only keeps a broken run from hanging)."""
    end = time.monotonic() + limit_s
    while not cond():
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.05)


def prove_and(env) -> dict:
    env.reset(seed=0)
    env.step("constructor")
    env.step("exact hp")
    return env.step("exact hq")[-1]


# ---------------------------------------------------------------------- the same work on every generation


@GENS
def test_full_proof_with_final_check(sim_server, gen):
    srv = sim_server(generation=gen, max_processes=2)
    env = gym.make("LeanProof-v0", theorem=AND, server=srv.url)
    obs, info = env.reset(seed=0)
    assert info["server"].generation == NAMES[gen] and info["server"].generation_number == gen
    obs, reward, terminated, truncated, info = env.step("constructor")
    assert info["outcome"] == "progress" and len(info["states"]) == (2 if gen >= 2 else 1)
    env.step("exact hp")
    obs, reward, terminated, truncated, info = env.step("exact hq")
    assert info["outcome"] == "proved" and info["verified"] and terminated and reward == 1.0
    assert "theorem" in info["proof"] and "exact hq" in info["proof"]
    env.close()
    assert used(srv) == 0


@GENS
@pytest.mark.filterwarnings("ignore:.*not having a spec")
def test_check_env(sim_server, gen):
    srv = sim_server(generation=gen, max_processes=2)
    env = gym.make("LeanProof-v0", theorem=AND, server=srv.url)
    check_env(env.unwrapped)
    env.close()
    assert used(srv) == 0


@GENS
def test_vector_env(sim_server, gen):
    srv = sim_server(generation=gen, max_processes=4)
    envs = gym.make_vec("LeanProof-v0", num_envs=2, theorem=AND, server=srv.url)
    obs, infos = envs.reset(seed=0)
    assert len(obs) == 2 and all("⊢ p ∧ q" in o for o in obs)
    for tactic in ("constructor", "exact hp", "exact hq"):
        obs, rewards, terminated, truncated, infos = envs.step([tactic, tactic])
    assert terminated.all() and (rewards == 1.0).all()
    envs.close()
    assert used(srv) == 0


@GENS
def test_train(tmp_path, sim_server, gen):
    from agents.alphaproof.train import Args, train

    srv = sim_server(generation=gen, max_processes=2)
    path = tmp_path / "thms.jsonl"
    path.write_text(json.dumps({"name": "t", "formal_statement": "theorem triv (p : Prop) (hp : p) : p := by sorry"})
                    + "\n", encoding="utf-8")
    out = train(Args(actors=2, iterations=1, sims=2, lean_calls=8, num_tactics=2, batch_size=4, learn_steps=2,
                     warmup_steps=0, warmup_theorems=8, eval_every=0, eval_size=2, replay_size=1000, sft_mix=0.0,
                     logdir=str(tmp_path / "tb"), checkpoint_dir=str(tmp_path / "ck"), seed=3, progress=False,
                     max_tactic_tokens=8, env="LeanProof-v0", server=srv.url, theorems=str(path)))
    assert out["iteration"] == 1 and out["crashes"] == 0 and out["history"][0]["failed_starts"] == 0.0
    assert used(srv) == 0


@GENS
def test_benchmark_harness(tmp_path, sim_server, gen):
    from scripts import benchmark
    from leangym.harness.records import read_results

    srv = sim_server(generation=gen, max_processes=4)
    out = tmp_path / "r.jsonl"
    assert benchmark.main(["--agent", "random", "--agent-kwargs", '{"mode": "tree"}', "--seed", "0",
                           "--dataset", "proplogic-heldout:8", "--server", srv.url, "--budget-calls", "60",
                           "--workers", "2", "--out", str(out), "--quiet", "--plot", "none"]) == 0
    rs = read_results(out)
    assert rs.header["server"]["generation"] == NAMES[gen]
    assert any(r.solved for r in rs.attempts) and not any(r.status == "infra_error" for r in rs.attempts)
    assert used(srv) == 0


# ---------------------------------------------------------------------- leases the server loses


def _step_after_loss(env, srv) -> dict:
    """The step after the server lost the env's lease: truncated with an error, never an exception."""
    obs, reward, terminated, truncated, info = env.step("constructor")
    assert truncated and not terminated and reward == 0.0
    assert info["outcome"] == "server_failure" and "no longer has" in info["error"]
    return info


def _clean_next_episode(env, srv) -> None:
    info = prove_and(env)  # the next reset leases afresh, and the episode goes through
    assert info["outcome"] == "proved" and info["verified"]
    env.close()
    assert used(srv) == 0 and not [x for x in live_leases() if x.client.url == srv.url]


def test_lease_reclaimed_mid_episode_generation_3(sim_server):
    srv = sim_server(generation=3, max_processes=2, lease_idle_timeout=0.3)
    env = gym.make("LeanProof-v0", theorem=AND, server=srv.url)
    env.reset(seed=0)
    wait_until(lambda: used(srv) == 0, "the server to reclaim the idle lease")
    info = _step_after_loss(env, srv)
    assert f"Process {env.unwrapped.process.process_id} not found" in info["error"]  # HTTP 404
    _clean_next_episode(env, srv)


@pytest.mark.parametrize("gen", [1, 2], ids=["gen1", "gen2"])
def test_process_lost_under_an_old_generation_lease(sim_server, gen):
    srv = sim_server(generation=gen, max_processes=2)
    env = gym.make("LeanProof-v0", theorem=AND, server=srv.url)
    env.reset(seed=0)
    pid = env.unwrapped.process.process_id
    assert srv.server.reclaim(pid)  # a restart of that process, a crash, a recycling
    raw = requests.post(f"{srv.url}/process/{pid}/proof/0/try_apply_tactic", json={"tactic": "skip"}, timeout=5)
    assert raw.status_code == 200 and raw.json() == {"error": f"Process {pid} not found"}  # looks like a rejection
    _step_after_loss(env, srv)  # ... but is read as the lease gone
    _clean_next_episode(env, srv)


def test_a_request_past_its_deadline_loses_the_lease_generation_3(sim_server):
    srv = sim_server(generation=3, max_processes=2)
    env = gym.make("LeanProof-v0", theorem=AND, server=srv.url)
    env.reset(seed=0)
    srv.server.expire_next(env.unwrapped.process.process_id)  # HTTP 503, and the process is recycled
    _step_after_loss(env, srv)
    _clean_next_episode(env, srv)


def test_a_lease_idle_past_the_limit_is_not_used_again_generation_3(sim_server):
    """A generation-3 lease idle near the server's lease_timeout is taken as reclaimed without asking: its id
    could name another client's process by then. Nothing is sent on it, its return included."""
    srv = sim_server(generation=3, max_processes=2, lease_idle_timeout=0.6)
    client = LeanTreeClient(srv.url, lease_idle_limit_s=0.3)
    lease = client.lease()
    root = lease.start_proof(AND)
    wait_until(lambda: used(srv) == 0, "the server to reclaim the idle lease")
    sent = srv.server.request_count
    r = lease.apply_tactic(root, "constructor")
    assert r.outcome is Outcome.SERVER_FAILURE and r.cause == "LeaseLost" and "lease_idle_limit_s" in r.error
    lease.close()
    assert srv.server.request_count == sent and lease.lost  # neither the tactic nor a return went out


def test_a_leases_idle_clock_starts_when_its_request_is_sent_generation_3(sim_server):
    """A server may count a lease idle from a request's arrival: a request longer than the limit leaves
    the lease past it when its answer comes, and nothing more is sent on it."""
    srv = sim_server(generation=3, max_processes=2, latency_ms=400)
    client = LeanTreeClient(srv.url, lease_idle_limit_s=0.3)
    lease = client.lease()
    root = lease.start_proof(AND)  # 400 ms
    sent = srv.server.request_count
    r = lease.apply_tactic(root, "constructor")
    assert r.outcome is Outcome.SERVER_FAILURE and r.cause == "LeaseLost" and "lease_idle_limit_s" in r.error
    assert srv.server.request_count == sent


def test_a_kept_lease_reclaimed_between_episodes_is_replaced_at_reset(sim_server):
    srv = sim_server(generation=3, max_processes=2, lease_idle_timeout=0.3)
    env = gym.make("LeanProof-v0", theorem=AND, server=srv.url)
    assert prove_and(env)["verified"]
    wait_until(lambda: used(srv) == 0, "the server to reclaim the idle lease")
    _clean_next_episode(env, srv)  # reset's start meets the 404 and leases again


def test_a_search_stops_a_theorem_whose_lease_is_lost(sim_server):
    from agents.alphaproof.search import SearchConfig, gives_verdict, run_search

    class Proposes:
        """The network's stand-in: the same tactics everywhere; the lease is lost after the first evaluation."""

        def __init__(self, lose):
            self.lose, self.device = lose, "cpu"

        def evaluate(self, states, k):
            from agents.alphaproof.interfaces import Evaluation

            self.lose()
            return [Evaluation(("constructor", "skip"), (-0.7, -0.7), 0.5) for _ in states]

    srv = sim_server(generation=1, max_processes=1)
    lease = LeanTreeClient(srv.url).lease()
    session = ProofSession(lease, Theorem(AND))
    result = run_search(session, Proposes(lambda: srv.server.reclaim(lease.process_id)),
                        SearchConfig.for_budget(8, 2, 16, None))
    assert result.stop_reason == "lease_lost" and not result.verified and not gives_verdict(result)
    lease.close()
    assert used(srv) == 0


def test_the_benchmark_retries_an_attempt_on_a_fresh_lease(sim_server):
    from leangym.harness.run import RunConfig, Task, run_tasks
    from leangym.session import Budget

    srv = sim_server(generation=3, max_processes=2)
    client = LeanTreeClient(srv.url)
    lost = []

    class LosesItsFirstLease:
        def prove(self, theorem, session, budget):
            if not lost:  # the server takes the first lease back mid-attempt
                lost.append(session.process.process_id)
                srv.server.reclaim(session.process.process_id)
            r = session.apply(session.root, "constructor")
            for state, tactic in zip(r.states, ("exact hp", "exact hq")):
                session.apply(state, tactic)
            return ["constructor", "· exact hp", "· exact hq"]

    results = []
    done = run_tasks([Task(Theorem(AND), 0)], LosesItsFirstLease, lambda: client.lease(timeout=10),
                     RunConfig(Budget(32)), results.append)
    assert done and [r.status for r in results] == ["proved"] and lost
    assert used(srv) == 0


# ---------------------------------------------------------------------- warm-up, detection, is_valid_source


def test_reset_during_warm_up_waits_and_says_so(sim_server, caplog):
    srv = sim_server(generation=3, max_processes=2, warmup_s=0.5)
    assert requests.get(srv.url + "/status", timeout=5).json()["status"] == "warming_up"
    r = requests.post(srv.url + "/process/get", json={"blocking": False}, timeout=5)
    assert r.status_code == 503 and r.json() == {"error": "server is warming up"}
    env = gym.make("LeanProof-v0", theorem=AND, server=srv.url)
    with caplog.at_level(logging.WARNING, logger="leangym.backends.leantree"):
        obs, info = env.reset(seed=0)
    assert "⊢ p ∧ q" in obs
    said = [r.getMessage() for r in caplog.records if "warm up" in r.getMessage()]
    assert len(said) == 1 and "waiting up to" in said[0]
    env.close()
    assert requests.get(srv.url + "/status", timeout=5).json()["status"] == "ready"


def test_a_vector_env_during_warm_up_says_so_once(sim_server, caplog):
    srv = sim_server(generation=3, max_processes=4, warmup_s=0.5)
    envs = gym.make_vec("LeanProof-v0", num_envs=3, theorem=AND, server=srv.url)
    with caplog.at_level(logging.WARNING, logger="leangym.backends.leantree"):
        obs, infos = envs.reset(seed=0)
    assert all("⊢ p ∧ q" in o for o in obs)
    assert len([r for r in caplog.records if "warm up" in r.getMessage()]) == 1  # not one per sub-env
    envs.close()
    assert used(srv) == 0


def test_the_warm_up_wait_has_a_bound_the_user_sets(sim_server, monkeypatch):
    srv = sim_server(generation=3, max_processes=2, warmup_s=60.0)
    env = gym.make("LeanProof-v0", theorem=AND, server=srv.url, warmup_wait_s=0.2)
    with pytest.raises(ServerWarmingUp, match="warmup_wait_s"):
        env.reset()
    env.close()
    monkeypatch.setenv("LEANGYM_WARMUP_WAIT_S", "0.1")  # the default of every client, for the CLIs
    assert LeanTreeClient(srv.url).warmup_wait_s == 0.1


@GENS
def test_the_generation_is_told_by_the_answers(sim_server, gen):
    """Nothing is configured: the start's id field, and a 404 on is_valid_source, tell them apart."""
    srv = sim_server(generation=gen, max_processes=1)
    client = LeanTreeClient(srv.url)
    with client.lease() as lease:
        assert client.generation == "unknown"
        root = lease.start_proof(AND)
        assert client.generation == NAMES[gen]
        r = lease.apply_tactic(root, "constructor")
        assert r.outcome is Outcome.PROGRESS and [g.target for g in r.goals] == ["p", "q"]


def test_a_server_replaced_by_another_generation_is_followed(sim_server):
    srv = sim_server(generation=1, max_processes=1)
    client = LeanTreeClient(srv.url)
    with client.lease() as lease:
        lease.start_proof(AND)
    assert client.generation == "single-branch"
    srv.server.gen = 3  # (the same URL now answers as generation 3: the proof/... routes are 404)
    with client.lease() as lease:
        pid = lease.process_id
        state = client.proof_from_sorry(pid, AND)  # a branch id, yet the client still thinks "proof"
        client._api, client._generation_sure = "proof", True
        r = lease.apply_tactic(state, "constructor")
        assert r.outcome is Outcome.PROGRESS and client._api == "branch"


@pytest.mark.parametrize("gen", [2, 3], ids=["gen2", "gen3"])
def test_is_valid_source_is_no_proof_check(sim_server, gen):
    srv = sim_server(generation=gen, max_processes=1)
    with LeanTreeClient(srv.url).lease() as lease:
        pid = lease.process_id
        sorry_proof = "theorem u (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
        r = requests.post(f"{srv.url}/process/{pid}/is_valid_source", json={"source": sorry_proof}, timeout=5)
        assert r.json() == {"is_valid": True}  # it ignores sorry ...
        assert not verify(lease, Theorem(AND), "sorry", SoundnessPolicy()).ok  # ... the final check does not


def test_a_lost_process_answered_as_http_200_at_a_start_is_a_lost_lease_not_a_rejected_statement(sim_server):
    from leangym.backends.types import LeaseLost

    class Wraps:  # a server that wraps every failure of proof_from_sorry as HTTP 200 {"error": ...}
        def __init__(self, factorized):
            from conftest import ScriptedProcess

            self.inner = ScriptedProcess(factorized)

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def proof_from_sorry(self, theorem):
            return {"error": f"Process {Wraps.pid} not found"}

    srv = sim_server(process_factory=Wraps, max_processes=1)
    lease = LeanTreeClient(srv.url).lease()
    Wraps.pid = lease.process_id
    with pytest.raises(LeaseLost):
        lease.start_proof(AND)
    assert lease.lost and "not found" in lease.lost
    lease.close()  # not sent: the server said it has no such process
    assert used(srv) == 1


@pytest.mark.parametrize("gen", [1, 2, 3])
def test_a_failure_a_server_answers_as_http_200_text_is_no_lean_verdict(sim_server, gen):
    """Generations 1-2 answer every exception of try_apply_tactic (a dead REPL, "Server not started") as
    HTTP 200 {"error": text}: only Lean's texts are a rejection; the rest is the server failing."""
    import requests

    srv = sim_server(process_factory=scripted, generation=gen, error_rate=1.0, seed=1)
    pid = LeanTreeClient(srv.url).get_process()
    route = "branch" if gen == 3 else "proof"
    raw = requests.post(f"{srv.url}/process/{pid}/{route}/0/try_apply_tactic", json={"tactic": "split"}, timeout=5)
    assert raw.status_code == (500 if gen == 3 else 200) and raw.json()["error"] == INJECTED_ERROR_TEXT
    r = LeanTreeClient(srv.url).try_apply_tactic(pid, 0, "split")
    assert r.outcome is Outcome.SERVER_FAILURE and INJECTED_ERROR_TEXT in r.error


def test_only_leans_texts_are_a_verdict_where_a_server_wraps_its_failures():
    lean = {"REPL returned error messages: [{\"severity\": \"error\", \"data\": \"x\"}]": Outcome.REJECTED,
            "REPL returned error: Lean error: unknown tactic": Outcome.REJECTED,
            "Step verification error: goals changed": Outcome.REJECTED,
            "Could not apply tactic in REPL: {}": Outcome.REJECTED,
            "Tactic application timed out.": Outcome.TIMEOUT}
    failures = ("Server not started", "Lean REPL process ended unexpectedly (killed by SIGKILL)",
                "Failed to send data to REPL: [Errno 32] Broken pipe", "")
    for text, outcome in lean.items():
        for wraps in (False, True):
            assert parse_tactic_reply(1, "t", {"error": text}, wraps_failures=wraps).outcome is outcome
    for text in failures:
        assert parse_tactic_reply(1, "t", {"error": text}, wraps_failures=True).outcome is Outcome.SERVER_FAILURE
        # generation 3 answers its failures as HTTP 5xx/404: its HTTP 200 texts are all Lean's
        assert parse_tactic_reply(1, "t", {"error": text}).outcome is Outcome.REJECTED
    gone = parse_tactic_reply(7, "t", {"error": "Process 7 not found"}, wraps_failures=True)
    assert gone.outcome is Outcome.SERVER_FAILURE and gone.cause == "LeaseLost"


@pytest.mark.parametrize("gen", [1, 3])
def test_http_503_recycles_a_lease_on_generation_3_only(sim_server, monkeypatch, gen):
    """A 503 on a Lean route means "past its deadline, recycled" on generation 3 (the lease is gone, never
    returned); from generations 1-2, or a proxy before them, it fails that call and the lease goes back."""
    srv = sim_server(process_factory=scripted, generation=gen)
    client = LeanTreeClient(srv.url)
    lease = client.lease()
    root = lease.start_proof(AND)
    real = client._transport.exchange

    def busy(method, path, *a, **kw):
        if path.endswith("try_apply_tactic"):
            return 503, b'{"error": "Service Unavailable"}'
        return real(method, path, *a, **kw)

    monkeypatch.setattr(client._transport, "exchange", busy)
    r = lease.apply_tactic(root, "split")
    assert r.outcome is Outcome.SERVER_FAILURE and "503" in r.error
    assert (r.cause == "LeaseLost") == (gen == 3) and (lease.lost is not None) == (gen == 3)
    lease.close()
    # generation 3: no return is sent (a real server recycled it; this 503 was the test's, so it stays leased)
    assert client.status()["used_processes"] == (1 if gen == 3 else 0)
