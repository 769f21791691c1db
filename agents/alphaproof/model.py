"""A decoder-only transformer with a policy head (next tactic token) and a value head.

Modern and small: rotary positions, parameter-free RMSNorm (also on queries
and keys, which keeps attention logits tame without tuning), SwiGLU MLPs,
input and output embeddings tied, attention through
``F.scaled_dot_product_attention``, and a preallocated KV cache for decoding.

Positions are explicit (``pos``, one per token): a decoded token sits right
after its own prompt, whatever the padding of the batch, exactly as in training.
Batches are right-padded, so plain causal attention is exact for real tokens.

The value head reads the hidden state at the last prompt token and predicts a
distribution over "tactic steps still needed" 0..B-1 plus a last bin for "not
provable within budget" (the AlphaProof formulation): a categorical target
trains better than regressing a scalar, and :func:`scalar_value` turns it into
the search's ``GAMMA ** steps`` value (see ``interfaces.py``).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from agents.alphaproof.interfaces import GAMMA


@dataclass
class ModelConfig:
    vocab_size: int = 1024
    n_layer: int = 2
    n_head: int = 4
    d_model: int = 64
    mlp_hidden: int = 0  # 0: about 8/3 * d_model (SwiGLU's usual size, same params as a 4x GELU MLP)
    max_seq_len: int = 512
    n_value_bins: int = 32  # steps 0..n_value_bins-1 (longer clips to the last); +1 bin for "unprovable"
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        if self.d_model % self.n_head or (self.d_model // self.n_head) % 2:
            raise ValueError("d_model must split into n_head heads of even size")
        if not self.mlp_hidden:
            self.mlp_hidden = 64 * math.ceil(8 * self.d_model / 3 / 64)

    @classmethod
    def named(cls, name: str, **overrides) -> "ModelConfig":
        """A size by name (``tiny`` for CI ... ``1b`` for one GPU node); keyword args override."""
        if name not in SIZES:
            raise ValueError(f"unknown model size {name!r}; known sizes: {', '.join(SIZES)}")
        return cls(**{**SIZES[name], **overrides})

    def to_dict(self) -> dict:
        return asdict(self)

    def n_params(self) -> int:
        """Parameter count, without building the model (embeddings counted once: tied)."""
        d, h = self.d_model, self.mlp_hidden
        per_layer = 4 * d * d + 3 * d * h  # qkv + proj, gate/up + down
        return self.vocab_size * d + self.n_layer * per_layer + (d + 1) * (self.n_value_bins + 1)


SIZES = {
    "tiny": dict(n_layer=2, n_head=4, d_model=64, max_seq_len=512),  # ~0.2M: CI, CPU search
    "mini": dict(n_layer=3, n_head=4, d_model=96, max_seq_len=512),  # ~0.4M: a better warm start, 1.4x a step
    "small": dict(n_layer=6, n_head=8, d_model=256, max_seq_len=1024),  # ~5M + embeddings: CPU experiments
    "base": dict(n_layer=12, n_head=12, d_model=768, max_seq_len=2048),  # ~85M + embeddings: one GPU
    "1b": dict(n_layer=20, n_head=16, d_model=2048, max_seq_len=2048),  # ~1.0B (32k vocab: 1.08B): one GPU node
}


def norm(x: torch.Tensor) -> torch.Tensor:
    # RMSNorm without a gain. Written out: F.rms_norm is far slower on CPU for small widths.
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def rope_tables(cfg: ModelConfig) -> tuple[torch.Tensor, torch.Tensor]:
    hd = cfg.d_model // cfg.n_head
    inv = 1.0 / cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    ang = torch.outer(torch.arange(cfg.max_seq_len, dtype=torch.float32), inv)  # (T, hd/2)
    return ang.cos(), ang.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x: (..., B, H, T, hd); cos/sin: (B, 1, T, hd/2), rotating the two halves of each head
    a, b = x.chunk(2, dim=-1)
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


class KVCache:
    """Keys and values of every layer, preallocated, in two parts.

    The *prefix* part holds the prompts (B rows, filled by ordinary forwards;
    ``length`` counts its positions). :meth:`fork` then makes room for the
    continuations (samples) of the prompts: their keys go to a separate
    *generated* part, one row per live continuation, and their queries attend
    to the prompt through the shared prefix, never copied. Copying a prompt
    for each of its continuations would make decoding read that many times
    more memory per token, which is what bounds it.

    :meth:`select` sets the live continuations before each decoding step: a
    row may continue another one (several may continue the same one, when
    samples that agreed so far part ways) and finished ones are left out, so
    the tail of a decode costs only what is still running.
    """

    def __init__(self, cfg: ModelConfig, batch: int, max_len: int, device, dtype) -> None:
        hd = cfg.d_model // cfg.n_head
        self.k = torch.empty(cfg.n_layer, batch, cfg.n_head, max_len, hd, device=device, dtype=dtype)
        self.v = torch.empty_like(self.k)
        self.length = 0
        self.forked = False  # True once fork() has set up the continuations: then forwards decode them

    def fork(self, capacity: int, max_new: int, valid: torch.Tensor | None = None) -> None:
        """Room for ``capacity`` live continuations (more grow it); :meth:`select` says which are live.

        ``valid`` (B, length) bool marks the real (not padding) prefix positions.
        """
        L, B, H, _, hd = self.k.shape
        self.k, self.v = self.k[:, :, :, :self.length], self.v[:, :, :, :self.length]
        self.valid = valid
        # time-major: step t writes one contiguous block, so memory is touched only as decoding
        # gets there (most tactics end long before max_new) and a step's keys are one slice
        self.gk = torch.empty(L, max_new, capacity, H, hd, device=self.k.device, dtype=self.k.dtype)
        self.gv = torch.empty_like(self.gk)
        self.forked, self.width, self.glen = True, 1, 0
        self.rows: torch.Tensor | None = None  # slot (b*width + j) of each live row; None: all, in order
        self._set_bias()

    def _set_bias(self) -> None:
        # padding as an additive bias on the prefix scores: 0 = attend, -inf = padding
        self.bias = None if self.valid is None else torch.zeros(self.valid.shape, device=self.k.device).masked_fill(
            ~self.valid, float("-inf"))[:, None, None, :]

    def select(self, parents: torch.Tensor, prompts: torch.Tensor) -> torch.Tensor:
        """Set the live rows: new row i continues live row ``parents[i]`` and belongs to prompt ``prompts[i]``.

        ``prompts`` (current numbering) must be sorted.
        Prompts left without a row are dropped (in batches, see below), and so are the
        leading padding columns no remaining prompt needs (positions are explicit, so
        columns may go): the prefix attention shrinks with the work left. Returns the
        rows' prompts in the numbering after this call.
        """
        A = prompts.numel()
        if A > self.gk.size(2):  # more rows than room: grow (rare; fork() sizes for the usual peak)
            grown = [g.new_empty(g.shape[:2] + (max(A, 2 * g.size(2)),) + g.shape[3:]) for g in (self.gk, self.gv)]
            for new, old in zip(grown, (self.gk, self.gv)):
                new[:, :self.glen, :old.size(2)] = old[:, :self.glen]
            self.gk, self.gv = grown
        if self.glen:  # the new rows inherit their parents' generated keys
            self.gk[:, :self.glen, :A] = self.gk[:, :self.glen, parents]
            self.gv[:, :self.glen, :A] = self.gv[:, :self.glen, parents]
        kept, inverse, counts = torch.unique_consecutive(prompts, return_inverse=True, return_counts=True)
        if kept.numel() <= 0.75 * self.k.size(1):
            # Compacting copies the whole prefix, so it waits until a quarter of the prompts
            # are gone; until then a prompt without rows only leaves its slots empty.
            self.k, self.v = self.k[:, kept], self.v[:, kept]
            if self.valid is not None:
                self.valid = self.valid[kept]
                end = int(self.valid.sum(1).max())  # the longest kept prompt: later columns are all padding
                self.k, self.v, self.valid = self.k[:, :, :, :end], self.v[:, :, :, :end], self.valid[:, :end]
            self._set_bias()
            prompts = inverse
        # as wide as the prompt with the most rows: when rows finish, the grid narrows
        self.width = int(counts.max())
        if A == self.k.size(1) * self.width:  # every slot taken, in order
            self.rows = None
        else:
            first = counts.cumsum(0) - counts  # each prompt's first row
            self.rows = prompts * self.width + torch.arange(A, device=prompts.device) - first[inverse]
        return prompts

    # A continuation's query meets its prompt's keys in a (B, width) grid of slots: there a
    # prompt's queries are one (width, hd) matrix against its (Tp, hd) keys.
    def to_slots(self, x: torch.Tensor) -> torch.Tensor:
        if self.rows is None:
            return x
        grid = x.new_zeros((self.k.size(1) * self.width,) + x.shape[1:])
        grid[self.rows] = x
        return grid

    def from_slots(self, grid: torch.Tensor) -> torch.Tensor:
        return grid if self.rows is None else grid[self.rows]


def forked_attention(q, k, v, cache: KVCache, layer: int) -> torch.Tensor:
    """One decoding step of the live continuations: attend to the shared prefix and to their own tokens.

    Exactly attention over prefix + generated keys, written as two blocks of
    one softmax: numerators and denominators are summed over both, then
    divided. No maximum is subtracted first: queries and keys are
    RMS-normalised (and RoPE is a rotation), so ``|q.k| / sqrt(hd) <= sqrt(hd)``
    and no ``exp`` can overflow. No mask on the generated part: it is all real.
    """
    A, H, _, hd = q.shape  # one query per live row
    B, n, t = cache.k.size(1), cache.width, cache.glen  # n: slots per prompt
    cache.gk[layer, t, :A] = k[:, :, 0]
    cache.gv[layer, t, :A] = v[:, :, 0]
    kp, vp = cache.k[layer], cache.v[layer]  # (B, H, Tp, hd)
    kg, vg = cache.gk[layer, :t + 1, :A], cache.gv[layer, :t + 1, :A]  # (t+1, A, H, hd)
    q = q[:, :, 0] * hd ** -0.5  # (A, H, hd), scaled once here rather than on every score
    qp = cache.to_slots(q).view(B, n, H, hd).transpose(1, 2)  # (B, H, n, hd)
    ep = qp @ kp.transpose(-1, -2)  # (B, H, n, Tp) scores, exponentiated in place below
    if cache.bias is not None:
        ep += cache.bias
    ep = ep.exp_()
    # the prefix block's numerator and denominator together, back to one row per continuation
    yz = torch.cat([ep @ vp, ep.sum(-1, keepdim=True)], -1)  # (B, H, n, hd + 1)
    yz = cache.from_slots(yz.transpose(1, 2).reshape(B * n, H, hd + 1))  # (A, H, hd + 1)
    # the generated block: one query against a few keys per row, elementwise (a batched
    # matmul of A*H tiny matrices costs several times more on a CPU)
    eg = (q * kg).sum(-1).exp_()  # (t+1, A, H)
    y = yz[..., :hd] + (eg[..., None] * vg).sum(0)
    z = yz[..., hd] + eg.sum(0)
    return (y / z[..., None])[:, :, None]


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.n_head, self.layer = cfg.n_head, layer
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x, cos, sin, mask, cache: KVCache | None):
        B, T, D = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_head, D // self.n_head).permute(2, 0, 3, 1, 4)
        q, k = apply_rope(norm(qkv[:2]), cos, sin)  # queries and keys together: half the ops
        v = qkv[2]
        if cache is not None and cache.forked:
            y = forked_attention(q, k, v, cache, self.layer)
        else:
            if cache is not None:
                t0 = cache.length
                cache.k[self.layer, :, :, t0:t0 + T] = k
                cache.v[self.layer, :, :, t0:t0 + T] = v
                k, v = cache.k[self.layer, :, :, :t0 + T], cache.v[self.layer, :, :, :t0 + T]
            if mask is None:  # a plain causal batch (training, right padding): the fast path
                y = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(y.transpose(1, 2).reshape(B, T, D))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_up = nn.Linear(cfg.d_model, 2 * cfg.mlp_hidden, bias=False)
        self.down = nn.Linear(cfg.mlp_hidden, cfg.d_model, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.attn = Attention(cfg, layer)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, mask, cache):
        x = x + self.attn(norm(x), cos, sin, mask, cache)
        return x + self.mlp(norm(x))


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layer))
        self.value_head = nn.Linear(cfg.d_model, cfg.n_value_bins + 1)
        cos, sin = rope_tables(cfg)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() < 2:
                nn.init.zeros_(p)
            elif name.endswith(("proj.weight", "down.weight")):
                # residual-branch outputs scaled down so that depth does not grow the stream (GPT-2)
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * self.cfg.n_layer))
            else:
                nn.init.normal_(p, std=0.02)
        nn.init.zeros_(self.value_head.weight)  # start at a uniform value distribution

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, pos=None, cache: KVCache | None = None) -> torch.Tensor:
        """Final hidden states (B, T, d_model), normalised; attention is causal.

        ``pos`` (B, T) positions (default 0..T-1, after the cache's length);
        ``cache`` receives this call's keys and values and advances (a forked cache
        keeps its own mask of the prefix's padding).
        """
        B, T = idx.shape
        if cache is not None and cache.forked and T != 1:
            raise ValueError("a forked cache decodes one token at a time")
        # the first new position (a forked row continues after the prefix and its own tokens)
        t0 = 0 if cache is None else cache.length + (cache.glen if cache.forked else 0)
        if pos is None:
            pos = torch.arange(t0, t0 + T, device=idx.device).expand(B, T)
        mask = None
        if cache is not None and t0 > 0 and T > 1:
            # causal, with queries starting at t0 (SDPA's is_causal would align them at 0)
            q, k = torch.arange(t0, t0 + T, device=idx.device), torch.arange(t0 + T, device=idx.device)
            mask = (k[None, :] <= q[:, None]).expand(B, 1, T, t0 + T)
        cos, sin = self.cos[pos].unsqueeze(1), self.sin[pos].unsqueeze(1)
        x = self.wte(idx)
        for block in self.blocks:
            x = block(x, cos, sin, mask, cache)
        if cache is not None:
            if cache.forked:
                cache.glen += 1
            else:
                cache.length += T
        return norm(x)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(h, self.wte.weight)  # tied embeddings: the output layer is the input table

    def value_logits(self, h: torch.Tensor) -> torch.Tensor:
        return self.value_head(h)

    def new_cache(self, batch: int, max_len: int) -> KVCache:
        if max_len > self.cfg.max_seq_len:
            raise ValueError(f"{max_len} positions exceed max_seq_len={self.cfg.max_seq_len}")
        w = self.wte.weight
        return KVCache(self.cfg, batch, max_len, w.device, w.dtype)


def bin_discounts(n_value_bins: int, device=None) -> torch.Tensor:
    """GAMMA ** b for the step bins, and 0 for the last ("unprovable") bin."""
    d = GAMMA ** torch.arange(n_value_bins + 1, dtype=torch.float32, device=device)
    d[-1] = 0.0
    return d


def scalar_value(probs: torch.Tensor) -> torch.Tensor:
    """Expected ``GAMMA ** steps`` under a distribution over the value bins (last dim)."""
    return probs.float() @ bin_discounts(probs.size(-1) - 1, probs.device)
