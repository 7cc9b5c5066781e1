"""``md.jit`` and ``hybridize`` on MXNet: forwards run as one ``CachedOp`` (MXNet's compiled
graph, recorded by autograd as a single operation), a training step compiles its blocks'
forwards and keeps ``backward`` and the optimiser step as they are, and what a graph cannot
hold runs eagerly with one ``md.JitWarning`` saying why."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

mx = pytest.importorskip("mxnet")

import multidev as md  # noqa: E402
from multidev import nn  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(autouse=True)
def mxnet_backend():
    with md.use_backend("mxnet"):
        yield


def _ops(t: md.Tensor) -> list[str]:
    """The operations MXNet's autograd recorded to compute ``t``."""
    graph = json.loads(mx.autograd.get_symbol(t.native).tojson())
    return [n["op"] for n in graph["nodes"] if n["op"] != "null"]


def _mlp() -> nn.Sequential:
    md.manual_seed(1)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def _x(n: int = 5, seed: int = 0) -> md.Tensor:
    return md.asarray(np.random.default_rng(seed).standard_normal((n, 4)).astype(np.float32))


def _jit_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, md.JitWarning)]


def test_jitted_forward_is_one_cached_op():
    net = _mlp()
    X = _x()
    fwd = md.jit(lambda X: net(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error", md.JitWarning)
        with md.autograd.record():
            out = fwd(X)
    assert _ops(out) == ["_CachedOp"]
    with md.autograd.record():
        eager = net(X)
    assert "_CachedOp" not in _ops(eager)
    np.testing.assert_allclose(out.numpy(), eager.numpy(), rtol=RTOL, atol=ATOL)


def test_training_step_compiles_the_forward_and_trains_the_same_arrays():
    net = _mlp()
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    arrays = [p.native for p in net.parameters()]
    X, y = _x(), _x(seed=1)[:, :3]
    losses = []

    @md.jit
    def step(X, y):
        with md.autograd.record():
            out = net(X)
            loss = ((out - y) ** 2).mean()
        loss.backward(retain_graph=True)  # kept to read the recorded operations below
        opt.step()
        opt.zero_grad()
        return out, loss

    with warnings.catch_warnings():
        warnings.simplefilter("error", md.JitWarning)
        for _ in range(3):
            out, loss = step(X, y)
            losses.append(loss.item())
    assert "_CachedOp" in _ops(out)  # the forward ran as MXNet's compiled graph
    assert [p.native for p in net.parameters()] == arrays
    assert losses[2] < losses[0]


def test_new_batch_size_retraces_shape_dependent_code():
    class Flatten(nn.Block):
        def forward(self, x):
            return x.reshape(x.shape[0], -1) * 2.0

    f = Flatten().hybridize()
    for n in (2, 5):
        x = md.asarray(np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3))
        with warnings.catch_warnings():
            warnings.simplefilter("error", md.JitWarning)
            out = f(x)
        assert out.shape == (n, 6)
        np.testing.assert_allclose(out.numpy(), 2 * x.numpy().reshape(n, 6))


def test_control_flow_on_values_runs_eagerly_with_one_warning():
    class Sign(nn.Block):
        def forward(self, x):
            return x * 2.0 if x.sum() > 0 else x - 1.0

    f = md.jit(Sign())
    pos = md.asarray(np.ones(3, np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [f(pos).numpy(), f(-pos).numpy(), f(pos).numpy()]
    np.testing.assert_allclose(outs[0], [2.0, 2.0, 2.0])
    np.testing.assert_allclose(outs[1], [-2.0, -2.0, -2.0])
    np.testing.assert_allclose(outs[2], [2.0, 2.0, 2.0])
    found = _jit_warnings(caught)
    assert len(found) == 1 and "reads tensor values" in found[0], found


def test_batchnorm_compiles_in_training_and_eval():
    """In training mode the running statistics and the batch counter are outputs of the
    graph, written into the same buffer tensors (int64 counter kept)."""
    md.manual_seed(0)
    bn, eager = nn.BatchNorm1d(4), nn.BatchNorm1d(4)
    tracked = bn.num_batches_tracked
    X = _x(8)
    fwd = md.jit(lambda X: bn(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error", md.JitWarning)
        for seed in range(3):
            X = _x(8, seed)
            with md.autograd.record():
                out = fwd(X)
            assert _ops(out) == ["_CachedOp"]
            np.testing.assert_allclose(out.numpy(), eager(X).numpy(), rtol=RTOL, atol=ATOL)
    assert bn.num_batches_tracked is tracked
    assert bn.num_batches_tracked.dtype == md.int64
    assert int(bn.num_batches_tracked.item()) == 3
    for name in ("running_mean", "running_var"):
        got, want = getattr(bn, name).numpy(), getattr(eager, name).numpy()
        assert not np.allclose(got, 0.0 if name == "running_mean" else 1.0)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)
    bn.eval()
    eager.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error", md.JitWarning)
        with md.autograd.record():
            out = md.jit(lambda X: bn(X))(X)
    assert _ops(out) == ["_CachedOp"]
    np.testing.assert_allclose(out.numpy(), eager(X).numpy(), rtol=RTOL, atol=ATOL)
    assert int(bn.num_batches_tracked.item()) == 3  # eval leaves the statistics


def test_cumulative_batchnorm_runs_eagerly():
    """momentum=None reads the batch count back to Python: that cannot be a graph."""
    bn = nn.BatchNorm1d(4, momentum=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        md.jit(lambda X: bn(X))(_x(8))
    found = _jit_warnings(caught)
    assert len(found) == 1 and "reads tensor values" in found[0], found
    assert int(bn.num_batches_tracked.item()) == 1  # once: the failed trace left no trace


def test_native_hybridize_compiles():
    net = _mlp()
    X = _x()
    native = net.native
    assert isinstance(native, mx.gluon.HybridBlock)
    want = native(X.native).asnumpy()
    native.hybridize()
    with md.autograd.record():
        out = native(X.native)
    assert _ops(md.asarray(out)) == ["_CachedOp"]
    np.testing.assert_allclose(out.asnumpy(), want, rtol=RTOL, atol=ATOL)
    native.hybridize(False)
    assert "forward" not in net.__dict__


def test_native_collect_params_by_multidev_name():
    net = _mlp()
    params = net.native.collect_params()
    assert list(params.keys()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert params["2.bias"] is net[2].bias.native
    assert list(net.native.collect_params("2").keys()) == ["2.weight", "2.bias"]
    assert list(net.native.collect_params(".*weight").keys()) == ["0.weight", "2.weight"]
    assert list(net.native.collect_params("weight").keys()) == []  # matched at the start


def test_training_step_without_blocks_warns_and_trains():
    w = nn.Parameter(md.ones(3))
    opt = md.optim.SGD([w], lr=0.1)

    def step():
        with md.autograd.record():
            loss = (w * w).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = md.jit(step)
        fn()
        fn()
    found = _jit_warnings(caught)
    assert len(found) == 1 and "reaches no Block" in found[0], found
    np.testing.assert_allclose(w.numpy(), [0.64] * 3, rtol=RTOL)  # w -= 0.1 * 2w, twice
