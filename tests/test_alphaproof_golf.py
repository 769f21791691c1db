"""Golfing the warm start's reference proofs with Lean (``--warmup-closers``), and the prover's search settings."""
import pytest

from agents.alphaproof.prove import AlphaProofProver
from agents.alphaproof.sft import rows_from_reference_proofs
from agents.alphaproof.train_args import closer_list, parse_args
from leangym.datasets import proplogic
from leangym.sim.local import LocalProcess
from leangym.theorem import Theorem


class Ref:
    def __init__(self, statement: str, proof: list[str]):
        self.theorem, self.proof = Theorem(statement), proof


SWAP = Ref("theorem t (p q : Prop) (h : p ∧ q) : q ∧ p := by sorry",
           ["rcases h with ⟨h1, h2⟩", "constructor", "exact h2", "exact h1"])


def replays(ref, tactics: list[str]) -> bool:
    """The tactics, each sent to the first open goal, close the theorem on a fresh kernel."""
    lean = LocalProcess(factorized=True)
    open_ = [lean.start_proof(ref.theorem.start_source())]
    for tactic in tactics:
        if not open_:
            return False
        result = lean.apply_tactic(open_[0], tactic)
        if not result.ok:
            return False
        open_ = list(result.states) + open_[1:]
    return not open_


def test_a_closer_replaces_the_subproof_it_finishes():
    rows = rows_from_reference_proofs([SWAP], closers=("trivial",))
    assert [(r["tactic"], r["steps_to_go"]) for r in rows] == [("rcases h with ⟨h1, h2⟩", 2), ("trivial", 1)]
    assert replays(SWAP, [r["tactic"] for r in rows])


def test_chain_puts_a_closer_behind_the_reference_tactic_where_alone_it_closes_nothing():
    rows = rows_from_reference_proofs([SWAP], closers=("trivial",), chain=True)
    assert [(r["tactic"], r["steps_to_go"]) for r in rows] == [("rcases h with ⟨h1, h2⟩ <;> trivial", 1)]
    assert replays(SWAP, [r["tactic"] for r in rows])
    # a closer that closes a state alone still wins: the chain is for the states it cannot close
    leaf = Ref("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry", ["constructor", "exact hp", "exact hq"])
    assert [r["tactic"] for r in rows_from_reference_proofs([leaf], closers=("trivial",), chain=True)] == ["trivial"]
    # where no chain closes the state, the reference's tactic and its branches stay
    stuck = Ref("theorem t (p q : Prop) (h : p ∧ q) (hq : q → p) : p ∧ p := by sorry",
                ["rcases h with ⟨h1, h2⟩", "constructor", "exact h1", "exact hq h2"])
    assert [r["tactic"] for r in rows_from_reference_proofs([stuck], closers=("nonsense_tactic",), chain=True)] == \
        stuck.proof


def test_chained_golf_of_generator_proofs_gives_proofs_never_longer_than_the_plain_golf():
    refs = proplogic.generate(60, seed=5, difficulty=(1, 5))
    chained = 0
    for ref in refs:
        plain = rows_from_reference_proofs([ref], closers=("trivial",))
        golfed = rows_from_reference_proofs([ref], closers=("trivial",), chain=True)
        assert bool(plain) == bool(golfed), ref.theorem.name
        if plain:
            assert replays(ref, [r["tactic"] for r in golfed]), ref.theorem.name
            assert len(golfed) <= len(plain) and golfed[0]["steps_to_go"] <= plain[0]["steps_to_go"]
            chained += any("<;>" in r["tactic"] for r in golfed)
    assert chained >= 10  # the generator's proofs often end in a tactic whose every branch `trivial` closes


def test_without_closers_the_proof_is_kept_as_written():
    rows = rows_from_reference_proofs([SWAP])
    assert [(r["tactic"], r["steps_to_go"]) for r in rows] == [
        ("rcases h with ⟨h1, h2⟩", 4), ("constructor", 3), ("exact h2", 1), ("exact h1", 1)]


def test_a_closer_lean_rejects_everywhere_changes_nothing():
    assert rows_from_reference_proofs([SWAP], closers=("nonsense_tactic", "left")) == rows_from_reference_proofs([SWAP])


def test_golfed_generator_proofs_are_proofs_and_never_longer():
    refs = proplogic.generate(60, seed=5, difficulty=(1, 5))
    for ref in refs:
        plain = rows_from_reference_proofs([ref])
        golfed = rows_from_reference_proofs([ref], closers=("trivial", "assumption"))
        if not plain:
            continue  # a reference that does not replay gives no rows either way
        assert replays(ref, [r["tactic"] for r in golfed]), ref.theorem.name
        assert len(golfed) <= len(plain) and golfed[0]["steps_to_go"] <= plain[0]["steps_to_go"]
        assert golfed[0]["state"] == plain[0]["state"]


def test_train_flag_splits_closers():
    assert parse_args([]).warmup_closers == "trivial"
    assert parse_args([]).warmup_chain and not parse_args(["--no-warmup-chain"]).warmup_chain
    assert parse_args(["--warmup-closers", ""]).warmup_closers == ""
    assert closer_list("") == closer_list(" , ,") == []
    assert closer_list(" trivial, simp [h, g] ,omega,,nlinarith [sq_nonneg (a - b), h⟨1, 2⟩]") == [
        "trivial", "simp [h, g]", "omega", "nlinarith [sq_nonneg (a - b), h⟨1, 2⟩]"]


def test_prover_takes_search_settings_and_names_the_known_ones():
    with pytest.raises(ValueError, match="leaves_per_round"):
        AlphaProofProver(net=object(), leaves_per_pass=1)
    with pytest.raises(ValueError, match="self_check"):
        AlphaProofProver(net=object(), self_check=True)  # the harness checks every answer: not the prover's to set
    assert AlphaProofProver(net=object()).search == {"leaves_per_round": 1, "widen_c": 8.0}  # prove's default
    given = AlphaProofProver(net=object(), leaves_per_round=2).search  # given: it wins
    assert given == {"leaves_per_round": 2, "widen_c": 8.0}
    assert AlphaProofProver(net=object(), widen_c=2.0).search["widen_c"] == 2.0  # training's, given: it wins


@pytest.mark.parametrize("setting", ["num_simulations", "max_lean_calls", "max_seconds"])
def test_prover_refuses_settings_that_would_override_sims_or_the_budget(setting):
    with pytest.raises(ValueError, match=f"{setting} is"):
        AlphaProofProver(net=object(), **{setting: 10_000})


def test_prover_refuses_a_search_value_at_once():
    with pytest.raises(ValueError, match="leaves_per_round must be at least 1"):
        AlphaProofProver(net=object(), leaves_per_round=0)
    with pytest.raises(ValueError, match="num_tactics must be at least 1"):
        AlphaProofProver(net=object(), num_tactics=0)
    # a string (--agent-kwargs JSON) or None failed every theorem mid-search; NaN never widened, below 0 every visit
    for bad in ("8", None, float("nan"), -1.0):
        with pytest.raises(ValueError, match="widen_c must be a number >= 0"):
            AlphaProofProver(net=object(), widen_c=bad)
    with pytest.raises(ValueError, match="widen_alpha must be a number >= 0"):
        AlphaProofProver(net=object(), widen_alpha=-1)
    assert AlphaProofProver(net=object(), widen_c=0).search["widen_c"] == 0  # 0: widen at every visit
    for sims in (0, -1):  # (0 simulations failed every theorem without a word)
        with pytest.raises(ValueError, match=f"sims must be at least 1 .*, got {sims}"):
            AlphaProofProver(net=object(), sims=sims)


class Chain:
    """Goal "n": "step" leaves goal "n-1" (closes "0"); "jump" closes goals up to 2; "flaky" gets no answer."""

    def start_proof(self, src):
        return self._state(1200)

    def apply_tactic(self, state, tactic):
        from leangym.backends.types import Outcome, TacticResult
        n = int(state.goals[0].target)
        if tactic == "step":
            return TacticResult(tactic, Outcome.PROGRESS, (self._state(n - 1),)) if n else \
                TacticResult(tactic, Outcome.PROVED, ())
        if tactic == "jump" and n <= 2:
            return TacticResult(tactic, Outcome.PROVED, ())
        if tactic == "flaky":
            return TacticResult(tactic, Outcome.SERVER_FAILURE, (), error="connection refused")
        return TacticResult(tactic, Outcome.REJECTED, (), error="no")

    @staticmethod
    def _state(n):
        from leangym.backends.types import Goal, ProofState
        return ProofState(0, 0, (Goal((), str(n)),))


LONG = type("LongRef", (), {"theorem": Theorem("theorem t (p : Prop) : p := by sorry"), "proof": ["step"] * 1201})()


def test_a_proof_thousands_of_tactics_deep_is_golfed_without_recursion():
    plain = rows_from_reference_proofs([LONG], Chain())
    assert [r["steps_to_go"] for r in plain] == list(range(1201, 0, -1))
    golfed = rows_from_reference_proofs([LONG], Chain(), closers=("nonsense", "jump"))
    assert [r["tactic"] for r in golfed] == ["step"] * 1198 + ["jump"]  # "2" is closed by the jump
    assert [r["steps_to_go"] for r in golfed] == list(range(1199, 0, -1))


def test_a_closer_that_is_the_reference_tactic_keeps_its_place_in_the_order():
    ref = Ref("theorem t (p : Prop) (h : p) : p := by sorry", ["trivial"])
    assert [r["tactic"] for r in rows_from_reference_proofs([ref], closers=("trivial", "assumption"))] == ["trivial"]


def test_a_server_failure_while_golfing_or_replaying_raises_so_the_proof_is_counted_as_lost():
    from leangym.backends.types import ServerError
    with pytest.raises(ServerError, match="flaky"):
        rows_from_reference_proofs([LONG], Chain(), closers=("flaky",))
    broken = type("Broken", (), {"theorem": LONG.theorem, "proof": ["step", "flaky"]})()
    with pytest.raises(ServerError, match="connection refused"):
        rows_from_reference_proofs([broken], Chain())


def test_help_shows_the_new_defaults():
    from agents.alphaproof.train_args import build_parser
    text = " ".join(build_parser().format_help().split())
    assert "(default: 0.0003)" in text and "as written (default: trivial)" in text
