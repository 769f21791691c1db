"""The policy-value network as the search sees it: goal-state texts in, tactics and values out.

:class:`PolicyValueNet` wraps a :class:`Transformer`, its tokenizer and a
device, and implements ``interfaces.Evaluator``. One ``evaluate`` call does:

1. one forward over all prompts (right-padded, in chunks of similar length):
   each prompt's last token gives the value head's input and the first tactic
   token's logits;
2. K distinct tactics per state by *sampling and deduplicating*: ``oversample * k``
   samples of every prompt, all states decoded together in one loop, one forward
   per token for the whole batch (see ``_decode``). Samples of a prompt that agree
   so far are one row of the cache with a count, split when they part ways, and
   finished samples leave at once: early on most samples agree, so far fewer rows
   are computed than samples drawn. Duplicates are then merged and the k most
   probable distinct tactics kept. Sampling (rather than beam search) keeps each
   step one batched draw and gives the search a diverse, unbiased set; the cost is
   that a peaked policy may yield fewer than k distinct tactics, which is fine:
   ``Evaluation`` promises *up to* k. Tactics that hit ``max_tactic_tokens``
   without ``<|eos|>`` are dropped (cut, not finished).

On a CPU, small models run fastest with ``torch.set_num_threads(1)`` per
process (their tensors are too small to share, and on a busy machine thread
barriers stall); that is the caller's choice, so it is not made here.

Each log-prior is the tactic's sequence log-probability under the model at
temperature 1 (sum of token log-probs, ``<|eos|>`` included), whatever the
sampling temperature.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
import torch.nn.functional as F

from agents.alphaproof import checkpoint
from agents.alphaproof.data import Batch, collate, prompt_ids
from agents.alphaproof.interfaces import Evaluation, per_state
from agents.alphaproof.model import ModelConfig, Transformer, scalar_value
from agents.alphaproof.tokenizer import LeanTokenizer, load_tokenizer

FORMAT = "leangym-alphaproof-net-v1"


def sample(logits: torch.Tensor) -> torch.Tensor:
    """One token per row from softmax(logits)."""
    return draw(F.softmax(logits, -1))


def draw(weights: torch.Tensor, rows: torch.Tensor | None = None, block: int = 32) -> torch.Tensor:
    """One index per row of ``weights`` (>= 0, any scale), or per entry of ``rows`` (row indices).

    Exact inversion of the CDF with one uniform per draw, in two levels: first the
    block of ``block`` entries (a CDF over block sums), then the entry inside that
    block. A vocabulary-long ``cumsum`` per row and step was the slowest op of a
    CPU decode; this is two short ones, and several draws from one row (``rows``
    repeating it) cost two short ones each too. Several times faster than
    ``torch.multinomial``, which draws an exponential for every entry.
    """
    N, V = weights.shape
    if V % block:
        weights = F.pad(weights, (0, block - V % block))
    blocks = weights.view(N, -1, block)
    sums = blocks.sum(-1)
    cdf = sums.cumsum(-1)
    if rows is None:
        rows = torch.arange(N, device=weights.device)
    else:
        sums, cdf = sums[rows], cdf[rows]
    u = torch.rand(rows.numel(), 1, device=weights.device, dtype=cdf.dtype) * cdf[:, -1:]
    # right=True: the first entry whose CDF exceeds u, so an empty block or entry is never chosen
    b = torch.searchsorted(cdf, u, right=True).clamp(max=cdf.size(1) - 1)
    inner = blocks[rows, b.squeeze(1)].cumsum(-1)  # (draws, block)
    rest = (u - (cdf.gather(1, b) - sums.gather(1, b))).clamp(min=0.0)
    rest = torch.minimum(rest, inner[:, -1:] * (1.0 - 1e-6))  # rounding must not run past the block
    j = torch.searchsorted(inner, rest, right=True).clamp(max=block - 1)
    # (a row of zeros, which only underflow can make, would point into the padding: the last token
    # instead, an arbitrary but real one)
    return (b * block + j).squeeze(1).clamp(max=V - 1)


class PolicyValueNet:
    def __init__(self, model: Transformer, tokenizer: LeanTokenizer, device: str | torch.device = "cpu", *,
                 max_tactic_tokens: int = 48, temperature: float = 1.0, oversample: int = 2,
                 value_weight: float = 1.0, negative_weight: float = 0.0) -> None:
        if model.cfg.vocab_size < tokenizer.vocab_size:
            raise ValueError(f"model vocab {model.cfg.vocab_size} < tokenizer vocab {tokenizer.vocab_size}")
        # settings that would fail every evaluate() are refused here, naming the setting
        if isinstance(max_tactic_tokens, bool) or not isinstance(max_tactic_tokens, int) or not (
                1 <= max_tactic_tokens <= model.cfg.max_seq_len - 4):
            raise ValueError(f"max_tactic_tokens must be a whole number in 1..{model.cfg.max_seq_len - 4} "
                             f"(the model's max_seq_len {model.cfg.max_seq_len} leaves room for the prompt), "
                             f"got {max_tactic_tokens!r}")
        if isinstance(oversample, bool) or not isinstance(oversample, int) or oversample < 1:
            raise ValueError(f"oversample must be a whole number >= 1, got {oversample!r}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0 (sampling; greedy() gives the argmax), got {temperature!r}")
        self.model = model.to(device)
        self.tok = tokenizer
        self.device = self.model.wte.weight.device  # ("cuda" resolved: cuda:N, as threads' set_device needs)
        self.max_tactic_tokens = max_tactic_tokens
        self.temperature = temperature
        self.oversample = oversample
        self.value_weight = value_weight
        self.negative_weight = negative_weight  # of the unlikelihood loss on rejected tactics (0: none)
        # room for <|bos|><|goal|> ... <|tactic|> and the longest tactic
        self.max_state_tokens = model.cfg.max_seq_len - max_tactic_tokens - 3
        # tokens a tactic may never contain (sampling only; log-probs stay the model's own)
        self._text_memo: dict[tuple[int, ...], str] = {}  # token ids -> text (see _texts)
        self._banned = torch.tensor([tokenizer.pad_id, tokenizer.bos_id, tokenizer.goal_id, tokenizer.tactic_id]
                                    + list(range(tokenizer.vocab_size, model.cfg.vocab_size)), device=self.device)

    @classmethod
    def create(cls, size: str = "tiny", tokenizer: LeanTokenizer | None = None, device="cpu",
               seed: int | None = None, config: Mapping[str, Any] | None = None, **kwargs) -> "PolicyValueNet":
        """A freshly initialised net of a named size (``config`` overrides fields of it)."""
        tok = tokenizer or load_tokenizer()
        cfg = ModelConfig.named(size, **{"vocab_size": tok.vocab_size, **(config or {})})
        with torch.random.fork_rng(devices=[]):  # a seeded init leaves the caller's RNG alone
            if seed is not None:
                torch.default_generator.manual_seed(seed)  # (the CPU's: the model is built there, GPUs' untouched)
            model = Transformer(cfg)
        return cls(model, tok, device, **kwargs)

    def parameters(self):
        return self.model.parameters()

    # ------------------------------------------------------------------ inference
    def _prefill(self, states: Sequence[str], chunk: int = 16):
        """The prompts through the model, into one cache, right-padded to a common length.

        Prompts are sorted by length and run ``chunk`` at a time, each chunk padded
        only to its own longest prompt (goal states vary a lot in length: padding
        everything to the longest would multiply the work). Right padding keeps each
        chunk a plain causal batch, exact for the real tokens, with no mask to build.
        Returns the hidden states at each prompt's last token, the cache, the prompt
        lengths and which cache columns are real tokens (None when no prompt is padded).
        """
        prompts = [prompt_ids(self.tok, s, self.max_state_tokens) for s in states]
        lens = torch.tensor([len(p) for p in prompts], device=self.device)
        B, T = len(prompts), int(lens.max())
        cache = self.model.new_cache(B, T)
        h_last = torch.empty(B, self.model.cfg.d_model, device=self.device, dtype=self.model.wte.weight.dtype)
        order = sorted(range(B), key=lambda i: len(prompts[i]))
        for c in range(0, B, chunk):
            rows = order[c:c + chunk]
            Tc = len(prompts[rows[-1]])
            idx = torch.tensor([prompts[r] + [self.tok.pad_id] * (Tc - len(prompts[r])) for r in rows])
            sub = self.model.new_cache(len(rows), Tc)
            h = self.model(idx.to(self.device), cache=sub)
            r = torch.tensor(rows, device=self.device)
            cache.k[:, r, :, :Tc], cache.v[:, r, :, :Tc] = sub.k, sub.v
            cache.k[:, r, :, Tc:], cache.v[:, r, :, Tc:] = 0.0, 0.0  # padding: finite keys (masked anyway)
            h_last[r] = h[torch.arange(len(rows), device=self.device), lens[r] - 1]
        cache.length = T
        valid = torch.arange(T, device=self.device) < lens[:, None]
        return h_last, cache, lens, (None if bool(valid.all()) else valid)

    def _decode(self, h_last, cache, lens, valid, samples: torch.Tensor, greedy: bool,
                keep: Sequence[int] | None = None):
        """``samples[b]`` samples of prompt row b, all decoded together; one entry per *distinct* sample.

        Samples of one prompt that agree so far are one row with a count: its next
        token is drawn count times from the one distribution, and the row splits into
        one row per distinct token drawn (a multinomial draw, so the samples are
        exactly independent ones). Early in a decode most samples agree, so this
        computes far fewer rows than samples. Finished rows leave at once.
        ``greedy``: the argmax token instead of a draw (one row per prompt).

        ``keep[b]``: the caller keeps only prompt b's ``keep[b]`` most probable distinct
        finished tactics. Once it has that many, a row whose log-prob is already below
        the last of them leaves too: log-probs only fall, so nothing it could still
        finish would be kept. This changes no result's distribution (the random draws that follow
        shift, so one seed's sample may differ) and ends most decodes at half the
        steps (the last steps would only run a few rambling samples to the cap).

        Returns (tokens (F, L), log-probs (F,), prompt row (F,), finished (F,), texts),
        sorted by prompt row: the distinct samples that ended with ``<|eos|>``, and (not
        finished, text "") those cut at ``max_tactic_tokens``; pruned rows are not
        returned. A finished sample's text is its tokens before ``<|eos|>``, stripped.
        """
        B, L = h_last.size(0), self.max_tactic_tokens
        if lens.max() + L > self.model.cfg.max_seq_len:
            raise ValueError("prompt + tactic exceed the model's max_seq_len")
        dev, V = self.device, self.model.cfg.vocab_size
        count = samples.to(dev)  # samples a row stands for
        total = int(count.sum())  # of all live rows
        # room for the rows, not the samples: samples that agree share a row, and a decode's
        # peak is early, at a few distinct first tokens per prompt (the cache grows if needed)
        cache.fork(min(total, 4 * B), L, valid)
        # one entry per live row; a row's prompt in the cache's current numbering, and its prompt row
        prompt = origin = torch.arange(B, device=dev)
        seq = torch.empty(B, 0, dtype=torch.long, device=dev)
        logp = torch.zeros(B, device=dev)
        logits = self.model.logits(h_last)
        ended = []  # (tokens, log-probs, prompt rows, finished, texts) of rows that left
        kept: list[dict[str, float]] = [{} for _ in range(B)]  # per prompt: finished text -> best log-prob
        floor = torch.full((B,), float("-inf"), device=dev)  # per prompt: the log-prob a row must keep
        pruning = False  # whether any prompt has its keep[b] tactics yet
        for t in range(L):
            probs = F.softmax(logits.float(), -1)
            if self.temperature != 1.0 and not greedy:
                weights = logits.float().index_fill(1, self._banned, float("-inf"))
                weights = F.softmax(weights / self.temperature, -1)
            else:  # the model's own distribution, banned tokens excluded (zeroed in place:
                weights = probs.index_fill_(1, self._banned, 0.0)  # a drawn token is never banned)
            rows = probs.size(0)
            parent = None  # None: row i continues row i (nothing split)
            if greedy:
                token = weights.argmax(-1)
            elif total == rows and (t or bool((count == 1).all())):  # one sample per row: one draw each
                # (at t = 0 a prompt may ask for none and another for two: the same total, not one each)
                token = draw(weights)
            else:
                draws = torch.repeat_interleave(torch.arange(rows, device=dev), count)
                key, count = torch.unique(draws * V + draw(weights, draws), return_counts=True)
                parent, token = key // V, key % V  # sorted by parent, so still by prompt
                if parent.numel() == rows and t:  # every row drew one distinct token (at t = 0 a
                    parent = None  # prompt may ask for no samples, and another split in its place)
            # only the drawn tokens' log-probs are needed: log of one entry, not a log_softmax of all
            if parent is None:
                logp = logp + probs.gather(1, token[:, None]).squeeze(1).log()
                seq = torch.cat([seq, token[:, None]], 1)
            else:
                logp = logp[parent] + probs[parent, token].log()
                seq = torch.cat([seq[parent], token[:, None]], 1)
                prompt, origin = prompt[parent], origin[parent]
            done = token == self.tok.eos_id
            if t == L - 1:  # the cap: what has not finished is cut
                texts = [text if d else "" for text, d in zip(self._texts(seq), done.tolist())]
                ended.append((seq, logp, origin, done, texts))
                break
            live = None  # None: every row goes on
            if bool(done.any()):
                finished = (seq[done], logp[done], origin[done], done[done])
                texts = self._texts(finished[0])
                ended.append((*finished, texts))
                if keep is not None:
                    pruning |= self._raise_floors(kept, floor, keep, texts, finished[2], finished[1])
                live = ~done
            if pruning:
                live = (logp >= floor[origin]) if live is None else live & (logp >= floor[origin])
            if live is not None and not bool(live.all()):
                total -= int(count[~live].sum())
                if not total:
                    break
                parent = live.nonzero().squeeze(1) if parent is None else parent[live]
                token, seq, logp, prompt, origin, count = (x[live] for x in (token, seq, logp, prompt, origin, count))
            if parent is not None or t == 0:  # the rows changed: tell the cache
                prompt = cache.select(torch.arange(rows, device=dev) if parent is None else parent, prompt)
            h = self.model(token[:, None], pos=(lens[origin] + t)[:, None], cache=cache)
            logits = self.model.logits(h[:, -1])
        out = torch.full((sum(len(e[0]) for e in ended), L), self.tok.pad_id, dtype=torch.long, device=dev)
        at = 0
        for tokens, *_ in ended:
            out[at:at + len(tokens), :tokens.size(1)] = tokens
            at += len(tokens)
        logp, origin, done = (torch.cat([e[i] for e in ended]) for i in (1, 2, 3))
        texts = [text for e in ended for text in e[4]]
        order = torch.sort(origin, stable=True).indices
        return out[order], logp[order], origin[order], done[order], [texts[i] for i in order.tolist()]

    @staticmethod
    def _raise_floors(kept, floor, keep, texts, origins, logps) -> bool:
        """Record finished tactics; a prompt with ``keep[b]`` distinct ones gets the last one's log-prob as floor.

        Returns whether any floor was set.
        """
        raised = False
        for text, b, lp in zip(texts, origins.tolist(), logps.tolist()):
            if text:  # an empty tactic is never kept
                best = kept[b]
                best[text] = max(lp, best.get(text, float("-inf")))
                if 0 < keep[b] <= len(best):
                    floor[b] = sorted(best.values())[-keep[b]]
                    raised = True
        return raised

    def _texts(self, out: torch.Tensor) -> list[str]:
        """Each row's text: its tokens before ``<|eos|>``, decoded and stripped.

        Memoised: a search proposes the same few tactics over and over, and a dict lookup
        is ~10x cheaper than the tokenizer's decode (which was ~8% of a batched decode).
        """
        eos, memo = self.tok.eos_id, self._text_memo
        keys = [tuple(row[:row.index(eos)] if eos in row else row) for row in out.tolist()]
        texts = {k: memo.get(k) for k in keys}
        missing = [k for k, text in texts.items() if text is None]
        if missing:
            decoded = [t.strip() for t in self.tok.decode_batch(missing)]
            texts.update(zip(missing, decoded))
            if len(memo) > 200_000:  # bounded: forget everything, refill as tactics come back
                memo.clear()
            memo.update(zip(missing, decoded))
        return [texts[k] for k in keys]

    @torch.inference_mode()
    def evaluate(self, states: Sequence[str], k: int | Sequence[int]) -> list[Evaluation]:
        """Up to ``k`` distinct tactics (most probable first) with log-priors, and a value, per state.

        ``k``: one count for all states, or one per state.
        """
        if not states:
            return []
        ks = per_state(k, len(states))
        h_last, cache, lens, valid = self._prefill(states)
        values = scalar_value(F.softmax(self.model.value_logits(h_last).float(), -1)).clamp(0.0, 1.0).tolist()
        if max(ks) <= 0:
            return [Evaluation((), (), v) for v in values]
        # oversampled, then deduplicated: a peaked policy repeats its favourite tactics
        want = torch.tensor([max(x, self.oversample * x) if x > 0 else 0 for x in ks])
        _, logp, origin, done, texts = self._decode(h_last, cache, lens, valid, want, greedy=False, keep=ks)
        best: list[dict[str, float]] = [{} for _ in states]
        for text, lp, row, ok in zip(texts, logp.tolist(), origin.tolist(), done.tolist()):
            if ok and text:  # finished and non-empty
                d = best[row]
                d[text] = max(lp, d.get(text, float("-inf")))
        evals = []
        for value, want_k, d in zip(values, ks, best):
            top = sorted(d.items(), key=lambda kv: -kv[1])[:want_k]
            evals.append(Evaluation(tuple(t for t, _ in top), tuple(lp for _, lp in top), value))
        return evals

    @torch.inference_mode()
    def greedy(self, states: Sequence[str]) -> list[str]:
        """The argmax tactic for each state ("" if it never finishes)."""
        if not states:
            return []
        h_last, cache, lens, valid = self._prefill(states)
        return self._decode(h_last, cache, lens, valid, torch.ones(len(states), dtype=torch.long), greedy=True)[4]

    # ------------------------------------------------------------------ training
    def collate(self, rows: Sequence[Mapping[str, Any]]) -> Batch:
        cfg = self.model.cfg
        return collate(rows, self.tok, cfg.n_value_bins, cfg.max_seq_len, self.max_tactic_tokens).to(self.device)

    def losses(self, batch: Batch | Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        """Policy cross-entropy on tactic tokens, value cross-entropy on the step bins, and their sum.

        ``batch`` is a :class:`Batch` or a list of rows (see :mod:`agents.alphaproof.data`).
        Each loss averages over the rows (tokens) that have its target; 0 when none do.
        """
        if not isinstance(batch, Batch):
            batch = self.collate(batch)
        h = self.model(batch.idx)  # right padding: plain causal attention is exact for real tokens
        zero = h.sum() * 0.0  # keeps the graph connected when a batch lacks one kind of target
        sel = (batch.targets >= 0) & ~batch.negative[:, None]
        policy = F.cross_entropy(self.model.logits(h[sel]).float(), batch.targets[sel]) if sel.any() else zero
        value = zero
        if batch.value_mask.any():
            hv = h[torch.arange(h.size(0), device=h.device), batch.value_pos][batch.value_mask]
            logq = F.log_softmax(self.model.value_logits(hv).float(), -1)
            value = -(batch.value_target[batch.value_mask] * logq).sum(-1).mean()
        negative = self._unlikelihood(h, batch) if self.negative_weight > 0 and batch.negative.any() else zero
        return {"loss": policy + self.value_weight * value + self.negative_weight * negative,
                "policy_loss": policy, "value_loss": value, "negative_loss": negative}

    def _unlikelihood(self, h: torch.Tensor, batch: Batch) -> torch.Tensor:
        """Mean of -log(1 - p(tactic | state)) over the rejected tactics: a mistake Lean caught becomes less
        likely, as much as it is likely now (a tactic the policy already avoids costs ~0)."""
        neg = (batch.targets >= 0) & batch.negative[:, None]  # (B, T)
        rows = neg.nonzero()[:, 0]
        logp = -F.cross_entropy(self.model.logits(h[neg]).float(), batch.targets[neg], reduction="none")
        seq = torch.zeros(h.size(0), device=h.device).index_add(0, rows, logp)[batch.negative]  # log p(tactic)
        return -torch.log1p(-seq.exp().clamp(max=1 - 1e-4)).mean()

    # ------------------------------------------------------------------ persistence
    def settings(self) -> dict[str, Any]:
        return {"max_tactic_tokens": self.max_tactic_tokens, "temperature": self.temperature,
                "oversample": self.oversample, "value_weight": self.value_weight,
                "negative_weight": self.negative_weight}

    def to_payload(self) -> dict[str, Any]:
        """Everything needed to rebuild the net, as plain values and tensors (no objects)."""
        return {"format": FORMAT, "config": self.model.cfg.to_dict(), "settings": self.settings(),
                "tokenizer": self.tok.to_json(),
                "state_dict": {k: v.detach().cpu() for k, v in self.model.state_dict().items()}}

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any], device="cpu", **overrides) -> "PolicyValueNet":
        if payload.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} payload (format={payload.get('format')!r})")
        try:
            model = Transformer(ModelConfig(**payload["config"]))
            model.load_state_dict(payload["state_dict"])
            tok = LeanTokenizer.from_json(payload["tokenizer"])
        except Exception as e:  # noqa: BLE001 -- a field missing, a tensor of the wrong shape, bad tokenizer json ...
            raise ValueError(f"a damaged {FORMAT} net (truncated or edited?): {type(e).__name__}: "
                             f"{str(e)[:300]}") from None
        return cls(model, tok, device, **{**payload.get("settings", {}), **overrides})

    def save(self, path: str) -> None:
        torch.save(self.to_payload(), path)

    @classmethod
    def load(cls, path: str, device="cpu", **overrides) -> "PolicyValueNet":
        """A net saved by :meth:`save`, or the net of a training checkpoint (``train.py``)."""
        # weights_only: tensors and plain containers only, so a checkpoint cannot run code
        payload = checkpoint.read(path, map_location="cpu")  # a damaged file: ValueError naming it
        if isinstance(payload, dict) and payload.get("format") == checkpoint.FORMAT:
            payload = payload.get("net")
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            raise ValueError(f"{path} is neither a {FORMAT} net nor a {checkpoint.FORMAT} training checkpoint")
        try:
            return cls.from_payload(payload, device, **overrides)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
