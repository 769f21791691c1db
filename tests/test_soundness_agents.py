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


def test_session_process_shows_no_way_around_the_meter():
    from leangym.session import ProofSession

    session = ProofSession(CountingProcess(), "theorem t (p : Prop) (hp : p) : p := by sorry")
    assert session.process.process_id == 0 and session.process.in_process and session.process.identity()
    for name in ("sim", "client", "_process.sim", "try_apply_tactic", "get_process"):
        with pytest.raises(AttributeError, match="every Lean call goes through the session's gate"):
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
    "process": LocalProcess,
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
