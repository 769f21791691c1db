"""Train the byte-level BPE tokenizer of ``agents.alphaproof`` on Lean text.

    python -m agents.alphaproof.train_tokenizer --input rows.jsonl more.txt --vocab-size 4096 --output tok.json
    python -m agents.alphaproof.train_tokenizer            # rebuild the default asset from generated data

JSONL rows give their text fields ``state``, ``tactic`` and ``formal_statement``
(or, when a row has none of them, every string field); ``.txt`` files give
their lines. Without ``--input`` the corpus is the project's own generated
data: PropLogic theorems from :mod:`leangym.datasets.proplogic` when it is
importable, plus the synthetic goal states and tactics below (Mathlib-style
arithmetic, sets and sums), so the default tokenizer has seen more than
propositional logic. Its output is ``agents/alphaproof/assets/tokenizer.json``.
"""
from __future__ import annotations

import argparse
import random
import sys
from typing import Iterable, Iterator

from agents.alphaproof.jsonl import iter_json_lines
from agents.alphaproof.tokenizer import DEFAULT_PATH, LEAN_SYMBOLS, train_tokenizer
from leangym.cli import ArgumentParser, run_cli

TEXT_FIELDS = ("state", "tactic", "formal_statement")


def texts_from_file(path: str) -> Iterator[str]:
    """The text of a corpus file: each line of a text file; of a JSONL file, each row's Lean text fields
    (``state``, ``tactic``, ``formal_statement``; else every string field). Errors name ``path:line``."""
    if not path.endswith((".jsonl", ".json")):
        with open(path, "rb") as f:  # bytes: a decoding error can then name its line
            for lineno, raw in enumerate(f, 1):
                try:
                    yield raw.decode("utf-8").rstrip("\n")
                except UnicodeDecodeError:
                    raise ValueError(f"{path}:{lineno}: not UTF-8 text; a corpus is UTF-8 text or JSONL") from None
        return
    for _, row in iter_json_lines(path):
        if not isinstance(row, dict):
            continue
        fields = [k for k in TEXT_FIELDS if isinstance(row.get(k), str)]
        fields = fields or [k for k, v in row.items() if isinstance(v, str)]
        yield from (row[k] for k in fields)


# ---------------------------------------------------------------- the built-in corpus
# Representative Lean 4 / Mathlib text: what goal states and tactics look like, so
# that frequent fragments (" : ℝ", "h₀", "norm_num", "Finset.range") become tokens.

PROP_VARS = ["p", "q", "r", "s", "a", "b", "c"]
NUM_TYPES = ["ℕ", "ℤ", "ℝ", "ℚ", "ℂ"]
NUM_VARS = ["x", "y", "z", "n", "m", "k", "a", "b", "c", "d", "t", "u", "v"]
HYP_NAMES = ["h", "h₀", "h₁", "h₂", "h₃", "h₄", "ha", "hb", "hc", "hx", "hy", "hn", "hp", "hq", "hpq", "this"]
NAMED_LEMMAS = ["add_comm", "mul_comm", "add_assoc", "mul_assoc", "sq_nonneg", "pow_two", "mul_pos", "add_pos",
                "sub_nonneg", "abs_nonneg", "Nat.succ_le_iff", "Nat.lt_irrefl", "Finset.sum_range_succ",
                "Real.sqrt_nonneg", "Real.sq_sqrt", "div_add_div", "mul_self_nonneg", "le_refl", "two_mul",
                "Nat.mod_two_eq_zero_or_one", "Int.emod_emod_of_dvd", "not_not", "and_comm", "or_comm",
                "Finset.prod_range_succ", "Nat.factorial", "Real.log", "Real.exp_pos", "abs_sub_lt_iff"]


def prop_formula(rng: random.Random, depth: int) -> str:
    if depth <= 0 or rng.random() < 0.25:
        return rng.choice(PROP_VARS[:4] + ["True", "False"] if rng.random() < 0.1 else PROP_VARS[:4])
    op = rng.choice(["∧", "∨", "→", "↔", "¬"])
    if op == "¬":
        return "¬" + wrap(prop_formula(rng, depth - 1))
    return f"{wrap(prop_formula(rng, depth - 1))} {op} {wrap(prop_formula(rng, depth - 1))}"


def wrap(s: str) -> str:
    return f"({s})" if " " in s else s


def num_term(rng: random.Random, vars_: list[str], depth: int) -> str:
    if depth <= 0 or rng.random() < 0.3:
        return rng.choice(vars_ + [str(rng.randint(0, 12)), str(rng.randint(0, 1000))])
    op = rng.choice(["+", "-", "*", "/", "^", "%", "abs", "sqrt", "sum"])
    a, b = num_term(rng, vars_, depth - 1), num_term(rng, vars_, depth - 1)
    if op == "^":
        return f"{wrap(a)} ^ {rng.randint(2, 4)}"
    if op == "abs":
        return f"|{a}|"
    if op == "sqrt":
        return f"√{wrap(a)}" if rng.random() < 0.5 else f"Real.sqrt {wrap(a)}"
    if op == "sum":
        f = rng.choice(["∑", "∏"])
        body = wrap(rng.choice(["i", "f i", "i ^ 2", "(i + 1)"]))
        return f"{f} i ∈ Finset.range {rng.choice(vars_ + ['10', '100'])}, {body}"
    return f"{wrap(a)} {op} {wrap(b)}"


def num_goal(rng: random.Random) -> tuple[str, str]:
    """(goal state, statement) of a random arithmetic problem."""
    ty = rng.choice(NUM_TYPES)
    vars_ = rng.sample(NUM_VARS, rng.randint(1, 4))
    hyps = [f"{' '.join(vars_)} : {ty}"]
    binders = [f"({' '.join(vars_)} : {ty})"]
    for name in rng.sample(HYP_NAMES[1:6], rng.randint(0, 3)):
        rel = rng.choice(["<", "≤", "=", "≠", "∣", "≥"])
        fact = f"{num_term(rng, vars_, 2)} {rel} {num_term(rng, vars_, 2)}"
        hyps.append(f"{name} : {fact}")
        binders.append(f"({name} : {fact})")
    rel = rng.choice(["<", "≤", "=", "≠", "∣", "≥"])
    target = f"{num_term(rng, vars_, 3)} {rel} {num_term(rng, vars_, 3)}"
    if rng.random() < 0.15:
        target = f"∀ ε > 0, ∃ δ > 0, |{vars_[0]} - δ| < ε"
    if rng.random() < 0.1:
        target = f"{{{vars_[0]} : {ty} | {target}}} ⊆ Set.Icc 0 1"
    state = "\n".join(hyps + [f"⊢ {target}"])
    prefix = rng.choice(["mathd_algebra", "amc12a_2019_p", "aime_1983_p", "imo_1959_p", "mathd_numbertheory"])
    name = f"{prefix}_{rng.randint(1, 999)}"
    return state, f"theorem {name} {' '.join(binders)} :\n    {target} := by sorry"


def num_tactic(rng: random.Random) -> str:
    h, lem = rng.choice(HYP_NAMES), rng.choice(NAMED_LEMMAS)
    x = rng.choice(NUM_VARS)
    return rng.choice([
        "norm_num", f"norm_num [{lem}] at {h}", "linarith", f"linarith [{lem} {x}]", "positivity",
        f"nlinarith [sq_nonneg ({x} - 1), sq_nonneg ({x} + 1), {h}]", "omega", "ring", "ring_nf", "field_simp",
        f"simp [{lem}]", f"simp only [{lem}, {rng.choice(NAMED_LEMMAS)}] at {h} ⊢", f"rw [{lem}, {h}]",
        f"rw [← {lem}] at {h}", f"have {h} : {x} = {rng.randint(0, 9)} := by linarith", f"subst {h}",
        f"induction {x} with\n| zero => simp\n| succ k ih => simp [Finset.sum_range_succ, ih]; ring",
        f"interval_cases {x} <;> simp_all", "decide", f"use {rng.randint(0, 9)}", "refine ⟨_, _⟩",
        f"obtain ⟨{x}, h{x}⟩ := {h}", f"rcases {h} with ⟨{x}, rfl⟩ | {h}", f"specialize {h} {rng.randint(0, 9)}",
        f"apply {lem}", f"exact {lem} _ _", f"calc {x} = {x} * 1 := by ring\n  _ ≤ {x} * 2 := by gcongr; norm_num",
        "gcongr", "intro ε hε", f"exact ⟨{x}, by norm_num⟩", "constructor <;> linarith", "aesop", "tauto",
        f"nlinarith [mul_pos {h} {rng.choice(HYP_NAMES)}]", "push_cast", "exact_mod_cast h", f"by_contra! {h}",
        f"cases' {h} with {x} h{x}", "simp_all", "norm_num at *",
        f"unfold {rng.choice(['f', 'g', 'Function.Injective'])}",
    ])


def prop_example(rng: random.Random) -> tuple[str, str, list[str]]:
    """(goal state, statement, a few plausible tactics) of a random propositional problem."""
    vars_ = sorted(rng.sample(PROP_VARS[:4], rng.randint(1, 4)))
    hyps = [f"{' '.join(vars_)} : Prop"]
    binders = [f"({' '.join(vars_)} : Prop)"]
    for name in rng.sample(HYP_NAMES, rng.randint(0, 3)):
        f = prop_formula(rng, 2)
        hyps.append(f"{name} : {f}")
        binders.append(f"({name} : {f})")
    target = prop_formula(rng, 3)
    state = "\n".join(hyps + [f"⊢ {target}"])
    if rng.random() < 0.2:  # several goals, as Lean prints them
        tag = rng.choice(["left", "right", "inl", "inr", "mp", "mpr", "h"])
        state += f"\n\ncase {tag}\n" + "\n".join(hyps) + f"\n⊢ {prop_formula(rng, 2)}"
    h, h2 = rng.sample(HYP_NAMES, 2)
    tactics = [
        f"intro {h}", f"intro ⟨{h}, {h2}⟩", f"exact {h}", f"exact ⟨{h}.2, {h}.1⟩", f"exact ⟨{h}, {h2}⟩",
        f"apply {h}", "constructor", "left", "right", f"rcases {h} with ⟨{h}, {h2}⟩ | {h}",
        f"obtain ⟨{h}, {h2}⟩ := {h}", f"cases {h} with\n| inl {h2} => exact {h2}\n| inr {h2} => exact {h2}",
        f"exact absurd {h} {h2}", "contradiction", "assumption", "tauto", "trivial", "exfalso",
        f"exact Or.inl {h}", f"exact Or.inr {h}", f"exact fun {h} => {h2} {h}", f"by_contra {h}",
        f"simp only [not_not] at {h}", f"exact ({h} {h2}).elim", f"exact {h}.mp {h2}", f"exact Iff.intro {h} {h2}",
        f"· exact {h}", f"· intro {h}\n  exact {h2}", "apply And.intro", f"exact {h}.1",
        f"refine ⟨fun {h} => ?_, fun {h2} => ?_⟩",
    ]
    stmt = f"theorem prop_{rng.randint(0, 99999)} {' '.join(binders)} : {target} := by sorry"
    return state, stmt, rng.sample(tactics, 3)


def generated_theorems(n: int, seed: int) -> Iterator[str]:
    """Statements, reference-proof tactics and (when the in-process kernel exists) the goal
    states met along the proofs, from the PropLogic generator."""
    try:
        from leangym.datasets.proplogic import generate  # optional: the synthetic corpus suffices
    except ImportError:
        print("leangym.datasets.proplogic not importable: synthetic corpus only", file=sys.stderr)
        return
    theorems = generate(n, seed=seed)
    for t in theorems:
        yield t.theorem.formal_statement
        yield from t.proof
    try:
        from agents.alphaproof.sft import rows_from_reference_proofs
        rows = rows_from_reference_proofs(theorems)
    except ImportError:
        print("leangym.sim.local not importable: no generated goal states", file=sys.stderr)
        return
    yield from (r["state"] for r in rows)


def builtin_corpus(n: int = 20000, seed: int = 0) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(n):
        state, stmt, tactics = prop_example(rng)
        yield state
        yield stmt
        yield from tactics
        state, stmt = num_goal(rng)
        yield state
        yield stmt
        yield num_tactic(rng)
        yield num_tactic(rng)
    yield from generated_theorems(n // 4, seed)
    yield " ".join(LEAN_SYMBOLS)


def _nonempty(texts: Iterable[str]) -> Iterator[str]:
    """``texts``, and a ValueError at the end if none held any text: a tokenizer of an empty corpus knows
    only its seed symbols, a mistake to report rather than save."""
    seen = False
    for t in texts:
        seen = seen or bool(t.strip())
        yield t
    if not seen:
        raise ValueError("--input holds no text to learn from (empty files, or JSONL rows without strings)")


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(prog="python -m agents.alphaproof.train_tokenizer", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", nargs="*", default=[], help="JSONL or text files (default: the built-in corpus)")
    ap.add_argument("--vocab-size", type=int, default=1024, help="tokens in the vocabulary (default: 1024)")
    ap.add_argument("--output", default=None, help=f"tokenizer json (default with no --input: {DEFAULT_PATH})")
    ap.add_argument("--builtin", type=int, default=20000,
                    help="examples of each kind in the built-in corpus (default: 20000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the built-in corpus (default: 0)")
    args = ap.parse_args(argv)
    if args.input:
        if args.output is None:
            ap.error("--output is required with --input (the default asset is built from the built-in corpus)")
        texts: Iterable[str] = _nonempty(t for path in args.input for t in texts_from_file(path))
    else:
        texts = builtin_corpus(args.builtin, args.seed)
    out = args.output or DEFAULT_PATH
    tok = train_tokenizer(texts, args.vocab_size)
    tok.save(out)
    print(f"wrote {out}: vocab {tok.vocab_size}")
    return 0


if __name__ == "__main__":
    run_cli(main)
