"""A differential test of leangym.lexer against an independent model of Lean 4's tokenizer
(tests/lean_tokenizer_model.py, written from Lean's Parser/Basic.lean and Module.lean by an auditor,
not from leangym's code). Wherever `scan` reports no risk, every position it blanks as a comment or
literal must be one the model reads so: a position blanked there but code to Lean is text the soundness
checks would not see. (The other way round, leangym keeping as code what Lean comments out, only
refuses more.)"""
from __future__ import annotations

import random

import pytest

from lean_tokenizer_model import model
from leangym.lexer import scan

FRAGS = ["x", "h'", "a'b", "x!", "y?", "foo!'", "x₀'", "x₀", "α", "ℕ", "λ", "Π", "é", "ⱼ", "ᶜ", "x.y", "h.1", "h.1.2",
 "0", "1", "0x1F", "0b10", "0o7", "1_000", "1_", "1.5", "2e-3", "1e", "1.", "0x", "3E+2",
 "'a'", "'\\n'", "'\\''", "'\\x41'", "'\\u0041'", "'\"'", "'", "''", "'''", "'ab'", "'\\q'",
 '"', '"s"', '"\\""', '"\\\n  x"', '"\\\n\n"', '"\\q"', '"{x}"', '"a--b"', '"/-"', 's!"{x}"',
 'r"x"', 'r#"a"b"#', 'r##"x"#"##', 'xr"y"', '.r"z"',
 "--", "-- c", "/-", "-/", "/- c -/", "/-/", "/--", "/-!", "/-- d -/", "/-! m -/", "/- /- n -/ -/",
 "«", "»", "«a b»", "«--»", "x.«y»", "`x", "`«a»", "`(", "``x",
 "!'", "?'", "₀'", "∑'", "∏'", "⁻¹'", "''", "⁻¹", "∑", "<-", "->", "//", "\\/", "/\\", "<--", "-[", "+1]",
 ".", "..", "(", ")", "{", "}", "[", "]", ":=", "-", "/", "!", "?", "#", "#eval", "sorry", "axiom", "*", "=", ",",
 " ", " ", " ", " ", "\n", "\n", "\t", "\r", "  "]


def _random_source(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGS) + rng.choice(["", "", " ", "\n"]) for _ in range(rng.randint(1, 9)))


def _hidden_code(source: str, strings: bool) -> list[int]:
    """Positions `scan` blanks (reporting no risk) that the model reads as code."""
    blanked, risk = scan(source, strings=strings)
    if risk is not None:
        return []
    mask = model(source).mask
    lean_blanks = {p for p, kind in enumerate(mask) if kind == "c" or (strings and kind == "s")}
    return [p for p in range(len(source))
            if blanked[p] != source[p] and p not in lean_blanks and not source[p].isspace()]


@pytest.mark.parametrize("seed", [0, 1])
def test_scan_never_blanks_what_lean_reads_as_code(seed):
    rng = random.Random(seed)
    for _ in range(1500):
        source = _random_source(rng)
        for strings in (False, True):
            assert not _hidden_code(source, strings), (source, strings)


def _balanced(chars: list[str]) -> bool:
    pairs, stack = {")": "(", "]": "[", "}": "{", "⟩": "⟨"}, []
    for c in chars:
        if c in "([{⟨":
            stack.append(c)
        elif c in pairs and (not stack or stack.pop() != pairs[c]):
            return False
    return not stack


@pytest.mark.parametrize("seed", [0, 1])
def test_a_script_the_policy_takes_for_balanced_is_balanced_to_lean(seed):
    """Issue 24's structural guarantee rests on this: where the policy reads a proof's brackets as balanced,
    Lean's tokenizer (the model) reads them so too, so the proof cannot close the check's bracket."""
    import re

    from leangym.soundness import bracket_refusal, read_as_lean

    rng = random.Random(100 + seed)
    frags = FRAGS + ["(", ")", "(", ")", "⟨", "⟩", "[", "]", "'('", "')'", '")"', "«)»", "-- )", "/- ( -/"]
    taken = 0
    for _ in range(3000):
        source = "".join(rng.choice(frags) + rng.choice(["", " ", "\n"]) for _ in range(rng.randint(1, 10)))
        code, _ = read_as_lean(source)
        if code is None or bracket_refusal(code) is not None:
            continue
        taken += 1
        result = model(source)
        names = re.sub("«[^»]*»", lambda m: " " * len(m.group()), source)  # an escaped name is one token
        assert _balanced([names[p] for p, kind in enumerate(result.mask) if kind == "x"]), source
    assert taken > 100
