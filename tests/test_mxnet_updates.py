"""MXNet's optimiser path: the SGD update of small tensors grouped into few ``multi_sgd_update``
operations (a large tensor gets its own ``sgd_update``), the grouped update equal to one ``sgd_update`` per tensor, and ``zero_grad``
clearing the gradient buffers gluon holds, also after gluon reallocated them."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

mx = pytest.importorskip("mxnet")

from multidev_mxnet import updates  # noqa: E402

import multidev as md  # noqa: E402
from multidev import nn  # noqa: E402


@pytest.fixture(autouse=True)
def mxnet_backend():
    with md.use_backend("mxnet"):
        yield


def _check_groups(sizes: list[int]) -> list[list[int]]:
    groups = updates.groups(sizes)
    assert sorted(i for g in groups for i in g) == list(range(len(sizes)))
    for g in groups:
        assert len(g) <= updates.MULTI_UPDATE_MAX
        largest = max(sizes[i] for i in g)
        assert all(largest - sizes[i] <= updates.CALL_ELEMENTS for i in g)
    return groups


@pytest.mark.parametrize("width", [64, 256, 1024])
def test_an_mlps_tensors_make_few_groups(width):
    # the weights and biases of a 3-layer MLP (width x width twice, 10 x width)
    sizes = [width * width, width, width * width, width, 10 * width, 10]
    groups = _check_groups(sizes)
    large = [i for i, n in enumerate(sizes) if n > updates.CALL_ELEMENTS]
    # a tensor larger than one operation's cost is updated alone; the small ones share one
    for i in large:
        assert [i] in groups
    assert len(groups) == len(large) + 1
    assert len(groups) < len(sizes)


def test_many_tensors_respect_the_kernels_limit():
    rng = np.random.default_rng(0)
    sizes = [int(s) for s in rng.integers(1, 200_000, 400)]
    groups = _check_groups(sizes)
    assert len(groups) < len(sizes)


def _arrays(rng, shapes, dtype="float32"):
    return [mx.np.array(rng.standard_normal(s).astype(dtype)) for s in shapes]


def test_grouped_update_equals_one_sgd_update_each_and_reuses_its_plan():
    rng = np.random.default_rng(1)
    for shapes in ([(300, 300), (300,), (10, 300), (10,)], [(5, 7), (70, 70), (2,)]):
        xs = _arrays(rng, shapes)
        ys = _arrays(rng, shapes)
        for alpha in (-0.125, 0.5):  # a second call with the same arrays: the cached plan
            want = [
                x.asnumpy() + np.float32(alpha) * y.asnumpy() for x, y in zip(xs, ys, strict=True)
            ]
            out = updates.add_scaled_many_(xs, ys, alpha)
            assert out is xs
            for x, w in zip(xs, want, strict=True):
                np.testing.assert_allclose(x.asnumpy(), w, rtol=1e-6, atol=1e-7)


def test_the_update_keeps_no_array_alive():
    rng = np.random.default_rng(2)
    shapes = [(40, 40), (40,)]
    xs = _arrays(rng, shapes)
    updates.add_scaled_many_(xs, _arrays(rng, shapes), 0.5)
    ref = weakref.ref(xs[0])
    del xs
    gc.collect()
    assert ref() is None
    # new arrays (which may reuse the old ones' ids) are updated by their own sizes
    xs, ys = _arrays(rng, [(3,), (50, 50)]), _arrays(rng, [(3,), (50, 50)])
    want = [x.asnumpy() + np.float32(0.5) * y.asnumpy() for x, y in zip(xs, ys, strict=True)]
    updates.add_scaled_many_(xs, ys, 0.5)
    for x, w in zip(xs, want, strict=True):
        np.testing.assert_allclose(x.asnumpy(), w, rtol=1e-6, atol=1e-7)


def test_integer_tensors_are_updated_beside_floating_ones():
    xs = [mx.np.array([1.0, 2.0], dtype="float32"), mx.np.array([10, 20], dtype="int32")]
    ys = [mx.np.array([1.0, 1.0], dtype="float32"), mx.np.array([2, 4], dtype="int32")]
    updates.add_scaled_many_(xs, ys, 2.0)
    np.testing.assert_array_equal(xs[0].asnumpy(), [3.0, 4.0])
    np.testing.assert_array_equal(xs[1].asnumpy(), [14, 28])


def _grads(net, x):
    with md.autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    return [p.grad.numpy().copy() for p in net.parameters()]


def test_zero_grad_clears_buffers_gluon_reallocated():
    md.manual_seed(0)
    net = nn.Linear(4, 3)
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    x = md.asarray(np.ones((2, 4), np.float32))
    once = _grads(net, x)
    opt.zero_grad()
    for p in net.parameters():
        assert p.grad is None
    twice = _grads(net, x)
    for a, b in zip(once, twice, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-6)
    # gluon gives a Parameter new gradient buffers when its grad_req changes
    for p in net.parameters():
        p.native.grad_req = "write"
        p.native.grad_req = "add"
    _grads(net, x)
    opt.zero_grad()
    for p in net.parameters():
        assert p.grad is None
    again = _grads(net, x)  # accumulated onto a cleared buffer: one step's gradient
    for a, b in zip(once, again, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-6)
