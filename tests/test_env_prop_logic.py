"""PropLogic-v0: generated theorems on the in-process simulated kernel."""
from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import leangym  # noqa: F401  (registers the ids)
from leangym.backends.types import LeanError
from leangym.envs.prop_logic import PropLogicEnv
from leangym.envs.vector import LeanVectorEnv
from leangym.datasets import proplogic as generator

BOTH = pytest.mark.parametrize("factorized", [False, True], ids=["single-branch", "factorized"])


@pytest.mark.filterwarnings("ignore:.*not having a spec")
def test_check_env_passes():
    env = gym.make("PropLogic-v0", render_mode="ansi")
    check_env(env.unwrapped)
    env.close()
    check_env(PropLogicEnv(difficulty=2))  # also the step-determinism check (spec-less: always run)


@BOTH
def test_reference_proofs_are_rewarded(factorized):
    env = gym.make("PropLogic-v0", difficulty=(1, 4), factorized=factorized)
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        assert "⊢" in obs and env.observation_space.contains(obs)
        ref = info["reference_proof"]
        assert ref and 1 <= info["difficulty"] <= 4
        for i, tactic in enumerate(ref):
            obs, reward, terminated, truncated, info = env.step(tactic)
            assert info["outcome"] in ("progress", "proved"), (ref, tactic, info.get("error"))
            assert terminated == (i == len(ref) - 1) and not truncated
        assert (obs, reward) == ("no goals", 1.0) and info["verified"], info.get("error")
        assert info["proof"] == info["theorem"].source_with_proof(info["proof_script"])
    env.close()


def test_rejected_and_banned_tactics():
    env = gym.make("PropLogic-v0", difficulty=1, reward_rejected=-0.5)
    obs0, _ = env.reset(seed=0)
    for tactic in ("exact nonsense_hyp", "sorry", "exact h\ntheorem x : False := by trivial"):
        obs, reward, terminated, truncated, info = env.step(tactic)
        assert (obs, reward, terminated, truncated) == (obs0, -0.5, False, False)
        assert info["outcome"] == "rejected" and info["error"]
    env.close()


def test_seeded_draws_stream_and_difficulty():
    env = gym.make("PropLogic-v0", difficulty=(2, 3))
    a = [env.reset(seed=7)[1]["theorem"].name] + [env.reset()[1]["theorem"].name for _ in range(5)]
    b = [env.reset(seed=7)[1]["theorem"].name] + [env.reset()[1]["theorem"].name for _ in range(5)]
    assert a == b and len(set(a)) == 6  # reproducible, and a stream of distinct theorems
    levels = {env.reset()[1]["difficulty"] for _ in range(6)}
    assert levels == {2, 3}
    assert {gym.make("PropLogic-v0", difficulty=4).reset(seed=s)[1]["difficulty"] for s in range(3)} == {4}
    env.close()


def test_heldout_split_and_training_never_overlap():
    held = gym.make("PropLogic-v0", split="heldout", difficulty=(1, 5))
    ref = generator.heldout_set()
    _, info = held.reset(options={"index": 5})
    assert info["theorem"].name == ref[5].name and info["reference_proof"] == ref[5].proof
    held_keys = {generator.statement_key(t) for t in ref}
    names = {held.reset(seed=s)[1]["theorem"].name for s in range(10)}
    assert all(n.startswith("prop_heldout") for n in names)
    train = gym.make("PropLogic-v0", split="train", difficulty=(1, 5))
    train.reset(seed=0)
    keys = [generator.statement_key(train.reset()[1]["theorem"]) for _ in range(40)]
    assert not held_keys & set(keys)
    held.close()
    train.close()


def test_session_search_api():
    env = gym.make("PropLogic-v0", difficulty=2)
    _, info = env.reset(seed=1)
    session = env.unwrapped.session
    first = info["reference_proof"][0]
    results = session.apply_many(session.root, ["exact nonsense_hyp", first])
    assert results[0].outcome.value == "rejected" and results[1].ok
    assert session.verify(list(info["reference_proof"])).ok
    env.close()


def test_vector_prop_logic():
    envs = gym.make_vec("PropLogic-v0", num_envs=3, difficulty=1)
    assert isinstance(envs, LeanVectorEnv)
    obs, infos = envs.reset(seed=0)
    assert len(obs) == 3 and all("⊢" in o for o in obs)
    actions = [proof[0] for proof in infos["reference_proof"]]
    _, rewards, terminated, truncated, step_infos = envs.step(actions)
    assert len(rewards) == 3 and not truncated.any()
    # module docstring of lean_proof.py: "proved" terminates with reward_proved (1.0) + reward_step (0.0),
    # "progress" goes on with reward_step (0.0)
    for i in range(3):
        outcome = step_infos["outcome"][i]
        assert outcome in ("progress", "proved"), (actions[i], step_infos.get("error"))
        assert bool(terminated[i]) == (outcome == "proved")
        assert rewards[i] == (1.0 if terminated[i] else 0.0)
        assert bool(terminated[i]) == (len(infos["reference_proof"][i]) == 1)
    envs.close()


def test_bad_arguments():
    with pytest.raises(ValueError, match="difficulty"):
        PropLogicEnv(difficulty=(0, 9))
    with pytest.raises(ValueError, match="split"):
        PropLogicEnv(split="test")
    with pytest.raises(TypeError, match="LeanProof-v0"):
        PropLogicEnv(server="http://x")


def test_argument_mistakes_are_clear_errors():
    import numpy as np

    for bad in ("2", 2.0, (0, 2), (1, 2, 3)):
        with pytest.raises(ValueError, match="difficulty must be a level"):
            gym.make("leangym:PropLogic-v0", difficulty=bad)
    assert gym.make("leangym:PropLogic-v0", difficulty=np.int64(2)).unwrapped.difficulty == 2
    with pytest.raises(ValueError, match="has none at difficulty 5"):
        gym.make("leangym:PropLogic-v0", split="heldout", difficulty=5, heldout_size=1)
    env = gym.make("leangym:PropLogic-v0", split="heldout")
    for index in (10**6, -1, "3"):
        with pytest.raises(ValueError, match=r"options\['index'\] must be a whole number"):
            env.reset(options={"index": index})
    env.close()


def test_copies_after_reset_draw_what_the_original_draws():
    # planners and evaluation copy envs (copy.deepcopy, pickle): the theorem stream comes along
    import copy
    import pickle

    env = gym.make("leangym:PropLogic-v0").unwrapped
    env.reset(seed=3)
    env.reset()
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    ahead = [env.reset()[0] for _ in range(3)]
    assert all([t.reset()[0] for _ in range(3)] == ahead for t in twins)


def test_async_vector_env_needs_no_shared_memory():
    """Gymnasium reads a Text space's shared memory once: observations would never change.
    Asking for it is an error that says what to do; without it, async equals sync."""
    with pytest.raises(ValueError, match="shared_memory=False"):
        gym.make_vec("leangym:PropLogic-v0", num_envs=2, vectorization_mode="async")
    sync = gym.make_vec("leangym:PropLogic-v0", num_envs=2, vectorization_mode="sync")
    par = gym.make_vec("leangym:PropLogic-v0", num_envs=2, vectorization_mode="async",
                       vector_kwargs={"shared_memory": False})
    try:
        a, b = sync.reset(seed=5)[0], par.reset(seed=5)[0]
        assert list(a) == list(b) and all(o.startswith("p") or "⊢" in o for o in a)
        assert list(sync.step(["intro h", "intro h"])[0]) == list(par.step(["intro h", "intro h"])[0])
    finally:
        sync.close()
        par.close()


def test_every_observation_in_the_space_flattens():
    from gymnasium.spaces import flatten
    from leangym.envs.spaces import UNKNOWN_CHAR

    env = PropLogicEnv()
    obs = "hж : p\n⊢ 定理"
    assert env.observation_space.contains(obs)
    flat = flatten(env.observation_space, obs)
    unknown = env.observation_space.character_index(UNKNOWN_CHAR)
    assert flat[1] == unknown and flat[0] == env.observation_space.character_index("h") and flat[-1] > unknown


def test_an_action_that_is_not_a_string_is_a_type_error():
    env = PropLogicEnv()
    env.reset(seed=0)
    for action in (5, None, b"intro h", ["intro h"]):
        with pytest.raises(TypeError, match="tactic string"):
            env.step(action)
    import numpy as np

    assert env.step(np.str_("intro h"))[4]["tactic"] == "intro h"  # numpy strings are strings


def test_make_vec_max_episode_steps_minus_one_means_no_limit():
    from gymnasium.wrappers import TimeLimit

    limit = gym.spec("PropLogic-v0").max_episode_steps
    assert limit == 64  # envs_registry.yaml
    envs = gym.make_vec("leangym:PropLogic-v0", num_envs=2, max_episode_steps=-1)
    try:
        assert not any(isinstance(e, TimeLimit) for e in envs.envs)
        envs.reset(seed=0)
        for _ in range(limit + 6):  # a rejected tactic leaves the episode running
            _, rewards, terminated, truncated, infos = envs.step(["exact nonsense_hyp"] * 2)
            assert not truncated.any() and not terminated.any()
            assert list(infos["outcome"]) == ["rejected", "rejected"]
            assert "truncated_by" not in infos
    finally:
        envs.close()
    # the control: with the registered limit the same steps truncate at step `limit`
    envs = gym.make_vec("leangym:PropLogic-v0", num_envs=2)
    try:
        envs.reset(seed=0)
        for step in range(1, limit + 1):
            _, _, terminated, truncated, _ = envs.step(["exact nonsense_hyp"] * 2)
            assert list(truncated) == [step == limit] * 2 and not terminated.any()
    finally:
        envs.close()


@pytest.mark.parametrize("factorized", [False, True], ids=["single-branch", "factorized"])
def test_real_proofs_in_untidy_text_are_rewarded(factorized):
    """Steps Lean accepts must assemble into a proof Lean accepts: indentation, bullets on their
    own line and multi-line comments that mention command words (false negatives before)."""
    thm = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
    for steps in (["constructor", "  exact hp", "\n   exact hq"],
                  ["/- split, then close each side,\n   for example by assumption -/\nconstructor", "·\n  exact hp",
                   "exact hq"],
                  ["constructor\r\n", "exact hp\r\n", "exact hq"]):
        env = PropLogicEnv(factorized=factorized)
        env.reset(options={"theorem": thm})
        for step in steps:
            _, reward, terminated, _, info = env.step(step)
        assert terminated and reward == 1.0, (steps, info.get("error"))
    # what was checked is what ran, one tactic per step (`intro a` + `  intro b` once read `intro a intro b`)
    env = PropLogicEnv(factorized=factorized)
    env.reset(options={"theorem": "theorem u (p : Prop) : p → p → p := by sorry"})
    for step in ("intro a", "  intro b", "  exact a"):
        _, reward, _, _, info = env.step(step)
    assert reward == 1.0 and info["proof_script"] == "intro a\nintro b\nexact a"


def test_line_breaks_lean_and_python_read_differently_are_refused():
    env = PropLogicEnv()
    env.reset(options={"theorem": "theorem t (p : Prop) (hp : p) : p := by sorry"})
    for step in ("exact\rhp", "exact\u2028hp", "exact\x0chp"):
        _, reward, _, _, info = env.step(step)
        assert reward == 0.0 and "only with" in info["error"]


@pytest.mark.parametrize("factorized", [False, True], ids=["single-branch", "factorized"])
def test_scoped_set_option_and_open_steps_are_rewarded(factorized):
    """`set_option LIMIT N in tac` and `open NS in tac` pass the soundness policy; the simulated
    kernel runs `tac` (it once answered "unknown tactic"), stepwise and in the final check."""
    thm = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
    for steps in (["set_option maxRecDepth 100 in constructor", "open Nat in exact hp", "exact hq"],
                  ["set_option maxHeartbeats 400000 in\nconstructor", "exact hp", "open Classical in\nexact hq"]):
        env = PropLogicEnv(factorized=factorized)
        env.reset(options={"theorem": thm})
        for step in steps:
            _, reward, terminated, _, info = env.step(step)
            assert info["outcome"] in ("progress", "proved"), (step, info.get("error"))
        assert terminated and reward == 1.0 and info["verified"], (steps, info.get("error"))
    env = PropLogicEnv(factorized=factorized)
    env.reset(options={"theorem": thm})
    _, reward, _, _, info = env.step("set_option maxRecDepth 100 in sorry")  # still the policy's to refuse
    assert info["outcome"] == "rejected" and "sorry" in info["error"]
    _, reward, _, _, info = env.step("set_option pp.all true in constructor")  # refused by the policy first
    assert info["outcome"] == "rejected" and info["error"]


def test_an_index_on_the_training_stream_is_an_error_not_ignored():
    """The training split is a stream without positions: an index would be silently ignored."""
    env = gym.make("PropLogic-v0")
    with pytest.raises(ValueError, match="picks a held-out theorem: use split='heldout'"):
        env.reset(seed=0, options={"index": 0})
    obs, _ = env.reset(seed=0)  # the env is still usable (no passive checker left broken by the raise)
    fresh = gym.make("PropLogic-v0")
    assert obs == fresh.reset(seed=0)[0]  # and the refused reset drew nothing from the stream
    fresh.close()
    obs, _ = env.reset(options={"theorem": "theorem t (p : Prop) : p → p := by sorry"})
    assert obs == "p : Prop\n⊢ p → p"
    obs, reward, terminated, _, info = env.step("intro h")
    assert info["outcome"] == "progress" and obs == "p : Prop\nh : p\n⊢ p" and reward == 0.0 and not terminated
    _, reward, terminated, _, info = env.step("exact h")
    assert info["outcome"] == "proved" and reward == 1.0 and terminated, info
    env.close()


def test_a_seeded_reset_with_a_given_theorem_still_seeds_the_stream():
    # reset(seed=s, options={"theorem": T}) draws nothing from the stream; the next reset() must
    # still start it from s, whatever the env drew before (Gymnasium's seeding contract)
    T = "theorem z (p : Prop) (hp : p) : p := by sorry"
    nexts = []
    for history in ([], [0, None], [1]):
        env = gym.make("PropLogic-v0")
        for s in history:
            env.reset(seed=s)
        assert env.reset(seed=5, options={"theorem": T})[1]["theorem"].name == "z"
        nexts.append([env.reset()[1]["theorem"].formal_statement for _ in range(3)])
        env.close()
    assert nexts[0] == nexts[1] == nexts[2]


def test_make_vec_reads_max_episode_steps_as_gym_make_does():
    from gymnasium.wrappers import TimeLimit

    for mode in ("vector_entry_point", "sync"):
        for value, limit in ((None, 64), (-1, None), (5, 5)):  # None: the registry's limit, as gym.make
            envs = gym.make_vec("leangym:PropLogic-v0", num_envs=2, vectorization_mode=mode,
                                max_episode_steps=value)
            try:
                sub = envs.envs[0]
                assert sub.spec is not None and sub.spec.id == "PropLogic-v0"
                assert (sub.spec.max_episode_steps if isinstance(sub, TimeLimit) else None) == limit, (mode, value)
            finally:
                envs.close()


def test_unknown_reset_options_and_a_failed_reset_leave_no_old_episode():
    env = gym.make("PropLogic-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown reset option.*theorm.*known: theorem, index"):
        env.reset(options={"theorm": "theorem z (p : Prop) (hp : p) : p := by sorry"})
    with pytest.raises(RuntimeError, match="call reset"):  # the old episode ended with the reset
        env.step("intro h")
    with pytest.raises(LeanError):  # a statement Lean rejects
        env.reset(options={"theorem": "theorem bad : := by sorry"})
    assert env.unwrapped.theorem is None and env.unwrapped.goals == ()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("intro h")
    assert env.reset(seed=1)[0]  # and the env works again
    env.close()


@pytest.mark.filterwarnings("ignore:.*render_mode='rgb_array'")  # gym.make's warning before the env refuses it
def test_sb3_make_vec_env_with_the_menu_wrapper():
    # stable-baselines3's make_vec_env asks for render_mode="rgb_array" and falls back on a TypeError
    from stable_baselines3.common.env_util import make_vec_env

    from baselines.menu_env import TacticMenuEnv

    with pytest.raises(ValueError, match="render_mode must be one of"):  # still a clear error
        gym.make("PropLogic-v0", render_mode="rgb_array")
    envs = make_vec_env("PropLogic-v0", n_envs=2, seed=0, wrapper_class=TacticMenuEnv)
    try:
        obs = envs.reset()
        assert obs.shape[0] == 2
    finally:
        envs.close()


def test_a_seeded_reset_that_fails_before_seeding_leaves_the_stream_alone():
    def run(bad_reset):
        env = PropLogicEnv()
        env.reset(seed=1)
        if bad_reset:
            with pytest.raises(ValueError, match="unknown reset option"):
                env.reset(seed=2, options={"indx": 0})
        return [env.reset()[1]["theorem"].formal_statement for _ in range(3)]

    assert run(True) == run(False)


def test_a_training_stream_that_runs_out_starts_again(monkeypatch):
    """At difficulty 1 the generator has about 22,000 distinct statements: once they are drawn, reset()
    goes on with them in another order instead of raising StopIteration."""
    from leangym.envs import prop_logic
    from leangym.datasets import proplogic as generator

    few = generator.generate(2, 0, 1)
    monkeypatch.setattr(prop_logic.generator, "training_stream", lambda seed, *a, **kw: iter(few))
    env = gym.make("PropLogic-v0", difficulty=1)
    names = [env.reset(seed=0)[1]["theorem"].name] + [env.reset()[1]["theorem"].name for _ in range(4)]
    assert set(names) == {t.theorem.name for t in few}
    env.close()


def test_an_endless_stream_remembers_a_bounded_number_of_statements():
    from leangym.datasets import proplogic as generator

    stream = generator._stream(0, 1, set(), 0.1, 0.4, "p", "train", remember=50)
    drawn = [generator.statement_key(next(stream).theorem) for _ in range(300)]
    assert all(len(set(drawn[i:i + 50])) == 50 for i in range(len(drawn) - 50))  # no repeat within 50
    assert len(stream.gi_frame.f_locals["drawn"]) == 50
