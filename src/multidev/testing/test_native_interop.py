"""Section "native_interop": ``net.native`` is the framework's own module (torch
``nn.Module``, ``tf.Module``, ``paddle.nn.Layer``, gluon ``Block``) holding the Block's very
variables, so that the framework's own optimiser trains the multidev model.

What the framework's tools see of ``net.native`` (its parameter list, one step of its own SGD
optimiser) comes from the adapter's reference module (``native_parameters``,
``native_sgd_step``).
"""

# p.grad (a Tensor or None) is read right after backward(): a None fails the test there
# mypy: disable-error-code="union-attr"

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.nn import functional as F

autograd = pytest.mark.requires("autograd")


class MLP(nn.Block):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(4, 8)
        self.out = nn.Linear(8, 2)

    def forward(self, X):
        return self.out(F.relu(self.hidden(X)))


def _data(rng):
    x = rng.standard_normal((6, 4)).astype(np.float32)
    y = rng.standard_normal((6, 2)).astype(np.float32)
    return x, y


@autograd
def test_native_module_holds_the_very_variables(native_ops):
    net = nn.Sequential(MLP(), nn.ReLU(), nn.Linear(2, 1))
    seen = native_ops["native_parameters"](net.native)
    assert len(seen) == len(list(net.parameters()))
    assert {id(v) for v in seen} == {id(p.native) for p in net.parameters()}


@autograd
def test_tied_parameters_appear_once(native_ops):
    shared = nn.Linear(3, 3)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    seen = native_ops["native_parameters"](net.native)
    assert {id(v) for v in seen} == {id(shared.weight.native), id(shared.bias.native)}
    assert len(seen) == 2


@autograd
def test_calling_it_with_native_tensors_returns_native_tensors(bk, rng):
    md.manual_seed(0)
    net = MLP()
    x, _ = _data(rng)
    out = net.native(md.asarray(x).native)
    assert isinstance(out, bk.tensor_types)
    np.testing.assert_allclose(bk.to_numpy(out), net(md.asarray(x)).numpy(), rtol=1e-6)


@autograd
def test_native_is_reused_until_the_tree_changes(native_ops):
    net = MLP()
    first = net.native
    assert net.native is first
    net.out = nn.Linear(8, 3)
    second = net.native
    assert second is not first and net.native is second
    seen = {id(v) for v in native_ops["native_parameters"](second)}
    assert id(net.out.weight.native) in seen


@autograd
def test_the_frameworks_own_optimiser_trains_the_multidev_model(native_ops, rng):
    md.manual_seed(1)
    net = MLP()
    x, y = _data(rng)
    lr = 0.1
    with md.autograd.record():
        loss = F.mse_loss(net(md.asarray(x)), md.asarray(y))
    loss.backward()
    expected = {n: p.numpy() - lr * p.grad.numpy() for n, p in net.named_parameters()}
    net_loss = loss.item()
    native_loss = native_ops["native_sgd_step"](net.native, x, y, lr)
    np.testing.assert_allclose(native_loss, net_loss, rtol=1e-6)
    for name, p in net.named_parameters():
        np.testing.assert_allclose(p.numpy(), expected[name], rtol=1e-5, atol=1e-6)
    after = F.mse_loss(net(md.asarray(x)), md.asarray(y)).item()
    assert after < net_loss


@autograd
def test_lazy_blocks_need_a_forward_pass_first():
    net = nn.Sequential(nn.LazyLinear(3))
    with pytest.raises(RuntimeError, match="forward pass first"):
        _ = net.native
    net(md.ones((2, 5)))
    assert net.native is not None


def test_backends_without_native_modules_say_so(bk):
    if hasattr(bk, "native_module"):
        pytest.skip(f"{bk.name} has native modules")
    with pytest.raises(TypeError, match=f"{bk.name} backend"):
        _ = nn.Linear(2, 1).native
