"""``Block.to(dtype)``, ``double()`` and ``float()``: the floating-point parameters and buffers
of a whole model change dtype in place, so a model written once trains in float64."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.nn import functional as F

HAS_AUTOGRAD = md.asarray(0.0).backend in md.autograd.autograd_backends()


def _net() -> nn.Block:
    md.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
        nn.Linear(4 * 5 * 5, 3),
    )  # fmt: skip


def test_to_float64_casts_parameters_and_float_buffers_in_place():
    net = _net()
    before = {name: p for name, p in net.named_parameters()}
    values = {name: np.asarray(p.data) for name, p in before.items()}
    assert net.to(md.float64) is net
    for name, p in net.named_parameters():
        assert p is before[name]
        assert p.dtype == md.float64
        np.testing.assert_array_equal(np.asarray(p.data), values[name].astype(np.float64))
    bn = net[1]
    assert bn.running_mean.dtype == md.float64
    assert bn.running_var.dtype == md.float64
    assert bn.num_batches_tracked.dtype == md.int64
    out = net(md.asarray(np.ones((2, 1, 5, 5))))
    assert out.dtype == md.float64
    assert bn.running_mean.dtype == md.float64


def test_double_and_float_round_trip():
    net = _net().double()
    assert {p.dtype for p in net.parameters()} == {md.float64}
    net.float()
    assert {p.dtype for p in net.parameters()} == {md.float32}
    assert net[1].running_var.dtype == md.float32


def test_to_keyword_dtype_and_device_together():
    net = _net()
    device = next(net.parameters()).device
    net.to(device, dtype=md.float64)
    assert {p.dtype for p in net.parameters()} == {md.float64}
    assert {p.device for p in net.parameters()} == {device}


def test_to_integer_dtype_is_a_type_error():
    net = _net()
    with pytest.raises(TypeError, match="floating-point dtype"):
        net.to(md.int32)
    assert {p.dtype for p in net.parameters()} == {md.float32}


@pytest.mark.skipif(not HAS_AUTOGRAD, reason="needs autograd")
def test_float64_model_trains_with_float64_gradients():
    net = _net().to(md.float64)
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    X = md.asarray(rng.standard_normal((4, 1, 5, 5)))
    y = md.asarray(np.array([0, 1, 2, 0]))
    losses = []
    for _ in range(3):
        with md.autograd.record():
            loss = F.cross_entropy(net(X), y)
        loss.backward()
        assert {p.grad.dtype for p in net.parameters()} == {md.float64}
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    assert loss.dtype == md.float64
    assert losses[-1] < losses[0]
    assert {p.dtype for p in net.parameters()} == {md.float64}
