"""agents.stp: the seed edits, proofs replayed through the env, batched rounds, and tiny trainer runs."""
from __future__ import annotations

import json
import random
import subprocess
from types import SimpleNamespace
import sys
from pathlib import Path

import pytest

from agents.alphaproof.mcts import SearchConfig
from agents.alphaproof.policy import PolicyValueNet
from agents.stp import conjecturer
from agents.stp.mutate import EDITS, body_of, goal_text, mutations, parse_body, statement
from agents.stp.rounds import choose, escalating, first_goal_order, play_rounds, prover_values
from agents.stp.train import AIM_START, Args, corpus_rows, next_aim, parse_args, preference, train
from leangym.envs.conjecture_prove import ConjectureProveEnv
from leangym.proof import ProofTree
from leangym.datasets import proplogic as generator
from leangym.theorem import Theorem

REPO = Path(__file__).resolve().parent.parent
SEED = "theorem s (p q : Prop) (h₁ : p) (h₂ : q) : p ∧ q := by sorry"


def test_edits_make_statements_the_env_accepts():
    body = body_of(SEED)
    assert body == "(p q : Prop) (h₁ : p) (h₂ : q) : p ∧ q"
    s = parse_body(body)
    assert s.props == ["p", "q"] and s.hypotheses == (("h₁", "p"), ("h₂", "q")) and s.goal == "p ∧ q"
    rng = random.Random(0)
    assert EDITS["curry"](s, rng).text() == "(p q : Prop) (h₁ : p) : q → p ∧ q"
    assert EDITS["pair"](s, rng).goal.startswith("(p ∧ q) ∧ ")
    assert EDITS["weaken"](s, rng).goal in ("(p ∧ q) ∨ p", "(p ∧ q) ∨ q")
    assert len(EDITS["drop"](s, rng).hypotheses) == 1
    env = ConjectureProveEnv(theorem=[SEED], attempts=1, max_steps=1)
    for i, pt in enumerate(generator.generate(12, 5, (1, 3))):  # every edit chain elaborates
        text = statement(f"c{i}", mutations(body_of(pt.formal_statement), rng, 3))
        Theorem(text)
        env.reset()
        env.step(text)
        assert env.infos["conjecturer"]["outcome"] != "invalid", env.infos["conjecturer"].get("error")
    with pytest.raises(ValueError):
        parse_body("p ∧ q")


def test_a_branching_proof_replays_through_step_in_first_goal_order():
    tree = ProofTree("constructor", (ProofTree("exact h₁"), ProofTree("exact h₂")), (1, 1))
    assert first_goal_order(tree) == ["constructor", "exact h₁", "exact h₂"]
    env = ConjectureProveEnv(theorem=[SEED], attempts=1, factorized=True)
    env.reset()
    env.step("theorem c (p q : Prop) (h₁ : p) : q → q ∧ p ∧ q := by sorry")
    assert env.attempt == 1, env.infos["conjecturer"]
    for t in first_goal_order(ProofTree("intro h", (ProofTree("constructor", (ProofTree("exact h"), ProofTree(
            "constructor", (ProofTree("exact h₁"), ProofTree("exact h")), (1, 1))), (1, 1)),), (1,))):
        env.step(t)
    assert env.infos["conjecturer"]["outcome"] == "out_of_band" and env.infos["conjecturer"]["pass_rate"] == 1.0


def test_play_rounds_finishes_every_round():
    seeds = [{"name": "s", "formal_statement": SEED, "proof": ["constructor", "exact h₁", "exact h₂"]}]
    envs = [ConjectureProveEnv(theorem=seeds, attempts=2, max_steps=3, factorized=True) for _ in range(3)]
    for e in envs[1:]:
        e.known = envs[0].known
    conj = conjecturer.create(seed=0)
    prover = PolicyValueNet.create("tiny", seed=0, max_tactic_tokens=24)
    rounds = play_rounds(envs, conj, prover, SearchConfig(num_simulations=2, max_lean_calls=8),
                         random.Random(0), "t", seeds * 3, candidates=2)
    assert len(rounds) == 3 and all(e.agents == [] for e in envs)
    for r in rounds:
        assert r.outcome in ("invalid", "duplicate", "trivial", "in_band", "out_of_band", "unproved")
        assert r.reward == (-1.0 if r.outcome in ("invalid", "duplicate", "trivial") else
                            1.0 if r.outcome == "in_band" else 0.0)
        assert (r.pass_rate is None) == (r.outcome in ("invalid", "duplicate", "trivial"))
        assert len(r.searches) == (2 if r.pass_rate is not None else 0)


def test_escalating_attempts_double_their_budget_up_to_the_search_given():
    base = SearchConfig.for_budget(16, 4, 48, None)
    configs = escalating(base, 4)
    assert [c.num_simulations for c in configs] == [2, 4, 8, 16]
    assert [c.max_lean_calls for c in configs] == [6, 12, 24, 48]
    assert configs[-1] == base and escalating(base, 1) == [base]
    assert escalating(SearchConfig.for_budget(2, 4, None, None), 3)[0].num_simulations == 1  # never below 1
    assert [c.max_lean_calls for c in escalating(SearchConfig.for_budget(16, 4, 16, None), 4)] == [4, 4, 8, 16]
    assert escalating(SearchConfig.for_budget(1, 4, 3, None), 2)[0].max_lean_calls == 3  # never above the given
    seeds = [{"name": "s", "formal_statement": SEED, "proof": ["constructor", "exact h₁", "exact h₂"]}]
    envs = [ConjectureProveEnv(theorem=seeds, attempts=2, max_steps=3, factorized=True) for _ in range(2)]
    rounds = play_rounds(envs, conjecturer.create(seed=0), PolicyValueNet.create("tiny", seed=0, max_tactic_tokens=24),
                         escalating(SearchConfig(num_simulations=2, max_lean_calls=8), 2), random.Random(0), "e",
                         seeds * 2, candidates=2)
    for r in rounds:  # one search per attempt, the smaller first
        assert len(r.searches) == (2 if r.pass_rate is not None else 0)
    with pytest.raises(ValueError, match="one per attempt"):
        play_rounds(envs, conjecturer.create(seed=0), PolicyValueNet.create("tiny", seed=0, max_tactic_tokens=24),
                    [SearchConfig(num_simulations=2, max_lean_calls=8)], random.Random(0), "f", seeds * 2)


def test_choose_drops_seen_candidates_and_follows_the_preference():
    env = ConjectureProveEnv(theorem=[SEED], attempts=1, max_steps=1)
    env.reset(seed=0)
    seen = "(a b : Prop) (x : a) (y : b) : a ∧ b"  # the seed, binders renamed: a duplicate
    small, big = "(p q : Prop) (h₁ : p) : q → p", "(p q : Prop) (h₁ : p) : q → p ∧ (q ∨ p)"
    rng = random.Random(0)
    assert choose(env, "c", [seen, small], rng) == small
    assert choose(env, "c", [seen], rng) == seen  # all seen: played (and penalised by the env)
    assert choose(env, "c", [seen, small, big], rng, prefer="harder") == big
    assert choose(env, "c", [seen, small, big], rng, prefer="easier") == small
    assert choose(env, "c", [seen, big], rng, novel=False, prefer="easier") == seen
    assert choose(env, "c", [], rng) == ""
    assert [preference(b) for b in (None, -0.5, 0.05, 0.4)] == ["any", "easier", "any", "harder"]
    env.close()


def test_goal_text_is_the_proof_start_lean_shows():
    """--aim's values read a candidate before Lean sees it: its rendering is the text the prover later
    searches from (the simulator's first observation), up to brackets Lean's printer leaves out."""
    env = ConjectureProveEnv(theorem=[SEED], attempts=1, max_steps=1, factorized=True)
    rng, accepted = random.Random(3), 0
    for i, pt in enumerate(generator.generate(12, 7, (1, 5))):
        for body in (body_of(pt.formal_statement), mutations(body_of(pt.formal_statement), rng, 2)):
            env.reset()
            env.step(statement(f"g{i}", body))
            if env.attempt:  # accepted (not trivial): the prover's observation is Lean's proof start
                accepted += 1
                shown = str(env.observe("prover"))
                if body == body_of(pt.formal_statement):  # the generator writes Lean's own brackets
                    assert shown == goal_text(body)
                assert shown.translate({ord("("): None, ord(")"): None}) == \
                    goal_text(body).translate({ord("("): None, ord(")"): None})
    assert accepted >= 12
    env.close()
    with pytest.raises(ValueError):
        goal_text("p ∧ q")


def test_aim_plays_the_candidate_nearest_the_target_value():
    env = ConjectureProveEnv(theorem=[SEED], attempts=1, max_steps=1)
    env.reset(seed=0)
    a, b, bad = "(p q : Prop) (h₁ : p) : q → p", "(p q : Prop) (h₁ : p) : q → p ∧ (q ∨ p)", "p ∧ ("
    values = prover_values(PolicyValueNet.create("tiny", seed=0), [a, b, bad])
    assert set(values) == {a, b} and all(0.0 <= v <= 1.0 for v in values.values())  # no value: unreadable
    rng = random.Random(0)
    vals = {a: 0.2, b: 0.7}
    assert choose(env, "c", [a, b, bad], rng, prefer="value", values=vals, aim=0.3) == a
    assert choose(env, "c", [a, b, bad], rng, prefer="value", values=vals, aim=0.6) == b
    assert choose(env, "c", [bad, b], rng, prefer="value", values=vals, aim=0.0) == b  # unreadable ones last
    env.close()
    # too easy (balance > 0) lowers the target, unproved (< 0) raises it, within (0, 1)
    assert next_aim(AIM_START, 0.5) < AIM_START < next_aim(AIM_START, -0.5)
    assert next_aim(AIM_START, None) == AIM_START and 0 < next_aim(0.02, 1.0) and next_aim(0.98, -1.0) < 1
    with pytest.raises(SystemExit):
        parse_args(["--aim", "--adapt"])
    with pytest.raises(ValueError, match="--aim and --adapt both pick"):  # train() without parse_args too
        train(Args(aim=True, adapt=True, checkpoint_dir="", logdir="", progress=False))


def test_tiny_self_play_and_ablation_runs(tmp_path):
    common = dict(seeds=6, iterations=2, rounds=3, candidates=2, attempts=2, max_steps=4, seed_batch=2, sims=2,
                  lean_calls=8, warmup_steps=2, conjecturer_warmup_steps=2, conjecturer_corpus=8, learn_steps=1,
                  conjecturer_steps=1, batch_size=4, eval_size=2, progress=False)
    res = train(Args(**common, aim=True, checkpoint_dir=str(tmp_path / "sp"), logdir=str(tmp_path / "tb")))
    assert res["iterations"] == 2 and len(res["history"]) == 2
    h = res["history"][-1]
    assert res["history"][0]["aim"] == AIM_START and 0 < h["aim"] < 1  # --aim's target, logged each iteration
    shares = [v for k, v in h.items() if k.startswith("share_") and k != "share_invalid_or_duplicate"]
    assert sum(shares) == pytest.approx(1.0) and "seed_solve_rate" in h
    assert "solve_rate" in res["evaluation"] or res["evaluation"]["not_evaluated"] == 2
    saved = json.loads((tmp_path / "sp" / "history.json").read_text())
    assert saved["iterations"] == 2 and saved["args"]["conjectures"] is True
    net = PolicyValueNet.load(str(tmp_path / "sp" / "prover.pt"))  # loads where an AlphaProof net does
    assert net.max_tactic_tokens == 24
    assert any((tmp_path / "tb").iterdir())
    res = train(Args(**common, escalate=False, checkpoint_dir="", logdir=""))  # every attempt at one budget
    assert res["iterations"] == 2 and res["args"]["escalate"] is False and "share_in_band" in res["history"][-1]
    res = train(Args(**common, conjectures=False, checkpoint_dir="", logdir=""))
    assert res["iterations"] == 2 and not any(k.startswith("share_") for k in res["history"][-1])
    # --resume: both nets, history, pool and settings go on (iterations count the whole run)
    res = train(Args(**{**common, "rounds": 1, "iterations": 3}, resume=str(tmp_path / "sp"),
                     checkpoint_dir=str(tmp_path / "sp"), logdir=""))
    assert res["iterations"] == 3 and len(res["history"]) == 3 and res["args"]["rounds"] == 3
    assert res["history"][:2] == saved["history"] and "share_invalid" in res["history"][2]
    assert json.loads((tmp_path / "sp" / "history.json").read_text())["iterations"] == 3
    with pytest.raises(ValueError, match="--resume .*nothing: no checkpoint there"):
        train(Args(**common, resume=str(tmp_path / "nothing")))


def test_a_run_saved_before_aim_and_escalate_resumes_as_it_ran(tmp_path):
    from agents.alphaproof import checkpoint

    common = dict(seeds=6, iterations=1, rounds=2, candidates=2, attempts=1, max_steps=2, seed_batch=2, sims=2,
                  lean_calls=8, warmup_steps=1, conjecturer_warmup_steps=1, conjecturer_corpus=4, learn_steps=1,
                  conjecturer_steps=1, batch_size=4, eval_size=0, progress=False, logdir="")
    train(Args(**common, adapt=True, checkpoint_dir=str(tmp_path / "sp")))
    state = checkpoint.load(tmp_path / "sp" / "state.pt")
    state.pop("aim"), state["args"].pop("aim")  # as saved before --aim
    checkpoint.save(tmp_path / "sp" / "state.pt", state)
    with pytest.raises(ValueError, match="--aim: the resumed run picks its candidates with --adapt"):
        train(Args(**{**common, "iterations": 2}, aim=True, resume=str(tmp_path / "sp")))
    state["args"].pop("escalate")  # as saved before --escalate: its attempts go on at one budget
    checkpoint.save(tmp_path / "sp" / "state.pt", state)
    res = train(Args(**{**common, "iterations": 2}, resume=str(tmp_path / "sp")))
    assert res["iterations"] == 2 and res["args"]["adapt"] and not res["args"]["aim"]
    assert res["args"]["escalate"] is False
    assert not any("aim" in h for h in res["history"])  # no target is logged where none picks the candidate


def test_cli_help_and_bad_flags():
    assert parse_args(["--no-conjectures", "--rounds", "3"]).conjectures is False
    with pytest.raises(SystemExit):
        parse_args(["--rounds", "0"])
    assert parse_args(["--conjecturer-corpus", "0"]).conjecturer_corpus == 0  # no corpus
    rows = corpus_rows(Args(conjecturer_corpus=3))
    heldout = ({generator.statement_key(r["formal_statement"]) for r in rows}
               & {generator.statement_key(p) for p in generator.heldout_set()})
    assert len(rows) == 3 and not heldout
    assert corpus_rows(Args(conjecturer_corpus=3, theorems="seeds.jsonl")) == []  # a file's seeds: their language
    with pytest.raises(SystemExit):
        parse_args(["--conjecturer-corpus", "-1"])
    for hi in ("0", "1.5"):  # a pass rate: no round could be paid
        with pytest.raises(SystemExit):
            parse_args(["--band-hi", hi])
    out = subprocess.run([sys.executable, "-m", "agents.stp.train", "--help"], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "--no-conjectures" in out.stdout


def test_tiny_run_on_a_server_gives_every_lease_back(sim_server):
    import requests

    srv = sim_server(factorized=True, max_processes=8)
    res = train(Args(server=srv.url, seeds=4, iterations=1, rounds=2, candidates=2, attempts=1, max_steps=2,
                     seed_batch=2, sims=2, lean_calls=8, warmup_steps=1, conjecturer_warmup_steps=1,
                     conjecturer_corpus=4, learn_steps=1, conjecturer_steps=1, batch_size=4, eval_size=0, progress=False,
                     checkpoint_dir="", logdir=""))
    assert res["iterations"] == 1 and res["history"][0]["share_server_failure"] == 0.0
    assert requests.get(srv.url + "/status", timeout=5).json()["used_processes"] == 0


def test_leangym_env_imports_no_agent_code():
    code = ("import sys, leangym.envs.conjecture_prove, leangym; "
            "leangym.make_multi('ConjectureProve-v0', num_seeds=2); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('agents', 'baselines')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_benchmark_report_from_two_runs(tmp_path, monkeypatch):
    from test_benchmark_scripts import load_script

    bench = load_script(monkeypatch, "stp_selfplay")
    hist = [{"iteration": i, "pass_rate_accepted": 0.1 * i, "in_band_of_accepted": 0.5, "share_invalid": 0.5,
             "share_duplicate": 0.1, "share_trivial": 0.0, "share_invalid_or_duplicate": 0.6, "steps_per_proof": 3.0,
             "conjecture_connectives": 4.0 + i, "seed_solve_rate": 0.5, "pool_size": 64.0} for i in range(1, 5)]
    ev = {"evaluated": 10.0, "not_evaluated": 0.0, "solve_rate": 0.3}
    runs = {"self-play": {"args": {"rounds": 24}, "history": hist, "evaluation": ev, "iterations": 4},
            "seeds alone": {"args": {"rounds": 24}, "history": [], "evaluation": {**ev, "solve_rate": 0.4},
                            "iterations": 9}}
    opts = SimpleNamespace(minutes=1.0, eval_size=10, eval_level=4, seed=0, minif2f="")
    bench.write_report(runs, opts, tmp_path, 0)
    md = (tmp_path / "stp_selfplay.md").read_text()
    assert "| self-play | 4 | 3/10 = 0.300 | - |" in md and "| seeds alone | 9 | 4/10 = 0.400 | - |" in md
    assert "| conjecture_connectives | 5.00 -> 8.00 |" in md
    assert (tmp_path / "stp_selfplay.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # --report-from: the script's JSON plus a train run's history.json (an ablation arm, named by its flags)
    (tmp_path / "runs.json").write_text(json.dumps(runs))
    before = {"args": {"novel": False, "adapt": False, "build_on_easy": False}, "history": hist, "evaluation": ev,
              "iterations": 4}
    (tmp_path / "history.json").write_text(json.dumps(before))
    bench.main(["--report-from", str(tmp_path / "runs.json"), str(tmp_path / "history.json"), "--out", str(tmp_path)])
    md = (tmp_path / "stp_selfplay.md").read_text()
    assert "| self-play, none of them (before) | 4 | 3/10 = 0.300 | 0.10 -> 0.40 |" in md
    assert bench.arm_label({"novel": True, "aim": True}) == "self-play, --novel --aim"  # not the --novel arm's name
    assert bench._dashed(bench.load_runs([tmp_path / "runs.json", tmp_path / "history.json"]))[1] == "before the changes"
    equal = {**before, "args": {"novel": True, "escalate": False}}  # the defaults but attempts at one budget: drawn dashed
    assert bench._dashed({**runs, bench.arm_label(equal["args"]): equal}) == (hist, "attempts at one budget")
