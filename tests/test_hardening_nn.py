"""Blocks under misuse, on the active backend: all-or-nothing ``load_state_dict``, shape checks
for lazy layers, ``copy.deepcopy`` of a model, in-place writes into ``p.grad``, and MXNet's
legacy arrays through ``net.native``."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import multidev as md
from multidev import nn, registry

BK = registry.current()
needs_autograd = pytest.mark.skipif(
    "autograd" not in BK.capabilities, reason=f"{BK.name} adapter lacks capability 'autograd'"
)


def _mlp() -> nn.Sequential:
    md.manual_seed(3)
    return nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2))


def _values(net: nn.Block) -> dict[str, np.ndarray]:
    return {k: np.array(v.numpy(), copy=True) for k, v in net.state_dict().items()}


# ------------------------------------------------------------------ all-or-nothing loads


@pytest.mark.parametrize(
    "bad",
    [np.array(["a", "b"]), [None, None], np.array([object(), object()]), [1 + 2j, 3j]],
    ids=["strings", "nones", "objects", "complex"],
)
def test_a_failed_load_changes_nothing(bad):
    net = _mlp()
    before = _values(net)
    sd = {k: v + 1 for k, v in before.items()}
    sd["2.bias"] = bad  # the last value: every other one would be written first
    with pytest.raises(md.StateDictError) as e:
        net.load_state_dict(sd)
    text = str(e.value)
    assert "'2.bias'" in text and "cannot become float32" in text and "expected numbers" in text
    assert "Nothing was loaded" in text
    assert e.value.mismatched_keys == ["2.bias"]
    after = _values(net)
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)


def test_every_bad_value_is_reported_at_once():
    net = _mlp()
    sd = {k: v + 1 for k, v in _values(net).items()}
    sd["0.bias"] = ["x", "y", "z"]
    sd["2.weight"] = np.ones((5, 5))
    with pytest.raises(md.StateDictError) as e:
        net.load_state_dict(sd)
    assert e.value.mismatched_keys == ["0.bias", "2.weight"]
    assert "shape mismatch for '2.weight': expected (2, 3), received (5, 5)" in str(e.value)


def test_a_good_load_converts_and_writes_every_value():
    net = _mlp()
    want = {k: v + 1 for k, v in _values(net).items()}
    sd = dict(want)
    sd["0.bias"] = [float(x) for x in want["0.bias"]]  # lists load too
    sd["2.bias"] = want["2.bias"].astype(np.float64)  # other dtypes are converted
    params = list(net.parameters())
    net.load_state_dict(sd)
    assert list(net.parameters()) == params  # in place: the same Parameter objects
    after = _values(net)
    for key, value in want.items():
        np.testing.assert_allclose(after[key], value, rtol=1e-6, err_msg=key)


def test_buffers_load_all_or_nothing_too():
    net = _mlp()
    net.register_buffer("scale", md.full((2,), 0.5))
    sd = {k: v + 1 for k, v in _values(net).items()}
    sd["scale"] = [None, 1.0]
    with pytest.raises(md.StateDictError, match=r"'scale' cannot become float32"):
        net.load_state_dict(sd)
    assert net.scale.tolist() == [0.5, 0.5]
    sd["scale"] = [2, 3]
    net.load_state_dict(sd)
    assert net.scale.tolist() == [2.0, 3.0] and net.scale.dtype == md.float32


def test_a_failed_load_into_a_lazy_layer_leaves_it_uninitialised():
    net = nn.Sequential(nn.Linear(2, 3), nn.LazyLinear(2))
    before = _values(nn.Sequential(net[0]))
    sd = {"0.weight": np.ones((3, 2)), "0.bias": np.ones(3), "1.weight": np.ones((2, 3))}
    sd["1.bias"] = np.array(["p", "q"])
    with pytest.raises(md.StateDictError, match=r"'1\.bias' cannot become float32"):
        net.load_state_dict(sd)
    assert not net[1].weight.initialized and not net[1].bias.initialized
    np.testing.assert_array_equal(net[0].weight.numpy(), before["0.weight"])


# ------------------------------------------------------------------ lazy layers check shapes


@pytest.mark.parametrize(
    ("weight", "bias", "keys", "expected", "received"),
    [
        ((4, 5), (3,), ["weight"], "(3, 5)", "(4, 5)"),
        ((3, 5), (4,), ["bias"], "(3,)", "(4,)"),
        ((4, 5), (4,), ["weight", "bias"], "(3, 5)", "(4, 5)"),
        ((3,), (3,), ["weight"], "(3, in_features)", "(3,)"),
        ((3, 5, 1), (3,), ["weight"], "(3, in_features)", "(3, 5, 1)"),
    ],
)
def test_lazy_linear_rejects_shapes_that_do_not_fit(weight, bias, keys, expected, received):
    lin = nn.LazyLinear(3)
    with pytest.raises(md.StateDictError) as e:
        lin.load_state_dict({"weight": np.ones(weight), "bias": np.ones(bias)})
    text = str(e.value)
    assert f"shape mismatch for {keys[0]!r}: expected {expected}, received {received}" in text
    assert e.value.mismatched_keys == keys
    assert not lin.weight.initialized and not lin.bias.initialized


def test_lazy_linear_rejects_a_bias_that_disagrees_with_its_loaded_weight():
    lin = nn.LazyLinear(3)
    lin.load_state_dict({"weight": np.ones((3, 5))}, strict=False)
    with pytest.raises(md.StateDictError, match=r"'bias': expected \(3,\), received \(4,\)"):
        lin.load_state_dict({"bias": np.ones(4)}, strict=False)
    assert not lin.bias.initialized
    lin.load_state_dict({"bias": np.full(3, 2.0)}, strict=False)
    y = lin(md.ones((1, 5)))
    np.testing.assert_allclose(y.numpy(), np.full((1, 3), 7.0))


def test_lazy_linear_after_its_first_call_checks_loaded_shapes():
    lin = nn.LazyLinear(3)
    lin(md.ones((2, 5)))
    with pytest.raises(md.StateDictError, match=r"'weight': expected \(3, 5\), received \(4, 5\)"):
        lin.load_state_dict({"weight": np.ones((4, 5)), "bias": np.ones(3)})


def test_lazy_linear_takes_a_fitting_state_dict():
    lin = nn.LazyLinear(3)
    lin.load_state_dict({"weight": np.ones((3, 5)), "bias": np.zeros(3)})
    assert lin.weight.shape == (3, 5)
    assert lin(md.ones((2, 5))).shape == (2, 3)
    assert repr(lin) == "Linear(in_features=5, out_features=3, bias=True)"


# ------------------------------------------------------------------ copy.deepcopy


class Tied(nn.Block):
    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(4, 4)
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), self.shared, nn.ReLU(), self.shared)
        self.head = nn.LazyLinear(2)
        self.register_buffer("scale", md.full((2,), 0.5))
        self.drop = nn.Dropout(0.5)

    def forward(self, X):
        return self.drop(self.head(self.body(X))) * self.scale


def test_deepcopy_gives_an_independent_model_with_equal_outputs():
    md.manual_seed(0)
    net = Tied()
    X = md.rand(5, 3)
    lazy_copy = copy.deepcopy(net)  # before the first call: the lazy head stays lazy
    assert not lazy_copy.head.weight.initialized
    net.eval()
    y = net(X)
    clone = copy.deepcopy(net)
    assert type(clone) is Tied and clone is not net
    assert clone.training is False and clone.body[2] is clone.shared is clone.body[4]
    assert clone.body[2].weight is clone.body[4].weight
    np.testing.assert_array_equal(clone(X).numpy(), y.numpy())
    names = [n for n, _ in net.named_parameters()]
    assert [n for n, _ in clone.named_parameters()] == names
    for p, q in zip(net.parameters(), clone.parameters(), strict=True):
        assert p is not q and q.device == p.device and q.dtype == p.dtype
    # independent: changing the copy changes nothing in the original, in both directions
    clone.shared.weight.data[0, 0] = 100.0
    clone.scale[...] = 3.0
    np.testing.assert_array_equal(net(X).numpy(), y.numpy())
    net.body[0].weight.data[...] = 0.0
    assert float(md.abs(clone.body[0].weight).sum().item()) > 0
    # the lazy copy materialises on its own
    assert lazy_copy(X).shape == (5, 2) and net.head.weight is not lazy_copy.head.weight
    assert lazy_copy.training is True


def test_deepcopy_of_a_parameter_and_of_a_tensor():
    p = nn.Parameter(md.asarray([[1.0, 2.0]]))
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q is not p and q.native is not p.native
    q.data[0, 0] = 5.0
    assert p.numpy().tolist() == [[1.0, 2.0]] and q.numpy().tolist() == [[5.0, 2.0]]
    t = md.asarray([1, 2, 3])
    u = copy.deepcopy(t)
    u[0] = 9
    assert t.tolist() == [1, 2, 3] and u.tolist() == [9, 2, 3] and u.backend == t.backend


@needs_autograd
def test_deepcopy_copies_gradients_and_trains_independently():
    net = _mlp()
    X = md.rand(4, 2)
    with md.autograd.record():
        loss = net(X).sum()
    loss.backward()
    clone = copy.deepcopy(net)
    for p, q in zip(net.parameters(), clone.parameters(), strict=True):
        np.testing.assert_array_equal(q.grad.numpy(), p.grad.numpy())
    before = _values(net)
    opt = md.optim.SGD(clone.parameters(), lr=0.5)
    opt.step()
    for key, value in _values(net).items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)
    assert any(not np.array_equal(before[k], v) for k, v in _values(clone).items())


# ------------------------------------------------------------------ writes into p.grad


@needs_autograd
def test_writes_into_p_grad_reach_the_optimiser():
    net = _mlp()
    X = md.rand(4, 2)
    with md.autograd.record():
        loss = net(X).sum()
    loss.backward()
    before = _values(net)
    for p in net.parameters():
        g = p.grad
        g[...] = 0  # the d2l hand-written all-reduce writes results back like this
    for p in net.parameters():
        assert float(md.abs(p.grad).sum().item()) == 0.0
    md.optim.SGD(net.parameters(), lr=1.0).step()
    for key, value in _values(net).items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)


@needs_autograd
def test_in_place_operators_on_p_grad_change_the_stored_gradient():
    w = nn.Parameter(md.asarray([1.0, 2.0]))
    with md.autograd.record():
        loss = (w * w).sum()
    loss.backward()
    g = w.grad
    g += 1.0
    g[0] = 10.0
    np.testing.assert_array_equal(w.grad.numpy(), [10.0, 5.0])
    md.optim.SGD([w], lr=1.0).step()
    np.testing.assert_array_equal(w.numpy(), [-9.0, -3.0])


@pytest.mark.skipif(
    BK.name != "tensorflow",
    reason="only TensorFlow replaces the gradient tensor on each backward; elsewhere an old "
    "p.grad is the same storage (torch zero_grad(set_to_none=False), MXNet) or freed (paddle)",
)
def test_a_stale_gradient_tensor_does_not_overwrite_a_new_gradient():
    w = nn.Parameter(md.asarray([1.0, 2.0]))
    with md.autograd.record():
        loss = (w * 3.0).sum()
    loss.backward()
    old = w.grad
    w.grad = None
    with md.autograd.record():
        loss = (w * 2.0).sum()
    loss.backward()
    old[...] = 7.0
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])


# ------------------------------------------------------------------ MXNet's legacy arrays


@pytest.mark.skipif(BK.name != "mxnet", reason="MXNet's legacy mx.nd.NDArray")
def test_mxnet_native_block_takes_legacy_ndarrays():
    import mxnet as mx

    net = _mlp()
    X = np.arange(8, dtype=np.float32).reshape(4, 2)
    legacy = mx.nd.array(X)
    out = net.native(legacy)
    assert isinstance(out, mx.np.ndarray)
    np.testing.assert_allclose(out.asnumpy(), net(md.asarray(X)).numpy(), rtol=1e-6)


# ------------------------------------------------------------------ on a GPU


@pytest.mark.gpu
def test_deepcopy_and_gradient_writes_on_a_gpu():
    if md.num_gpus() == 0:
        pytest.skip("no GPU: num_gpus() == 0")
    g = md.gpu(0)
    net = _mlp().to(g)
    X = md.rand(4, 2, device=g)
    clone = copy.deepcopy(net)
    assert all(p.device is g for p in clone.parameters())
    np.testing.assert_array_equal(clone(X).numpy(), net(X).numpy())
    if "autograd" not in BK.capabilities:
        return
    with md.autograd.record():
        loss = net(X).sum()
    loss.backward()
    before = _values(net)
    for p in net.parameters():
        p.grad[...] = 0
    md.optim.SGD(net.parameters(), lr=1.0).step()
    for key, value in _values(net).items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)
