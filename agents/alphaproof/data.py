"""Training rows, the prompt format, and how rows become token tensors.

A row is a plain dict (JSONL-friendly, replay-buffer-friendly)::

    state        str                goal-state text, as ``goals_to_text`` prints it
    tactic       str | None         the tactic taken there: the policy target
                                    (missing, None or "" = no policy target)
    steps_to_go  int | None         tactics still needed, every branch's: the value target;
                                    None = not provable within budget (the last bin)
    value        float              alternative value target in [0, 1] (``GAMMA ** steps``),
                                    used only when ``steps_to_go`` is missing
    rejected     list[str]          tactics Lean rejected in this state: pushed down (unlikelihood),
                                    at most :data:`MAX_NEGATIVES` of them, the first ones

A row with neither ``steps_to_go`` nor ``value`` has no value target, so
policy-only rows (e.g. Mathlib transitions) and value-only rows (e.g. a
search's failed states) mix freely in one batch.

The sequence the model reads is::

    <|bos|><|goal|>{state}<|tactic|>{tactic}<|eos|>
                          ^ value head reads here; the policy predicts from here on

A state too long for the context is cut down by :func:`state_ids` (see there).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence, TypedDict

import torch

from agents.alphaproof.jsonl import iter_json_lines
from agents.alphaproof.model import bin_discounts
from agents.alphaproof.tokenizer import LeanTokenizer

class Row(TypedDict, total=False):
    """A training row (a plain dict at run time; the fields are described at the top of this module)."""
    state: str
    tactic: str | None
    steps_to_go: int | None
    value: float
    rejected: list[str]


MAX_NEGATIVES = 2  # rejected tactics learned from per row (a search's first rejections: its likeliest mistakes)


def load_rows(path: str) -> list[Row]:
    """Rows from a JSONL file (blank lines skipped), every row checked now (see :func:`row_problem`).

    A bad row is a ValueError ``path:line: what is wrong``, before any training step: not
    after an hour of training, and never a label quietly read the wrong way.
    """
    rows = []
    for lineno, row in iter_json_lines(path):
        why = row_problem(row)
        if why:
            raise ValueError(f"{path}:{lineno}: {why}")
        rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no rows (expected JSONL rows {{state, tactic[, steps_to_go]}})")
    return rows


def row_problem(row: Any) -> str | None:
    """What is wrong with a training row (the module docstring's fields), or None."""
    if not isinstance(row, dict) or not isinstance(row.get("state"), str):
        return "expected an object with a string 'state'"
    tactic = row.get("tactic")
    if tactic is not None and not isinstance(tactic, str):
        return f"'tactic' must be a string or null, got {tactic!r}"
    steps = row.get("steps_to_go")
    # bool is an int to Python; a negative count would index the bins from the end (an inverted label)
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 0):
        return f"'steps_to_go' must be a whole number >= 0 (or null: not provable), got {steps!r}"
    value = row.get("value")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not math.isfinite(value)):
        return f"'value' must be a finite number (a target in [0, 1]), got {value!r}"
    rejected = row.get("rejected", [])
    if not isinstance(rejected, list) or not all(isinstance(t, str) and t for t in rejected):
        return f"'rejected' must be a list of tactics (non-empty strings), got {rejected!r}"
    if not tactic and "steps_to_go" not in row and value is None and not rejected:
        return ("the row teaches nothing: give it a 'tactic' (the policy's target), 'steps_to_go' / 'value' "
                "(the value head's; 'steps_to_go': null means not provable) or 'rejected' tactics")
    return None


def state_ids(tok: LeanTokenizer, state: str, budget: int) -> list[int]:
    """The tokens of ``state``, at most ``budget`` of them.

    A tactic acts on the first goal, so that goal is what must survive: later
    goals are cut from the right; if the first goal alone is too long its
    hypotheses are cut from the left (the oldest, farthest from the target)
    and its ``⊢`` line is kept (cut from the right only if it alone is too long).
    """
    ids = tok.encode(state)
    if len(ids) <= budget:
        return ids
    first, sep, rest = state.partition("\n\n")
    head = tok.encode(first)
    if len(head) <= budget:
        return (head + tok.encode(sep + rest))[:budget]
    cut = first.find("⊢")
    hyps, target = (first[:cut], first[cut:]) if cut >= 0 else ("", first)
    target_ids = tok.encode(target)[:budget]
    room = budget - len(target_ids)
    return (tok.encode(hyps)[-room:] if room > 0 else []) + target_ids


def prompt_ids(tok: LeanTokenizer, state: str, max_state_tokens: int) -> list[int]:
    return [tok.bos_id, tok.goal_id] + state_ids(tok, state, max_state_tokens) + [tok.tactic_id]


def tactic_ids(tok: LeanTokenizer, tactic: str, max_tactic_tokens: int) -> list[int]:
    """Tactic tokens then ``<|eos|>``; a tactic too long keeps its prefix and no eos (never
    teach the model to stop early)."""
    ids = tok.encode(tactic) + [tok.eos_id]
    return ids[:max_tactic_tokens]


def value_target(row: Mapping[str, Any], n_value_bins: int) -> list[float] | None:
    """The row's value target as a distribution over the bins, or None (no value target).

    Steps go one-hot into their bin (clipped to the last step bin), None into the
    unprovable bin. A float ``value`` is split between the two neighbouring bins so
    that the expected discount is exactly ``value`` ("two-hot").
    """
    probs = [0.0] * (n_value_bins + 1)
    if "steps_to_go" in row:
        steps = row["steps_to_go"]
        probs[n_value_bins if steps is None else min(int(steps), n_value_bins - 1)] = 1.0
        return probs
    if row.get("value") is None:
        return None
    v = min(max(float(row["value"]), 0.0), 1.0)
    d = bin_discounts(n_value_bins).tolist()  # 1, GAMMA, ..., GAMMA**(n-1), 0: decreasing
    b = next(i for i in range(n_value_bins) if d[i] >= v > d[i + 1]) if v > 0 else n_value_bins
    if b == n_value_bins:
        probs[b] = 1.0
    else:
        w = (v - d[b + 1]) / (d[b] - d[b + 1])
        probs[b], probs[b + 1] = w, 1.0 - w
    return probs


@dataclass
class Batch:
    idx: torch.Tensor  # (B, T) tokens, right-padded
    targets: torch.Tensor  # (B, T) next token where the policy is trained, -1 elsewhere
    value_pos: torch.Tensor  # (B,) position of <|tactic|>, where the value head reads
    value_target: torch.Tensor  # (B, n_value_bins + 1) target distribution (zeros if none)
    value_mask: torch.Tensor  # (B,) bool: the row has a value target
    negative: torch.Tensor  # (B,) bool: the sequence is a rejected tactic (its targets are pushed down)

    def to(self, device) -> "Batch":
        return Batch(*(t.to(device) for t in (self.idx, self.targets, self.value_pos,
                                               self.value_target, self.value_mask, self.negative)))


def collate(rows: Sequence[Mapping[str, Any]], tok: LeanTokenizer, n_value_bins: int,
            max_seq_len: int, max_tactic_tokens: int) -> Batch:
    """Rows as token tensors: one sequence per row, then one per rejected tactic (a negative, no value)."""
    max_state = max_seq_len - max_tactic_tokens - 3
    seqs, starts, vts, negs = [], [], [], []
    prompts = [prompt_ids(tok, row["state"], max_state) for row in rows]  # (a negative reuses its row's)
    for row, prompt in zip(rows, prompts):
        tactic = row.get("tactic")
        seqs.append(prompt + (tactic_ids(tok, tactic, max_tactic_tokens) if tactic else []))
        starts.append(len(prompt) - 1)
        vts.append(value_target(row, n_value_bins))
        negs.append(False)
    for row, prompt in zip(rows, prompts):
        for bad in row.get("rejected", [])[:MAX_NEGATIVES]:
            seqs.append(prompt + tactic_ids(tok, bad, max_tactic_tokens))
            starts.append(len(prompt) - 1)
            vts.append(None)
            negs.append(True)
    T = max(len(s) for s in seqs)
    idx = torch.full((len(seqs), T), tok.pad_id, dtype=torch.long)
    targets = torch.full((len(seqs), T), -1, dtype=torch.long)
    for i, (s, p) in enumerate(zip(seqs, starts)):
        idx[i, :len(s)] = torch.tensor(s)
        targets[i, p:len(s) - 1] = torch.tensor(s[p + 1:])  # predict the tactic from <|tactic|> on
    value_mask = torch.tensor([v is not None for v in vts])
    value_target_ = torch.tensor([v or [0.0] * (n_value_bins + 1) for v in vts])
    return Batch(idx, targets, torch.tensor(starts), value_target_, value_mask, torch.tensor(negs, dtype=torch.bool))


def batches(rows: Sequence[Row], batch_size: int, seed: int = 0, pool: int = 32) -> Iterator[list[Row]]:
    """Endless batches: a fresh shuffle every epoch, so every row is seen once per epoch.

    Each run of ``pool`` batches is cut from rows sorted by length, then yielded in random order: a
    batch is padded to its longest row, so mixing lengths wastes most of a step (PropLogic: 2-3x).
    """
    if not rows:
        raise ValueError("no rows to batch")
    rng = random.Random(seed)
    pool = max(1, min(pool, len(rows) // batch_size))  # (rows for a few batches only: each used once, as unsorted)
    order: list[int] = []
    ready: list[list[Row]] = []
    while True:
        if not ready:
            while len(order) < batch_size:
                fresh = list(range(len(rows)))
                rng.shuffle(fresh)
                order += fresh
            # a pool never reaches past the epoch's end: learn()'s steps * batch_size rows are each used once
            n = batch_size * min(pool, len(order) // batch_size)
            chunk = sorted(order[:n], key=lambda i: _length(rows[i]))
            del order[:n]
            ready = [[rows[i] for i in chunk[j:j + batch_size]] for j in range(0, len(chunk), batch_size)]
            rng.shuffle(ready)
        yield ready.pop()


def _length(row: Row) -> int:
    """A row's length in characters: a proxy for its tokens, enough to group similar rows."""
    return len(row.get("state") or "") + len(row.get("tactic") or "") + 4 * len(row.get("rejected") or [])
