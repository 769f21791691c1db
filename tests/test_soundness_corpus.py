"""No false refusals (issue 24): every script of tests/data/mathlib_style_proofs passes the policy, and
the false-refusal rate is printed; the command-word list (the second layer) names where each word is
declared (tests/data/command_words.tsv), and each is refused inside a proof."""
from __future__ import annotations

from pathlib import Path

import pytest

from leangym.soundness import SoundnessPolicy
from leangym.theorem import COMMAND_KEYWORDS

DATA = Path(__file__).parent / "data"
SEPARATOR = "-- ===== next =====\n"


def corpus() -> list[tuple[str, str]]:
    out = []
    for path in sorted((DATA / "mathlib_style_proofs").glob("*.lean")):
        out += [(path.stem, s.strip("\n")) for s in path.read_text(encoding="utf-8").split(SEPARATOR) if s.strip()]
    return out


def test_the_corpus_is_accepted_whole_and_its_false_refusal_rate_is_printed(capsys):
    scripts = corpus()
    assert len(scripts) >= 200
    refused = [(style, s, why) for style, s in scripts if (why := SoundnessPolicy().check_script(s))]
    with capsys.disabled():
        print(f"\nmathlib-style corpus: {len(refused)}/{len(scripts)} refused "
              f"(false-refusal rate {100 * len(refused) / len(scripts):.1f}%)")
    assert refused == []


@pytest.mark.parametrize("feature", ["--", '"', "have ", "calc", "· ", "<;>", "rcases", "simp only [", "at h ⊢",
                                     "nlinarith [sq_nonneg", "field_simp", "norm_num [", "interval_cases", "omega",
                                     "decide", ":= fun", "set_option maxHeartbeats", "#s", "⟨", "obtain"])
def test_the_corpus_holds_each_style_the_issue_names(feature):
    assert sum(feature in s for _, s in corpus()) >= 1, feature


def command_words() -> dict[str, str]:
    rows = [line.split("\t", 1) for line in (DATA / "command_words.tsv").read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]
    return {word: source for word, source in rows}


def test_every_command_word_names_its_source_and_the_list_is_the_table():
    table = command_words()
    assert set(table) == set(COMMAND_KEYWORDS)
    assert all(source.split()[0] in ("Lean", "Mathlib", "Batteries", "Aesop") and "/" in source
               for source in table.values())
    for word in ("set_premise_selector", "lrat_proof", "reprove", "init_grind_norm", "assert_no_sorry",
                 "name_poly_vars", "deprecate"):  # the words an independent review found missing
        assert word in table


@pytest.mark.parametrize("word", sorted(command_words()))
def test_each_listed_command_word_is_refused_after_a_proof(word):
    why = SoundnessPolicy().check_script(f"exact hp\n{word} x")
    assert why is not None and ("starts a Lean command" in why or "not allowed in a proof" in why), why


@pytest.mark.parametrize("script", [
    'nlinarith [sq_nonneg (a - b), sq_nonneg (a + b)] -- "AM-GM", for example',
    '-- the "instance" here is local; we "open" the box\nsimp',
    "have h3 : #s ≤ 4 := by omega\nomega",
    "exact Finset.sum_le_sum (f := fun i => (i : ℝ)) h",
    "exact Nat.rec (motive := fun _ => True) trivial (fun _ _ => trivial) n",
    "set_option maxHeartbeats 2000000 in nlinarith [sq_nonneg (x - y), sq_nonneg (x + y)]",
])
def test_the_false_refusals_the_review_found_pass_now(script):
    """Issue 24, class 5: correct tactics an independent review saw refused."""
    assert SoundnessPolicy().check_script(script) is None
