"""The AlphaProof tokenizer: Lean text round-trips, math symbols as single tokens, the default
layout, and training one (agents/alphaproof/train_tokenizer.py, the smallest vocabulary it accepts)."""
from __future__ import annotations

import json

import pytest

from agents.alphaproof.tokenizer import LEAN_SYMBOLS, SPECIAL_TOKENS, load_tokenizer, train_tokenizer

from test_alphaproof_model import ROWS, STATES


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


def test_tokenizer_round_trips_lean_text(tok):
    texts = STATES + ["exact ⟨h.2, h.1⟩", "rcases h with ⟨a, b⟩ | c", "  · simp_all\n    norm_num",
                      "∀ ε > 0, ∃ δ > 0, |x - y| < δ → ‖f x‖ ≤ ε", "x⁻¹ ∈ Set.Icc (0 : ℚ) 1 ∪ ∅",
                      "¬p", "(¬p) × x² · y³", "€ ÷ ķ Ĭ ¬", "日本語 🙂 \t tabs", "a <|eos|> b <|pad|>", ""]
    for text in texts:
        ids = tok.encode(text)
        assert tok.decode(ids) == text
        # text never turns into special tokens, even when it spells one
        assert not set(ids) & {tok.pad_id, tok.bos_id, tok.eos_id, tok.goal_id, tok.tactic_id}


def test_math_symbols_are_single_tokens(tok):
    for sym in LEAN_SYMBOLS:
        assert len(tok.encode(sym)) == 1, sym
        assert len(tok.encode(" " + sym)) == 1, sym
    # and stay whole inside text
    assert tok.encode("p ∧ q") == tok.encode("p") + tok.encode(" ∧") + tok.encode(" q")


def test_default_tokenizer_layout(tok):
    assert [tok.tk.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert 512 <= tok.vocab_size <= 2048


def test_train_tokenizer_script(tmp_path):
    from agents.alphaproof.train_tokenizer import main
    data = tmp_path / "rows.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        for r in ROWS * 20:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    out = tmp_path / "tok.json"
    assert main(["--input", str(data), "--vocab-size", "600", "--output", str(out)]) == 0
    t = load_tokenizer(str(out))
    for r in ROWS:
        assert t.decode(t.encode(r["state"])) == r["state"]
    assert len(t.encode("⊢")) == 1 and len(t.encode("¬")) == 1
    assert t.decode(t.encode("¬p € ÷")) == "¬p € ÷"


def test_train_tokenizer_rejects_tiny_vocab():
    with pytest.raises(ValueError):
        train_tokenizer(["p"], vocab_size=300)


def test_train_tokenizer_names_the_smallest_vocab_it_accepts():
    # the narrow form of test_train_tokenizer_rejects_tiny_vocab: the type and the message
    from agents.alphaproof import tokenizer as tokenizer_mod

    smallest = 256 + len(SPECIAL_TOKENS) + len(tokenizer_mod._ADDED)  # bytes, specials, Lean symbols
    for too_small in (10, 300, smallest - 1):
        with pytest.raises(ValueError, match=rf"^vocab_size must be at least {smallest}$"):
            train_tokenizer(["p"], vocab_size=too_small)
    assert train_tokenizer(["p ∧ q → p"], vocab_size=smallest).vocab_size == smallest


def test_train_tokenizer_refuses_an_empty_or_binary_corpus(tmp_path):
    from agents.alphaproof import train_tokenizer as tool

    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "x.png").write_bytes(b"\x89PNG\r\n")
    for name, says in (("empty.jsonl", "holds no text"), ("x.png", "x.png:1: not UTF-8 text")):
        with pytest.raises(ValueError, match=says):
            tool.main(["--input", str(tmp_path / name), "--output", str(tmp_path / "t.json")])
    assert not (tmp_path / "t.json").exists()
