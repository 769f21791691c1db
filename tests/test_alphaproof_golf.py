"""Golfing the warm start's reference proofs with Lean (``--warmup-closers``), and the prover's search settings."""
import pytest

from agents.alphaproof.prove import AlphaProofProver
from agents.alphaproof.sft import rows_from_reference_proofs
from agents.alphaproof.train_args import parse_args
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


def test_without_closers_the_proof_is_kept_as_written():
    rows = rows_from_reference_proofs([SWAP])
    assert [(r["tactic"], r["steps_to_go"]) for r in rows] == [
        ("rcases h with ⟨h1, h2⟩", 3), ("constructor", 2), ("exact h2", 1), ("exact h1", 1)]


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
    assert parse_args(["--warmup-closers", ""]).warmup_closers == ""


def test_prover_takes_search_settings_and_names_the_known_ones():
    with pytest.raises(ValueError, match="leaves_per_round"):
        AlphaProofProver(net=object(), leaves_per_pass=1)
    with pytest.raises(ValueError, match="self_check"):
        AlphaProofProver(net=object(), self_check=True)  # the harness checks every answer: not the prover's to set
    assert AlphaProofProver(net=object(), leaves_per_round=1).search == {"leaves_per_round": 1}
