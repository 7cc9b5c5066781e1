"""Section "deferred": lazy layers get their shapes from the first call; until then their
parameters are uninitialised, and initialisers applied to them are honoured at that moment."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn


def _lazy_mlp():
    return nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))


def test_parameters_are_uninitialised_before_the_first_call():
    net = _lazy_mlp()
    w = net[0].weight
    assert isinstance(w, nn.Parameter)
    assert not w.initialized
    assert repr(w) == "<UninitializedParameter>"
    assert w.dtype is md.float32 and w.device is md.default_device()
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert repr(net[0]) == "LazyLinear(in_features=0, out_features=256, bias=True)"


@pytest.mark.parametrize(
    "use",
    [
        lambda p: p.data,
        lambda p: p.shape,
        lambda p: p.numpy(),
        lambda p: p.native,
        lambda p: p * 2,
        lambda p: md.ones(3) + p,
        lambda p: p[0],
    ],
    ids=["data", "shape", "numpy", "native", "mul", "radd", "getitem"],
)
def test_reading_an_uninitialised_parameter_says_to_run_a_forward_pass(use):
    net = _lazy_mlp()
    with pytest.raises(md.DeferredInitializationError, match="forward pass"):
        use(net[0].weight)


def test_first_call_infers_shapes_and_the_layer_becomes_linear():
    net = _lazy_mlp()
    w = net[0].weight
    out = net(md.rand(2, 20))
    assert out.shape == (2, 10)
    assert net[0].weight is w and w.initialized
    assert net[0].weight.shape == (256, 20)
    assert net[2].weight.shape == (10, 256) and net[2].bias.shape == (10,)
    assert type(net[0]) is nn.Linear and net[0].in_features == 20
    assert "LazyLinear" not in repr(net)
    assert "(0): Linear(in_features=20, out_features=256, bias=True)" in repr(net)
    assert net(md.rand(3, 20)).shape == (3, 10)


def test_lazy_layer_draws_what_the_eager_layer_draws():
    md.manual_seed(0)
    X = md.rand(2, 5)
    eager = nn.Linear(5, 3)
    md.manual_seed(0)
    X2 = md.rand(2, 5)
    lazy = nn.LazyLinear(3)
    np.testing.assert_array_equal(lazy(X2).numpy(), eager(X).numpy())
    for a, b in zip(eager.parameters(), lazy.parameters(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_initialisers_applied_before_the_first_call_are_honoured():
    net = _lazy_mlp()

    def init_constant(m):
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.5)
            nn.init.zeros_(m.bias)

    net.apply(init_constant)
    net(md.rand(2, 20))
    for layer in (net[0], net[2]):
        assert (layer.weight.numpy() == 0.5).all()
        assert not layer.bias.numpy().any()


@pytest.mark.parametrize("init", ["normal", "constant"])
def test_a_lazy_layer_first_called_while_recording_trains(init):
    """Its first forward inside record() materialises it and runs the deferred initialiser
    (the book's LazyLinear + normal_ under a training step), then gradients reach it."""
    md.manual_seed(0)
    lazy = nn.LazyLinear(2)
    if init == "normal":
        nn.init.normal_(lazy.weight, 0, 0.01)
    else:
        nn.init.constant_(lazy.weight, 0.25)
    nn.init.zeros_(lazy.bias)
    autograd = "autograd" in md.registry.current().capabilities
    with md.autograd.record() if autograd else md.no_grad():
        loss = md.sum(lazy(md.ones((3, 4))))
    assert lazy.weight.shape == (2, 4) and not lazy.bias.numpy().any()
    if init == "constant":
        assert (lazy.weight.numpy() == 0.25).all()
    if autograd:
        loss.backward()
        assert lazy.weight.grad is not None
        np.testing.assert_allclose(lazy.weight.grad.numpy(), np.full((2, 4), 3.0))


def test_recorded_initialisers_run_in_order():
    lazy = nn.LazyLinear(4)
    nn.init.normal_(lazy.weight)
    nn.init.ones_(lazy.weight)
    lazy(md.ones((1, 3)))
    np.testing.assert_array_equal(lazy.weight.numpy(), np.ones((4, 3)))


def test_in_features_come_from_the_last_dimension():
    lazy = nn.LazyLinear(2)
    assert lazy(md.ones((4, 5, 7))).shape == (4, 5, 2)
    assert lazy.weight.shape == (2, 7)


def test_lazy_layer_without_bias():
    lazy = nn.LazyLinear(2, bias=False)
    assert lazy.bias is None
    lazy(md.ones((1, 6)))
    assert [n for n, _ in lazy.named_parameters()] == ["weight"]


def test_lazy_layer_materialises_on_the_device_it_was_moved_to():
    dev = md.devices()[-1]
    lazy = nn.LazyLinear(3).to(dev)
    out = lazy(md.ones((2, 4), device=dev))
    assert out.device is dev and lazy.weight.device is dev


def test_load_state_dict_gives_a_lazy_layer_its_shapes():
    md.manual_seed(0)
    src = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))
    net = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
    net.load_state_dict(src.state_dict())
    assert net[0].weight.initialized and net[0].weight.shape == (4, 6)
    X = md.rand(3, 6)
    np.testing.assert_array_equal(net(X).numpy(), src(X).numpy())
    assert type(net[0]) is nn.Linear and net[0].in_features == 6


def test_state_dict_before_the_first_call_lists_uninitialised_parameters():
    net = _lazy_mlp()
    sd = net.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert not sd["0.weight"].initialized
