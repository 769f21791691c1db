"""The simulated Lean 4 kernel tactic by tactic: goal display, tactics, errors, scoped `in` forms, the
process API. (Whole commands, axioms, check_proof, statements: test_sim_kernel_commands.py.)"""
from __future__ import annotations

import json
import re
import time

import pytest

from leangym.backends.types import Outcome, parse_goal
from leangym.sim.kernel import check_proof
from leangym.sim.local import LocalProcess
from leangym.sim.process import SimProcess

T_AND = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"
T_OR = "theorem t (p q : Prop) : p ∨ q → q ∨ p := by sorry"


class Session:
    """A SimProcess plus helpers that return goal texts (as Lean prints them) or the error text."""

    def __init__(self, factorized: bool = False):
        self.p = SimProcess(factorized=factorized)

    def start(self, stmt: str) -> int:
        # a proof start declares its statement on the process, as LeanTree's does: a name of its own each time
        self.starts = getattr(self, "starts", 0) + 1
        stmt = re.sub(r"^(theorem|lemma) (\w+)", lambda m: f"{m[1]} {m[2]}_{self.starts}", stmt, count=1, flags=re.M)
        r = self.p.proof_from_sorry(stmt)
        assert "value" in r, r
        return r["value"]["proof_state_id"]

    def run(self, sid: int, tactic: str, timeout_ms: int = 1000):
        r = self.p.try_apply_tactic(sid, tactic, timeout_ms)
        if "error" in r:
            return None, r["error"]
        return r["value"], None

    def ok(self, sid: int, tactic: str) -> tuple[int, str]:
        """Apply; return (new state id, text of all goals)."""
        value, err = self.run(sid, tactic)
        assert err is None, f"{tactic!r} failed: {err}"
        goals = [parse_goal(g) for b in value for g in b["goals"]]
        text = "\n\n".join(g.to_text() for g in goals) or "no goals"
        return (value[0]["proof_state_id"] if value else -1), text

    def err(self, sid: int, tactic: str) -> str:
        value, err = self.run(sid, tactic)
        assert err is not None, f"{tactic!r} unexpectedly succeeded: {value}"
        return err

    def steps(self, stmt: str, *tactics: str) -> str:
        sid = self.start(stmt)
        text = ""
        for t in tactics:
            sid, text = self.ok(sid, t)
        return text


@pytest.fixture
def s():
    return Session()


def data_of(err: str) -> str:
    prefix = "REPL returned error messages: "
    assert err.startswith(prefix), err
    return json.loads(err[len(prefix):])[0]["data"]


# --------------------------------------------------------------------------- the brief's examples


def test_constructor_then_exact(s):
    sid = s.start(T_AND)
    sid, text = s.ok(sid, "constructor")
    assert text == ("case left\np q : Prop\nhp : p\nhq : q\n⊢ p\n\n"
                    "case right\np q : Prop\nhp : p\nhq : q\n⊢ q")
    sid, text = s.ok(sid, "exact hp")
    assert text.startswith("case right")
    sid, text = s.ok(sid, "exact hq")
    assert text == "no goals"


def test_or_comm_with_rcases(s):
    assert s.steps(T_OR, "intro h", "rcases h with h | h") == (
        "case inl\np q : Prop\nh : p\n⊢ q ∨ p\n\ncase inr\np q : Prop\nh : q\n⊢ q ∨ p")
    assert s.steps(T_OR, "intro h", "rcases h with h | h", "exact Or.inr h", "exact Or.inl h") == "no goals"


@pytest.mark.parametrize("tac", ["norm_num", "decide", "rfl", "exact rfl", "simp"])
def test_closed_arithmetic(s, tac):
    assert s.steps("theorem t : 2 + 2 = 4 := by sorry", tac) == "no goals"


@pytest.mark.parametrize("tac", ["decide", "rfl", "exact rfl"])
def test_false_arithmetic_fails(s, tac):
    sid = s.start("theorem t : 2 + 2 = 5 := by sorry")
    s.err(sid, tac)


def test_decide_message(s):
    sid = s.start("theorem t : 2 + 2 = 5 := by sorry")
    assert data_of(s.err(sid, "decide")) == "tactic 'decide' proved that the proposition\n  2 + 2 = 5\nis false"
    sid = s.start("theorem t (p : Prop) : p ∨ ¬p := by sorry")
    # Lean refuses free variables before it looks for a Decidable instance (a Prop variable is one too)
    assert data_of(s.err(sid, "decide")).startswith("expected type must not contain free variables\n  p ∨ ¬p")


# --------------------------------------------------------------------------- display


def test_anonymous_names_and_shadowing(s):
    assert s.steps("theorem t (p q : Prop) : p → q → p := by sorry", "intro", "intro") == \
        "p q : Prop\na✝¹ : p\na✝ : q\n⊢ p"
    assert s.steps("theorem t (p : Prop) : p → p → p := by sorry", "intro h h") == "p : Prop\nh✝ h : p\n⊢ p"
    assert s.steps("theorem t (p q : Prop) : p → q → p := by sorry", "intros") == "p q : Prop\na✝¹ : p\na✝ : q\n⊢ p"


def test_precedence_printing(s):
    stmt = "theorem t (p q r : Prop) : ((p ∧ q) → r) ↔ (p → (q → r)) := by sorry"
    assert s.steps(stmt, "skip") == "p q r : Prop\n⊢ p ∧ q → r ↔ p → q → r"
    stmt = "theorem t (p q r : Prop) : ¬(p ∨ q) → (¬p ∧ ¬q) ∨ (r → p) := by sorry"
    assert s.steps(stmt, "skip").endswith("⊢ ¬(p ∨ q) → ¬p ∧ ¬q ∨ (r → p)")
    stmt = "theorem t : (2 : ℕ) * (3 + 4) - 1 ≠ 2 ^ (1 + 1) ^ 2 := by sorry"
    assert s.steps(stmt, "skip") == "⊢ 2 * (3 + 4) - 1 ≠ 2 ^ (1 + 1) ^ 2"
    stmt = "theorem t (p q : Prop) : (p → q) → ¬¬p → (p ∨ q) ∧ True := by sorry"
    assert s.steps(stmt, "skip").endswith("⊢ (p → q) → ¬¬p → (p ∨ q) ∧ True")


def test_cases_names_and_tags(s):
    stmt = "theorem t (p q r : Prop) (h : (p ∧ q) ∨ r) : True := by sorry"
    text = s.steps(stmt, "cases h")
    assert text == ("case inl\np q r : Prop\nh✝ : p ∧ q\n⊢ True\n\ncase inr\np q r : Prop\nh✝ : r\n⊢ True")
    text = s.steps(stmt, "rcases h with ⟨a, b⟩ | c")
    assert text.startswith("case inl.intro\np q r : Prop\na : p\nb : q\n⊢ True\n\ncase inr")
    text = s.steps("theorem t (p q : Prop) (h : p ∧ q) : q := by sorry", "cases h")
    assert text == "case intro\np q : Prop\nleft✝ : p\nright✝ : q\n⊢ q"
    text = s.steps("theorem t (p q : Prop) (h : p ∧ q) : q := by sorry", "obtain ⟨a, b⟩ := h")
    assert text == "case intro\np q : Prop\na : p\nb : q\n⊢ q"


def test_constructor_tags(s):
    assert s.steps("theorem t (p q : Prop) : p ↔ q := by sorry", "constructor") == \
        "case mp\np q : Prop\n⊢ p → q\n\ncase mpr\np q : Prop\n⊢ q → p"
    assert s.steps("theorem t (p q : Prop) : p ∨ q := by sorry", "left") == "case h\np q : Prop\n⊢ p"
    assert s.steps("theorem t (p q : Prop) : p ∨ q := by sorry", "right") == "case h\np q : Prop\n⊢ q"
    assert s.steps("theorem t : True := by sorry", "constructor") == "no goals"
    # nested tags append to the parent's
    assert s.steps("theorem t (p q r : Prop) : p ∧ (q ∧ r) := by sorry", "constructor", "skip").startswith("case left")
    text = s.steps("theorem t (p q r : Prop) (hp : p) : p ∧ (q ∧ r) := by sorry", "constructor", "exact hp",
                   "constructor")
    assert text.startswith("case right.left") and "case right.right" in text


def test_apply_goal_tags(s):
    stmt = "theorem t (p q r : Prop) (h : p → q → r) (hp : p) (hq : q) : r := by sorry"
    assert s.steps(stmt, "apply h").count("case a") == 2
    one = s.steps("theorem t (p q : Prop) (h : p → q) : q := by sorry", "apply h")
    assert one == "p q : Prop\nh : p → q\n⊢ p"
    assert s.steps(stmt, "apply h", "exact hp", "exact hq") == "no goals"
    assert s.steps("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry", "apply And.intro") \
        .startswith("case left")
    assert s.steps("theorem t (p q : Prop) (hp : p) : p ∨ q := by sorry", "apply Or.inl", "exact hp") == "no goals"
    assert s.steps("theorem t (p : Prop) (hn : ¬p) (hp : p) : False := by sorry", "apply hn", "exact hp") == "no goals"


def test_refine_and_have(s):
    assert s.steps(T_AND, "refine ⟨?_, ?_⟩").startswith("case refine_1")
    assert s.steps(T_AND, "refine ⟨hp, ?_⟩") == "p q : Prop\nhp : p\nhq : q\n⊢ q"
    text = s.steps("theorem t (p q : Prop) (hp : p) (h : p → q) : q := by sorry", "have hq : q")
    assert text == "case hq\np q : Prop\nhp : p\nh : p → q\n⊢ q\n\np q : Prop\nhp : p\nh : p → q\nhq : q\n⊢ q"
    assert s.steps("theorem t (p q : Prop) (hp : p) (h : p → q) : q := by sorry",
                   "have hq : q := h hp", "exact hq") == "no goals"
    assert s.steps("theorem t (p q : Prop) (hp : p) (h : p → q) : q := by sorry",
                   "have := h hp", "exact this") == "no goals"


def test_classical_tactics(s):
    text = s.steps("theorem t (p : Prop) : p ∨ ¬p := by sorry", "by_cases h : p")
    assert text == "case pos\np : Prop\nh : p\n⊢ p ∨ ¬p\n\ncase neg\np : Prop\nh : ¬p\n⊢ p ∨ ¬p"
    assert s.steps("theorem t (p : Prop) : ¬¬p → p := by sorry", "intro h", "by_contra hn", "exact h hn") == "no goals"
    assert s.steps("theorem t (p : Prop) : p ∨ ¬p := by sorry", "exact Classical.em p") == "no goals"
    assert s.steps("theorem t (p : Prop) : ¬¬p → p := by sorry", "intro h",
                   "exact Classical.byContradiction fun hn => h hn") == "no goals"


def test_terms(s):
    stmt = "theorem t (p q r : Prop) : (p → q) → (q → r) → p → r := by sorry"
    assert s.steps(stmt, "exact fun f g x => g (f x)") == "no goals"
    assert s.steps(stmt, "intro f g x", "exact g (f x)") == "no goals"
    stmt = "theorem t (p q : Prop) (h : p ∧ q) : q ∧ p := by sorry"
    for term in ("⟨h.2, h.1⟩", "⟨h.right, h.left⟩", "And.intro h.2 h.1", "h.symm", "And.symm h",
                 "⟨And.right h, And.left h⟩"):
        assert s.steps(stmt, f"exact {term}") == "no goals", term
    stmt = "theorem t (p q : Prop) (h : p ↔ q) (hq : q) : p := by sorry"
    for term in ("h.mpr hq", "h.2 hq", "(Iff.mpr h) hq", "Iff.mpr h hq"):
        assert s.steps(stmt, f"exact {term}") == "no goals", term
    stmt = "theorem t (p q : Prop) (hp : p) (hn : ¬p) : q := by sorry"
    for term in ("absurd hp hn", "False.elim (hn hp)", "(hn hp).elim", "hn.elim hp"):
        assert s.steps(stmt, f"exact {term}") == "no goals", term
    stmt = "theorem t (p q r : Prop) (h : p ∨ q) (f : p → r) (g : q → r) : r := by sorry"
    for term in ("Or.elim h f g", "h.elim f g", "h.elim (fun hp => f hp) (fun hq => g hq)"):
        assert s.steps(stmt, f"exact {term}") == "no goals", term
    assert s.steps("theorem t (p q : Prop) (h : p → q) (hq : ¬q) : ¬p := by sorry", "exact mt h hq") == "no goals"
    assert s.steps("theorem t : True := by sorry", "exact trivial") == "no goals"
    assert s.steps("theorem t (p : Prop) (h : p) : p := by sorry", "exact id h") == "no goals"
    assert s.steps("theorem t (p q : Prop) : p ∧ q → p := by sorry", "exact fun ⟨a, _⟩ => a") == "no goals"
    assert s.steps("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q ↔ q ∧ p := by sorry",
                   "exact ⟨fun h => ⟨h.2, h.1⟩, fun h => ⟨h.2, h.1⟩⟩") == "no goals"


def test_errors(s):
    sid = s.start(T_AND)
    # a name or tactic the sim does not know may be Mathlib's: tagged, never Lean's verdict
    assert data_of(s.err(sid, "exact foo")) == "(sim) unknown identifier 'foo': not in the simulated fragment (or not Lean)"
    assert data_of(s.err(sid, "exact hp")) == ("type mismatch\n  hp\nhas type\n  p : Prop\n"
                                                "but is expected to have type\n  p ∧ q : Prop")
    assert data_of(s.err(sid, "frobnicate")) == "(sim) unknown tactic: not in the simulated fragment (or not Lean)"
    assert data_of(s.err(sid, "zify")).startswith("(sim) unknown tactic")
    assert data_of(s.err(sid, "intro h")).startswith("tactic 'introN' failed")
    sid2, _ = s.ok(sid, "exact ⟨hp, hq⟩")
    assert data_of(s.err(sid2, "exact hp")) == "no goals to be proved"
    assert data_of(s.err(sid, "· exact hp")).startswith("type mismatch")
    sid3, _ = s.ok(sid, "constructor")
    assert data_of(s.err(sid3, "· skip")).startswith("unsolved goals\ncase left")
    assert "(sim)" in data_of(s.err(sid, "tauto"))
    err = data_of(s.err(s.start("theorem t (p q : Prop) (hq : q) : p ∨ q := by sorry"), "exact Or.inl hq"))
    assert err.startswith("application type mismatch")


def test_combinators(s):
    stmt = "theorem t (p q : Prop) (hp : p) (hq : q) : (p ∧ q) ∧ (q ∧ p) := by sorry"
    assert s.steps(stmt, "constructor <;> constructor <;> assumption") == "no goals"
    # Lean's `repeat` only follows the main goal: it stops at the first failure
    assert s.steps(stmt, "repeat constructor").count("⊢") == 3
    assert s.steps(stmt, "repeat constructor", "all_goals first | assumption | exact ⟨hq, hp⟩") == "no goals"
    assert s.steps(stmt, "refine ⟨⟨?_, ?_⟩, ?_, ?_⟩ <;> first | exact hp | exact hq") == "no goals"
    assert s.steps(stmt, "constructor\n· exact ⟨hp, hq⟩\n· exact ⟨hq, hp⟩") == "no goals"
    assert s.steps(stmt, "constructor; (constructor; exact hp; exact hq); exact ⟨hq, hp⟩") == "no goals"
    assert s.steps(stmt, "try exact hp", "any_goals skip", "constructor", "any_goals constructor",
                   "all_goals try assumption") == "no goals"
    assert s.steps(stmt, "trivial") == "no goals"
    assert s.steps("theorem t (p : Prop) : p → p := by sorry", "intro h\nassumption") == "no goals"


def test_timeout(s):
    sid = s.start("theorem t (p : Prop) : p := by sorry")
    assert s.err(sid, "repeat skip") == "Tactic application timed out."
    assert s.err(sid, "repeat (try skip)", ) == "Tactic application timed out."


def test_show_and_defeq(s):
    assert s.steps("theorem t (p : Prop) : ¬p := by sorry", "show p → False") == "p : Prop\n⊢ p → False"
    assert s.steps("theorem t : 2 + 2 = 4 := by sorry", "show 4 = 4", "rfl") == "no goals"
    sid = s.start("theorem t (p q : Prop) : p := by sorry")
    assert data_of(s.err(sid, "show q")).startswith("type mismatch")
    assert s.steps("theorem t (p : Prop) (h : ¬p) : p → False := by sorry", "exact h") == "no goals"
    assert s.steps("theorem t (h : 2 + 2 = 5) : False := by sorry", "contradiction") == "no goals"
    assert s.steps("theorem t (p q : Prop) (h : p) (hn : ¬p) : q := by sorry", "contradiction") == "no goals"
    assert s.steps("theorem t : 3 > 2 ∧ 2 ≠ 3 := by sorry", "decide") == "no goals"


def test_factorized_branches():
    s = Session(factorized=True)
    sid = s.start(T_AND)
    value, _ = s.run(sid, "constructor")
    assert len(value) == 2 and all(len(b["goals"]) == 1 for b in value)
    value, _ = s.run(value[0]["proof_state_id"], "exact hp")
    assert value == []
    single = Session()
    value, _ = single.run(single.start(T_AND), "exact ⟨hp, hq⟩")
    assert len(value) == 1 and value[0]["goals"] == []


def test_unknown_state_raises():
    with pytest.raises(KeyError):
        SimProcess().try_apply_tactic(7, "skip")


def test_reset_forgets():
    p = SimProcess()
    p.command("axiom ax (p : Prop) : p")
    p.proof_from_sorry(T_AND)
    p.reset()
    with pytest.raises(KeyError):
        p.try_apply_tactic(0, "skip")
    r = p.command("theorem t (q : Prop) : q := by exact ax q")
    assert any(m["data"].startswith("(sim) unknown identifier 'ax'") for m in r["messages"])


# --------------------------------------------------------------------------- LocalProcess


def test_local_process():
    lp = LocalProcess(process_id=3)
    st = lp.start_proof(T_AND)
    assert st.process_id == 3 and st.goals[0].target == "p ∧ q"
    t0 = time.perf_counter()
    r = lp.apply_tactic(st, "constructor")
    t1 = time.perf_counter()
    assert r.outcome is Outcome.PROGRESS and len(r.goals) == 2
    # the time the call took, as measured around it: set (not the 0.0 default) and within the call
    assert isinstance(r.elapsed_s, float) and 0 < r.elapsed_s <= t1 - t0, (r.elapsed_s, t1 - t0)
    rs = lp.apply_tactics(st, ["exact ⟨hp, hq⟩", "exact hp", "repeat skip"], timeout_ms=50)
    assert [x.outcome for x in rs] == [Outcome.PROVED, Outcome.REJECTED, Outcome.TIMEOUT]
    cr = lp.run_command("theorem t2 (p : Prop) : p → p := fun h => h\n#print axioms t2")  # (the start declared t)
    assert not cr.errors and cr.messages[-1].text == "'t2' does not depend on any axioms"
    ident = lp.identity()
    assert ident.url == "inprocess://leangym.sim" and ident.generation == "single-branch"
    assert LocalProcess(factorized=True).identity().generation == "factorized"
    lp.close()
    lp.close()


# --------------------------------------------------------------------------- more tactics and layouts


def test_structured_cases_case_next_rintro(s):
    stmt = "theorem t (p q : Prop) (h : p ∨ q) : q ∨ p := by sorry"
    assert s.steps(stmt, "cases h with\n| inl hp => exact Or.inr hp\n| inr hq => exact Or.inl hq") == "no goals"
    sid = s.start(stmt)
    assert data_of(s.err(sid, "cases h with\n| inl hp => exact Or.inr hp")) == "alternative 'inr' has not been provided"
    assert s.steps(stmt, "cases h", "case inr hq => exact Or.inl hq", "next hp => exact Or.inr hp") == "no goals"
    assert s.steps(stmt, "rcases h with hp | hq", "case inl => exact Or.inr hp", "exact Or.inl hq") == "no goals"
    assert s.steps("theorem t (p q r : Prop) : p ∧ q ∨ r → r ∨ p := by sorry", "rintro (⟨hp, -⟩ | hr)") == (
        "case inl.intro\np q r : Prop\nhp : p\n⊢ r ∨ p\n\ncase inr\np q r : Prop\nhr : r\n⊢ r ∨ p")
    assert s.steps("theorem t (p q : Prop) : p → q → p := by sorry", "rintro hp -", "exact hp") == "no goals"
    assert s.steps(stmt, "cases h", "rename_i hx", "exact Or.inr hx") == "case inr\np q : Prop\nh✝ : q\n⊢ q ∨ p"


def test_shadowed_prop_variable_display(s):
    assert s.steps("theorem t (p : Prop) : p → p := by sorry", "intro p") == "p✝ : Prop\np : p✝\n⊢ p✝"


def test_tactics_see_the_header_but_not_the_theorem_itself():
    """As in Lean: the proof state at the statement's `sorry` lives in the environment of its
    command, so the header's lemmas can be cited; the theorem being proved cannot."""
    from leangym.sim.process import SimProcess

    p = SimProcess()
    src = "theorem helper (p : Prop) (hp : p) : p := by\n  exact hp\ntheorem uses (q : Prop) (hq : q) : q := by sorry"
    root = p.proof_from_sorry(src)["value"]["proof_state_id"]
    assert p.try_apply_tactic(root, "exact helper q hq")["value"] == [{"proof_state_id": 1, "goals": []}]
    assert "unknown identifier 'uses'" in p.try_apply_tactic(root, "exact uses q hq")["error"]
    # the start declared both on the process, as LeanTree's REPL does (each command runs in the
    # environment the last one left); `uses` with its sorry, which #print axioms would show
    assert {"helper", "uses"} <= set(p.kernel.env)
    assert "already been declared" in p.proof_from_sorry(src)["error"]
    kept = dict(p.kernel.env)
    assert "error" in p.proof_from_sorry("theorem other (p : Prop) : p := by exact nonsense")
    assert p.kernel.env == kept  # a start Lean rejects declares nothing


# --------------------------------------------------------------------------- scoped tactic forms


SCOPED_FORMS = ["set_option maxRecDepth 100 in constructor", "open Nat in constructor", "open scoped Nat in constructor",
                "set_option maxHeartbeats 400000 in\nconstructor", "open Nat in\n  constructor",
                "(set_option maxRecDepth 100 in constructor)", "set_option maxRecDepth 100 in open Classical in constructor"]


@pytest.mark.parametrize("tactic", SCOPED_FORMS)
def test_set_option_and_open_in_run_their_tactics(s, tactic):
    """Lean's `set_option LIMIT N in tac` and `open NS in tac` (leangym's soundness policy lets them
    through): `tac` runs, and the limits, which mean nothing to the simulated kernel, are ignored."""
    sid = s.start(T_AND)
    assert s.ok(sid, tactic)[1] == s.ok(sid, "constructor")[1]


def test_scoped_forms_take_the_block_after_in(s):
    sid = s.start(T_AND)
    assert s.ok(sid, "set_option maxRecDepth 100 in\nconstructor\nexact hp\nexact hq")[1] == "no goals"
    assert s.ok(sid, "constructor <;> set_option maxRecDepth 1 in assumption")[1] == "no goals"
    assert s.ok(sid, "open And in exact And.intro hp hq")[1] == "no goals"  # full names are unaffected
    # `set_option ... in t; u` scopes over `u` too, as in Lean: no tactic is lost
    assert data_of(s.err(sid, "set_option maxRecDepth 100 in exact ⟨hp, hq⟩; rfl")) == "no goals to be proved"


def test_scoped_forms_in_a_checked_proof():
    """As leangym's final check assembles a proof: steps indented under `by`, where `set_option` and
    `open` begin tactics, not commands. The tactics after `in` are checked like any others."""
    prove = "theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by\n"
    for body in ("  set_option maxRecDepth 100 in constructor\n  exact hp\n  exact hq",
                 "  set_option maxRecDepth 100 in\n  constructor\n  exact hp\n  exact hq",
                 "  open Nat in\n    constructor\n  exact hp\n  exact hq",
                 "  constructor\n  · open Nat in exact hp\n  · set_option maxRecDepth 100 in\n    exact hq"):
        r = SimProcess().command(prove + body + "\n#print axioms t")
        assert [m["data"] for m in r["messages"]] == ["'t' does not depend on any axioms"], body
    r = SimProcess().command(prove + "  set_option maxRecDepth 100 in sorry\n#print axioms t")
    assert [m["data"] for m in r["messages"]] == ["declaration uses 'sorry'", "'t' depends on axioms: [sorryAx]"]
    assert check_proof(T_AND, "set_option maxRecDepth 100 in\nopen Nat in\nconstructor\nexact hp\nexact hq")
    assert not check_proof(T_AND, "set_option maxRecDepth 100 in\nconstructor\nexact hp\nexact hp")
    assert not check_proof(T_AND, "open Nat in\nconstructor")
    assert not check_proof(T_AND, "set_option maxRecDepth 100 in\ntheorem x : False := sorry")


@pytest.mark.parametrize("tactic,says", [
    ("set_option pp.all true in constructor", "'set_option pp.all true in' is outside the simulated fragment"),
    ("set_option maxRecDepth true in constructor", "'set_option maxRecDepth true in' is outside"),
    ("open Real in constructor", "unknown namespace 'Real'"),
    ("open Nat hiding add_comm in constructor", "'open ... hiding' is outside"),
    ("open Nat (add_comm) in constructor", "'open NS (names)' is outside"),
    ("open And in exact intro hp hq", "under 'open And', 'intro' could mean 'And.intro'"),
])
def test_scoped_forms_outside_the_fragment_are_sim_errors(s, tactic, says):
    err = data_of(s.err(s.start(T_AND), tactic))
    assert err.startswith("(sim) ") and says in err, err


# --------------------------------------------------------------------------- Lean 4 fidelity (what transfers)


def test_by_cases_without_a_name_hides_it_as_leans_hygienic_macro_does(s):
    """Core's `by_cases p` expands to `by_cases h : p` inside a macro: the hypothesis is `h✝`, which no
    later tactic can cite (Mathlib stopped exposing it on purpose). A script that cites `h` fails on Lean."""
    stmt = "theorem t (p : Prop) : p ∨ ¬p := by sorry"
    assert s.steps(stmt, "by_cases p") == "case pos\np : Prop\nh✝ : p\n⊢ p ∨ ¬p\n\ncase neg\np : Prop\nh✝ : ¬p\n⊢ p ∨ ¬p"
    sid, _ = s.ok(s.start(stmt), "by_cases p")
    assert "unknown identifier 'h'" in data_of(s.err(sid, "exact Or.inl h"))
    assert s.steps(stmt, "by_cases p", "left", "assumption", "right",
                   "assumption") == "no goals"
    assert "try 'by_cases h : p'" in data_of(s.err(s.start(stmt), "cases p"))


@pytest.mark.parametrize("stmt, tactic", [
    ("theorem t (p q : Prop) (h : p ∧ q) : q := by sorry", "rcases h with a | b"),  # alternatives go to `left : p`
    ("theorem t (p q : Prop) (h : p ↔ q) (hp : p) : q := by sorry", "rcases h with a | b"),
    ("theorem t (p : Prop) (h : p) : p := by sorry", "obtain a | b := h"),
    ("theorem t (p : Prop) (h : p) : p := by sorry", "rcases h with ⟨a⟩"),
    ("theorem t (p : Prop) (h : p) : p := by sorry", "rcases h"),
])
def test_rcases_patterns_need_an_inductive_type_as_in_lean(s, stmt, tactic):
    """Lean's rcases does a `cases` for any pattern but a name: on a proposition that is not an inductive
    type (a variable `p`, an implication) it fails; the sim used to bind the whole hypothesis instead."""
    assert "is not an inductive datatype" in data_of(s.err(s.start(stmt), tactic))


@pytest.mark.parametrize("stmt, tactic", [("theorem t (a : ℕ) : a + 0 = a := by sorry", "rfl"),
                                          ("theorem t (a : ℕ) : a + 0 = a := by sorry", "exact rfl")])
def test_rfl_beyond_the_kernels_unfolding_is_the_simulators_limit_not_leans_verdict(s, stmt, tactic):
    """Lean closes `a + 0 = a` by rfl (Nat.add recurses on its second argument); the sim's defeq does not
    unfold there: it must say so with a (sim) tag, not with Lean's 'not definitionally equal' verdict."""
    assert data_of(s.err(s.start(stmt), tactic)).startswith("(sim) 'rfl'")


def test_rfl_closes_le_by_le_refl_as_mathlib_does(s):
    assert s.steps("theorem t : 2 + 1 ≤ 3 := by sorry", "rfl") == "no goals"
    assert s.steps("theorem t (a : ℕ) : a ≤ a := by sorry", "rfl") == "no goals"
    assert s.steps("theorem t (a : ℕ) : a ≥ a := by sorry", "rfl") == "no goals"  # `≥` is `≤` reducibly
    s.err(s.start("theorem t : 2 + 1 ≤ 4 := by sorry"), "rfl")  # le_refl needs equal sides


@pytest.mark.parametrize("tactic", ["exact ⟨by tauto, h.2⟩", "exact ⟨by rw [h], h.2⟩"])
def test_an_unsupported_tactic_inside_a_term_is_refused_by_name(s, tactic):
    """Its arguments end at the list's comma or bracket, so the refusal names the tactic
    (not a made-up syntax error about the rest of the term)."""
    err = data_of(s.err(s.start("theorem t (p q : Prop) (h : p ∧ q) : p ∧ q := by sorry"), tactic))
    assert err.startswith("(sim) tactic '") and "is not supported" in err, err


@pytest.mark.parametrize("stmt, tactic, name", [
    ("theorem t (a b : ℕ) : a + b = b + a := by sorry", "exact Nat.add_comm (n := a) (m := b)", "n"),
    ("theorem t (p : Prop) (hp : p) : p := by sorry", "simp (config := {zeta := false})", "config"),
    ("theorem t : 2 + 2 = 4 := by sorry", "decide (kernel := true)", "kernel"),
])
def test_named_arguments_are_the_simulators_limit_not_a_syntax_error(s, stmt, tactic, name):
    """Lean parses `(name := ...)`; the sim does not model it. Its parse error ("unexpected token ':='")
    read as Lean's verdict on a tactic that the soundness policy lets through."""
    err = data_of(s.err(s.start(stmt), tactic))
    assert err.startswith(f"(sim) named arguments and configurations ('({name} := ...)')"), err
    assert "unexpected token" in data_of(s.err(s.start(stmt), "exact )"))  # other syntax errors stay Lean's
