"""The ℕ-arithmetic generator (leangym.datasets.natarith) and the warm start's share of it.

Every reference proof is replayed on the simulated kernel tactic by tactic and must close
every goal; a statement whose proof does not is a generator bug the warm start would drop.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from agents.alphaproof.sft import rows_from_reference_proofs
from agents.alphaproof.theorem_source import PropLogicSource
from agents.alphaproof.train import train
from agents.alphaproof.train_args import Args
from leangym.datasets import load_theorems, minif2f, natarith
from leangym.datasets.proplogic import from_row, statement_key
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
                   check=True, capture_output=True)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [from_row(r).proof for r in rows] == [t.proof for t in natarith.generate(30, 2)]
    assert len(load_theorems(str(out))) == 30  # what --theorems and the benchmark's --dataset read


def test_a_benchmark_statement_is_never_generated():
    """Training on these must not be training on the benchmark: equal up to variable names is equal."""
    made = natarith.generate(300, 4, exclude=[])
    fixture = [made[7].theorem.formal_statement.replace("theorem nat_", "theorem bench_"),
               re.sub(r"\b([nxak])\b", "y", made[9].theorem.formal_statement)]  # the same, its variable renamed
    kept = {t.theorem.formal_statement.split(" ", 2)[2] for t in natarith.generate(300, 4, exclude=fixture)}
    assert made[7].theorem.formal_statement.split(" ", 2)[2] not in kept
    assert made[9].theorem.formal_statement.split(" ", 2)[2] not in kept
    assert made[8].theorem.formal_statement.split(" ", 2)[2] in kept


def test_no_generated_statement_is_a_shared_minif2f_statement():
    if minif2f.local_copy() is None:
        pytest.skip("no shared miniF2F copy beside the repository")
    bench = {natarith.shape(s) for s in natarith.benchmark_statements()}
    assert len(bench) > 400
    for seed in range(3):
        assert not {natarith.shape(t.theorem.formal_statement) for t in natarith.generate(2000, seed)} & bench


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
    with pytest.raises(ValueError, match="--warmup-nat must be a fraction"):
        train(Args(warmup_nat=1.5, iterations=0, checkpoint_dir="", logdir=""), explicit={"warmup_nat"})
