"""The tactic menu, its Gymnasium wrapper (check_env, masks) and MaskablePPO end to end (a few hundred steps)."""
from __future__ import annotations

import tempfile

import gymnasium as gym
import numpy as np
import pytest

import leangym  # noqa: F401  (registers PropLogic-v0)
from baselines.maskable_ppo import MaskablePPOProver, make_env, train
from baselines.menu_env import TacticMenuEnv
from baselines.tactic_menu import NO_CANDIDATE, TacticMenu, shape
from leangym.backends.types import Goal, Hypothesis
from leangym.session import Budget, ProofSession
from leangym.datasets.proplogic import heldout_set
from leangym.sim.local import LocalProcess
from leangym.theorem import Theorem
from leangym.harness.run import Task, run_attempt


@pytest.mark.parametrize("formula, head", [
    ("p ∧ q", "and"), ("¬(p ∧ q)", "not"), ("¬p → q", "imp"), ("(p → q)", "imp"), ("p ∨ q ∧ r", "or"),
    ("(p ∧ q) ∧ ¬q", "and"), ("p ↔ q → r", "iff"), ("False", "false"), ("2 + 3 = 5", "rel"), ("q", "atom"),
    ("p → False", "not"), ("(p ∧ q) → (False)", "not"), ("p → q → False", "imp"), ("(p → False) → q", "imp"),
])
def test_shape_reads_the_top_connective(formula: str, head: str) -> None:
    assert shape(formula) == head


def test_menu_fills_slots_and_masks_by_shape() -> None:
    goal = Goal((Hypothesis("p", "Prop"), Hypothesis("q", "Prop"), Hypothesis("h₁", "p ∨ q"),
                 Hypothesis("h₂", "¬p")), "q ∨ p")
    menu = TacticMenu(4).build([goal])
    on = {t for t, ok in zip(menu.tactics, menu.mask) if ok}
    assert {"left", "right", "rcases h₁ with h0 | h1", "exact absurd h₁ h₂", "exact h₂ h₁", "assumption"} <= on
    assert not {"intro h0", "exact h₁.1", "rcases h₂ with h0 | h1", "exact h₁ h₂"} & on
    # constructor on ∨ is Lean 4's Or.inl; apply h, like exact h, is kept for any hypothesis (whether it
    # fits the goal is Lean's to say)
    assert {"constructor", "apply h₁"} <= on
    assert all(t is not None for t, ok in zip(menu.tactics, menu.mask) if ok)
    assert TacticMenu(4).tactic(menu, len(menu.tactics) - 1) == NO_CANDIDATE  # slot 4 of 4 is empty


def test_masked_moves_of_these_shapes_are_accepted_by_the_simulator() -> None:
    # found by an audit comparing masks with what the kernel accepts: each was masked though valid
    menu = TacticMenu(4)
    cases = [("theorem t (p q : Prop) (hq : q) : p ∨ q := by sorry", "constructor"),
             ("theorem t (p q : Prop) (h : p) : p := by sorry", "apply h"),
             ("theorem t (p q : Prop) (h : p) (g : p → False) : q := by sorry", "exact absurd h g")]
    for statement, tactic in cases:
        session = ProofSession(LocalProcess(), Theorem(statement))
        built = menu.build(session.root.goals)
        assert built.mask[built.tactics.index(tactic)], (statement, tactic)
        assert session.apply(session.root, tactic).outcome.name in ("PROGRESS", "PROVED"), (statement, tactic)


def test_wrapper_passes_check_env() -> None:
    from stable_baselines3.common.env_checker import check_env

    check_env(TacticMenuEnv(gym.make("PropLogic-v0")))


def test_masks_are_valid_over_random_episodes() -> None:
    env = make_env(seed=3)
    rng = np.random.default_rng(0)
    for episode in range(5):
        env.reset(seed=episode)
        done = False
        while not done:
            mask = env.action_masks()
            assert mask.dtype == bool and mask.shape == (env.action_space.n,) and mask.any()
            a = int(rng.choice(np.flatnonzero(mask)))
            obs, _, terminated, truncated, info = env.step(a)
            assert env.observation_space.contains(obs)
            done = terminated or truncated
    env.close()


def test_rejected_actions_are_masked_until_the_state_changes() -> None:
    env = make_env(seed=0)
    env.reset(options={"theorem": "theorem t (p q : Prop) (h₁ : q) (h₂ : p) : p := by sorry"})
    first = env.action_masks()
    exact_h1 = env.get_wrapper_attr("_menu").tactics.index("exact h₁")
    _, _, _, _, info = env.step(exact_h1)
    assert info["outcome"] == "rejected"
    assert first[exact_h1] and not env.action_masks()[exact_h1]
    assert (env.action_masks() | np.eye(len(first), dtype=bool)[exact_h1] == first).all()


def test_an_action_outside_the_menu_is_refused_at_step() -> None:
    """999, -1, "3" or 3.7 once became the tactic `fail` and broke the next action_masks(): now an error."""
    env = make_env(seed=0)
    env.reset(seed=0)
    n = env.action_space.n
    for bad in (n, 999, -1, "3", 3.7, True, np.array([1, 2])):
        with pytest.raises(ValueError, match=rf"not in Discrete\({n}\)"):
            env.step(bad)
    assert env.action_masks().shape == (n,)
    for good, index in ((np.int64(2), 2), (np.array(1), 1), (np.array([1]), 1)):  # SB3's forms of one index
        env.reset(seed=0)
        expected = env.get_wrapper_attr("menu_spec").tactic(env.get_wrapper_attr("_menu"), index)
        _, _, _, _, info = env.step(good)
        assert info["tactic"] == expected
    env.close()


def test_short_training_then_the_prover_returns_verified_or_none(tmp_path, monkeypatch) -> None:
    path = tmp_path / "ppo.zip"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where SB3's default logger would write
    train(256, str(path), n_envs=2, n_steps=64, batch_size=64, n_epochs=1)
    assert list(scratch.glob("SB3-*")) == []  # a silent run leaves no SB3-<date> folder behind
    prover = MaskablePPOProver(str(path), episodes=2, max_steps=8)
    for t in heldout_set(3):
        prover.set_seed(0)
        session = ProofSession(LocalProcess(), t.theorem, budget=Budget(16))
        proof = prover.prove(t.theorem, session, session.budget)
        assert proof is None or session.verify(proof).ok
        assert 0 < session.stats.lean_calls <= 16  # the policy did send tactics to Lean
    # an easy theorem (the menu offers `exact hp` and `assumption`): a seeded run finds a verified proof
    easy = Theorem("theorem easy (p : Prop) (hp : p) : p := by sorry")
    prover.set_seed(0)
    session = ProofSession(LocalProcess(), easy, budget=Budget(16))
    proof = prover.prove(easy, session, session.budget)
    assert proof is not None and session.verify(proof).ok
    assert 0 < session.stats.lean_calls <= 16
    r = run_attempt(prover, LocalProcess(), Task(heldout_set(1)[0].theorem, 0), Budget(16))
    assert r.status in ("proved", "failed") and 0 < r.lean_calls <= 16


def test_the_wrapper_is_rebuilt_from_its_spec() -> None:
    env = make_env(0)
    again = gym.make(env.spec)
    assert isinstance(again, TacticMenuEnv) and again.reset(seed=0)[0].shape == env.observation_space.shape


def test_runs_with_other_seeds_train_on_other_theorem_streams() -> None:
    def streams(seed: int) -> list[int]:
        model = train(1, seed=seed, n_envs=3, n_steps=8, batch_size=8)
        return [e.unwrapped._stream_at[0] for e in model.env.envs]

    assert not set(streams(0)) & set(streams(1))


def test_training_envs_never_draw_the_theorems_an_evaluation_on_n_scores():
    """`--eval N` scores on heldout_set(N); the env excludes only its own heldout_size (200 by
    default) from training, so for N > 200 training must be told to exclude N (without it, these
    1500 draws hold 19 of heldout_set(300))."""
    from baselines.maskable_ppo import TRAIN_ENV, heldout_excluded
    from leangym.datasets.proplogic import statement_key

    n = 300
    held = {statement_key(t.theorem) for t in heldout_set(n)}
    env = gym.make("PropLogic-v0", **{**TRAIN_ENV, **heldout_excluded(n)}).unwrapped
    env.reset(seed=0)
    drawn = set()
    for _ in range(1500):
        env.reset()
        drawn.add(statement_key(env._current))
    assert not drawn & held
