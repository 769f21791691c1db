"""Tests of the PropLogic theorem generator (leangym.datasets.proplogic).

Two independent checks of the reference proofs:

* the reference checker of ``prop_checker.py``: a Lean 4 precedence parser of the
  printed statements and an interpreter of exactly the tactics the generator
  uses. It checks thousands of theorems fast and also checks that the printed
  statement parses back to the intended formulas;
* the simulated kernel (``leangym.sim.process.SimProcess``): the whole proof as
  a command, and the proof stepped tactic by tactic through the protocol.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from leangym.backends.types import parse_command, parse_start, parse_tactic_reply
from leangym.datasets import proplogic as g
from leangym.datasets.proplogic import (
    LEVELS,
    MAX_DIFFICULTY,
    PropTheorem,
    from_row,
    generate,
    heldout_set,
    render,
    statement_key,
    to_jsonl,
    to_row,
    training_stream,
)
from leangym.sim.process import SimProcess
from leangym.datasets.propgen.statement import SUBSCRIPTS
from leangym.theorem import Theorem
from prop_checker import CheckError, Parser, check_proof, parse_statement

# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def big() -> list[PropTheorem]:
    """3000 theorems over all levels (600 a level), shared by the statistical tests."""
    return generate(3000, seed=1)


@pytest.fixture(scope="module")
def sample(big) -> list[PropTheorem]:
    return big[:1000]


def test_levels_table_consistent():
    assert sorted(LEVELS) == list(range(1, MAX_DIFFICULTY + 1))
    prev = 0
    for lv in sorted(LEVELS):
        lo, hi = LEVELS[lv].proof_length
        assert prev < lo <= hi
        prev = hi


def test_reference_checker_rejects_wrong_proofs():
    stmt = "theorem x (p q : Prop) (h₁ : p → q) : (q → p) → p → q := by sorry"
    check_proof(stmt, ["intro h₂", "intro h₃", "exact h₁ h₃"])
    for bad in (["intro h₂", "intro h₃", "exact h₂ h₃"], ["intro h₂", "exact h₂"], ["intro h₂"], ["left"]):
        with pytest.raises((CheckError, KeyError)):
            check_proof(stmt, bad)


# --------------------------------------------------------------------------- printing


@pytest.mark.parametrize(
    "formula, text",
    [
        (("imp", ("imp", ("var", 0), ("var", 1)), ("var", 2)), "(p → q) → r"),
        (("imp", ("var", 0), ("imp", ("var", 1), ("var", 2))), "p → q → r"),
        (("and", ("and", ("var", 0), ("var", 1)), ("var", 2)), "(p ∧ q) ∧ r"),
        (("and", ("var", 0), ("and", ("var", 1), ("var", 2))), "p ∧ q ∧ r"),
        (("or", ("and", ("var", 0), ("var", 1)), ("var", 2)), "p ∧ q ∨ r"),
        (("and", ("or", ("var", 0), ("var", 1)), ("var", 2)), "(p ∨ q) ∧ r"),
        (("not", ("and", ("var", 0), ("var", 1))), "¬(p ∧ q)"),
        (("and", ("not", ("var", 0)), ("var", 1)), "¬p ∧ q"),
        (("not", ("not", ("var", 0))), "¬¬p"),
        (("iff", ("iff", ("var", 0), ("var", 1)), ("var", 2)), "(p ↔ q) ↔ r"),
        (("iff", ("var", 0), ("iff", ("var", 1), ("var", 2))), "p ↔ (q ↔ r)"),
        (("iff", ("var", 0), ("imp", ("var", 1), ("var", 2))), "p ↔ q → r"),
        (("imp", ("var", 0), ("iff", ("var", 1), ("var", 2))), "p → (q ↔ r)"),
        (("imp", ("iff", ("var", 0), ("var", 1)), ("var", 2)), "(p ↔ q) → r"),
        (("and", ("var", 0), ("arith", "2 + 3 = 5")), "p ∧ 2 + 3 = 5"),
        (("imp", ("true",), ("false",)), "True → False"),
    ],
)
def test_render_minimal_parentheses(formula, text):
    assert render(formula) == text
    p = Parser(text, {"p": 0, "q": 1, "r": 2})
    parsed = p.parse()
    strip = lambda f: f[:2] if f[0] == "arith" else tuple(strip(x) if isinstance(x, tuple) else x for x in f)  # noqa: E731
    assert strip(parsed) == formula


def test_statements_parse_back_and_use_canonical_names(sample):
    for t in sample:
        hyps, goal = parse_statement(t.formal_statement)
        names = list(hyps)
        assert names == [f"h{str(i + 1).translate(SUBSCRIPTS)}" for i in range(len(names))]
        m = re.search(r"\(([a-z ]+) : Prop\)", t.formal_statement)
        if m:
            assert m.group(1).split() == list(g.VAR_NAMES[: len(m.group(1).split())])
        assert t.formal_statement.startswith(f"theorem {t.name} ")
        assert t.theorem.header == g.HEADER
        assert t.formal_statement.endswith(":= by sorry")


# --------------------------------------------------------------------------- proofs (reference checker)


def test_reference_proofs_check_all_levels(big):
    for t in big:
        try:
            check_proof(t.formal_statement, t.proof)
        except (CheckError, KeyError) as e:
            raise AssertionError(f"{t.formal_statement}\n{t.proof}\n{e!r}") from None


def test_reference_proofs_check_large_sample_with_options():
    ts = generate(600, seed=2024, arith=0.5, classical=1.0) + generate(200, seed=5, difficulty=5)
    assert any(x in t.proof for t in ts for x in ("norm_num", "decide"))
    assert any(p.startswith("by_contra") for t in ts for p in t.proof)
    for t in ts:
        try:
            check_proof(t.formal_statement, t.proof)
        except (CheckError, KeyError) as e:
            raise AssertionError(f"{t.formal_statement}\n{t.proof}\n{e!r}") from None


def test_switches_turn_constructs_off():
    ts = generate(300, seed=3, arith=0.0, classical=0.0)
    assert not any(p.split()[0] in ("by_contra", "norm_num", "decide") for t in ts for p in t.proof)


def test_only_supported_tactics(sample):
    allowed = re.compile(
        r"intro \S+|exact .+|constructor|left|right|apply \S+|rcases \S+ with (⟨\S+, \S+⟩|\S+ \| \S+)|exfalso"
        r"|trivial|assumption|by_contra \S+|norm_num|decide"
    )
    for t in sample:
        for tac in t.proof:
            assert allowed.fullmatch(tac), tac


# --------------------------------------------------------------------------- API properties


def test_deterministic_and_prefix_stable():
    a = generate(200, seed=99)
    b = generate(200, seed=99)
    assert [to_row(x) for x in a] == [to_row(x) for x in b]
    assert [to_row(x) for x in generate(50, seed=99)] == [to_row(x) for x in a[:50]]
    c = generate(200, seed=100)
    assert [x.formal_statement for x in a] != [x.formal_statement for x in c]


def test_deterministic_across_hash_seeds():
    code = ("import hashlib, json; from leangym.datasets.proplogic import generate, heldout_set, to_row; "
            "rows = [to_row(t) for t in generate(150, seed=4)] + [to_row(t) for t in heldout_set(30)]; "
            "print(hashlib.sha256(json.dumps(rows).encode()).hexdigest())")
    outs = set()
    for hs in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=hs)
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True, timeout=120, cwd=Path(__file__).resolve().parents[1]).stdout.strip())
    assert len(outs) == 1


def test_no_duplicates_modulo_name(big):
    ts = big
    keys = [statement_key(t) for t in ts]
    assert len(set(keys)) == len(keys)
    assert len({t.name for t in ts}) == len(ts)


def test_names_and_difficulty_spread():
    ts = generate(50, seed=8, difficulty=(2, 4))
    for i, t in enumerate(ts):
        assert t.difficulty == 2 + i % 3
        assert t.name == f"prop_d{t.difficulty}_{i:05d}"
        assert t.theorem.split == "train"
    assert {t.difficulty for t in generate(10, seed=8, difficulty=3)} == {3}
    with pytest.raises(ValueError):
        generate(1, seed=0, difficulty=MAX_DIFFICULTY + 1)
    assert generate(0, seed=0) == []


def test_levels_respect_their_ranges_and_get_harder(big):
    by_level = defaultdict(list)
    for t in big:
        lv = LEVELS[t.difficulty]
        assert lv.proof_length[0] <= t.proof_length <= lv.proof_length[1]
        assert lv.depth[0] <= t.depth <= lv.depth[1]
        hyps, goal = parse_statement(t.formal_statement)
        assert t.depth == max(g.depth(f) for f in [*hyps.values(), goal])
        by_level[t.difficulty].append(t)
    means = [statistics.mean(t.proof_length for t in by_level[d]) for d in sorted(by_level)]
    depths = [statistics.mean(t.depth for t in by_level[d]) for d in sorted(by_level)]
    assert means == sorted(means) and len(set(means)) == len(means), means
    assert depths == sorted(depths), depths


def test_heldout_fixed_spread_and_excluded():
    h = heldout_set()
    assert len(h) == g.HELDOUT_SIZE
    assert [x.formal_statement for x in h] == [x.formal_statement for x in heldout_set()]
    assert [x.name for x in heldout_set(40)] == [x.name for x in h[:40]]
    counts = defaultdict(int)
    for t in h:
        counts[t.difficulty] += 1
        assert t.theorem.split == "heldout"
        assert t.name.startswith(f"prop_heldout_d{t.difficulty}_")
    assert sorted(counts) == list(range(1, MAX_DIFFICULTY + 1))
    assert max(counts.values()) - min(counts.values()) <= 1
    held = {statement_key(t) for t in h}
    # the generator would produce held-out statements for this seed if they were not excluded
    same_seed = generate(300, seed=g.HELDOUT_SEED)
    assert held & {statement_key(t) for t in same_seed}
    excl = generate(300, seed=g.HELDOUT_SEED, exclude=h)
    assert not held & {statement_key(t) for t in excl}
    stream = training_stream(seed=g.HELDOUT_SEED)
    got = [next(stream) for _ in range(400)]
    assert not held & {statement_key(t) for t in got}
    assert len({statement_key(t) for t in got}) == len(got)
    # exclusion by plain statement strings, with other names
    renamed = [t.formal_statement.replace(t.name, "other_name") for t in h[:20]]
    excl2 = generate(100, seed=g.HELDOUT_SEED, exclude=renamed)
    assert not {statement_key(s) for s in renamed} & {statement_key(t) for t in excl2}


def test_statement_key_ignores_name_and_spacing():
    a = Theorem("theorem foo (p : Prop) (h₁ : p) : p := by sorry")
    b = "theorem   bar (p : Prop)  (h₁ : p) : p := by sorry"
    assert statement_key(a) == statement_key(b)


def test_jsonl_round_trip(tmp_path):
    ts = generate(30, seed=3)
    path = tmp_path / "prop.jsonl"
    assert to_jsonl(str(path), ts) == 30
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert set(rows[0]) >= {"name", "header", "formal_statement", "split", "proof", "difficulty"}
    assert rows[0]["proof"] == list(ts[0].proof)
    assert "∧" in path.read_text(encoding="utf-8") or "→" in path.read_text(encoding="utf-8")
    back = [from_row(r) for r in rows]
    assert [(b.theorem.formal_statement, b.proof, b.difficulty, b.depth) for b in back] == \
        [(t.theorem.formal_statement, t.proof, t.difficulty, t.depth) for t in ts]
    assert Theorem.from_row(rows[0]).extra["proof"] == rows[0]["proof"]
    assert from_row(to_row(ts[0])) == ts[0]


def test_prop_theorem_properties(sample):
    t = sample[3]
    assert isinstance(t, PropTheorem)
    assert t.proof_length == len(t.proof)
    assert t.script == "\n".join(t.proof)
    assert t.source == t.theorem.source_with_proof(t.script)
    assert t.theorem.extra["proof"] == list(t.proof)


# --------------------------------------------------------------------------- the simulated kernel


@pytest.fixture(scope="module")
def kernel_sample() -> list[PropTheorem]:
    """300 theorems, all levels, with many arithmetic leaves and by_contra, and part of the held-out set."""
    return generate(150, seed=31) + generate(100, seed=32, arith=0.6, classical=1.0) + heldout_set()[:50]


def test_kernel_prints_statements_as_the_generator_does(kernel_sample):
    """The root goal's target and hypothesis types, as the kernel pretty-prints them, are the statement's text."""
    proc = SimProcess()
    for t in kernel_sample:
        proc.reset()  # a proof start declares the statement, as Lean's REPL does (names repeat here)
        root = parse_start(0, proc.proof_from_sorry(t.theorem.header + t.formal_statement))
        (goal,) = root.goals
        head = t.formal_statement[: -len(" := by sorry")]
        assert head.endswith(f" : {goal.target}"), (head, goal.target)
        for h in goal.hypotheses:
            if h.type != "Prop":
                assert f"({h.name} : {h.type})" in head, (head, h)


def test_kernel_rejects_broken_reference_proofs(kernel_sample):
    """The kernel checks are not vacuous: a truncated or corrupted proof fails."""
    proc = SimProcess()
    longer = [t for t in kernel_sample if t.proof_length >= 2][:60]
    assert longer
    for t in longer:
        res = parse_command(proc.command(t.theorem.source_with_proof("\n".join(t.proof[:-1]))))
        assert res.errors, t.proof
        proc.reset()  # the command declared the theorem (with its error), as Lean does
        broken = PropTheorem(t.theorem, t.proof[:-1] + ("exact True.intro",), t.difficulty, t.depth)
        assert _step_through(proc, broken) is not None or t.proof[-1] == "trivial"


def test_kernel_accepts_whole_reference_proofs(kernel_sample):
    proc = SimProcess()
    failures = []
    for t in kernel_sample:
        proc.reset()  # sample names repeat across seeds, and an environment never redeclares a name
        res = parse_command(proc.command(t.source))
        if res.errors or res.uses_sorry:
            failures.append((t.formal_statement, t.proof, [m.text for m in res.messages]))
    assert not failures, f"{len(failures)} rejected, first: {failures[:3]}"


def _step_through(proc, t: PropTheorem) -> str | None:
    """Apply the proof tactic by tactic, always to the first open branch; None when it ends with no goals."""
    root = parse_start(0, proc.proof_from_sorry(t.theorem.header + t.formal_statement))
    pending = [root] if root.goals else []
    for tac in t.proof:
        if not pending:
            return f"{tac!r}: no goals left"
        state = pending.pop(0)
        res = parse_tactic_reply(0, tac, proc.try_apply_tactic(state.proof_state_id, tac))
        if not res.ok:
            return f"{tac!r} on\n{state.text}\n-> {res.outcome.value}: {res.error}"
        pending[:0] = list(res.states)
    if pending:
        return f"goals left: {pending[0].text}"
    return None


@pytest.mark.parametrize("factorized", [False, True])
def test_kernel_steps_through_reference_proofs(factorized, kernel_sample):
    proc = SimProcess(factorized=factorized)
    failures = []
    for t in kernel_sample:
        proc.reset()  # a proof start declares the statement, as Lean's REPL does (names repeat here)
        err = _step_through(proc, t)
        if err:
            failures.append((t.formal_statement, t.proof, err))
    assert not failures, f"{len(failures)} failed, first: {failures[:3]}"


def test_training_streams_of_different_seeds_never_share_a_name():
    # a vector env's sub-envs draw from streams seeded seed + i: per-theorem logs keyed on the name
    # merged different statements ("prop_d1_00000" named 18 statements over 20 seeds)
    named: dict[str, str] = {}
    for seed in range(6):
        for t in itertools.islice(training_stream(seed, (1, 2)), 40):
            assert named.setdefault(t.theorem.name, t.theorem.formal_statement) == t.theorem.formal_statement
            assert t.theorem.name.startswith(f"prop_s{seed}_d")
    assert len(named) == 6 * 40
