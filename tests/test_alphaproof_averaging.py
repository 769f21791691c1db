"""The saved net is a moving average of the learner's weights: its update, checkpoints and resume."""
from __future__ import annotations

import pytest
import torch

from agents.alphaproof import checkpoint
from agents.alphaproof.averaging import WeightAverage
from agents.alphaproof.policy import PolicyValueNet
from agents.alphaproof.resume import saved_settings
from tests.test_alphaproof_train import _weights, tiny_args


def test_an_update_moves_the_average_a_decay_step_toward_the_learner():
    learner = PolicyValueNet.create("tiny", max_tactic_tokens=4, seed=0)
    avg = WeightAverage(0.9)
    avg.start(learner)
    before = _weights(learner)
    assert avg.net is not learner and all(torch.equal(v, before[k]) for k, v in _weights(avg.net).items())
    with torch.no_grad():
        for p in learner.model.parameters():
            p.add_(1.0)
    avg.update(learner)
    for k, v in _weights(avg.net).items():
        if v.is_floating_point() and k in dict(learner.model.named_parameters()):
            assert torch.allclose(v, before[k] + 0.1, atol=1e-6), k  # 0.9 * w + 0.1 * (w + 1)
    assert not avg.net.model.training  # the average is only ever searched with, never trained

    off = WeightAverage(0.0)
    off.start(learner)
    assert off.net is learner  # no average: the learner's weights are the net


def test_a_run_saves_the_average_as_its_net_and_the_learner_for_resume(tmp_path):
    from agents.alphaproof.train import train

    out = train(tiny_args(tmp_path, "avg", iterations=2, average_decay=0.5))
    path = tmp_path / "avg" / "ck" / "latest.pt"
    state = checkpoint.load(path)
    saved = PolicyValueNet.load(str(path))  # what prove and --init load
    assert all(torch.equal(v, _weights(out["net"])[k]) for k, v in _weights(saved).items())
    assert any(not torch.equal(v, state["learner"][k]) for k, v in _weights(saved).items())

    off = train(tiny_args(tmp_path, "off", iterations=2, average_decay=0.0))
    state = checkpoint.load(tmp_path / "off" / "ck" / "latest.pt")
    assert "learner" not in state
    assert all(torch.equal(v, state["net"]["state_dict"][k]) for k, v in _weights(off["net"]).items())


def test_a_checkpoint_from_before_averaging_resumes_without_one():
    """Its args have no average_decay: the run goes on as that version ran it (the learner's weights saved)."""
    state = {"args": {"lr": 3e-4}, "net": {"settings": {}}}
    assert saved_settings(state)["average_decay"] == 0.0
    assert saved_settings({"args": {"average_decay": 0.99}, "net": {}})["average_decay"] == 0.99


def test_a_decay_that_would_never_move_the_average_is_refused():
    from agents.alphaproof.train_args import Args, check_args

    for bad in (1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="--average-decay must be at least 0 and below 1"):
            check_args(Args(average_decay=bad))
    check_args(Args(average_decay=0.0))
