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


# ---------------------------------------------------------------- PyTorch's other arguments

PADS = [(2, 1), (2, 1, 0, 3), (1, 2, 3, 1, 1, 0)]
NUMPY_PAD_MODES = {"circular": "wrap", "reflect": "reflect", "replicate": "edge"}


def _numpy_pad(x, pad, mode):
    pairs = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return np.pad(x, pairs, mode=NUMPY_PAD_MODES[mode])


@pytest.mark.parametrize("mode", sorted(NUMPY_PAD_MODES))
@pytest.mark.parametrize("pad", PADS, ids=["1d", "2d", "3d"])
def test_pad_modes_match_numpy_and_the_framework(mode, pad, rng, request):
    x = rng.standard_normal((2, 3, 4, 5, 6)[5 - (len(pad) // 2 + 2) :]).astype(np.float32)
    got = F.pad(md.asarray(x), pad, mode=mode).numpy()
    np.testing.assert_array_equal(got, _numpy_pad(x, pad, mode))
    ops = request.getfixturevalue("native_ops") if md.get_backend() != "numpy" else {}
    if "pad" in ops:
        np.testing.assert_array_equal(got, ops["pad"](x, pad, mode))


@autograd
def test_circular_pad_gradient_sums_the_wrapped_copies(rng):
    x = md.nn.Parameter(md.asarray(rng.standard_normal((1, 2, 4)).astype(np.float32)))
    with md.autograd.record():
        loss = F.pad(x, (3, 2), mode="circular").sum()
    loss.backward()
    # each element appears once, plus once in each wrapped copy it is in: the last 3 before,
    # the first 2 after
    i = np.arange(4)
    counts = 1 + (i >= 4 - 3) + (i < 2)
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to(counts, (1, 2, 4)))


def test_pad_mode_errors_are_pytorchs(rng):
    x = md.asarray(rng.standard_normal((2, 3, 4)).astype(np.float32))
    with pytest.raises(ValueError, match="at most the padded dimension"):
        F.pad(x, (5, 0), mode="circular")
    with pytest.raises(ValueError, match="2 pads for a 2-D or 3-D"):
        F.pad(md.asarray(np.zeros((1, 2, 3, 4, 5), np.float32)), (1, 1), mode="replicate")
    conv = md.nn.Conv2d(3, 2, 3, padding=1, padding_mode="circular")
    assert "padding_mode=circular" in repr(conv)


def _numpy_max_pool(x, k, s, p, d, ceil):
    """PyTorch's max_pool2d written in NumPy: (values, flat argmax in each input plane)."""
    n, c, h, w = x.shape
    sizes = []
    for size, kk, ss, pp, dd in zip((h, w), k, s, p, d, strict=True):
        span = size + 2 * pp - dd * (kk - 1) - 1
        out = (-(-span // ss) if ceil else span // ss) + 1
        if ceil and (out - 1) * ss >= size + pp:
            out -= 1
        sizes.append(out)
    vals = np.empty((n, c, *sizes), x.dtype)
    idx = np.empty((n, c, *sizes), np.int64)
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            rows = [i * s[0] - p[0] + a * d[0] for a in range(k[0])]
            cols = [j * s[1] - p[1] + b * d[1] for b in range(k[1])]
            taps = [(r, q) for r in rows for q in cols if 0 <= r < h and 0 <= q < w]
            window = np.stack([x[:, :, r, q] for r, q in taps], axis=-1)
            best = window.argmax(axis=-1)
            vals[:, :, i, j] = window.max(axis=-1)
            idx[:, :, i, j] = np.array([r * w + q for r, q in taps])[best]
    return vals, idx


POOLS = [  # (kernel, stride, padding, dilation, ceil_mode)
    ((3, 3), (2, 2), (1, 1), (2, 2), False),
    ((2, 3), (1, 2), (1, 1), (2, 1), True),
    ((3, 3), (2, 2), (1, 1), (1, 1), False),
]


@pytest.mark.parametrize("k,s,p,d,ceil", POOLS)
def test_max_pool2d_dilation_and_indices(k, s, p, d, ceil, rng, request):
    x = rng.standard_normal((2, 3, 9, 10)).astype(np.float32)
    want, want_idx = _numpy_max_pool(x, k, s, p, d, ceil)
    layer = md.nn.MaxPool2d(k, s, p, d, return_indices=True, ceil_mode=ceil)
    got, idx = layer(md.asarray(x))
    assert idx.dtype == md.int64
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    plain = F.max_pool2d(md.asarray(x), k, s, p, d, ceil)
    np.testing.assert_array_equal(plain.numpy(), want)
    ops = request.getfixturevalue("native_ops") if md.get_backend() != "numpy" else {}
    if "max_pool2d_indices" in ops:
        native, native_idx = ops["max_pool2d_indices"](x, k, s, p, d, ceil)
        np.testing.assert_array_equal(got.numpy(), native)
        np.testing.assert_array_equal(idx.numpy(), native_idx)


@autograd
def test_dilated_max_pool2d_gradient_goes_to_each_maximum(rng):
    x0 = rng.standard_normal((1, 2, 7, 7)).astype(np.float32)
    x = md.nn.Parameter(md.asarray(x0))
    with md.autograd.record():
        y, idx = F.max_pool2d(x, 2, 1, 0, dilation=2, return_indices=True)
        loss = y.sum()
    loss.backward()
    want = np.zeros(x0.shape, np.float32).reshape(1, 2, -1)
    for c in range(2):
        np.add.at(want[0, c], idx.numpy()[0, c].ravel(), 1.0)
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), want.reshape(x0.shape))


# ---------------------------------------------------------------- pools: the framework's own


@pytest.mark.parametrize("kind", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("k,s,p", [((3, 3), (2, 2), (1, 1)), ((2, 3), (1, 2), (0, 1))])
def test_pooling_matches_the_framework(kind, k, s, p, rng, native_ops):
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    got = getattr(F, kind)(md.asarray(x), k, s, p).numpy()
    np.testing.assert_allclose(got, native_ops[kind](x, k, s, p), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,size", [((8, 6), (4, 3)), ((9, 8), (4, 3)), ((5, 7), (1, 1))])
def test_adaptive_avg_pool2d_matches_the_framework(shape, size, rng, native_ops):
    x = rng.standard_normal((2, 3, *shape)).astype(np.float32)
    got = F.adaptive_avg_pool2d(md.asarray(x), size).numpy()
    want = native_ops["adaptive_avg_pool2d"](x, size)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
