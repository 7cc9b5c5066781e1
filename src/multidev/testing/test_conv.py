"""Section "conv": ``conv2d`` (stride, padding incl. "same", dilation, groups), ``conv1d``,
``conv_transpose2d`` and pooling against their NumPy definitions, ``conv2d`` against the
framework's own convolution on the same weights (the adapter's reference ``conv2d``), and
gradients against central differences."""

from __future__ import annotations

import numpy as np
import pytest
from multidev_numpy import cnn as ref

import multidev as md
from multidev.nn import functional as F

autograd = pytest.mark.requires("autograd")

CASES = [  # (stride, padding, dilation, groups)
    (1, 0, 1, 1),
    (2, 1, 1, 2),
    (1, "same", 2, 4),
    (1, 2, (2, 1), 1),
]


def _explicit(padding, dilation, k=3):
    d = (dilation, dilation) if isinstance(dilation, int) else dilation
    if padding == "same":
        return tuple((dd * (k - 1) // 2, dd * (k - 1) - dd * (k - 1) // 2) for dd in d)
    return ((padding, padding), (padding, padding))


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("stride,padding,dilation,groups", CASES)
def test_conv2d_forward(rng, stride, padding, dilation, groups):
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    got = F.conv2d(md.asarray(x), md.asarray(w), md.asarray(b), stride, padding, dilation, groups)
    want = ref.conv2d(x, w, b, _pair(stride), _explicit(padding, dilation), _pair(dilation), groups)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride,padding,dilation,groups", [c for c in CASES if c[1] != "same"])
def test_conv2d_matches_the_framework_layer(native_ops, rng, stride, padding, dilation, groups):
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    got = F.conv2d(md.asarray(x), md.asarray(w), md.asarray(b), stride, padding, dilation, groups)
    want = native_ops["conv2d"](x, w, b, _pair(stride), _pair(padding), _pair(dilation), groups)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_conv_transpose2d_forward(rng):
    x = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    got = F.conv_transpose2d(md.asarray(x), md.asarray(w), None, 2, 1, 1, 2)
    want = ref.conv_transpose2d(x, w, None, (2, 2), (1, 1), (1, 1), (1, 1), 2)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_pooling_forward(rng):
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    got = F.max_pool2d(md.asarray(x), 3, 2, 1)
    np.testing.assert_allclose(got.numpy(), ref.max_pool2d(x, (3, 3), (2, 2), ((1, 1), (1, 1))))
    got = F.avg_pool2d(md.asarray(x), 2)
    np.testing.assert_allclose(
        got.numpy(), ref.avg_pool2d(x, (2, 2), (2, 2), ((0, 0), (0, 0))), rtol=1e-6
    )


@autograd
@pytest.mark.parametrize("stride,padding,dilation,groups", CASES)
def test_conv2d_gradients(rng, stride, padding, dilation, groups):
    x0 = rng.standard_normal((2, 4, 7, 8))
    w0 = rng.standard_normal((8, 4 // groups, 3, 3))
    probe = rng.standard_normal(
        F.conv2d(md.asarray(x0), md.asarray(w0), None, stride, padding, dilation, groups).shape
    )

    def f(x, w):
        y = F.conv2d(x, w, None, stride, padding, dilation, groups)
        return (y * md.asarray(probe)).sum()

    x, w = md.nn.Parameter(md.asarray(x0)), md.nn.Parameter(md.asarray(w0))
    with md.autograd.record():
        loss = f(x, w)
    loss.backward()
    for grad, v_shape, which in ((x.grad, x0.shape, 0), (w.grad, w0.shape, 1)):
        assert grad is not None
        v = rng.standard_normal(v_shape)
        eps = 1e-6
        args_p = [x0, w0]
        args_m = [x0, w0]
        args_p[which] = args_p[which] + eps * v
        args_m[which] = args_m[which] - eps * v
        numeric = (f(*map(md.asarray, args_p)).item() - f(*map(md.asarray, args_m)).item()) / (
            2 * eps
        )
        assert float((grad.numpy() * v).sum()) == pytest.approx(numeric, rel=1e-5, abs=1e-6)
