"""Learning-rate schedulers beyond the torch comparison: plain-value state, Adam's beta1 in
OneCycleLR, and the errors."""

from __future__ import annotations

import pytest

import multidev as md
from multidev import nn
from multidev.optim import lr_scheduler


def _opt(cls=md.optim.SGD, **kwargs):
    return cls([nn.Parameter(md.zeros(3))], **kwargs)


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (lr_scheduler.StepLR, {"step_size": 2}),
        (lr_scheduler.MultiStepLR, {"milestones": [1, 3, 3]}),
        (lr_scheduler.ExponentialLR, {"gamma": 0.5}),
        (lr_scheduler.CosineAnnealingLR, {"T_max": 4}),
        (lr_scheduler.LambdaLR, {"lr_lambda": lambda e: 1 / (e + 1)}),
        (lr_scheduler.OneCycleLR, {"max_lr": 1.0, "total_steps": 10}),
    ],
)
def test_state_dict_is_plain_values(cls, kwargs):
    sched = cls(_opt(lr=0.1, momentum=0.9), **kwargs)
    sched.step()
    assert _plain(sched.state_dict())


def _plain(x) -> bool:
    """Whether ``x`` holds only what md.save stores besides tensors."""
    if x is None or type(x) in (bool, int, float, str):
        return True
    if type(x) in (list, tuple):
        return all(_plain(v) for v in x)
    if type(x) is dict:
        return all(type(k) in (int, str) and _plain(v) for k, v in x.items())
    return False


def test_one_cycle_cycles_adams_beta1():
    opt = _opt(md.optim.Adam, lr=0.1, betas=(0.9, 0.99))
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    assert opt.param_groups[0]["betas"] == (0.95, 0.99)
    for _ in range(2):
        sched.step()
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.85)
    assert opt.param_groups[0]["lr"] == pytest.approx(1.0)


def test_lambda_state_keeps_callable_object_attributes():
    class Warmup:
        def __init__(self):
            self.length = 3

        def __call__(self, epoch):
            return min(1.0, (epoch + 1) / self.length)

    sched = lr_scheduler.LambdaLR(_opt(lr=1.0), Warmup())
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"length": 3}]
    other = lr_scheduler.LambdaLR(_opt(lr=1.0), Warmup())
    other.lr_lambdas[0].length = 7
    other.load_state_dict(state)
    assert other.lr_lambdas[0].length == 3


def test_errors():
    with pytest.raises(TypeError, match=r"md\.optim optimiser"):
        lr_scheduler.StepLR(object(), step_size=1)
    with pytest.raises(ValueError, match="step_size"):
        lr_scheduler.StepLR(_opt(lr=0.1), step_size=0)
    with pytest.raises(ValueError, match="initial_lr"):
        lr_scheduler.ExponentialLR(_opt(lr=0.1), gamma=0.5, last_epoch=3)
    with pytest.raises(ValueError, match="total_steps, or epochs"):
        lr_scheduler.OneCycleLR(_opt(lr=0.1, momentum=0.9), max_lr=1.0)
    with pytest.raises(ValueError, match="cycle_momentum"):
        lr_scheduler.OneCycleLR(_opt(md.optim.Adagrad), max_lr=1.0, total_steps=4)
    sched = lr_scheduler.OneCycleLR(_opt(lr=0.1, momentum=0.9), max_lr=1.0, total_steps=2)
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="at most total_steps=2"):
        sched.step()
    with pytest.raises(md.StateDictError, match="state dict of a StepLR"):
        lr_scheduler.StepLR(_opt(lr=0.1), step_size=1).load_state_dict({"T_max": 3})
