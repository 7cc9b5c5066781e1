"""Section "block": the Block tree (registration, names, traversal, printing, devices, state
dicts) and the built-in layers, against NumPy and against the framework's own linear op.

Parameter names, state-dict keys and ``print(net)`` are compared with what PyTorch's own
``torch.nn`` gives for the same model code (``multidev.testing.models``).
"""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.testing import native_reference
from multidev.testing.models import TORCH_EXPECTED, build, describe
from multidev.testing.reference import numpy_linear

RTOL, ATOL = 1e-5, 1e-6


@pytest.mark.parametrize("name", sorted(TORCH_EXPECTED))
def test_names_shapes_and_print_match_pytorch(name):
    got = describe(build(nn, name))
    want = TORCH_EXPECTED[name]
    assert got["parameters"] == want["parameters"]
    assert got["state_dict"] == want["state_dict"]
    assert got["repr"] == want["repr"]


def test_rgnet_runs_and_nested_indexing():
    rgnet = build(nn, "rgnet")
    X = md.rand(2, 4)
    assert rgnet(X).shape == (2, 1)
    assert rgnet[0][1][0].bias is dict(rgnet.named_parameters())["0.block 1.0.bias"]
    assert rgnet[0][1][0].bias.data.shape == (8,)


# ------------------------------------------------------------------ registration


def test_attributes_register_in_assignment_order():
    class Net(nn.Block):
        def __init__(self):
            super().__init__()
            self.z = nn.Linear(2, 3)
            self.scale = nn.Parameter(md.ones(3))
            self.a = nn.Linear(3, 1)
            self.note = "not registered"
            self.const = md.ones(2)

        def forward(self, X):
            return self.a(self.z(X) * self.scale)

    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "scale",
        "z.weight",
        "z.bias",
        "a.weight",
        "a.bias",
    ]
    assert [n for n, _ in net.named_children()] == ["z", "a"]
    assert net(md.ones((4, 2))).shape == (4, 1)


def test_add_module_takes_any_name():
    net = nn.Sequential()
    net.add_module("block 0", nn.Linear(2, 2))
    net.add_module("out layer", nn.Linear(2, 1))
    assert [n for n, _ in net.named_parameters()] == [
        "block 0.weight",
        "block 0.bias",
        "out layer.weight",
        "out layer.bias",
    ]
    assert net(md.ones((3, 2))).shape == (3, 1)
    with pytest.raises(KeyError, match=r"'\.'"):
        net.add_module("a.b", nn.ReLU())


def test_reassigning_an_attribute_replaces_the_registration():
    net = build(nn, "mlp")
    new = nn.Linear(20, 256)
    net.hidden = new
    assert net.hidden is new
    assert [n for n, _ in net.named_children()] == ["hidden", "out"]
    with pytest.raises(TypeError, match="Parameter"):
        net.hidden.weight = md.ones((256, 20))  # type: ignore[assignment]  # the error tested


def test_assignment_before_init_is_a_clear_error():
    class Broken(nn.Block):
        def __init__(self):
            self.layer = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Broken()


def test_forward_missing_is_a_clear_error():
    class NoForward(nn.Block):
        pass

    with pytest.raises(NotImplementedError, match="forward"):
        NoForward()(md.ones(2))


# ------------------------------------------------------------------ Sequential


def test_sequential_indexing_slicing_len_iteration():
    layers = [nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)]
    net = nn.Sequential(*layers)
    assert len(net) == 3
    assert net[0] is layers[0] and net[-1] is layers[2]
    assert list(net) == layers
    head = net[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2
    assert head[0] is layers[0]
    X = md.rand(5, 4)
    np.testing.assert_array_equal(net(X).numpy(), net[2](head(X)).numpy())
    with pytest.raises(IndexError, match=r"Expected an index in \[-3, 3\).*Received: 3"):
        net[3]


def test_apply_visits_children_first_then_the_block():
    net = build(nn, "rgnet")
    seen = []
    net.apply(lambda m: seen.append(m))
    inner = net[0][0]
    assert seen[:5] == [inner[0], inner[1], inner[2], inner[3], inner]
    assert seen[-2:] == [net[1], net]
    assert len(seen) == 1 + 1 + 4 * 5 + 1


def test_children_and_modules_of_a_shared_block_come_once():
    net = build(nn, "tied")
    assert len(list(net.children())) == 6
    assert [n for n, _ in net.named_children()] == ["0", "1", "2", "3", "5", "6"]
    assert len(list(net.modules())) == 7


def test_train_and_eval_are_recursive():
    net = build(nn, "rgnet")
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


# ------------------------------------------------------------------ devices


def test_to_device_keeps_parameter_identity():
    net = build(nn, "mlp")
    X = md.rand(2, 20)
    before = {n: p for n, p in net.named_parameters()}
    values = {n: p.numpy().copy() for n, p in before.items()}
    for dev in md.devices():
        assert net.to(dev) is net
        for n, p in net.named_parameters():
            assert p is before[n]
            assert p.device is dev
            np.testing.assert_array_equal(p.numpy(), values[n])
        out = nn.functional.linear(X.to(dev), net.hidden.weight, net.hidden.bias)
        assert out.device is dev


@pytest.mark.requires("multi_device")
def test_inputs_on_another_device_are_refused():
    devs = md.devices()
    net = nn.Linear(3, 2).to(devs[0])
    with pytest.raises(md.DeviceMismatchError):
        net(md.ones((1, 3), device=devs[1]))


def test_to_unknown_device_raises_before_moving_anything():
    net = nn.Linear(3, 2)
    dev = net.weight.device
    with pytest.raises(md.DeviceError):
        net.to(md.gpu(99))
    assert net.weight.device is dev


# ------------------------------------------------------------------ state dicts


def test_state_dict_round_trip_keeps_identity_and_values():
    md.manual_seed(1)
    net = build(nn, "mlp")
    clone = build(nn, "mlp")
    X = md.rand(3, 20)
    sd = net.state_dict()
    assert list(sd) == ["hidden.weight", "hidden.bias", "out.weight", "out.bias"]
    params = list(clone.parameters())
    result = clone.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert all(a is b for a, b in zip(clone.parameters(), params, strict=True))
    for (n, a), (_, b) in zip(net.named_parameters(), clone.named_parameters(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=n)
    np.testing.assert_array_equal(clone.hidden(X).numpy(), net.hidden(X).numpy())
    hidden_w = clone.hidden.weight
    sd2 = {k: v.numpy() for k, v in sd.items()}
    clone.load_state_dict(sd2)
    assert clone.hidden.weight is hidden_w


def test_load_state_dict_reports_every_problem_at_once():
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    before = net[0].weight.numpy().copy()
    sd = dict(net.state_dict())
    del sd["0.bias"]
    sd["extra.weight"] = md.ones(3)
    sd["2.weight"] = md.ones((2, 8))
    sd["0.weight"] = md.zeros((8, 4))
    with pytest.raises(md.StateDictError) as info:
        net.load_state_dict(sd)
    err = info.value
    assert err.missing_keys == ["0.bias"]
    assert err.unexpected_keys == ["extra.weight"]
    assert err.mismatched_keys == ["2.weight"]
    text = str(err)
    assert "'0.bias'" in text and "'extra.weight'" in text
    assert "expected (1, 8), received (2, 8)" in text
    np.testing.assert_array_equal(net[0].weight.numpy(), before)


def test_load_state_dict_not_strict_skips_missing_and_unexpected():
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    sd = {"0.weight": md.zeros((8, 4)), "bogus": md.ones(1)}
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["0.bias", "2.weight", "2.bias"]
    assert result.unexpected_keys == ["bogus"]
    assert not net[0].weight.numpy().any()
    with pytest.raises(md.StateDictError, match="shape mismatch"):
        net.load_state_dict({"0.weight": md.zeros((4, 8))}, strict=False)


def test_state_dict_converts_dtype_into_the_parameter():
    net = nn.Linear(2, 2)
    net.load_state_dict({"weight": md.asarray([[1, 2], [3, 4]]), "bias": np.zeros(2)})
    assert net.weight.dtype is md.float32
    np.testing.assert_array_equal(net.weight.numpy(), [[1, 2], [3, 4]])


def _bn_net():
    net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    net[1].num_batches_tracked[...] = 4
    return net


def _snapshot(net):
    return {k: v.numpy().copy() for k, v in net.state_dict().items()}


# (id, block, key, value as a function of the current one, what the error must name)
LOSSY = [
    ("complex-numpy", _bn_net, "0.weight", lambda w: w.astype(np.complex64), "imaginary"),
    ("complex-tensor", _bn_net, "0.bias", lambda b: md.asarray(b.astype(np.complex64)), "imagin"),
    ("nan-count", _bn_net, "1.num_batches_tracked", lambda _: np.array(np.nan), "NaN"),
    ("inf-count", _bn_net, "1.num_batches_tracked", lambda _: np.array(np.inf), "infinite"),
    ("fraction-count", _bn_net, "1.num_batches_tracked", lambda _: np.array(2.5), "fractional"),
    ("huge-count", _bn_net, "1.num_batches_tracked", lambda _: np.array(1e30), "range"),
    ("float64-overflow", _bn_net, "1.running_var", lambda v: v.astype(np.float64) * 1e300, "inf"),
    (
        "float16-overflow",
        lambda: nn.Linear(2, 2).to(dtype=md.float16),
        "weight",
        lambda w: md.asarray(np.full(w.shape, 1e5, np.float32)),
        "infinite in float16",
    ),
]


@pytest.mark.parametrize(
    ("make", "key", "change", "match"), [pytest.param(*c[1:], id=c[0]) for c in LOSSY]
)
def test_load_state_dict_refuses_lossy_values(bk, make, key, change, match):
    if match == "imagin" and "complex" not in bk.capabilities:
        pytest.skip(f"{bk.name} has no complex tensors (the 'complex' capability)")
    net = make()
    before = _snapshot(net)
    sd = dict(before)
    sd[key] = change(before[key])
    for other in sd:  # every other value changes too: a refused load changes none of them
        if other != key and sd[other].dtype.kind == "f":
            sd[other] = sd[other] + 1
    with pytest.raises(md.StateDictError, match=match) as info:
        net.load_state_dict(sd)
    assert repr(key) in str(info.value) and info.value.mismatched_keys == [key]
    for k, v in _snapshot(net).items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)


def test_load_state_dict_takes_values_that_survive_the_cast():
    net = _bn_net()
    sd = _snapshot(net)
    sd["1.num_batches_tracked"] = np.array(7.0)  # a whole float: exact
    sd["0.weight"] = sd["0.weight"].astype(np.float64) / 3  # rounds, as any float64 -> float32
    net.load_state_dict(sd)
    assert net[1].num_batches_tracked.item() == 7
    np.testing.assert_array_equal(net[0].weight.numpy(), sd["0.weight"].astype(np.float32))
    half = nn.Linear(2, 2).to(dtype=md.float16)
    half.load_state_dict({"weight": np.full((2, 2), 6e4, np.float32), "bias": np.zeros(2)})
    assert np.isfinite(half.weight.numpy()).all()


def test_tied_parameters_given_two_values_are_refused():
    shared = nn.Linear(3, 3)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    before = _snapshot(net)
    sd = dict(before)
    sd["2.weight"] = before["2.weight"] + 1  # the other name of 0.weight, another value
    with pytest.raises(md.StateDictError, match=r"'0\.weight' and '2\.weight'") as info:
        net.load_state_dict(sd)
    assert info.value.mismatched_keys == ["2.weight"]
    for k, v in _snapshot(net).items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)
    same = {k: v + 1 for k, v in before.items()}  # separate arrays, equal values: loads
    net.load_state_dict(same)
    np.testing.assert_array_equal(net[2].weight.numpy(), same["2.weight"])
    net.load_state_dict(net.state_dict())


# ------------------------------------------------------------------ layers


def test_linear_stores_weight_out_by_in_and_matches_references(bk, rng):
    lin = nn.Linear(5, 3)
    assert lin.weight.shape == (3, 5) and lin.bias.shape == (3,)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    got = lin(md.asarray(x)).numpy()
    np.testing.assert_allclose(got, numpy_linear(x, w, b), rtol=RTOL, atol=ATOL)
    ref = native_reference(bk)
    if ref is not None:
        np.testing.assert_allclose(got, ref["linear"](x, w, b), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 5), (0, 5)])
def test_linear_on_other_input_ranks(bk, rng, shape):
    lin = nn.Linear(5, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    got = lin(md.asarray(x))
    assert got.shape == (*shape[:-1], 3)
    want = numpy_linear(x, lin.weight.numpy(), lin.bias.numpy())
    np.testing.assert_allclose(got.numpy(), want, rtol=RTOL, atol=ATOL)


def test_linear_without_bias_matches_native_reference(bk, rng):
    lin = nn.Linear(6, 2, bias=False)
    assert lin.bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    x = rng.standard_normal((3, 6)).astype(np.float32)
    got = lin(md.asarray(x)).numpy()
    np.testing.assert_allclose(got, numpy_linear(x, lin.weight.numpy(), None), rtol=RTOL, atol=ATOL)
    ref = native_reference(bk)
    if ref is not None:
        want = ref["linear"](x, lin.weight.numpy(), None)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_linear_promotes_integer_input():
    lin = nn.Linear(2, 1)
    x = md.asarray([[1, 2]])
    out = lin(x)
    assert out.dtype is md.float32
    want = numpy_linear(np.array([[1.0, 2.0]], np.float32), lin.weight.numpy(), lin.bias.numpy())
    np.testing.assert_allclose(out.numpy(), want, rtol=RTOL, atol=ATOL)


def test_linear_wrong_input_size_says_what_was_expected():
    lin = nn.Linear(20, 4)
    with pytest.raises(ValueError, match=r"in_features=20.*Received: input of shape \(2, 19\)"):
        lin(md.rand(2, 19))


def test_activation_and_flatten_layers_match_numpy(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    X = md.asarray(x)
    np.testing.assert_allclose(nn.ReLU()(X).numpy(), np.maximum(x, 0), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(nn.Sigmoid()(X).numpy(), 1 / (1 + np.exp(-x)), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(nn.Tanh()(X).numpy(), np.tanh(x), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(nn.Flatten()(X).numpy(), x.reshape(2, 12))
    np.testing.assert_array_equal(nn.Flatten(0, 1)(X).numpy(), x.reshape(6, 4))


def test_dropout_scales_kept_values_and_is_off_in_eval():
    md.manual_seed(0)
    drop = nn.Dropout(0.25)
    X = md.ones((100, 100))
    Y = drop(X).numpy()
    kept = Y != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(Y[kept], 1 / 0.75, rtol=1e-6)
    drop.eval()
    assert drop(X) is X
    assert not nn.Dropout(1.0)(X).numpy().any()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nn.Dropout(1.5)


def test_dropout_mask_is_the_same_on_every_backend():
    md.manual_seed(7)
    Y = nn.functional.dropout(md.ones((4, 5)), p=0.5).numpy()
    g = np.random.Generator(np.random.PCG64(7))
    keep = g.random((4, 5), dtype=np.float32) >= np.float32(0.5)
    np.testing.assert_array_equal(Y, np.where(keep, np.float32(2.0), np.float32(0.0)))
