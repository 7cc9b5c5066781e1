"""Training state through ``md.save``: optimiser and scheduler state dicts come back equal, and
a run resumed from a training checkpoint (after an epoch, or mid-epoch) continues with the
uninterrupted run's losses. Across backends: the ``resume`` nox session."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn, registry
from multidev.examples import resume_training

BK = registry.current()
needs_autograd = pytest.mark.skipif(
    "autograd" not in BK.capabilities, reason=f"{BK.name} adapter lacks capability 'autograd'"
)


def _trained_optimiser(cls, **kwargs):
    md.manual_seed(0)
    params = [nn.Parameter(md.randn(3, 2)), nn.Parameter(md.randn(2))]
    opt = cls([{"params": params[:1], "lr": 0.05}, {"params": params[1:]}], **kwargs)
    for _ in range(3):
        for p in params:
            p.grad = md.randn(*p.shape)
        opt.step()
    return opt


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (md.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
        (md.optim.Adam, {"amsgrad": True}),
        (md.optim.AdamW, {}),
        (md.optim.RMSprop, {"centered": True, "momentum": 0.5}),
        (md.optim.Adagrad, {}),
    ],
)
def test_optimiser_state_dict_round_trips_through_save(tmp_path, cls, kwargs):
    opt = _trained_optimiser(cls, **kwargs)
    sched = md.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 2, 2])
    sched.step()
    md.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "state")
    back = md.load(tmp_path / "state")
    sd = opt.state_dict()
    assert back["sched"] == sched.state_dict()
    assert back["opt"]["param_groups"] == sd["param_groups"]
    assert back["opt"]["state"].keys() == sd["state"].keys()
    for i, entries in sd["state"].items():
        assert back["opt"]["state"][i].keys() == entries.keys()
        for key, value in entries.items():
            got = back["opt"]["state"][i][key]
            if isinstance(value, md.Tensor):
                np.testing.assert_array_equal(got.numpy(), value.numpy())
            else:
                assert got == value and type(got) is type(value)
    twin = _trained_optimiser(cls, **kwargs)
    twin.load_state_dict(back["opt"])
    assert (
        twin.param_groups[0]["betas" if "betas" in sd["param_groups"][0] else "lr"]
        == (opt.param_groups[0]["betas" if "betas" in sd["param_groups"][0] else "lr"])
    )


@needs_autograd
def test_resumed_training_continues_with_the_same_losses(tmp_path):
    saves = {(1, 0): tmp_path / "epoch1.ckpt", (1, 7): tmp_path / "mid.ckpt"}
    whole = resume_training.train(epochs=3, checkpoints=saves, log=lambda _: None)
    for path in saves.values():
        resumed = resume_training.train(epochs=3, resume=path, log=lambda _: None)
        np.testing.assert_allclose(resumed, whole, rtol=1e-6)
    state = md.load(saves[(1, 7)])
    assert state["epoch"] == 1 and state["loader"]["batch"] == 7
    assert state["backend"] == BK.name and len(state["losses"]) == 1
    assert {"model", "optimizer", "scheduler", "rng", "loader"} <= set(state)


def test_checkpoint_of_another_model_is_refused(tmp_path):
    run = resume_training.build()
    resume_training.save_training_checkpoint(
        tmp_path / "c", model=run["net"], optimizer=run["opt"], epoch=0
    )
    other = nn.Sequential(nn.Linear(4, 2))
    with pytest.raises(md.StateDictError):
        resume_training.load_training_checkpoint(
            tmp_path / "c", model=other, optimizer=md.optim.Adam(other.parameters())
        )
