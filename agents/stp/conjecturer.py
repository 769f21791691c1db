"""The conjecturer: the AlphaProof agent's transformer, read as seed text in, statement out.

The policy net maps a goal text to tactic texts; here the "goal" is what the env shows the
conjecturer (the seed statement and its proof) and the "tactic" is a conjecture's signature
(``(p q : Prop) (h₁ : p) : q → p ∧ q``), wrapped into ``theorem NAME ... := by sorry`` for the env.
Training is the agent's supervised code on rows ``{"state": seed text, "tactic": signature}``:
first edits of the seeds (:mod:`agents.stp.mutate`), then, as in STP, the conjectures that
landed in the band (filtered imitation of the rewarded ones). The value head is not used.
"""
from __future__ import annotations

import random
from typing import Sequence

from agents.alphaproof.data import Row
from agents.alphaproof.policy import PolicyValueNet
from agents.stp.mutate import body_of, mutations

MAX_TOKENS = 112  # a signature of a level-5 PropLogic theorem is at most ~110 tokens


def create(size: str = "tiny", seed: int = 0, device: str = "cpu") -> PolicyValueNet:
    return PolicyValueNet.create(size, device=device, seed=seed, max_tactic_tokens=MAX_TOKENS)


def propose(net: PolicyValueNet, seed_texts: Sequence[str], k: int) -> list[list[str]]:
    """Up to ``k`` distinct signatures per seed text (sampled, most probable first)."""
    return [list(ev.tactics) for ev in net.evaluate(list(seed_texts), k)]


def row(seed_text: str, signature: str) -> Row:
    return {"state": seed_text, "tactic": signature}


def warm_rows(seeds: Sequence[tuple[str, str]], per_seed: int, rng: random.Random) -> list[Row]:
    """``per_seed`` edited signatures (1 to 3 edits) per ``(seed text, formal statement)``."""
    out = []
    for text, statement in seeds:
        body = body_of(statement)
        for _ in range(per_seed):
            try:
                out.append(row(text, mutations(body, rng, 1 + int(rng.random() * 3))))
            except ValueError:  # a statement of another shape (binders the edits do not know)
                break
    return out
