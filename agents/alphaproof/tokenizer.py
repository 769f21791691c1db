"""Byte-level BPE for Lean text, with the frequent math symbols as single tokens.

Byte-level: every string round-trips exactly (no unknown token), whatever
Unicode Lean prints. Plain BPE would split a rare ``↔`` (three UTF-8 bytes)
into byte pieces, or glue a frequent one to its neighbours, so each symbol of
:data:`LEAN_SYMBOLS` is an *added token*, twice: alone (``→``) and with the
space before it (`` →``; the longest match wins), which keeps ``p → q`` at
three tokens as BPE would. Added tokens are cut out of the text before BPE
sees it, so training cuts the corpus at the same places and spends no merges
on the symbols.

One exception: a bare Latin-1 symbol (``¬ · × ¹ ² ³``) is spelled exactly
like a byte of the byte-level alphabet (``¬`` *is* byte 0xAC there), so as an
added token it would take over that byte's id and corrupt every character
whose UTF-8 contains the byte (``€`` ends in 0xAC). Those stay plain BPE and
the training corpus is seeded with them, so their two bytes merge into one
token early.

The prompt format (see :mod:`agents.alphaproof.data`) uses the special tokens
of :data:`SPECIAL_TOKENS`; they are spelled ``<|...|>`` and the tokenizer
never produces them from text, so a goal cannot inject one.
"""
from __future__ import annotations

import os
import re
from typing import Iterable, Sequence

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

# ids 0..4, in this order, in every tokenizer we train
SPECIAL_TOKENS = ("<|pad|>", "<|bos|>", "<|eos|>", "<|goal|>", "<|tactic|>")

LEAN_SYMBOLS = tuple(
    "⊢ ∧ ∨ ¬ → ← ↔ ∀ ∃ ∃! λ ↦ ℕ ℤ ℚ ℝ ℂ ≤ ≥ ≠ ≡ ∣ ⟨ ⟩ ✝ · • ∘ × ∑ ∏ ∫ √ ∞ π "
    "∈ ∉ ⊆ ⊂ ∪ ∩ ∅ ᶜ ⁻¹ ⊤ ⊥ ‖ ⌊ ⌋ ⌈ ⌉ ⦃ ⦄ ↑ ⇑ ∑' α β γ δ ε θ μ σ φ ψ ω "
    "₀ ₁ ₂ ₃ ₄ ₅ ₆ ₇ ₈ ₉ ⁰ ¹ ² ³ ⁴ ⁵ ⁶ ⁷ ⁸ ⁹ ⟶ ≃ ≅ ⊓ ⊔ ∂ ∇".split()
)

DEFAULT_PATH = os.path.join(os.path.dirname(__file__), "assets", "tokenizer.json")


class LeanTokenizer:
    """A thin wrapper: special-token ids as attributes, and encode/decode without surprises."""

    def __init__(self, tk: Tokenizer) -> None:
        self.tk = tk
        # text is text: "<|eos|>" inside a goal is encoded as characters, never as the special id
        self.tk.encode_special_tokens = True
        ids = [tk.token_to_id(t) for t in SPECIAL_TOKENS]
        if any(i is None for i in ids):
            raise ValueError(f"tokenizer lacks special tokens {SPECIAL_TOKENS}")
        self.pad_id, self.bos_id, self.eos_id, self.goal_id, self.tactic_id = ids

    @property
    def vocab_size(self) -> int:
        return self.tk.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.tk.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tk.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tk.decode(list(ids), skip_special_tokens=True)

    def decode_batch(self, seqs: Sequence[Sequence[int]]) -> list[str]:
        return self.tk.decode_batch([list(s) for s in seqs], skip_special_tokens=True)

    def to_json(self) -> str:
        return self.tk.to_str()

    @classmethod
    def from_json(cls, text: str) -> "LeanTokenizer":
        return cls(Tokenizer.from_str(text))

    def save(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.tk.save(path)


def load_tokenizer(path: str | None = None) -> LeanTokenizer:
    """The tokenizer at ``path``; the project's default (``assets/tokenizer.json``) when None.

    A file that cannot be read is an OSError naming it (``FileNotFoundError`` ...), one that is not a
    tokenizer a ValueError naming it: the tokenizers library's own errors name no file.
    """
    path = path or DEFAULT_PATH
    with open(path, encoding="utf-8") as f:
        try:
            text = f.read()
        except UnicodeDecodeError:
            raise ValueError(f"{path}: not a tokenizer file (not UTF-8 text)") from None
    try:
        tk = Tokenizer.from_str(text)
    except Exception as e:  # noqa: BLE001 -- the library raises a bare Exception for any bad file
        raise ValueError(f"{path}: not a tokenizer file ({e})") from None
    return LeanTokenizer(tk)


_BYTES = set(pre_tokenizers.ByteLevel.alphabet())
_MERGED = [sym for sym in LEAN_SYMBOLS if set(sym) <= _BYTES]  # the exception of the module doc
# longest first, so that the Python split below agrees with the tokenizer's longest match
_ADDED = sorted({s for sym in LEAN_SYMBOLS for s in (sym, " " + sym)} - set(_MERGED), key=lambda s: (-len(s), s))
_ADDED_RE = re.compile("|".join(map(re.escape, _ADDED)))


def _pieces(texts: Iterable[str], seed_count: int = 10_000) -> Iterable[str]:
    # The text between symbols: exactly what BPE sees at encode time (see module doc).
    for sym in _MERGED:
        yield "\n".join([sym] * seed_count)
    for text in texts:
        for piece in _ADDED_RE.split(text):
            if piece:
                yield piece


def train_tokenizer(texts: Iterable[str], vocab_size: int = 1024) -> LeanTokenizer:
    """Train a byte-level BPE on ``texts`` (any iterable of strings); ``vocab_size`` counts everything."""
    n_bpe = vocab_size - len(_ADDED)
    if n_bpe < 256 + len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must be at least {256 + len(SPECIAL_TOKENS) + len(_ADDED)}")
    tk = Tokenizer(models.BPE())
    # GPT-2's regex split (letters / digits / punctuation runs, leading space attached);
    # no prefix space, so a tactic at the start of a line tokenizes as it does in training.
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=n_bpe,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(_pieces(texts), trainer=trainer)
    clash = [t for t in _ADDED if tk.token_to_id(t) is not None]
    assert not clash, f"added tokens spelled like BPE tokens: {clash}"
    tk.add_tokens([AddedToken(t, normalized=False, special=False) for t in _ADDED])
    return LeanTokenizer(tk)
