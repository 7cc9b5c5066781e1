"""Section "parameters": ``nn.Parameter`` is a Tensor whose storage is the framework's own
trainable variable; writes through ``p.data`` reach every user of ``p``; tied parameters are one
object."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn


def _variable_values(bk, p) -> np.ndarray:
    """The values the framework itself sees in the parameter's variable."""
    return np.array(bk.to_numpy(bk.variable_tensor(p.native)))


def test_parameter_is_a_tensor():
    p = nn.Parameter(md.asarray([[1.0, 2.0], [3.0, 4.0]]))
    assert isinstance(p, md.Tensor)
    assert p.shape == (2, 2) and p.dtype is md.float32 and p.device is md.default_device()
    assert p.grad is None
    assert p.initialized
    np.testing.assert_array_equal((p * 2).numpy(), [[2, 4], [6, 8]])
    np.testing.assert_array_equal((p @ p).numpy(), [[7, 10], [15, 22]])
    assert repr(p).startswith("Parameter containing:\ntensor(")


def test_zero_size_parameters():
    assert nn.Parameter().shape == (0,)
    lin = nn.Linear(0, 3)
    assert lin.weight.shape == (3, 0)
    np.testing.assert_array_equal(
        lin(md.ones((2, 0))).numpy(), np.broadcast_to(lin.bias.numpy(), (2, 3))
    )


def test_parameter_copies_its_initial_values():
    t = md.ones(3)
    p = nn.Parameter(t)
    t[0] = 5.0
    np.testing.assert_array_equal(p.numpy(), [1, 1, 1])


def test_native_is_the_frameworks_trainable_variable(bk):
    lin = nn.Linear(3, 2)
    for p in lin.parameters():
        assert type(p.native) is type(bk.make_variable(md.ones(1).native))
        assert bk.is_trainable_variable(p.native), (
            f"{type(p.native)} is not {bk.name}'s trainable variable"
        )
        np.testing.assert_array_equal(_variable_values(bk, p), p.numpy())


def test_data_writes_are_seen_by_the_model_and_the_variable(bk):
    md.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    X = md.rand(2, 4)
    w = net[0].weight
    before = w.numpy().copy()
    out0 = net(X).numpy()

    net[0].weight.data[:] += 1
    np.testing.assert_allclose(w.numpy(), before + 1, rtol=1e-6)
    net[0].weight.data[0, 0] = 42
    assert w.numpy()[0, 0] == 42
    np.testing.assert_array_equal(_variable_values(bk, w), w.numpy())
    assert net[0].weight is w

    expected = np.maximum(X.numpy() @ w.numpy().T + net[0].bias.numpy(), 0)
    expected = expected @ net[2].weight.numpy().T + net[2].bias.numpy()
    out1 = net(X).numpy()
    assert not np.allclose(out0, out1)
    np.testing.assert_allclose(out1, expected, rtol=1e-5, atol=1e-6)


def test_data_in_place_operators_and_masks():
    md.manual_seed(3)
    lin = nn.Linear(6, 5)
    nn.init.uniform_(lin.weight, -10, 10)
    lin.weight.data *= lin.weight.data.abs() >= 5
    w = lin.weight.numpy()
    assert ((np.abs(w) >= 5) | (w == 0)).all()
    assert (w == 0).any() and (np.abs(w) >= 5).any()


def test_state_dict_values_share_the_parameters_storage():
    lin = nn.Linear(3, 2)
    sd = lin.state_dict()
    sd["weight"][0, 0] = 7.0
    assert lin.weight.numpy()[0, 0] == 7
    np.testing.assert_array_equal(sd["bias"].numpy(), lin.bias.numpy())


def test_tied_parameters_are_one_object_and_stay_tied():
    md.manual_seed(0)
    shared = nn.Linear(8, 8)
    net = nn.Sequential(
        nn.Linear(4, 8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(8, 1)
    )
    X = md.rand(2, 4)
    net(X)
    assert net[2].weight is net[4].weight
    assert bool(md.sum(net[2].weight.data[0] == net[4].weight.data[0]) == 8)
    out0 = net(X).numpy()
    net[2].weight.data[0, 0] = 100
    assert net[4].weight.numpy()[0, 0] == 100
    assert bool(md.sum(net[2].weight.data[0] == net[4].weight.data[0]) == 8)
    assert not np.allclose(out0, net(X).numpy())

    names = [n for n, _ in net.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias", "6.weight", "6.bias"]
    sd = net.state_dict()
    assert sd["2.weight"] is sd["4.weight"] and sd["2.bias"] is sd["4.bias"]
    assert len(list(net.parameters())) == 6


def test_parameters_tied_by_assignment():
    a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    b.weight = a.weight
    net = nn.Sequential(a, b)
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias", "1.bias"]
    a.weight.data[1, 1] = -3
    assert b.weight.numpy()[1, 1] == -3


def test_in_place_operators_on_a_parameter_keep_it_a_parameter(bk):
    p = nn.Parameter(md.ones((2, 2)))
    var = p.native
    p *= 3
    p += 1
    assert isinstance(p, nn.Parameter)
    np.testing.assert_array_equal(p.numpy(), np.full((2, 2), 4.0))
    np.testing.assert_array_equal(_variable_values(bk, p), np.full((2, 2), 4.0))
    assert p.native is var


def test_assigning_data_replaces_values():
    p = nn.Parameter(md.zeros((2, 3)))
    p.data = md.ones((2, 3))
    np.testing.assert_array_equal(p.numpy(), np.ones((2, 3)))
    p.data = md.arange(4.0)
    assert p.shape == (4,)
    np.testing.assert_array_equal(p.numpy(), [0, 1, 2, 3])


def test_parameters_move_between_devices_keeping_identity():
    devs = md.devices()
    lin = nn.Linear(3, 2)
    w = lin.weight
    values = w.numpy().copy()
    for dev in reversed(devs):
        lin.to(dev)
        assert lin.weight is w and w.device is dev
        np.testing.assert_array_equal(w.numpy(), values)
        w.data[0, 0] = 9.0
        assert lin.weight.numpy()[0, 0] == 9
        values[0, 0] = 9.0
        out = lin(md.ones((1, 3), device=dev))
        assert out.device is dev


#: per dtype: (rtol, atol) of a 4-term dot product rounded in that dtype, far below a 0.1%
#: error for float32 and float64 (float16 and bfloat16 cannot hold 0.1%: their spacing is larger)
LINEAR_TOLERANCES = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (3e-2, 3e-2),
    "float32": (1e-6, 1e-6),
    "float64": (1e-13, 1e-13),
}


@pytest.mark.parametrize("dtype", list(LINEAR_TOLERANCES))
def test_parameters_of_other_float_dtypes(bk, dtype, rng):
    if dtype != "float32" and dtype not in bk.capabilities:
        pytest.skip(f"{bk.name} adapter lacks capability '{dtype}'")
    dt = getattr(md, dtype)
    lin = nn.Linear(4, 3, dtype=dt)
    assert lin.weight.dtype is dt and lin.bias.dtype is dt
    x = rng.uniform(0.5, 1.5, (2, 4)).astype(dt.numpy)
    out = lin(md.asarray(x))
    assert out.dtype is dt
    w, b = (p.numpy().astype(np.float64) for p in (lin.weight, lin.bias))
    want = x.astype(np.float64) @ w.T + b
    rtol, atol = LINEAR_TOLERANCES[dtype]
    np.testing.assert_allclose(out.numpy().astype(np.float64), want, rtol=rtol, atol=atol)
