"""The AND-OR MCTS of agents.alphaproof on a tiny deterministic toy Lean (defined here, tests only):
solved and dead nodes, PUCT, widening, failed tactics, transpositions, the final check, empty
evaluations. (Batched search, backends and the Lean-call budget: test_alphaproof_search_backends.py.)"""
from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from agents.alphaproof.interfaces import Evaluation, per_state
from agents.alphaproof.mcts import Leaf, SearchConfig, SearchTree, puct
from agents.alphaproof.search import _Search, run_search, search_round
from leangym.backends.types import (CommandResult, Goal, Hypothesis, Outcome, ProofState, ReplMessage,
                                    ServerIdentity, TacticResult)
from leangym.session import ProofSession
from leangym.soundness import GATE_TIMEOUT_MS

VOCAB = ["intro h", "constructor", "exact hp", "exact hq", "assumption", "rcases h with ⟨a, b⟩", "left", "right"]


# ---------------------------------------------------------------------- a toy propositional Lean
def parse(s: str):
    """Formula -> nested tuples; ∧ binds tighter than ∨, ∨ than →; all right-associative."""
    toks = re.findall(r"[A-Za-z_]\w*|[∧∨→()]", s)
    pos = 0

    def level(ops):
        nonlocal pos
        if not ops:
            if toks[pos] == "(":
                pos += 1
                f = level(("→", "∨", "∧"))
                pos += 1
                return f
            pos += 1
            return toks[pos - 1]
        left = level(ops[1:])
        if pos < len(toks) and toks[pos] == ops[0]:
            pos += 1
            return (ops[0], left, level(ops))
        return left

    return level(("→", "∨", "∧"))


def show(f, prec: int = 0) -> str:
    if isinstance(f, str):
        return f
    p = {"→": 25, "∨": 30, "∧": 35}[f[0]]
    s = f"{show(f[1], p + 1)} {f[0]} {show(f[2], p)}"
    return f"({s})" if p < prec else s


def step(goal: Goal, tactic: str) -> list[Goal] | None:
    """The goals ``tactic`` leaves from ``goal`` (None: rejected)."""
    hyps, target = list(goal.hypotheses), parse(goal.target)
    types = {h.name: h.type for h in hyps}
    if tactic.startswith("intro ") and isinstance(target, tuple) and target[0] == "→":
        name = tactic.split()[1]
        hyps = [Hypothesis(h.name + "✝", h.type) if h.name == name else h for h in hyps]
        return [Goal(tuple(hyps + [Hypothesis(name, show(target[1]))]), show(target[2]))]
    if tactic == "constructor" and isinstance(target, tuple) and target[0] == "∧":
        return [Goal(goal.hypotheses, show(target[1]), "left"), Goal(goal.hypotheses, show(target[2]), "right")]
    if tactic.startswith("exact ") and types.get(tactic[6:]) == goal.target:
        return []
    if tactic == "assumption" and goal.target in types.values():
        return []
    if tactic in ("left", "right") and isinstance(target, tuple) and target[0] == "∨":
        return [Goal(goal.hypotheses, show(target[1 if tactic == "left" else 2]))]
    if tactic == "skip":
        return [goal]
    if tactic.startswith("mark "):  # a new hypothesis of a type of its own: each name a state of its own
        return [Goal(tuple(hyps + [Hypothesis(tactic[5:], "P_" + tactic[5:])]), goal.target)]
    m = re.fullmatch(r"rcases (\w+) with ⟨(\w+), (\w+)⟩", tactic)
    if m and m[1] in types and isinstance(f := parse(types[m[1]]), tuple) and f[0] == "∧":
        rest = [h for h in hyps if h.name != m[1]]
        return [Goal(tuple(rest + [Hypothesis(m[2], show(f[1])), Hypothesis(m[3], show(f[2]))]), goal.target)]
    m = re.fullmatch(r"revert (\w+)", tactic)
    if m and m[1] in types:
        rest = tuple(h for h in hyps if h.name != m[1])
        return [Goal(rest, show(("→", parse(types[m[1]]), target)))]
    return None


def replay(goals: list[Goal], script: str) -> list[Goal] | None:
    """The goals left after running ``script`` line by line on the first goal, as Lean runs a ``by`` block
    (None: a tactic failed)."""
    for line in script.splitlines():
        tactic = line.strip().removeprefix("· ").strip()
        if tactic in ("(", ")"):  # the brackets the final check puts around the proof
            continue
        new = step(goals[0], tactic) if goals and tactic else None
        if new is None:
            return None
        goals = new + goals[1:]
    return goals


def parse_theorem(source: str) -> Goal:
    rest = re.split(r"theorem \S+", source.split(":= by")[0], maxsplit=1)[1]  # `t`, or the name the check gives it
    hyps = []
    while m := re.match(r"\s*\(([^():]+):([^()]+)\)", rest):
        hyps += [Hypothesis(n, m[2].strip()) for n in m[1].split()]
        rest = rest[m.end():]
    return Goal(tuple(hyps), show(parse(rest.strip().removeprefix(":"))))


class FakeLean:
    """A deterministic LeanProcess over the toy logic; counts every (goal text, tactic) sent."""

    process_id = 1
    in_process = True

    def __init__(self, factorized: bool = True, final_check_fails: bool = False):
        self.factorized, self.final_check_fails = factorized, final_check_fails
        self.states: dict[int, tuple[Goal, ...]] = {}
        self.sent: Counter = Counter()
        self.commands: list[str] = []
        self.checks: list[str] = []  # whole scripts sent in tactic mode by the final check

    def _state(self, goals) -> ProofState:
        self.states[len(self.states)] = tuple(goals)
        return ProofState(self.process_id, len(self.states) - 1, tuple(goals))

    def start_proof(self, theorem_with_sorry: str) -> ProofState:
        return self._state([parse_theorem(theorem_with_sorry)])

    def apply_tactic(self, state: ProofState, tactic: str, timeout_ms: int = 1000) -> TacticResult:
        goals = self.states[state.proof_state_id]
        if timeout_ms == GATE_TIMEOUT_MS:  # the final check's tactic-mode pass: the whole script, kept apart
            self.checks.append(tactic)
            left = replay(list(goals), tactic)
            if left is None or left:
                return TacticResult(tactic, Outcome.REJECTED, (), "toy: script failed")
            return TacticResult(tactic, Outcome.PROVED)
        self.sent[(state.text, tactic)] += 1
        new = step(goals[0], tactic)
        if new is None:
            return TacticResult(tactic, Outcome.REJECTED, (), "toy: tactic failed")
        left = list(new) + list(goals[1:])
        if not left:
            return TacticResult(tactic, Outcome.PROVED)
        branches = [self._state([g]) for g in left] if self.factorized else [self._state(left)]
        return TacticResult(tactic, Outcome.PROGRESS, tuple(branches))

    def apply_tactics(self, state, tactics, timeout_ms: int = 1000):
        return [self.apply_tactic(state, t, timeout_ms) for t in tactics]

    def run_command(self, source: str) -> CommandResult:
        """Replays the script line by line on the first goal, as Lean runs a ``by`` block."""
        self.commands.append(source)
        head, body = source.split(":= by\n")
        goals = replay([parse_theorem(head + ":= by sorry")], body.split("\n#print")[0])
        if goals is None:
            return CommandResult((ReplMessage("error", "toy: a tactic failed"),))
        if goals or self.final_check_fails:
            return CommandResult((ReplMessage("error", "unsolved goals"),))
        line = source[:source.index("#print")].count("\n") + 1  # the REPL reports the command's line
        name = source[source.index("#print axioms "):].split()[2]  # the name the check declared
        return CommandResult((ReplMessage("info", f"'{name}' does not depend on any axioms", line, 0),))

    def identity(self) -> ServerIdentity:
        return ServerIdentity("fake://toy", "factorized" if self.factorized else "single-branch")

    def close(self) -> None:
        pass


class FakeEvaluator:
    """Uniform priors over a fixed vocabulary (the first k), constant value; counts its calls."""

    def __init__(self, vocab=VOCAB, value: float = 0.5):
        self.vocab, self.value, self.calls, self.batch_sizes = list(vocab), value, 0, []

    def evaluate(self, states, k):
        self.calls += 1
        self.batch_sizes.append(len(states))
        self.ks = per_state(k, len(states))
        return [Evaluation(tuple(self.vocab[:n]), (0.0,) * len(self.vocab[:n]), self.value) for n in self.ks]


class NamesEvaluator(FakeEvaluator):
    """Endless distinct tactics (``mark h0``, ``mark h1``, ...), each to a state of its own (``intro h0``,
    ``intro h1`` would be one tactic up to names): a search that never runs dry."""

    def evaluate(self, states, k):
        self.calls += 1
        return [Evaluation(tuple(f"mark h{i}" for i in range(n)), (0.0,) * n, 0.5)
                for n in per_state(k, len(states))]


def thm(hyps: str, target: str) -> str:
    return f"theorem t {hyps} : {target} := by sorry"


PQ = "(p q r s : Prop) (hp : p) (hq : q)"
ENDLESS = thm("(p r : Prop)", "p → p → p → p → p → p → p → p → r")


def session(target: str, hyps: str = PQ, **fake) -> ProofSession:
    return ProofSession(FakeLean(**fake), thm(hyps, target))


# ---------------------------------------------------------------------- tests
@pytest.mark.parametrize("factorized", [True, False])
def test_and_or_solved_propagation(factorized):
    sess = session("p ∧ q", factorized=factorized)
    res = run_search(sess, FakeEvaluator(), SearchConfig(num_simulations=20))
    assert res.solved and res.verified and res.stop_reason == "solved"
    root = res.tree.root
    i = root.tactics.index("constructor")
    kids = root.children[i]
    assert len(kids) == (2 if factorized else 1)
    assert all(k.steps is not None for k in kids)  # the AND node is solved because all its branches are
    assert root.steps == 3  # its tactic + every branch's (the Lean calls of the proof, factorized or not)
    if factorized:
        assert res.proof == "constructor\n· exact hp\n· exact hq"
    by_state = {t.state: t for t in res.targets}
    assert by_state[root.text].steps_to_go == root.steps and by_state[root.text].proof_tactic == "constructor"
    assert sum(by_state[root.text].visit_counts) == root.N.sum()


def test_and_node_needs_every_branch():
    # p ∧ r: the r branch cannot be proved, so the solved p branch must not solve the root.
    res = run_search(session("p ∧ r"), FakeEvaluator(), SearchConfig(num_simulations=30))
    root = res.tree.root
    left, right = root.children[root.tactics.index("constructor")]
    assert left.steps == 1 and right.dead and root.dead
    assert not res.solved and res.stop_reason == "exhausted" and res.proof is None
    assert {t.state: t.steps_to_go for t in res.targets}[root.text] is None


def test_solved_child_never_selected_again():
    res = run_search(session("p ∧ (r ∨ r ∨ q)"), FakeEvaluator(), SearchConfig(num_simulations=50))
    assert res.solved and res.verified
    root = res.tree.root
    left, right = root.children[root.tactics.index("constructor")]
    assert left.visits == 1  # solved on expansion, never entered again
    assert right.visits > 2


def test_puct_masks_dead_edges_and_prefers_prior():
    tree = SearchTree(session("p ∨ q").root, SearchConfig())
    node = tree.root
    node.expanded, node.visits, node.value_sum = True, 1, 0.5
    tree.add_edges(node, [("a", 0.0, ()), ("b", -3.0, ()), ("c", 1.0, ())])
    node.alive[2] = False
    scores = puct(node, tree.config)
    assert scores[2] == float("-inf") and scores[0] > scores[1]


def test_widening_keeps_subtree():
    # r ∨ q: first only `left` (a dead end), widening later brings `right`.
    sess = session("r ∨ q")
    cfg = SearchConfig(num_simulations=40, num_tactics=1, widen_tactics=1, widen_c=1.0, leaves_per_round=1)
    search = _Search(sess, cfg)
    ev = FakeEvaluator(["left", "right", "exact hq"] + VOCAB)
    root, snapshots = search.tree.root, []
    with ThreadPoolExecutor(1) as pool:
        while search.stop_reason is None:
            search_round([search], ev, pool)
            snapshots.append((list(root.tactics), list(root.children), root.N.copy()))
    for (t0, c0, n0), (t1, c1, n1) in zip(snapshots, snapshots[1:]):
        assert t1[: len(t0)] == t0 and all(a is b for a, b in zip(c0, c1))  # same subtrees, kept
        assert (n1[: len(n0)] >= n0).all()  # statistics kept
    assert root.tactics[:2] == ["left", "right"] and len(snapshots[0][0]) == 1
    assert search.tree.root.steps == 2  # found via the tactic added by widening


def test_widening_sends_widen_tactics_new_tactics():
    """However many untried tactics the policy's top k holds, a widened node sends
    ``widen_tactics`` of them (the most probable), a new leaf ``num_tactics``."""

    class Fresh(FakeEvaluator):  # k tactics never proposed before, on every call
        def evaluate(self, states, k):
            self.calls += 1
            return [Evaluation(tuple(f"mark h{self.calls}_{i}" for i in range(n)),
                               tuple(-0.1 * i for i in range(n)), 0.5) for n in per_state(k, len(states))]

    cfg = SearchConfig(num_simulations=80, num_tactics=3, widen_tactics=2, widen_c=0.5, max_lean_calls=None)
    res = run_search(ProofSession(FakeLean(), ENDLESS), Fresh(), cfg)
    sent = [len(n.tried) for n in res.tree.table.values() if n.expanded]
    assert max(sent) > 3  # some node was widened, several times
    assert all((s - 3) % 2 == 0 for s in sent)
    assert all(t.endswith(("_0", "_1", "_2")) for n in res.tree.table.values() for t in n.tried)  # the best ones


def test_failed_tactics_are_never_sent_twice():
    # ⊢ r is reached by `left` and by `right` (one node) and asked again on every widening.
    fake = FakeLean()
    res = run_search(ProofSession(fake, thm(PQ, "r ∨ r")), FakeEvaluator(VOCAB + ["skip"]),
                     SearchConfig(num_simulations=50, num_tactics=3, widen_tactics=2, widen_c=0.5))
    assert res.stop_reason == "exhausted"
    assert max(fake.sent.values()) == 1
    assert ("⊢ r", "exact hp") in {(text.splitlines()[-1], t) for text, t in res.tree.failed}
    # the cache is consulted before anything is sent
    tree = SearchTree(session("p ∧ q").root, SearchConfig())
    tree.failed.add((tree.root.text, "constructor"))
    leaf = tree.select()
    assert "constructor" not in [t for t, _ in tree.new_tactics(leaf, FakeEvaluator().evaluate([""], 8)[0])]


def test_simulations_are_counted():
    ev = NamesEvaluator()
    res = run_search(ProofSession(FakeLean(), ENDLESS), ev, SearchConfig(num_simulations=37, num_tactics=3))
    assert res.simulations == 37 == res.tree.root.visits and res.stop_reason == "simulations"
    assert ev.calls < 37  # several leaves per evaluator call (virtual loss)
    assert all(n.VL.sum() == 0 and n.in_flight == 0 and not n.pending for n in res.tree.table.values())


def test_transpositions_and_cycles():
    # `left` and `right` lead to one state: the second is no new tactic; constructor's two branches
    # differ only by their case tags: one node (a tag changes nothing a proof needs)
    res = run_search(session("(p ∨ p) ∧ (p ∨ p)"), FakeEvaluator(), SearchConfig(num_simulations=5))
    root = res.tree.root
    ((l, r),) = root.children
    assert l is r and l.state.goals[0].tag == "left" and res.verified
    assert l.tactics == ["left"] and (l.key, "right") in res.tree.failed
    (p,) = l.children[0]  # ... and a second tactic that proves ⊢ p is none either
    assert p.tactics == ["exact hp"] and (p.key, "assumption") in res.tree.failed and res.tree.useless == 2
    # q → p: `intro h` then `revert h` leads back to the root; `skip` goes nowhere.
    ev = FakeEvaluator(["intro h", "revert h", "skip", "exact hp"])
    res = run_search(session("q → p"), ev, SearchConfig(num_simulations=5))
    root = res.tree.root
    (child,) = root.children[root.tactics.index("intro h")]
    assert "revert h" not in child.tactics and (child.text, "revert h") in res.tree.failed
    assert "skip" not in root.tactics and res.tree.useless == 3 and res.verified  # skip twice, revert once


def test_cycles_and_siblings_up_to_names():
    # `revert hq` then `intro h` is back at the root but for a name: held back like any cycle;
    # `intro g` after `intro h` is the same tactic up to names: refused
    ev = FakeEvaluator(["revert hq", "intro h", "intro g", "exact hp"])
    res = run_search(session("p", "(p q : Prop) (hq : q)"), ev, SearchConfig(num_simulations=20))
    (back,) = res.tree.root.children[res.tree.root.tactics.index("revert hq")]
    assert back.tactics == [] and back.dead and res.tree.useless == 2 and not res.solved
    assert {(back.key, "intro h"), (back.key, "intro g")} <= res.tree.failed
    assert [e.tactic for e in res.tree.deferred[res.tree.root.key]] == ["intro h"]  # waits for the root's proof


def test_verified_proof_and_failing_final_check():
    lean = FakeLean()
    res = run_search(ProofSession(lean, thm(PQ, "(p ∧ q) ∧ (q ∨ r)")), FakeEvaluator(), SearchConfig(num_simulations=50))
    assert res.solved and res.verified and res.verify_error is None
    assert lean.commands and "constructor" in lean.commands[-1]
    bad = session("p ∧ q", final_check_fails=True)
    res = run_search(bad, FakeEvaluator(), SearchConfig(num_simulations=50))
    assert res.solved and not res.verified and "final check failed" in res.verify_error


class _EmptyFirst(FakeEvaluator):
    """Proposes nothing (as a policy whose samples all ran past the token limit) for its first ``empty`` calls."""

    def __init__(self, empty: int, vocab=VOCAB):
        super().__init__(vocab)
        self.empty = empty

    def evaluate(self, states, k):
        if self.calls < self.empty:
            self.calls += 1
            return [Evaluation((), (), self.value) for _ in states]
        return super().evaluate(states, k)


def test_one_empty_evaluation_does_not_exhaust_a_node():
    """A policy sample without a finished tactic says nothing about the state: the node is asked again
    (it stays expanded with no edges, so it is widened when next selected) and the search goes on."""
    sess = session("p ∧ q")
    res = run_search(sess, _EmptyFirst(2), SearchConfig(num_simulations=20))
    assert res.verified and res.stop_reason == "solved"
    assert res.simulations == res.tree.root.visits  # the empty evaluations count as simulations, nothing else
    assert all(n.VL.sum() == 0 and n.in_flight == 0 and not n.pending for n in res.tree.table.values())


@pytest.mark.parametrize("limit", [1, 3])
def test_a_node_is_exhausted_after_max_empty_evaluations_in_a_row(limit):
    cfg = SearchConfig(num_simulations=20, max_empty_evaluations=limit)
    res = run_search(session("p ∧ q"), _EmptyFirst(100), cfg)
    assert res.stop_reason == "exhausted" and res.tree.root.dead
    assert res.simulations == limit and res.lean_calls == 0  # one evaluation per simulation, no Lean call
    # a new tactic in between starts the count again: 2 empty, 1 useless (`left`), 2 empty: not yet exhausted
    tree = SearchTree(session("p ∧ q").root, SearchConfig(max_empty_evaluations=3))
    empty, useful = Evaluation((), (), 0.5), Evaluation(("left",), (0.0,), 0.5)
    for ev in (empty, empty, useful, empty, empty):
        leaf = Leaf([], tree.root, 8)
        tree.new_tactics(leaf, ev)
        tree.root.tried.update(t for t in ev.tactics)
    assert not tree.root.exhausted
    tree.new_tactics(Leaf([], tree.root, 8), empty)
    assert tree.root.exhausted
    with pytest.raises(ValueError, match="max_empty_evaluations must be at least 1"):
        SearchConfig(max_empty_evaluations=0)



class _Peaked(FakeEvaluator):
    """A peaked policy: its two favourites (both rejected on target ``p``) fill any sample of fewer than 12."""

    def evaluate(self, states, k):
        self.ks = per_state(k, len(states))
        return [Evaluation(("left", "right", "exact hp")[: n if n >= 12 else min(n, 2)], (0.0, -1.0, -9.0)[: min(n, 3)],
                           0.5) for n in self.ks]


def test_a_node_whose_favourites_are_all_tried_samples_wider_before_it_gives_up():
    """After an answer with nothing new the root asks the policy for 4x as many: the search goes on to the
    unlikely tactic that proves it, where asking for as many as before would exhaust the root."""
    ev = _Peaked()
    cfg = SearchConfig(num_simulations=20, num_tactics=1, widen_tactics=1, max_empty_evaluations=3)
    res = run_search(session("p"), ev, cfg)
    assert res.verified and res.proof.strip() == "exact hp" and res.simulations == 4  # left, right, nothing, exact hp
    assert max(ev.ks) == 12  # 3 tactics asked (2 tried + 1), nothing new, then 4 x 3


# ---------------------------------------------------------------------------- pinned by a mutation audit
def test_a_leafs_backed_up_value_is_the_policys_guess_or_the_proofs_discounted_length():
    from agents.alphaproof.interfaces import GAMMA

    def integrate(value, result):
        tree = SearchTree(ProofState(0, 1, (Goal((), "p"),)), SearchConfig())
        leaf = tree.select()
        return tree.integrate(leaf, Evaluation((result.tactic,), (0.0,), value), [(result.tactic, 0.0)], [result])

    step = TacticResult("intro x", Outcome.PROGRESS, (ProofState(0, 2, (Goal((), "q"),)),))
    assert integrate(0.3, step) == pytest.approx(0.3)
    assert integrate(2.0, step) == 1.0 and integrate(-1.0, step) == 0.0  # a guess is kept to [0, 1]
    assert integrate(0.3, TacticResult("exact h", Outcome.PROVED, ())) == pytest.approx(GAMMA)


def test_an_unvisited_edge_scores_the_nodes_value_less_the_fpu_reduction():
    import math

    cfg = SearchConfig()
    tree = SearchTree(ProofState(0, 1, (Goal((), "p ∨ q"),)), cfg)
    node = tree.root
    node.expanded, node.visits, node.value_sum = True, 4, 3.6  # estimate 0.9
    tree.add_edges(node, [("a", math.log(0.5), ()), ("b", math.log(0.5), ())])
    node.N[0], node.W[0] = 3, 0.3  # a: visited, Q = 0.1; b: unvisited
    u = [cfg.c_puct * 0.5 * math.sqrt(3 + 1) / (1 + n) for n in (3, 0)]
    assert puct(node, cfg) == pytest.approx([0.1 + u[0], 0.9 - cfg.fpu_reduction + u[1]])


def test_a_shorter_proof_found_later_shortens_the_nodes_steps():
    """`steps` feeds the backed-up value and the training targets' steps-to-go, not only the proof."""
    from agents.alphaproof.mcts import _refresh

    tree = SearchTree(ProofState(0, 1, (Goal((), "A"),)), SearchConfig())
    a, b = tree.root, tree.node_for(ProofState(0, 2, (Goal((), "B"),)))
    b.steps = 3
    tree.add_edges(a, [("long", 0.0, (b,))])
    _refresh(a)
    assert a.steps == 4
    tree.add_edges(a, [("short", 0.0, ())])
    _refresh(a)
    assert a.steps == 1 and tree.proof().tactic == "short"


def test_a_tactic_citing_a_hypothesis_the_goal_lacks_is_rejected_without_a_call():
    # `exact h₃` beside h₁ h₂ fails in any Lean: counted tried and rejected (a negative to learn from), never sent
    lean = FakeLean()
    ev = FakeEvaluator(["exact h₃", "rcases h₃ with ⟨a, b⟩", "exact h₂"])
    res = run_search(ProofSession(lean, thm("(p q : Prop) (h₁ : q) (h₂ : p)", "p")), ev, SearchConfig(num_simulations=5))
    assert res.verified and res.tree.root.tactics == ["exact h₂"]
    assert not any("h₃" in t for _, t in lean.sent) and res.tree.root.rejected == ["exact h₃", "rcases h₃ with ⟨a, b⟩"]


def test_a_tactic_refused_without_a_call_is_something_new_as_a_rejected_one_is():
    # each widening brings one new tactic, each refused as Lean would reject it: the root is not out of ideas
    # (max_empty_evaluations), as it would not be had Lean rejected them
    ev = FakeEvaluator(["exact h₃", "exact h₄", "exact h₅", "exact h₂"])
    res = run_search(ProofSession(FakeLean(), thm("(p q : Prop) (h₁ : q) (h₂ : p)", "p")), ev,
                     SearchConfig(num_simulations=10, num_tactics=1, widen_tactics=1))
    assert res.verified and res.tree.root.rejected == ["exact h₃", "exact h₄", "exact h₅"]
