"""What a training run learns from and keeps: server failures are no verdict, held-out theorems stay held out
(also across --resume), rejected statements leave the pool, --max-minutes cuts the warm start, an interrupt
points only to this run's checkpoint; and what prove says and simulates."""
from __future__ import annotations

import json
import time

import pytest
import torch

from agents.alphaproof import checkpoint
from agents.alphaproof import sft as sft_mod
from agents.alphaproof import train as train_mod
from agents.alphaproof.interfaces import Evaluation, per_state
from agents.alphaproof.search import SearchConfig, gives_verdict, run_search
from agents.alphaproof.theorem_source import TheoremFileSource
from leangym.backends.types import Outcome, TacticResult
from leangym.session import ProofSession
from leangym.sim.local import LocalProcess

TRIVIAL = "theorem triv (p : Prop) (hp : p) : p := by sorry"
REAL = "theorem r (x : ℝ) (h : 0 ≤ x) : Real.sqrt (x ^ 2) = x := by sorry"  # the simulator refuses to start it


def tiny_args(tmp_path, name, **kw):
    base = dict(actors=2, iterations=2, sims=2, lean_calls=8, num_tactics=2, batch_size=4, learn_steps=1,
                warmup_steps=0, warmup_theorems=8, eval_every=0, eval_size=2, replay_size=1000, sft_mix=0.0,
                logdir="", checkpoint_dir=str(tmp_path / name / "ck"), seed=3, progress=False, max_tactic_tokens=8)
    base.update(kw)
    return train_mod.Args(**base)


def theorem_file(tmp_path, rows, name="thms.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return str(path)


def row(name, target="p", split=None, difficulty=1, statement=None):
    r = {"name": name, "formal_statement": statement or f"theorem {name} (p q : Prop) (hp : p) (hq : q) : {target} "
         ":= by sorry", "difficulty": difficulty}
    return r if split is None else {**r, "split": split}


class Proposes:
    """A stand-in for the network: the same tactics everywhere."""

    def __init__(self, *tactics):
        self.tactics = tactics

    def evaluate(self, states, k):
        return [Evaluation(self.tactics[:n], tuple(-float(i) for i in range(len(self.tactics[:n]))), 0.5)
                for n in per_state(k, len(states))]


@pytest.fixture
def fixed_policy(monkeypatch):
    """The trainer's network proposes ``exact hp`` and ``intro h`` (an untrained one may propose nothing)."""
    from agents.alphaproof.policy import PolicyValueNet

    fixed = Proposes("exact hp", "intro h")
    monkeypatch.setattr(PolicyValueNet, "evaluate", lambda self, states, k: fixed.evaluate(states, k))


def record_draws(monkeypatch):
    """The tasks of every training batch (evaluation does not go through train's run_searches)."""
    draws: list[list] = []
    real = train_mod.run_searches

    def recording(tasks, *a, **kw):
        draws.append(list(tasks))
        return real(tasks, *a, **kw)

    monkeypatch.setattr(train_mod, "run_searches", recording)
    return draws


# ---------------------------------------------------------------------------- server failures (defect 2)
class Flaky(LocalProcess):
    """Every Lean call of a search comes back as a server failure (HTTP 500), as from an overloaded server."""

    in_process = False

    def __init__(self):
        super().__init__(factorized=True)

    def apply_tactics(self, state, tactics, timeout_ms=1000):
        return [TacticResult(t, Outcome.SERVER_FAILURE, (), "HTTP 500: REPL died", cause="ServerError")
                for t in tactics]

    def apply_tactic(self, state, tactic, timeout_ms=1000):
        return self.apply_tactics(state, [tactic], timeout_ms)[0]


def test_a_search_that_met_server_failures_is_no_verdict_and_labels_nothing_unprovable():
    result = run_search(ProofSession(Flaky(), TRIVIAL), Proposes("exact hp"),
                        SearchConfig(num_simulations=6, max_lean_calls=6))
    assert not result.solved and result.stop_reason == "lean_calls"  # the budget went on failures
    assert result.server_failures == result.lean_calls == 4  # (the last two are kept for a final check)
    assert not gives_verdict(result)
    assert not any(r["steps_to_go"] is None for r in train_mod.rows_from_result(result, min_unsolved_visits=1))
    # the same search on a server that answers gives a verdict
    fine = run_search(ProofSession(LocalProcess(factorized=True), TRIVIAL), Proposes("exact hp"), SearchConfig())
    assert fine.verified and fine.server_failures == 0 and gives_verdict(fine)


def test_training_on_a_failing_server_records_no_verdict(tmp_path, monkeypatch, fixed_policy):
    monkeypatch.setattr(train_mod, "process_factory", lambda args, deadline=None: Flaky)
    out = train_mod.train(tiny_args(tmp_path, "flaky", iterations=2))
    assert out["iteration"] == 2 and out["history"][0]["server_failures"] > 0
    assert "solve_rate" not in out["history"][0]  # no verdict in the batch
    state = checkpoint.load(tmp_path / "flaky" / "ck" / "latest.pt")
    assert state["curriculum"]["theorems"] == []  # no theorem counted as failed
    assert not any(r.get("steps_to_go", 0) is None for r in state["replay"]["rows"])


# ---------------------------------------------------------------------------- held-out theorems (defects 3, 4)
def test_held_out_statements_never_reach_the_training_pool(tmp_path):
    path = theorem_file(tmp_path, [row("a", split="test"), row("b", "q", split="test"),
                                   row("renamed_a", split="train"), row("c", "p ∧ q", split="train")])
    src = TheoremFileSource(path, heldout_size=8)
    assert [t.theorem.name for t in src.test] == ["a", "b"]
    assert [t.theorem.name for t in src.train] == ["c"]  # renamed_a states the same as a
    only_test = theorem_file(tmp_path, [row("a", split="test"), row("renamed_a", split="train")], "only_test.jsonl")
    with pytest.raises(ValueError, match=r"only_test\.jsonl: no theorem left to train on: .*\"split\": \"train\""):
        TheoremFileSource(only_test)


def test_a_file_too_small_to_hold_any_out_says_evaluation_reuses_it(tmp_path, capsys):
    src = TheoremFileSource(theorem_file(tmp_path, [row("a")]), heldout_size=8)
    assert src.test == src.train and src.held_out.shared
    assert "too few to hold any out" in capsys.readouterr().err


def test_resume_keeps_the_held_out_theorems_whatever_the_flags(tmp_path, monkeypatch, capsys, fixed_policy):
    path = theorem_file(tmp_path, [row(f"t{i}", " ∧ ".join(["p"] * (i + 1))) for i in range(8)])
    args = dict(theorems=path, eval_size=3, actors=3)
    train_mod.train(tiny_args(tmp_path, "run", iterations=1, seed=1, **args))
    ck = tmp_path / "run" / "ck" / "latest.pt"
    kept = checkpoint.load(ck)["held_out"]
    draws = record_draws(monkeypatch)
    train_mod.train(tiny_args(tmp_path, "run", iterations=4, seed=2, resume=str(ck.parent),
                              **{**args, "eval_size": 2}))
    assert checkpoint.load(ck)["held_out"] == kept
    assert not {t.key for batch in draws for t in batch} & set(kept["keys"])  # never trained on
    assert "the held-out theorems stay the checkpoint's run's (3 statements)" in capsys.readouterr().err
    assert TheoremFileSource(path, 2, 2).default_held_out.keys != tuple(kept["keys"])  # the flags chose others


def test_an_older_checkpoint_without_a_held_out_record_still_resumes(tmp_path, capsys):
    train_mod.train(tiny_args(tmp_path, "old", iterations=1))
    ck = tmp_path / "old" / "ck" / "latest.pt"
    state = checkpoint.load(ck)
    del state["held_out"]
    torch.save(state, ck)
    out = train_mod.train(tiny_args(tmp_path, "old", iterations=2, resume=str(ck)))
    assert out["iteration"] == 2 and "held_out" in checkpoint.load(ck)
    assert "does not record its held-out theorems" in capsys.readouterr().err


# ---------------------------------------------------------------------------- rejected statements (defect 7)
def test_a_statement_the_server_rejects_leaves_the_pool_for_good(tmp_path, monkeypatch, capsys, fixed_policy):
    rows = [row("good1"), row("good2", "q"), row("held", "p ∧ q", split="test"),
            {"name": "bad", "formal_statement": REAL, "difficulty": 2}]
    args = dict(theorems=theorem_file(tmp_path, rows), actors=4, seed=0)
    draws = record_draws(monkeypatch)
    train_mod.train(tiny_args(tmp_path, "rej", iterations=2, **args))
    names = [[t.theorem.name for t in batch] for batch in draws]
    first = next(i for i, batch in enumerate(names) if "bad" in batch)  # (the one level-2 theorem is drawn)
    assert not any("bad" in batch for batch in names[first + 1:])
    err = capsys.readouterr().err
    assert err.count("warning: the server rejected bad") == 1 and "dropped from the training pool" in err
    ck = tmp_path / "rej" / "ck"
    cur = checkpoint.load(ck / "latest.pt")["curriculum"]
    assert len(cur["rejected"]) == 1 and cur["levels"] == [1]  # its level had nothing else to draw
    draws.clear()
    train_mod.train(tiny_args(tmp_path, "rej", iterations=4, resume=str(ck), **args))
    assert draws and not any(t.theorem.name == "bad" for batch in draws for t in batch)  # also after --resume


def test_a_pool_the_server_rejects_entirely_is_a_clear_error(tmp_path, fixed_policy):
    rows = [{"name": "bad", "formal_statement": REAL}, row("held", split="test")]
    with pytest.raises(ValueError, match="rejected the statement of every training theorem"):
        train_mod.train(tiny_args(tmp_path, "allbad", theorems=theorem_file(tmp_path, rows)))


# ---------------------------------------------------------------------------- --max-minutes (defects 5, 6)
class Ticking:
    """``time`` whose clock moves on 1 s at every reading: a time limit ends after a known number of readings.

    Purely virtual (it starts at a constant and never reads the real clock), so how long the machine really
    takes cannot move the cut point."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        self.now += 1.0
        return self.now

    def sleep(self, s):
        pass


def test_max_minutes_cuts_the_warm_start_and_resume_says_it_is_not_finished(tmp_path, monkeypatch, capsys):
    clock = Ticking()
    monkeypatch.setattr(train_mod, "time", clock)
    monkeypatch.setattr(sft_mod, "time", clock, raising=False)
    args = dict(warmup_steps=300, warmup_theorems=4)
    out = train_mod.train(tiny_args(tmp_path, "cut", iterations=2, max_minutes=0.5, **args))  # 30 readings
    done, planned = out["warmup_cut_at"]
    assert 0 < done < planned == 300 and out["warm_started"] and out["iteration"] == 0
    assert done < 30  # a step reads the clock at least once: the 30 s allow fewer than 30 steps
    assert f"warm start: stopped by --max-minutes after {done} of 300 steps" in capsys.readouterr().err
    monkeypatch.setattr(train_mod, "time", time)
    monkeypatch.setattr(sft_mod, "time", time)
    warm = []
    monkeypatch.setattr(train_mod, "warm_start", lambda *a: warm.append(a))
    out = train_mod.train(tiny_args(tmp_path, "cut", iterations=1, resume=str(tmp_path / "cut" / "ck"), **args))
    assert out["iteration"] == 1 and not warm  # not redone ...
    assert f"the warm start was cut by --max-minutes after {done} of 300 steps" in capsys.readouterr().err  # ... said


def test_help_says_what_a_resume_after_max_minutes_is(capsys):
    with pytest.raises(SystemExit):
        train_mod.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a run stopped by --max-minutes ends with a shorter last iteration" in text


# ---------------------------------------------------------------------------- Ctrl-C (defect 9)
def test_an_interrupt_before_this_run_saved_points_to_no_checkpoint(tmp_path, monkeypatch, capsys):
    train_mod.train(tiny_args(tmp_path, "a", iterations=1))  # another run's checkpoint in the directory

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_mod, "train_supervised", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train_mod.train(tiny_args(tmp_path, "a", warmup_steps=5, overwrite=True, seed=4))
    err = capsys.readouterr().err
    assert "nothing was saved" in err and "--resume" not in err
    monkeypatch.setattr(train_mod, "run_searches", interrupted)  # after the warm start's checkpoint
    with pytest.raises(KeyboardInterrupt):
        train_mod.train(tiny_args(tmp_path, "b"))
    assert f"go on with --resume {tmp_path / 'b' / 'ck'}" in capsys.readouterr().err


def test_an_interrupt_while_reference_proofs_replay_says_where_to_go_on(tmp_path, monkeypatch, capsys):
    # the replay of reference proofs runs on the server before the warm start (and again at every --resume):
    # a Ctrl-C there printed only "interrupted"
    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_mod, "reference_rows", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train_mod.train(tiny_args(tmp_path, "a", warmup_steps=5))
    assert "nothing was saved" in capsys.readouterr().err
    monkeypatch.undo()
    train_mod.train(tiny_args(tmp_path, "b", warmup_steps=5, iterations=1))
    monkeypatch.setattr(train_mod, "reference_rows", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train_mod.train(tiny_args(tmp_path, "b", warmup_steps=5, iterations=2, resume=str(tmp_path / "b" / "ck")))
    assert f"--resume {tmp_path / 'b' / 'ck'}" in capsys.readouterr().err


# ---------------------------------------------------------------------------- prove (defects 1, 8)
@pytest.fixture
def net(tmp_path):
    from agents.alphaproof.policy import PolicyValueNet

    return PolicyValueNet.create("tiny", seed=0, max_tactic_tokens=4)


def test_prove_simulates_states_as_the_checkpoint_was_trained(tmp_path, net, monkeypatch):
    from agents.alphaproof import prove

    made = []

    class Recording(LocalProcess):
        def __init__(self, factorized=False, process_id=0):
            made.append(factorized)
            super().__init__(factorized, process_id)

    monkeypatch.setattr("leangym.sim.local.LocalProcess", Recording)
    bare = tmp_path / "net.pt"
    net.save(str(bare))
    trained = checkpoint.save(tmp_path / "run.pt", {"net": net.to_payload(), "args": {"factorized": False}})
    for path, extra in ((bare, []), (trained, []), (bare, ["--no-factorized"])):
        prove.main(["--checkpoint", str(path), "--theorem", TRIVIAL, "--sims", "1", "--lean-calls", "2", *extra])
    assert made == [True, False, False]


def test_prove_says_when_the_network_proposed_no_tactic(tmp_path, net, monkeypatch, capsys):
    from agents.alphaproof import prove
    from agents.alphaproof.policy import PolicyValueNet

    net.save(str(tmp_path / "net.pt"))
    monkeypatch.setattr(PolicyValueNet, "evaluate", lambda self, states, k: [Evaluation((), (), 0.5) for _ in states])
    assert prove.main(["--checkpoint", str(tmp_path / "net.pt"), "--theorem", TRIVIAL, "--sims", "8"]) == 1
    err = capsys.readouterr().err
    assert "the network proposed no finished tactic" in err and "0 Lean calls" in err and "exhausted" in err


def test_a_solve_rate_drops_searches_that_met_server_failures_solved_or_not():
    """Training keeps a solved search that met server failures (a verified proof is a proof), but a
    solve rate must drop solved and unsolved ones alike, or a flaky server would raise it."""
    from agents.alphaproof.actors import verdicts
    from agents.alphaproof.search import SearchResult

    def result(verified, failures):
        return SearchResult(theorem="t", solved=verified, verified=verified, proof=None, simulations=4,
                            lean_calls=8, wall_s=0.1, stop_reason="solved" if verified else "lean_calls",
                            targets=[], server_failures=failures)

    tasks = ["solved, failures", "unsolved, failures", "solved", "unsolved", "crashed"]
    out = batch(tasks, [result(True, 2), result(False, 2), result(True, 0), result(False, 0), None])
    assert verdicts(out) == [("solved, failures", True), ("solved", True), ("unsolved", False), ("crashed", False)]
    assert verdicts(out, for_rate=True) == [("solved", True), ("unsolved", False), ("crashed", False)]


def batch(tasks, results):
    """A BatchOutcome of these tasks and results, nothing else happening."""
    from agents.alphaproof.actors import BatchOutcome, CountingEvaluator

    return BatchOutcome(list(tasks), [], list(results), [], [], 0, 0, CountingEvaluator(None))


def test_a_batch_cut_by_the_run_s_time_limit_gives_no_solve_rate_and_no_curriculum_verdicts():
    """The searches that finished before --max-minutes ran out are the quick solves: a rate over them alone
    read 0.85-1.0 in runs that solved 0.06-0.5 otherwise (long-run audit), and fed the curriculum the same."""
    from agents.alphaproof.actors import search_stats, verdicts
    from agents.alphaproof.curriculum import Curriculum
    from agents.alphaproof.replay import ReplayBuffer
    from agents.alphaproof.search import SearchResult
    from agents.alphaproof.theorem_source import Task
    from leangym.theorem import Theorem

    def result(verified, stop):
        return SearchResult(theorem="t", solved=verified, verified=verified, proof=None, simulations=4,
                            lean_calls=8, wall_s=0.1, stop_reason=stop, targets=[], server_failures=0)

    tasks = [Task(Theorem(f"theorem t{i} (p : Prop) (hp : p) : p := by sorry"), f"k{i}", 1) for i in range(3)]
    cut = batch(tasks, [result(True, "solved"), result(False, "deadline"), result(False, "deadline")])
    assert verdicts(cut, for_rate=True) == [] and "solve_rate" not in search_stats(cut)
    curriculum = Curriculum([1])
    train_mod.absorb(cut, curriculum, ReplayBuffer(100), train_mod.Args())
    assert curriculum.level_counts[1] == [0.0, 0.0] and not curriculum.theorems
    whole = batch(tasks, [result(True, "solved"), result(False, "lean_calls"), result(False, "simulations")])
    assert search_stats(whole)["solve_rate"] == 1 / 3
    train_mod.absorb(whole, curriculum, ReplayBuffer(100), train_mod.Args())
    assert curriculum.level_counts[1][0] > 0


def test_a_checkpoint_keeps_the_latest_iteration_records(tmp_path, monkeypatch):
    monkeypatch.setattr(train_mod, "HISTORY_KEPT", 2)
    out = train_mod.train(tiny_args(tmp_path, "h", iterations=3))
    assert [r["iteration"] for r in out["history"]] == [2, 3]
    assert all(r["iteration_seconds"] > 0 for r in out["history"])
