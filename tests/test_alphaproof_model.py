"""The AlphaProof network: transformer, policy-value evaluator (KV cache, sampling, pruning), supervised
training, save/load, rows from reference proofs. (The tokenizer: test_alphaproof_tokenizer.py.)"""
from __future__ import annotations

import math

import pytest
import torch

from agents.alphaproof.data import collate, prompt_ids, state_ids, value_target
from agents.alphaproof.interfaces import GAMMA, Evaluation, value_from_steps
from agents.alphaproof.model import ModelConfig, SIZES, Transformer, scalar_value
from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.sft import rows_from_reference_proofs, train_supervised
from agents.alphaproof.tokenizer import load_tokenizer

STATES = [
    "p q : Prop\nh : p ∧ q\n⊢ q ∧ p",
    "x y : ℝ\nh₀ : 0 < x\nh₁ : x ≤ y\n⊢ x ^ 2 ≤ x * y + ∑ i ∈ Finset.range 3, (i : ℝ)",
    "⊢ True",
    "n : ℕ\nih : ∀ m < n, m ≠ 0 → ∃ k, k ∣ m\n⊢ ¬(n = 0 ↔ False)\n\ncase inr\nn : ℕ\n⊢ n ≥ 0",
]

ROWS = [
    {"state": "p q : Prop\nh : p ∧ q\n⊢ q ∧ p", "tactic": "exact ⟨h.2, h.1⟩", "steps_to_go": 1},
    {"state": "p q : Prop\n⊢ p ∧ q → q ∧ p", "tactic": "intro h", "steps_to_go": 2},
    {"state": "x : ℕ\nh₀ : x = 2\n⊢ x + 1 = 3", "tactic": "subst h₀\nnorm_num", "steps_to_go": 3},
    {"state": "p : Prop\nhp : p\n⊢ p ∨ ¬p", "tactic": "left", "steps_to_go": 1},
    {"state": "a b : ℝ\n⊢ a ^ 2 + b ^ 2 ≥ 2 * a * b", "tactic": "nlinarith [sq_nonneg (a - b)]"},  # policy only
    {"state": "p : Prop\n⊢ p", "steps_to_go": None},  # value only: unprovable
]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny tensors gain nothing from intra-op threads, and on a busy shared CPU their
    barriers stall (one thread waits for a descheduled other): run these tests single-threaded."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


@pytest.fixture(scope="module")
def net(tok):
    return PolicyValueNet.create("tiny", tok, seed=0, max_tactic_tokens=12)


# ------------------------------------------------------------------ model
def test_forward_shapes():
    cfg = ModelConfig.named("tiny", vocab_size=300)
    model = Transformer(cfg)
    idx = torch.randint(0, 300, (3, 17))
    h = model(idx)
    assert h.shape == (3, 17, cfg.d_model)
    assert model.logits(h).shape == (3, 17, 300)
    assert model.value_logits(h).shape == (3, 17, cfg.n_value_bins + 1)
    assert model.n_params() == cfg.n_params() == sum(p.numel() for p in model.parameters())


def test_named_sizes_grow_to_a_billion():
    counts = [ModelConfig.named(name, vocab_size=32768).n_params() for name in SIZES]
    assert counts == sorted(counts)
    assert counts[0] < 3e6 and 0.9e9 < counts[-1] < 1.2e9


def test_scalar_value_matches_interfaces():
    n = 8
    for steps in [0, 1, 5, None]:
        probs = torch.zeros(n + 1)
        probs[n if steps is None else steps] = 1.0
        assert float(scalar_value(probs)) == pytest.approx(value_from_steps(steps))
    mixed = torch.tensor([0.5, 0.0, 0.25] + [0.0] * 5 + [0.25])
    assert float(scalar_value(mixed)) == pytest.approx(0.5 + 0.25 * GAMMA ** 2)


# ------------------------------------------------------------------ data
def test_value_targets():
    assert value_target({"steps_to_go": 2}, 4) == [0, 0, 1, 0, 0]
    assert value_target({"steps_to_go": 99}, 4) == [0, 0, 0, 1, 0]  # clipped to the last step bin
    assert value_target({"steps_to_go": None}, 4) == [0, 0, 0, 0, 1]
    assert value_target({"tactic": "simp"}, 4) is None
    for v in [1.0, 0.9, 0.5, 0.01, 0.0]:  # two-hot: expected discount is exactly v
        assert float(scalar_value(torch.tensor(value_target({"value": v}, 16)))) == pytest.approx(v, abs=1e-6)


def test_collate_masks(tok):
    b = collate(ROWS, tok, n_value_bins=8, max_seq_len=128, max_tactic_tokens=16)
    assert b.value_mask.tolist() == [True, True, True, True, False, True]
    assert (b.targets[5] >= 0).sum() == 0  # value-only row: no policy tokens
    for i, r in enumerate(ROWS[:5]):
        tgt = b.targets[i][b.targets[i] >= 0].tolist()
        assert tgt == tok.encode(r["tactic"]) + [tok.eos_id]
        assert b.idx[i, b.value_pos[i]] == tok.tactic_id


def test_long_state_keeps_the_goal_line(tok):
    hyps = "\n".join(f"h{i} : x{i} + {i} ≤ y{i} * {i}" for i in range(200))
    state = f"{hyps}\n⊢ x0 ≤ y0\n\ncase other\n⊢ True"
    ids = state_ids(tok, state, 64)
    assert len(ids) == 64
    text = tok.decode(ids)
    assert text.endswith("h199 : x199 + 199 ≤ y199 * 199\n⊢ x0 ≤ y0")
    short = "p : Prop\n⊢ p\n\ncase b\n" + hyps
    assert tok.decode(state_ids(tok, short, 40)).startswith("p : Prop\n⊢ p\n\ncase b")
    assert len(prompt_ids(tok, state, 64)) == 67


# ------------------------------------------------------------------ policy
def _greedy_without_cache(net, state):
    """Reference decoding: the whole sequence through the model at every step."""
    ids = prompt_ids(net.tok, state, net.max_state_tokens)
    out, logp = [], 0.0
    for _ in range(net.max_tactic_tokens):
        logits = net.model.logits(net.model(torch.tensor([ids + out]))[0, -1])
        lp = torch.log_softmax(logits, -1)
        logits[net._banned] = float("-inf")
        t = int(logits.argmax())
        logp += float(lp[t])
        out.append(t)
        if t == net.tok.eos_id:
            break
    return out, logp


@torch.inference_mode()
def test_kv_cache_generation_equals_no_cache(tok):
    # its own net (as the module's ``net``), so that sharpening its weights cannot change what later tests see
    net = PolicyValueNet.create("tiny", tok, seed=0, max_tactic_tokens=12)
    torch.manual_seed(1)
    for p in net.model.parameters():  # a sharper random model: no near-ties between the two paths
        p.mul_(3.0) if p.dim() >= 2 else None
    refs = [_greedy_without_cache(net, state) for state in STATES]
    for chunk in (16, 3):  # one prefill chunk, or several of different lengths
        h_last, cache, lens, valid = net._prefill(STATES, chunk=chunk)  # different lengths: left padding
        out, logp, origin, *_ = net._decode(h_last, cache, lens, valid, torch.ones(len(STATES), dtype=torch.long),
                                          greedy=True)
        assert origin.tolist() == list(range(len(STATES)))  # one row per prompt, in order
        for i, (ref, ref_logp) in enumerate(refs):
            assert len(ref) > 3  # a real comparison, not an immediate <|eos|>
            assert out[i, :len(ref)].tolist() == ref
            assert float(logp[i]) == pytest.approx(ref_logp, rel=1e-4, abs=1e-3)
    # n greedy samples of a prompt agree all the way: one row each, decoded exactly like n = 1
    h_last, cache, lens, valid = net._prefill(STATES)
    out3, logp3, origin3, *_ = net._decode(h_last, cache, lens, valid, torch.full((len(STATES),), 3), greedy=True)
    assert origin3.tolist() == list(range(len(STATES)))
    assert torch.equal(out3, out) and torch.allclose(logp3, logp, atol=1e-4)
    # padding does not change a prompt's value either
    batch = [e.value for e in net.evaluate(STATES, 0)]
    alone = [net.evaluate([s], 0)[0].value for s in STATES]
    assert batch == pytest.approx(alone, abs=1e-5)


@torch.inference_mode()
def test_selecting_rows_keeps_them_exact(net):
    """Forked decoding where rows finish, split and are dropped mid-way: the prompt they leave
    behind (the longest one) is dropped and the padding columns trimmed; a row that continues
    another one inherits its keys; the cache grows past the room fork() gave it; the live rows
    must not notice."""
    states = [STATES[1] + "\nh₂ : y ≤ 10" * 8, STATES[0], STATES[2]]  # the first is much the longest
    prompts = [prompt_ids(net.tok, st, net.max_state_tokens) for st in states]
    h_last, cache, lens, valid = net._prefill(states)
    T = cache.length
    cache.fork(3, 4, valid)  # room for 3 rows: the 6 below make it grow
    forced = torch.randint(10, 200, (7, 3))  # any tokens: we compare hidden states, not choices
    seqs = [[] for _ in range(6)]  # each live row's tokens so far
    prompt = origin = torch.arange(3).repeat_interleave(2)
    prompt = cache.select(torch.arange(6), prompt)
    for t in range(3):
        if t:
            # t = 1: the long prompt's rows finish, row 2 ends, row 3 splits in two, rows 4, 5 go on;
            # t = 2: rows split again, to more rows than the cache had room for
            parent = torch.tensor([3, 3, 4, 5] if t == 1 else [0, 1, 1, 2, 3, 3, 3])
            seqs = [list(seqs[i]) for i in parent.tolist()]
            prompt, origin = cache.select(parent, prompt[parent]), origin[parent]
            assert cache.k.size(1) == 2 and cache.k.size(3) < T  # prompt dropped, columns trimmed
        tokens = forced[:len(seqs), t]
        for s, tok in zip(seqs, tokens.tolist()):
            s.append(tok)
        h = net.model(tokens[:, None], pos=(lens[origin] + t)[:, None], cache=cache)[:, -1]
        for i, (s, o) in enumerate(zip(seqs, origin.tolist())):
            ref = net.model(torch.tensor([prompts[o] + s]))[0, -1]
            assert torch.allclose(h[i], ref, atol=1e-4), (t, i)
    assert cache.gk.size(2) >= 7


def test_evaluate_batch(net):
    evals = net.evaluate(STATES * 3, k=4)
    assert len(evals) == 12
    for e in evals:
        assert isinstance(e, Evaluation)
        assert len(e.tactics) == len(e.log_priors) <= 4
        assert len(set(e.tactics)) == len(e.tactics) and all(e.tactics)
        assert all(math.isfinite(lp) and lp <= 0 for lp in e.log_priors)
        assert list(e.log_priors) == sorted(e.log_priors, reverse=True)
        assert 0.0 <= e.value <= 1.0
    assert [e.tactics for e in net.evaluate(STATES, 0)] == [()] * 4
    assert net.evaluate([], 8) == []


def test_sample_texts_are_the_tokenizers_decode_memoised_or_not(net):
    """``_texts`` keeps a memo of token ids -> text: a hit, a miss and a memo just emptied all
    give exactly what the tokenizer decodes (tokens before <|eos|>, stripped)."""
    tok, eos = net.tok, net.tok.eos_id
    g = torch.Generator().manual_seed(0)
    rows = torch.randint(0, tok.vocab_size, (40, 12), generator=g)
    rows[rows == eos] = tok.pad_id
    rows[::2, 5] = eos  # half end with <|eos|> (and carry junk after it), half were cut at the cap
    rows[1] = rows[0]  # the same tactic twice in one call
    want = []
    for row in rows.tolist():
        row = row[:row.index(eos)] if eos in row else row
        want.append(tok.decode(row).strip())
    assert net._texts(rows) == want  # every row a miss
    assert net._texts(rows) == want  # every row a hit
    assert net._texts(rows[:3]) == want[:3]
    net._text_memo.clear()
    assert net._texts(rows.flip(0)) == want[::-1]


def test_sampler_draws_from_the_softmax():
    from agents.alphaproof.policy import sample
    torch.manual_seed(0)
    logits = torch.log(torch.tensor([0.0, 0.5, 0.0, 0.3, 0.2])).expand(20000, 5)  # zeros: -inf logits
    counts = torch.bincount(sample(logits), minlength=5).float() / 20000
    assert counts[0] == counts[2] == 0
    assert counts.tolist() == pytest.approx([0, 0.5, 0, 0.3, 0.2], abs=0.02)


def test_two_level_draw_is_exact_at_block_edges():
    from agents.alphaproof.policy import draw
    torch.manual_seed(0)
    # 70 entries (not a multiple of the block), mass on both sides of block edges, zeros in between
    w = torch.zeros(70)
    w[[0, 31, 32, 63, 64, 69]] = torch.tensor([1.0, 2.0, 3.0, 1.0, 2.0, 1.0])
    counts = torch.bincount(draw(w.expand(60000, 70).contiguous()), minlength=70).float() / 60000
    assert counts[w == 0].sum() == 0  # a zero-weight entry is never drawn
    assert counts.tolist() == pytest.approx((w / w.sum()).tolist(), abs=0.01)
    # all the mass on the very last entry, and unnormalised weights of any scale
    last = torch.zeros(3, 64)
    last[:, -1] = 1e-30
    assert draw(last).tolist() == [63, 63, 63]


def test_several_draws_from_one_row():
    """``draw(weights, rows)``: one draw per entry of ``rows``, each from its own row's weights
    (how the decoder draws a row's count of samples without copying the row)."""
    from agents.alphaproof.policy import draw
    torch.manual_seed(0)
    w = torch.zeros(2, 100)
    w[0, [3, 40, 99]] = torch.tensor([1.0, 1.0, 2.0])
    w[1, [0, 64]] = torch.tensor([3.0, 1.0])
    rows = torch.tensor([1, 0]).repeat_interleave(torch.tensor([20000, 40000]))
    got = draw(w, rows)
    for r in (0, 1):
        freq = torch.bincount(got[rows == r], minlength=100).float() / int((rows == r).sum())
        assert freq[w[r] == 0].sum() == 0
        assert freq.tolist() == pytest.approx((w[r] / w[r].sum()).tolist(), abs=0.01)


@pytest.fixture(scope="module")
def trained(tok):
    torch.manual_seed(0)
    net = PolicyValueNet.create("tiny", tok, seed=0, max_tactic_tokens=16)
    history = train_supervised(net, ROWS, steps=250, batch_size=len(ROWS), lr=3e-3, warmup=20)
    return net, history


def test_overfits_a_handful_of_rows(trained):
    net, hist = trained
    assert hist[-1]["loss"] < 0.05 * hist[0]["loss"]
    states = [r["state"] for r in ROWS]
    assert net.greedy(states[:5]) == [r["tactic"] for r in ROWS[:5]]
    values = [e.value for e in net.evaluate(states, 2)]
    assert values[0] == pytest.approx(GAMMA, abs=0.05)
    assert values[2] == pytest.approx(GAMMA ** 3, abs=0.05)
    assert values[5] < 0.05  # the unprovable state
    assert net.evaluate(states[:1], 4)[0].tactics[0] == ROWS[0]["tactic"]


def test_evaluate_with_a_k_per_state(trained, monkeypatch):
    net, _ = trained
    states = [r["state"] for r in ROWS[:3]]
    decoded = []
    real = net._decode
    monkeypatch.setattr(net, "_decode", lambda h, *a, **kw: decoded.append(a[3].tolist()) or real(h, *a, **kw))
    torch.manual_seed(0)
    evals = net.evaluate(states, [0, 1, 3])
    assert decoded == [[0, 2, 6]]  # oversample 2: each state samples what it asks for
    assert evals[0].tactics == () and [len(e.tactics) <= k for e, k in zip(evals, [0, 1, 3])] == [True] * 3
    assert evals[1].tactics == (ROWS[1]["tactic"],)
    # values come from the prompts alone, whatever each state asked for
    assert [e.value for e in evals] == pytest.approx([e.value for e in net.evaluate(states, 0)], abs=1e-5)
    with pytest.raises(ValueError, match="entries"):
        net.evaluate(states, [1, 2])


def test_a_state_asking_for_no_tactic_leaves_the_others_samples_alone(trained, monkeypatch):
    """ks [1, 0] sample 2 + 0 times: the same total as one draw per row, which the first step took
    it for (the first state then drew once, the second once, for nothing)."""
    import agents.alphaproof.policy as policy_module

    net, _ = trained
    first_draws = []
    real = policy_module.draw

    def spy(weights, rows=None, block=32):
        if not first_draws:
            first_draws.append(None if rows is None else rows.tolist())
        return real(weights, rows, block)

    monkeypatch.setattr(policy_module, "draw", spy)
    torch.manual_seed(0)
    net.evaluate([ROWS[0]["state"], ROWS[1]["state"]], [1, 0])
    assert first_draws == [[0, 0]]  # both of the first state's samples, none of the second's


def test_a_float64_net_evaluates(trained):
    net, _ = trained
    copy = PolicyValueNet.from_payload(net.to_payload())
    copy.model.double()
    evals = copy.evaluate([ROWS[0]["state"]], 2)
    assert 0.0 <= evals[0].value <= 1.0 and len(evals[0].tactics) <= 2


@torch.inference_mode()
def test_sampled_log_priors_match_teacher_forcing(trained):
    """Hot sampling from the trained net: samples end at different steps, so finished rows are
    dropped mid-decode; every finished sample's log-prob must still be the model's own."""
    net, _ = trained
    torch.manual_seed(0)
    states = [r["state"] for r in ROWS]
    old, net.temperature = net.temperature, 1.5
    try:
        h_last, cache, lens, valid = net._prefill(states, chunk=4)
        out, logp, origin, done, _ = net._decode(h_last, cache, lens, valid, torch.full((len(states),), 6),
                                                  greedy=False)
    finally:
        net.temperature = old
    lengths, seen = set(), set()
    for row in range(out.size(0)):
        if not done[row]:
            continue
        seq = out[row].tolist()
        seq = seq[:seq.index(net.tok.eos_id) + 1]
        assert (int(origin[row]), tuple(seq)) not in seen  # one entry per distinct sample
        seen.add((int(origin[row]), tuple(seq)))
        lengths.add(len(seq))
        prompt = prompt_ids(net.tok, states[origin[row]], net.max_state_tokens)
        lp = torch.log_softmax(net.model.logits(net.model(torch.tensor([prompt + seq[:-1]]))[0]), -1)
        ref = sum(float(lp[len(prompt) - 1 + i, t]) for i, t in enumerate(seq))
        assert float(logp[row]) == pytest.approx(ref, rel=1e-4, abs=1e-3)
    assert len(lengths) >= 4  # rows really finished at different steps


def _stratified_draw(weights, rows=None):
    """A deterministic stand-in for ``draw``: a row's c draws at the quantiles (j + 0.5) / c.

    What a row draws then depends on that row alone (its weights and count), not on
    which other rows exist, so two decodes that drop different rows stay comparable."""
    if rows is None:
        rows = torch.arange(weights.size(0))
    _, inverse, counts = torch.unique_consecutive(rows, return_inverse=True, return_counts=True)
    j = torch.arange(rows.numel()) - (counts.cumsum(0) - counts)[inverse]
    cdf = weights.cumsum(-1)
    u = (j + 0.5) / counts[inverse] * cdf[rows, -1]
    return torch.searchsorted(cdf[rows], u[:, None], right=True).clamp(max=weights.size(1) - 1).squeeze(1)


@torch.inference_mode()
def test_pruning_rows_that_cannot_be_kept_changes_no_result(trained, monkeypatch):
    """With ``keep``, a row whose log-prob is already below the last of the k best finished
    tactics of its prompt is dropped. Same draws both ways: the k best are the same, and
    fewer rows are computed."""
    net, _ = trained
    monkeypatch.setattr("agents.alphaproof.policy.draw", _stratified_draw)
    states = [r["state"] for r in ROWS] + STATES
    ks = [1, 2, 3, 1, 2, 3, 2, 4, 1, 3]
    old, net.temperature = net.temperature, 2.0  # hot: long, varied samples that reach the cap
    rows_computed = []
    real_forward = net.model.forward
    monkeypatch.setattr(net.model, "forward", lambda idx, *a, **kw: rows_computed.append(idx.size(0))
                        or real_forward(idx, *a, **kw))
    try:
        results = []
        for keep in (None, ks):
            rows_computed.clear()
            h_last, cache, lens, valid = net._prefill(states, chunk=4)
            _, logp, origin, done, texts = net._decode(h_last, cache, lens, valid, torch.tensor(ks) * 4,
                                                       greedy=False, keep=keep)
            best = [{} for _ in states]
            for text, lp, b, ok in zip(texts, logp.tolist(), origin.tolist(), done.tolist()):
                if ok and text:
                    best[b][text] = max(lp, best[b].get(text, float("-inf")))
            top = [sorted(d.items(), key=lambda kv: -kv[1])[:k] for d, k in zip(best, ks)]
            results.append((top, sum(rows_computed[2:])))  # decoding rows (the prefill's chunks first)
    finally:
        net.temperature = old
    (full, full_rows), (pruned, pruned_rows) = results
    assert sum(len(t) for t in full) >= 15  # most prompts had several finished tactics to choose from
    for a, b in zip(full, pruned):
        assert [t for t, _ in a] == [t for t, _ in b]
        assert [lp for _, lp in a] == pytest.approx([lp for _, lp in b], abs=1e-5)
    assert pruned_rows < 0.8 * full_rows


def test_losses_with_missing_targets(net):
    only_policy = net.losses([ROWS[4]])
    assert only_policy["value_loss"].item() == 0.0 and only_policy["policy_loss"].item() > 0
    only_value = net.losses([ROWS[5]])
    assert only_value["policy_loss"].item() == 0.0 and only_value["value_loss"].item() > 0
    only_value["loss"].backward()  # the graph survives a missing target
    net.model.zero_grad(set_to_none=True)


def test_save_load_round_trip(net, tmp_path):
    path = tmp_path / "net.pt"
    net.save(str(path))
    payload = torch.load(path, weights_only=True)  # plain values only: loads without unpickling code
    assert isinstance(payload["config"], dict) and isinstance(payload["tokenizer"], str)
    back = PolicyValueNet.load(str(path))
    assert back.model.cfg == net.model.cfg and back.settings() == net.settings()
    assert back.tok.to_json() == net.tok.to_json()
    for (k, a), (_, b) in zip(net.model.state_dict().items(), back.model.state_dict().items()):
        assert torch.equal(a, b), k
    assert [e.value for e in back.evaluate(STATES, 0)] == [e.value for e in net.evaluate(STATES, 0)]


# ------------------------------------------------------------------ rows from reference proofs
class _FakeProcess:
    """Goals are strings; tactic "split" turns goal "a ∧ b" into branches "a" and "b", "done" closes."""

    def start_proof(self, src):
        return self._state(["p ∧ q"])

    def apply_tactic(self, state, tactic):
        from leangym.backends.types import Outcome, TacticResult
        goal = state.goals[0].target
        if tactic == "split" and "∧" in goal:
            branches = tuple(self._state([g.strip()]) for g in goal.split("∧"))
            return TacticResult(tactic, Outcome.PROGRESS, branches)
        if tactic == "done":
            return TacticResult(tactic, Outcome.PROVED, ())
        return TacticResult(tactic, Outcome.REJECTED, (), error="nope")

    @staticmethod
    def _state(targets):
        from leangym.backends.types import Goal, ProofState
        return ProofState(0, 0, tuple(Goal((), t) for t in targets))


def test_rows_from_reference_proofs():
    from types import SimpleNamespace as NS

    from leangym.theorem import Theorem
    theorem = Theorem("theorem t (p q : Prop) : p ∧ q := by sorry")
    good = NS(theorem=theorem, proof=("split", "done", "done"))
    bad = NS(theorem=theorem, proof=("split", "nonsense"))
    unfinished = NS(theorem=theorem, proof=("split", "done"))
    rows = rows_from_reference_proofs([good, bad, unfinished], process=_FakeProcess())
    assert rows == [
        {"state": "⊢ p ∧ q", "tactic": "split", "steps_to_go": 3},  # 1 + each branch's
        {"state": "⊢ p", "tactic": "done", "steps_to_go": 1},  # the branch the tactic runs on
        {"state": "⊢ q", "tactic": "done", "steps_to_go": 1},
    ]


@pytest.mark.parametrize("setting, value", [("temperature", 0.0), ("temperature", -1.0), ("max_tactic_tokens", 0),
                                            ("max_tactic_tokens", 509), ("oversample", 1.5), ("oversample", 0)])
def test_settings_that_would_fail_every_evaluation_are_refused_at_once(setting, value):
    with pytest.raises(ValueError, match=setting):
        PolicyValueNet.create("tiny", seed=0, **{setting: value})


def test_draw_from_a_row_of_zeros_stays_a_token():
    from agents.alphaproof.policy import draw

    weights = torch.zeros(3, 70)  # V not a multiple of the block: padding beyond index 69
    weights[1, 5] = 1.0
    out = draw(weights)
    assert out[1] == 5 and int(out.max()) < 70


@pytest.mark.parametrize("steps,batch_size", [(40, 4), (33, 2), (5, 3), (64, 4), (1, 7)])
def test_length_bucketed_batches_use_each_row_once_per_epoch(steps, batch_size):
    # learn() hands train_supervised exactly steps * batch_size rows and expects each used once
    from agents.alphaproof.data import batches
    rows = [{"state": "x" * (i % 13) + str(i), "tactic": "t"} for i in range(steps * batch_size)]
    data = batches(rows, batch_size, seed=1)
    seen = [r["state"] for _ in range(steps) for r in next(data)]
    assert sorted(seen) == sorted(r["state"] for r in rows)


def test_batches_larger_than_the_rows_still_come_full():
    from agents.alphaproof.data import batches
    rows = [{"state": f"s{i}", "tactic": "t"} for i in range(3)]
    data = batches(rows, 8, seed=0)
    for _ in range(4):
        b = next(data)
        assert len(b) == 8 and {r["state"] for r in b} == {"s0", "s1", "s2"}
