"""Section "custom": blocks written by the user (the d2l chapter's MLP, MySequential,
FixedHiddenMLP, NestMLP, CenteredLayer and MyLinear) run the same on every backend, checked
against the same computation in NumPy."""

from __future__ import annotations

import numpy as np

import multidev as md
from multidev import nn
from multidev.examples.custom_layers import CenteredLayer, MyLinear
from multidev.examples.layers_and_blocks import MLP, FixedHiddenMLP, MySequential, NestMLP

RTOL, ATOL = 1e-5, 1e-6


def _np_linear(layer, x):
    return x @ layer.weight.numpy().T + layer.bias.numpy()


def test_mlp_block():
    md.manual_seed(0)
    net = MLP()
    X = md.rand(2, 20)
    x = X.numpy()
    want = _np_linear(net.out, np.maximum(_np_linear(net.hidden, x), 0))
    np.testing.assert_allclose(net(X).numpy(), want, rtol=RTOL, atol=ATOL)
    assert [n for n, _ in net.named_parameters()] == [
        "hidden.weight",
        "hidden.bias",
        "out.weight",
        "out.bias",
    ]


def test_my_sequential_registers_through_modules_dict():
    md.manual_seed(0)
    layers = [nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 10)]
    mine = MySequential(*layers)
    ref = nn.Sequential(*layers)
    X = md.rand(2, 20)
    np.testing.assert_array_equal(mine(X).numpy(), ref(X).numpy())
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert repr(mine).replace("MySequential", "Sequential") == repr(ref)


def test_fixed_hidden_mlp_with_control_flow():
    md.manual_seed(0)
    net = FixedHiddenMLP()
    assert [n for n, _ in net.named_parameters()] == ["linear.weight", "linear.bias"]
    X = md.rand(2, 20)
    x = X.numpy().astype(np.float64)
    h = _np_linear(net.linear, x)
    h = np.maximum(h @ net.rand_weight.numpy() + 1, 0)
    h = _np_linear(net.linear, h)
    while np.abs(h).sum() > 1:
        h /= 2
    out = net(X)
    assert out.shape == ()
    np.testing.assert_allclose(out.item(), h.sum(), rtol=1e-4, atol=1e-6)


def test_nested_blocks_and_chimera():
    md.manual_seed(0)
    chimera = nn.Sequential(NestMLP(), nn.Linear(16, 20), FixedHiddenMLP())
    out = chimera(md.rand(2, 20))
    assert out.shape == ()
    names = [n for n, _ in chimera.named_parameters()]
    assert names == [
        "0.net.0.weight",
        "0.net.0.bias",
        "0.net.2.weight",
        "0.net.2.bias",
        "0.linear.weight",
        "0.linear.bias",
        "1.weight",
        "1.bias",
        "2.linear.weight",
        "2.linear.bias",
    ]


def test_centered_layer():
    layer = CenteredLayer()
    np.testing.assert_allclose(
        layer(md.asarray([1.0, 2, 3, 4, 5])).numpy(), [-2, -1, 0, 1, 2], atol=ATOL
    )
    md.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 128), CenteredLayer())
    Y = net(md.rand(4, 8))
    assert abs(Y.mean().item()) < 1e-6
    assert list(CenteredLayer().parameters()) == []


def test_my_linear_layer_with_parameters():
    md.manual_seed(0)
    linear = MyLinear(5, 3)
    assert [(n, p.shape) for n, p in linear.named_parameters()] == [
        ("weight", (5, 3)),
        ("bias", (3,)),
    ]
    X = md.rand(2, 5)
    want = np.maximum(X.numpy() @ linear.weight.numpy() + linear.bias.numpy(), 0)
    np.testing.assert_allclose(linear(X).numpy(), want, rtol=RTOL, atol=ATOL)
    net = nn.Sequential(MyLinear(64, 8), MyLinear(8, 1))
    assert net(md.rand(2, 64)).shape == (2, 1)
    assert len(net.state_dict()) == 4


def test_custom_block_with_its_own_parameter_and_buffer():
    class Scale(nn.Block):
        def __init__(self, n):
            super().__init__()
            self.gain = nn.Parameter(md.full((n,), 2.0))
            self.register_buffer("offset", md.ones(n))
            self.register_buffer("cache", md.zeros(n), persistent=False)

        def forward(self, X):
            return X * self.gain + self.offset

    block = Scale(3)
    assert [n for n, _ in block.named_parameters()] == ["gain"]
    assert [n for n, _ in block.named_buffers()] == ["offset", "cache"]
    assert list(block.state_dict()) == ["gain", "offset"]
    np.testing.assert_array_equal(block(md.ones(3)).numpy(), [3, 3, 3])
    dev = md.devices()[-1]
    block.to(dev)
    assert block.offset.device is dev and block.gain.device is dev
    assert block(md.ones(3, device=dev)).device is dev
