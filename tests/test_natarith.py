"""The ℕ-arithmetic generator (leangym.datasets.natarith) and the warm start's share of it.

Every reference proof is replayed on the simulated kernel tactic by tactic and must close
every goal; a statement whose proof does not is a generator bug the warm start would drop.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agents.alphaproof.sft import rows_from_reference_proofs
from agents.alphaproof.theorem_source import PropLogicSource
from agents.alphaproof.train import train
from agents.alphaproof.train_args import Args
from leangym.datasets import load_theorems, minif2f, natarith
from leangym.datasets.proplogic import from_row, statement_key

REPO = Path(__file__).resolve().parent.parent
from leangym.sim.local import LocalProcess
from leangym.theorem import Theorem


@pytest.mark.parametrize("seed", [0, 1])
def test_every_reference_proof_closes_its_theorem_on_the_kernel(seed):
    theorems = natarith.generate(250, seed)
    for t in theorems:
        lean = LocalProcess()
        goals = [lean.start_proof(t.theorem.start_source())]
        for tactic in t.proof:
            result = lean.apply_tactic(goals[0], tactic)
            assert result.ok, (t.theorem.formal_statement, tactic, result.error)
            goals = list(result.states) + goals[1:]
        assert not goals, (t.theorem.formal_statement, t.proof)
    assert {t.difficulty for t in theorems} == {1, 2, 3}
    assert sum("omega" in t.proof for t in theorems) > len(theorems) / 2
    assert any(len(t.proof) > 1 for t in theorems)


def test_a_wrong_answer_is_refused_by_the_same_kernel():
    """The replay above means something: change a theorem's answer and its proof fails."""
    end = re.compile(r" = (\d+) := by sorry$")
    t = next(t for t in natarith.generate(50, 3) if t.proof == ("omega",) and end.search(t.theorem.formal_statement))
    stmt = end.sub(lambda m: f" = {int(m[1]) + 1} := by sorry", t.theorem.formal_statement)
    wrong = Theorem.from_row({"name": t.name, "header": t.theorem.header, "formal_statement": stmt})
    lean = LocalProcess()
    assert not lean.apply_tactic(lean.start_proof(wrong.start_source()), "omega").ok


def test_seeded_distinct_and_written_as_theorem_rows(tmp_path):
    a, b = natarith.generate(200, 5), natarith.generate(200, 5)
    assert [t.theorem.formal_statement for t in a] == [t.theorem.formal_statement for t in b]
    assert len({statement_key(t) for t in a}) == 200
    assert natarith.generate(50, 6)[0].theorem.formal_statement != a[0].theorem.formal_statement
    out = tmp_path / "nat.jsonl"
    subprocess.run([sys.executable, "-m", "leangym.datasets.natarith", "-n", "30", "--seed", "2", "-o", str(out)],
                   check=True, capture_output=True, cwd=REPO, timeout=120)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [from_row(r).proof for r in rows] == [t.proof for t in natarith.generate(30, 2)]
    assert len(load_theorems(str(out))) == 30  # what --theorems and the benchmark's --dataset read


def _problem(t) -> tuple[str, str, str]:
    """(variable, hypothesis, goal) of a generated one-hypothesis theorem."""
    m = re.fullmatch(r"theorem \S+ \((\w) : ℕ\) \(h₀ : (.*)\) : (.*) := by sorry", t.theorem.formal_statement)
    assert m, t.theorem.formal_statement
    return m[1], m[2], m[3]


def _thm(statement: str) -> Theorem:
    return Theorem.from_row({"name": statement.split()[1], "formal_statement": statement})


def test_a_benchmark_problem_is_excluded_in_any_of_its_forms():
    """By proof state, not text: every form of one problem reaches one state on the simulator."""
    made = natarith.generate(400, 4, exclude=frozenset())
    target = next(t for t in made if t.proof == ("omega",) and
                  re.fullmatch(r"theorem \S+ \(\w : ℕ\) \(h₀ : \(\d+ \* \w\) % \d+ = \d+\) : .*",
                               t.theorem.formal_statement))  # e.g. `(x : ℕ) (h₀ : (5 * x) % 17 = 8) : x % 17 = 5`
    v, hyp, goal = _problem(target)
    reached = natarith._states_of_proof(target.theorem, target.proof)
    # the benchmark's way of writing it: another name, variable, hypothesis name, spacing, no parentheses, or `→`
    bare = hyp.replace("(", "").replace(")", "")
    rename = re.compile(rf"\b{v}\b")
    for bench in (f"theorem b1 (y : ℕ) (h₁ : {rename.sub('y', hyp)}) : {rename.sub('y', goal)} := by sorry",
                  f"theorem b2 ({v}: ℕ)\n  (h₀ : {bare}) :\n  {goal} := by sorry",
                  f"theorem b3 ({v} : ℕ) : {hyp} → {goal} := by sorry"):
        assert natarith.fingerprints_of(_thm(bench)) & reached, bench
        kept = natarith.generate(400, 4, exclude=natarith.fingerprints_of(_thm(bench)))
        assert target.theorem.formal_statement.split(" ", 2)[2] not in {
            t.theorem.formal_statement.split(" ", 2)[2] for t in kept}
    # the generator's own compound forms of it pass through the benchmark's state too
    bench = natarith.fingerprints_of(target.theorem)
    for statement, proof in ((f"theorem g1 ({v} : ℕ) : {hyp} → {goal} := by sorry", ["intro h₀", "omega"]),
                             (f"theorem g2 ({v} : ℕ) (h₀ : {hyp}) : {goal} ∧ 1 + 1 = 2 := by sorry",
                              ["constructor", "omega", "norm_num"]),
                             (f"theorem g3 ({v} : ℕ) (h₀ : {hyp}) : {v} = 0 ∨ {goal} := by sorry", ["right", "omega"])):
        assert natarith._states_of_proof(_thm(statement), proof) & bench, statement
    # and another problem is not excluded: one answer changed
    other = re.sub(r"= (\d+) := by sorry$", lambda m: f"= {int(m[1]) + 1} := by sorry", target.theorem.formal_statement)
    assert not natarith.fingerprints_of(_thm(other)) & reached


def test_the_stream_excludes_the_shipped_fingerprints_and_they_match_the_local_copy():
    from leangym.datasets.minif2f_fingerprints import FINGERPRINTS

    a, b = natarith.generate(600, 1), natarith.generate(600, 1, exclude=frozenset())
    assert [t.theorem.formal_statement for t in a] != [t.theorem.formal_statement for t in b]  # seed 1 meets one (its 411th)
    if minif2f.local_copy() is None:
        pytest.skip("no shared miniF2F copy beside the repository: the shipped fingerprints are not checked")
    assert natarith.benchmark_fingerprints() == FINGERPRINTS, \
        "remake them: python -m leangym.datasets.natarith --write-fingerprints"


def test_the_warm_start_takes_its_share_and_learns_rows_from_it():
    refs = PropLogicSource(nat_share=0.25).reference(40, seed=1)
    nat = [r for r in refs if r.name.startswith("nat_sft")]
    assert len(refs) == 40 and len(nat) == 10
    assert len(rows_from_reference_proofs(nat)) >= 10
    assert not [r for r in PropLogicSource().reference(40, seed=1) if r.name.startswith("nat_sft")]


def test_warmup_nat_with_a_theorem_file_is_refused(tmp_path):
    out = tmp_path / "nat.jsonl"
    natarith.to_jsonl(str(out), natarith.generate(20, 0))
    with pytest.raises(ValueError, match="--warmup-nat .* --theorems"):
        train(Args(theorems=str(out), warmup_nat=0.2, iterations=0, checkpoint_dir="", logdir=""),
              explicit={"theorems", "warmup_nat"})
    with pytest.raises(ValueError, match="--warmup-nat .* --theorems"):  # (a caller's Args: chosen if not the default)
        train(Args(theorems=str(out), warmup_nat=0.5, iterations=0, checkpoint_dir="", logdir=""))
    done = train(Args(theorems=str(out), warmup_nat=0.0, iterations=0, warmup_steps=0, sft_mix=0.0, eval_every=0,
                      checkpoint_dir="", logdir="", progress=False), explicit={"theorems", "warmup_nat"})
    assert done["iteration"] == 0  # a share of 0 is no mixing: not refused
    with pytest.raises(ValueError, match="--warmup-nat must be a fraction"):
        train(Args(warmup_nat=1.5, iterations=0, checkpoint_dir="", logdir=""), explicit={"warmup_nat"})
