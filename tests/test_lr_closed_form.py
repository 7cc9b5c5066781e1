"""Schedulers against their closed forms, computed here without PyTorch or the recurrences
multidev uses: a second check beside the comparison with torch (tests/test_optim_torch_parity.py,
torch's environment only), so that an off-by-one or an ignored argument fails on every backend."""

from __future__ import annotations

import math

import pytest

import multidev as md
from multidev import nn
from multidev.optim import lr_scheduler

EPOCHS = 13


def _lrs(make, lr=0.5):
    opt = md.optim.SGD([nn.Parameter(md.zeros(2))], lr=lr)
    sched = make(opt)
    seen = [opt.param_groups[0]["lr"]]
    for _ in range(EPOCHS):
        opt.step()
        sched.step()
        seen.append(opt.param_groups[0]["lr"])
    assert sched.get_last_lr() == [seen[-1]]
    return seen


@pytest.mark.parametrize(("step_size", "gamma"), [(1, 0.5), (3, 0.1), (4, 0.9)])
def test_step_lr_is_lr_times_gamma_to_the_floor_of_epoch_over_step_size(step_size, gamma):
    got = _lrs(lambda o: lr_scheduler.StepLR(o, step_size, gamma))
    want = [0.5 * gamma ** (e // step_size) for e in range(EPOCHS + 1)]
    assert got == pytest.approx(want, rel=1e-12)


def test_multistep_lr_counts_the_milestones_passed():
    milestones = [2, 5, 5, 9]
    got = _lrs(lambda o: lr_scheduler.MultiStepLR(o, milestones, 0.5))
    want = [0.5 * 0.5 ** sum(m <= e for m in milestones) for e in range(EPOCHS + 1)]
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(("t_max", "eta_min"), [(5, 0.0), (5, 0.1), (4, 0.05)])
def test_cosine_annealing_follows_the_half_cosine_to_eta_min_and_back(t_max, eta_min):
    got = _lrs(lambda o: lr_scheduler.CosineAnnealingLR(o, t_max, eta_min))
    want = [
        eta_min + (0.5 - eta_min) * (1 + math.cos(math.pi * e / t_max)) / 2
        for e in range(EPOCHS + 1)
    ]
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert min(got) == pytest.approx(eta_min, abs=1e-12)


def test_exponential_lr_is_lr_times_gamma_to_the_epoch():
    got = _lrs(lambda o: lr_scheduler.ExponentialLR(o, 0.8))
    assert got == pytest.approx([0.5 * 0.8**e for e in range(EPOCHS + 1)], rel=1e-12)
