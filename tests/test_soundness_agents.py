"""Soundness against agents with Python access (red-team round four): a prover or a search agent
holds the session object, and may rebind or edit in place whatever it hands out."""
from __future__ import annotations

import gymnasium as gym
import pytest

from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem


def _swap_in_place(obj, **fields):
    for name, value in fields.items():
        object.__setattr__(obj, name, value)  # frozen dataclasses yield to this


# What a prover holding the session might do to get `trivial` or `sorry` accepted for `False`.
SESSION_CHEATS = {
    "rebind the theorem": lambda theorem, session: setattr(session, "theorem", Theorem("theorem t : True := by sorry")),
    "rebind the policy": lambda theorem, session: setattr(session, "policy",
                                                          SoundnessPolicy(check_axioms=False, banned=())),
    "edit the theorem argument": lambda theorem, session: _swap_in_place(
        theorem, **{f: getattr(Theorem("theorem t : True := by sorry"), f) for f in ("formal_statement", "decl_name")}),
    "edit session.theorem": lambda theorem, session: _swap_in_place(
        session.theorem, **{f: getattr(Theorem("theorem t : True := by sorry"), f)
                            for f in ("formal_statement", "decl_name")}),
    "edit session.policy": lambda theorem, session: _swap_in_place(session.policy, banned=(), check_axioms=False),
    "an axiom in the header": lambda theorem, session: (
        _swap_in_place(theorem, header="axiom cheat : False"),
        _swap_in_place(session.policy, allowed_axioms=frozenset({"cheat", "propext"}))),
}


@pytest.mark.parametrize("cheat", sorted(SESSION_CHEATS))
def test_the_benchmark_checks_the_task_s_theorem_whatever_the_prover_does_to_its_session(cheat):
    """Round four: the session hands out copies, so neither rebinding nor editing in place reaches the check."""
    from leangym.session import Budget, ProofSession
    from leangym.harness.run import Task, run_attempt

    class Cheat:
        def prove(self, theorem, session: ProofSession, budget):
            try:
                SESSION_CHEATS[cheat](theorem, session)
            except AttributeError:  # a read-only property: the prover answers anyway
                pass
            return ["first | exact cheat | trivial | sorry"]

    task = Task(Theorem("theorem t : False := by sorry"), 0)
    res = run_attempt(Cheat(), LocalProcess(), task, Budget(max_lean_calls=10), clean_process=LocalProcess)
    assert res.status == "failed" and res.proof is None and res.verify_error, res
    assert task.theorem.formal_statement == "theorem t : False := by sorry"


@pytest.mark.parametrize("cheat", sorted(SESSION_CHEATS))
def test_the_env_rewards_its_own_theorem_whatever_an_agent_does_to_the_session(cheat):
    """An agent holding ``env.unwrapped.session`` (the search API) cannot change what the reward checks."""
    env = gym.make("leangym:LeanProof-v0", theorem="theorem t : False := by sorry", process_factory=LocalProcess)
    try:
        env.reset(seed=0)
        session = env.unwrapped.session
        try:
            SESSION_CHEATS[cheat](session.theorem, session)
        except AttributeError:
            pass
        for tactic in ("first | exact cheat | trivial | sorry", "trivial", "sorry"):
            _, reward, terminated, _, info = env.step(tactic)
            assert reward == 0.0 and info.get("verified") is not True and info["outcome"] != "proved", (tactic, info)
        assert "False" in env.unwrapped.session.theorem.formal_statement
    finally:
        env.close()


def test_a_str_subclass_cannot_show_the_policy_one_text_and_lean_another():
    """``verify`` reads the characters themselves: ``splitlines()`` of a subclass builds no source."""
    class Sneaky(str):
        def splitlines(self, keepends=False):
            return ["exact hp", "axiom cheat : False"]

    thm = Theorem("theorem t (p : Prop) (hp : p) : p := by sorry")
    v = verify(LocalProcess(), thm, Sneaky("exact hp"), SoundnessPolicy())
    assert v.ok and "axiom" not in v.source
    with pytest.raises(TypeError, match="a proof script is a str"):
        verify(LocalProcess(), thm, ["exact hp"], SoundnessPolicy())


class CountingProcess(LocalProcess):
    """The in-process simulator, keeping the commands it ran."""

    def __init__(self) -> None:
        super().__init__()
        self.commands: list[str] = []

    def run_command(self, source: str):
        self.commands.append(source)
        return super().run_command(source)


def env_with_a_declared_lemma() -> tuple[gym.Env, list[CountingProcess]]:
    """An env after ``reset`` whose agent declared ``helper`` through ``session.process``; and the
    processes it made so far."""
    made: list[CountingProcess] = []
    env = gym.make("leangym:LeanProof-v0", theorem="theorem t (p : Prop) (hp : p) : p := by sorry",
                   process_factory=lambda: made.append(CountingProcess()) or made[-1])
    env.reset(seed=0)
    assert not env.unwrapped.session.process.run_command("theorem helper (q : Prop) (h : q) : q := h").errors
    return env, made


def test_after_a_command_through_the_session_the_final_check_runs_on_a_clean_process():
    """``session.process.run_command`` is not filtered, and what it declares (a lemma, a macro, an
    elaborator rewriting ``#print axioms``) stays on the process: the env checks such an episode's
    proof on a clean lease, never on the process the agent changed."""
    env, made = env_with_a_declared_lemma()
    try:
        _, reward, terminated, _, info = env.step("exact hp")
        assert reward == 1.0 and terminated and info["verified"]
        assert len(made) == 2
        assert made[0].commands == ["theorem helper (q : Prop) (h : q) : q := h"]  # nothing checked there
        assert len(made[1].commands) == 1 and "#print axioms" in made[1].commands[0]
    finally:
        env.close()


def test_an_episode_without_commands_keeps_its_process():
    made: list[CountingProcess] = []
    env = gym.make("leangym:LeanProof-v0", theorem="theorem t (p : Prop) (hp : p) : p := by sorry",
                   process_factory=lambda: made.append(CountingProcess()) or made[-1])
    try:
        for _ in range(3):
            env.reset(seed=0)
            _, reward, _, _, _ = env.step("exact hp")
            assert reward == 1.0
        assert len(made) == 1 and len(made[0].commands) == 3  # the three checks, on the one lease
    finally:
        env.close()


@pytest.mark.parametrize("route", ["env.process", "an earlier episode's session"])
def test_a_command_by_any_route_is_seen(route):
    """Review: a command through ``env.unwrapped.process``, or through a session kept from an earlier
    episode on the same lease, changes the process as much as one through the current session."""
    made: list[CountingProcess] = []
    env = gym.make("leangym:LeanProof-v0", theorem="theorem t (p : Prop) (hp : p) : p := by sorry",
                   process_factory=lambda: made.append(CountingProcess()) or made[-1])
    try:
        env.reset(seed=0)
        kept = env.unwrapped.session
        env.reset(seed=0)
        process = env.unwrapped.process if route == "env.process" else kept.process
        assert not process.run_command("theorem helper (q : Prop) (h : q) : q := h").errors
        _, reward, _, _, info = env.step("exact hp")
        assert reward == 1.0 and len(made) == 2 and not any("#print axioms" in c for c in made[0].commands)
        assert not hasattr(env.unwrapped.process, "client") and not hasattr(env.unwrapped.process, "sim")
    finally:
        env.close()


def test_a_clean_lease_that_ran_the_check_counts_its_header():
    """Review: the check on the clean lease declares the header; the next episode must not declare it
    again there (Lean: already declared), or every later reset fails."""
    made: list[CountingProcess] = []
    env = gym.make("leangym:LeanProof-v0", theorem="theorem t (p : Prop) (hp : p) : p := by sorry",
                   header="theorem helper0 (q : Prop) (h : q) : q := h",
                   process_factory=lambda: made.append(CountingProcess()) or made[-1])
    try:
        env.reset(seed=0)
        env.unwrapped.session.process.run_command("theorem helper (q : Prop) (h : q) : q := h")
        _, reward, _, _, _ = env.step("exact helper0 p hp")
        assert reward == 1.0
        for _ in range(2):
            env.reset(seed=0)
            _, reward, _, _, info = env.step("exact helper0 p hp")
            assert reward == 1.0, info
    finally:
        env.close()


def test_no_clean_process_for_the_check_truncates_the_episode_without_raising():
    from leangym.backends.types import ServerError

    made: list[CountingProcess] = []

    def factory() -> CountingProcess:
        if made:
            raise ServerError("the server went away")
        made.append(CountingProcess())
        return made[-1]

    env = gym.make("leangym:LeanProof-v0", theorem="theorem t (p : Prop) (hp : p) : p := by sorry",
                   process_factory=factory)
    try:
        env.reset(seed=0)
        env.unwrapped.session.process.run_command("theorem helper (q : Prop) (h : q) : q := h")
        _, reward, terminated, truncated, info = env.step("exact hp")
        assert (reward, terminated, truncated, info["verified"]) == (0.0, False, True, False)
        assert "no clean process for the final check" in info["error"]
    finally:
        env.close()


def test_a_lease_changed_by_commands_goes_back_however_the_episode_ends():
    """Round five: a command, then ``reset()`` before the episode ends, must not leave the next episode
    (and its final check) on the changed process."""
    env, made = env_with_a_declared_lemma()
    try:
        env.reset(seed=0)  # the episode never finished
        assert len(made) == 2
        _, reward, _, _, info = env.step("exact helper p hp")
        assert reward == 0.0 and info["outcome"] == "rejected" and "helper" in info["error"]
        env.reset(seed=0)  # a lease no command touched is kept
        assert len(made) == 2
    finally:
        env.close()


def test_session_process_shows_no_way_around_the_meter():
    from leangym.session import ProofSession

    session = ProofSession(CountingProcess(), "theorem t (p : Prop) (hp : p) : p := by sorry")
    assert session.process.process_id == 0 and session.process.in_process and session.process.identity()
    for name in ("sim", "client", "_process.sim", "try_apply_tactic", "get_process"):
        with pytest.raises(AttributeError, match="every Lean call goes through the session's budget"):
            getattr(session.process, name)


@pytest.mark.parametrize("field, value", [("budget", None), ("timeout_ms", 10 ** 9),
                                          ("stats", None), ("started_at", 0.0)])
def test_what_the_budget_rests_on_is_read_only(field, value):
    from leangym.session import Budget, ProofSession

    session = ProofSession(CountingProcess(), "theorem t (p : Prop) (hp : p) : p := by sorry",
                           budget=Budget(max_lean_calls=1))
    with pytest.raises(AttributeError):
        setattr(session, field, value)
    with pytest.raises(AttributeError):  # frozen: the counters are the session's to keep
        session.stats.lean_calls = 0
    session.apply(session.root, "exact hp")
    assert session.stats.lean_calls == 1 and session.remaining_calls() == 0


def test_a_prover_cannot_edit_the_task_s_extra_fields():
    """Review: the theorem handed out was a shallow copy, so editing ``extra`` changed the category the
    harness reports."""
    from leangym.session import Budget
    from leangym.harness.run import Task, run_attempt

    class Recategorise:
        def prove(self, theorem, session, budget):
            theorem.extra["category"] = "imo"
            session.theorem.extra["category"] = "imo"
            return None

    task = Task(Theorem("theorem t (p : Prop) (hp : p) : p := by sorry", extra={"category": "algebra"}), 0)
    result = run_attempt(Recategorise(), LocalProcess(), task, Budget(max_lean_calls=5), clean_process=LocalProcess)
    assert result.category == "algebra" and task.theorem.extra == {"category": "algebra"}


# Round six: what an agent might rebind on the env itself.
ENV_SWAPS = {
    # a session of a true statement: the walk ran `omega` on the decoy's goal, and the reward's check
    # checked the decoy's theorem while info["theorem"] showed the false one
    "session": lambda: __import__("leangym.session", fromlist=["ProofSession"]).ProofSession(
        LocalProcess(), "theorem t (a : ℕ) : a + 1 = 1 + a := by sorry"),
    # a process that answers every check with "no errors, no axioms"
    "process": lambda: __import__("leangym.envs.counted", fromlist=["CountedProcess"]).CountedProcess(LocalProcess()),
    "policy": lambda: SoundnessPolicy(check_axioms=False, banned=()),
    "theorem": lambda: Theorem("theorem t (a : ℕ) : a + 1 = 1 + a := by sorry"),
    "reward_step": lambda: 1.0,  # pays for any step, proof or not
    "reward_rejected": lambda: 1.0,
}


@pytest.mark.parametrize("name", sorted(ENV_SWAPS))
def test_what_the_env_s_reward_rests_on_cannot_be_rebound(name):
    env = gym.make("leangym:LeanProof-v0", theorem="theorem t (a : ℕ) : a + 1 = a := by sorry",
                   process_factory=LocalProcess)
    env.reset(seed=0)
    with pytest.raises(AttributeError):
        setattr(env.unwrapped, name, ENV_SWAPS[name]())
    _, reward, _, _, info = env.step("omega")
    assert reward == 0.0 and info["outcome"] == "rejected"
    env.close()
