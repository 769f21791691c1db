"""leangym.known_failures: tactics counted rejected without a Lean call, checked against the simulated kernel
(which says so too) and through the AlphaProof search."""
from leangym.backends.types import Goal, Hypothesis, Outcome, ProofState
from leangym.known_failures import KnownFailures, cites_missing_name, failure_key, split_hypothesis, type_in_context
from leangym.sim.local import LocalProcess


def state(hyps, target):
    return ProofState(0, 0, (Goal(tuple(Hypothesis(*h) for h in hyps), target),))


PQR = [("p", "Prop"), ("q", "Prop"), ("r", "Prop")]


def test_a_tactic_citing_first_a_numbered_hypothesis_the_goal_lacks():
    st = state(PQR + [("h₁", "p"), ("h₃✝", "q"), ("h₄", "q")], "p")
    for t in ["apply h₂", "exact h₉.mp h₁", "rcases h₉ with ⟨a, b⟩", "cases h₃", "  exact  h₁₂ h₁", "exact h₃"]:
        assert cites_missing_name(t, st), t  # (h₃✝ is there but cannot be cited)
    # bound before use, a name of another kind, a local, an equation rcases names, no cite at the head: left to Lean
    for t in ["intro h₉; exact h₉", "exact x₁", "exact h₁", "cases h₄", "rcases h₉ : f x with h", "exact h",
              "exactly h₂", "exact Nat.le₂", "constructor <;> exact h₉"]:
        assert not cites_missing_name(t, st), t
    assert not cites_missing_name("exact h₂", ProofState(0, 0, ()))


def test_what_counts_as_a_case_split_of_a_local():
    splits = {"rcases h₁ with ⟨a, b⟩": "h₁", "rcases h with a | b": "h", "obtain ⟨a, b⟩ := h₂": "h₂",
              "cases h₃": "h₃", "rcases h with ⟨a, b⟩ <;> exact a": "h", "cases h with | inl a => exact a": "h",
              "obtain ⟨a, b⟩ := h; exact a": "h"}
    for t, name in splits.items():
        assert split_hypothesis(t) == name, t
    # a name pattern splits nothing; a term, a field, an equation name: not a local split
    for t in ["rcases h with x", "rcases h.1 with ⟨a, b⟩", "obtain ⟨a, b⟩ := f h", "cases h : f x", "rcases (h) with ⟨a⟩",
              "obtain x := h", "intro h", "cases f h"]:
        assert split_hypothesis(t) is None, t


def test_a_types_key_holds_the_declarations_it_rests_on():
    a = state(PQR + [("h", "p → q"), ("g", "r")], "q")
    b = state([("q", "Prop"), ("p", "Prop"), ("h₇", "p → q")], "r")
    assert type_in_context(a.goals[0], "h") == type_in_context(b.goals[0], "h₇") == "p → q\np : Prop\nq : Prop"
    shadowed = state([("p", "ℕ → Prop"), ("q", "Prop"), ("h", "p → q")], "q")  # another p: another type
    assert type_in_context(shadowed.goals[0], "h") != type_in_context(a.goals[0], "h")
    deep = state([("n", "ℕ"), ("x", "Fin n"), ("h", "x = x")], "True")
    assert type_in_context(deep.goals[0], "h") == "x = x\nn : ℕ\nx : Fin n" and type_in_context(deep.goals[0], "k") is None


def test_a_failure_rests_on_what_the_tactic_reads_and_nothing_else():
    a = state(PQR + [("h₁", "p → q"), ("h₂", "p")], "q")
    b = state(PQR + [("g", "r"), ("h₅", "p → q"), ("h₆", "p")], "q")  # more hypotheses, other names
    for ta, tb in [("intro x", "intro y"), ("constructor", "constructor"), ("apply h₁", "apply h₅"),
                   ("exact h₁ h₂", "exact h₅ h₆"), ("rcases h₁ with ⟨x, y⟩", "rcases h₅ with x | y")]:
        assert failure_key(a, ta) == failure_key(b, tb) is not None, ta
    assert failure_key(a, "intro x") != failure_key(state(PQR, "r"), "intro x")  # another target
    assert failure_key(a, "intro x") != failure_key(a, "intro x y")  # more binders
    assert failure_key(a, "exact h₁ h₂") != failure_key(a, "exact h₂ h₁")
    # tactics that read the whole context, or terms this cannot read: none
    for t in ["assumption", "trivial", "exact h₁ (h₂)", "apply foo", "exact h₉", "simp_all", "intro ⟨a, b⟩"]:
        assert failure_key(a, t) is None, t


def test_after_lean_refuses_one_split_every_split_of_that_type_is_refused_where_it_means_the_same():
    lean = LocalProcess(factorized=True)
    root = lean.start_proof("theorem t (p q r : Prop) (h₁ : p → q) (h₂ : p ∧ (q → r)) (hp : p) : r := by sorry")
    known = KnownFailures()
    res = lean.apply_tactic(root, "rcases h₁ with ⟨a, b⟩")
    assert res.outcome is Outcome.REJECTED
    known.learn(root, "rcases h₁ with ⟨a, b⟩", res.error)
    for t in ["rcases h₁ with a | b", "obtain ⟨a⟩ := h₁"]:
        assert known.refuses(root, t), t
        assert lean.apply_tactic(root, t).outcome is Outcome.REJECTED, t  # as the kernel says
    assert not known.refuses(root, "cases h₁")  # another tactic's reading (see below)
    assert not known.refuses(root, "rcases h₁ with x") and not known.refuses(root, "rcases h₂ with ⟨a, b⟩")
    # elsewhere in the search, another hypothesis of the type: refused too
    (later,) = lean.apply_tactic(root, "have h₃ : p → q := h₁").states
    assert known.refuses(later, "rcases h₃ with ⟨a, b⟩")
    # a nested pattern that fails on a part (`q → r`) teaches nothing about h₂'s type
    res = lean.apply_tactic(root, "rcases h₂ with ⟨a, ⟨b, c⟩⟩")
    assert res.outcome is Outcome.REJECTED
    known.learn(root, "rcases h₂ with ⟨a, ⟨b, c⟩⟩", res.error)
    assert not known.refuses(root, "rcases h₂ with ⟨a, b⟩")
    assert lean.apply_tactic(root, "rcases h₂ with ⟨a, b⟩").outcome is Outcome.PROGRESS


def test_the_search_sends_no_split_lean_already_refused_for_that_type():
    from agents.alphaproof.mcts import SearchConfig
    from agents.alphaproof.search import run_search
    from leangym.session import ProofSession

    from test_alphaproof_mcts import FakeEvaluator

    class Counting(LocalProcess):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.sent: list[str] = []

        def apply_tactic(self, state, tactic, timeout_ms=1000):
            self.sent.append(tactic)
            return super().apply_tactic(state, tactic, timeout_ms)

    lean = Counting(factorized=True)
    vocab = ["intro h₂", "rcases h₁ with ⟨a, b⟩", "rcases h₁ with a | b", "exact h₁ h₂"]
    res = run_search(ProofSession(lean, "theorem t (p q : Prop) (h₁ : p → q) : p → q := by sorry"), FakeEvaluator(vocab),
                     SearchConfig(num_simulations=20))
    assert res.verified
    # both splits go to Lean together at the root; below `intro h₂`, Lean's answer refuses them without a call
    assert [t for t in lean.sent if t.startswith("rcases")] == vocab[1:3]
    ((child,),) = res.tree.root.children
    assert {"rcases h₁ with ⟨a, b⟩", "rcases h₁ with a | b"} <= set(child.rejected)


def test_a_split_that_ran_teaches_nothing_when_what_came_after_it_failed():
    # `cases b` fails on `b : q → r` after h₂ split fine: Lean's words do not say which split failed
    lean = LocalProcess(factorized=True)
    root = lean.start_proof("theorem t (p q r : Prop) (h₂ : p ∧ (q → r)) : p := by sorry")
    known = KnownFailures()
    for t in ["obtain ⟨a, b⟩ := h₂; cases b", "rcases h₂ with ⟨a, b⟩ <;> cases b", "cases h₂ with | intro a b => cases b"]:
        res = lean.apply_tactic(root, t)
        assert res.outcome is Outcome.REJECTED and "not an inductive type" in res.error, t
        known.learn(root, t, res.error)
    for t in ["rcases h₂ with ⟨a, b⟩", "cases h₂"]:
        assert not known.refuses(root, t), t
        assert lean.apply_tactic(root, t).outcome is Outcome.PROGRESS, t


def test_recent_leans_rcases_words_name_what_failed_too():
    # Lean 4.2x: "Tactic `rcases` failed: `x✝ : q → r` is not an inductive datatype" (older: "rcases tactic failed: …")
    st = state(PQR + [("h₁", "p → q"), ("h₂", "p ∧ (q → r)")], "r")
    known = KnownFailures()
    known.learn(st, "rcases h₂ with ⟨a, ⟨b, c⟩⟩", "Tactic `rcases` failed: `x✝ : q → r` is not an inductive datatype")
    assert not known.refuses(st, "rcases h₂ with ⟨a, b⟩")  # a part failed, not h₂
    known.learn(st, "rcases h₁ with ⟨a, b⟩", "Tactic `rcases` failed: `h₁ : p → q` is not an inductive datatype")
    assert known.refuses(st, "obtain ⟨a⟩ := h₁")


def test_cases_and_rcases_read_a_type_apart():
    # rcases splits a quotient (Lean's RCases has a branch for `Quot`), `cases` does not; `cases` takes a type's
    # `@[cases_eliminator]` (Mathlib's `Multiplicative α`), rcases does not: one's failure says nothing of the other
    st = state([("α", "Type"), ("r", "α → α → Prop"), ("q", "Quot r"), ("x", "Multiplicative α")], "True")
    known = KnownFailures()
    known.learn(st, "cases q", "tactic 'induction' failed, major premise type is not an inductive type \n  Quot r")
    known.learn(st, "rcases x with ⟨a⟩", "rcases tactic failed: x : α is not an inductive datatype")
    assert known.refuses(st, "cases q") and known.refuses(st, "obtain ⟨a⟩ := x")
    for t in ["rcases q with ⟨a⟩", "obtain ⟨a⟩ := q", "cases x"]:
        assert not known.refuses(st, t), t


def test_what_lean_could_not_read_or_leangym_refused_says_nothing_of_the_target():
    from leangym.session import ProofSession

    session = ProofSession(LocalProcess(factorized=True), "theorem t (p q : Prop) : p → q → p := by sorry")
    known = KnownFailures()
    # `with` is no name (a parse error), `admit` is banned (the soundness policy): neither is the target's answer
    for t in ["intro h with", "intro admit"]:
        res = session.apply(session.root, t)
        assert res.outcome is Outcome.REJECTED, t
        known.learn(session.root, t, res.error)
    known.learn(session.root, "intro h at", 'REPL returned error messages: [{"data": "unexpected token \'at\'; expected command"}]')
    for t in ["intro a b", "intro a"]:
        assert not known.refuses(session.root, t), t
        assert session.apply(session.root, t).outcome is Outcome.PROGRESS, t
