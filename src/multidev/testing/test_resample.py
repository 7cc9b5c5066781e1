"""``F.interpolate`` and the ``nn.Upsample`` layers: PyTorch's sizes, positions and weights.

The reference below writes PyTorch's per-element formulas (its CPU kernels: source position,
then the mode's taps) as plain loops, one output element at a time, independent of the
gathers multidev runs; ``tests/test_interpolate_torch.py`` checks both against torch itself.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import multidev as md
from multidev import nn

F = nn.functional


def _weights_1d(mode, n_in, n_out, corners, scale, spatial):
    """The (n_out, n_in) matrix that resamples one axis, element by element."""
    A = np.zeros((n_out, n_in))
    f = np.float32
    if mode in ("linear", "bilinear", "trilinear") and n_in == n_out:
        scale = None
    if mode == "nearest" and spatial == 2 and n_out in (n_in, 2 * n_in):
        scale = None
    if corners:
        step = f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0)
    else:
        step = f(1.0 / scale) if scale else f(n_in) / f(n_out)
    for j in range(n_out):
        if mode == "area":
            lo, hi = j * n_in // n_out, math.ceil((j + 1) * n_in / n_out)
            A[j, lo:hi] = 1 / (hi - lo)
        elif mode == "nearest":
            A[j, min(math.floor(f(j) * step), n_in - 1)] = 1
        elif mode == "nearest-exact":
            A[j, min(math.floor((f(j) + f(0.5)) * step), n_in - 1)] = 1
        else:
            src = f(j) * step if corners else (f(j) + f(0.5)) * step - f(0.5)
            if mode == "bicubic":
                i, t = math.floor(src), float(src - math.floor(src))
                a = -0.75
                for k, d in zip(range(-1, 3), (t + 1, t, 1 - t, 2 - t), strict=True):
                    w = (
                        ((a + 2) * d - (a + 3)) * d * d + 1
                        if d <= 1
                        else (((a * d - 5 * a) * d + 8 * a) * d - 4 * a)
                    )
                    A[j, min(max(i + k, 0), n_in - 1)] += w
            else:
                src = max(float(src), 0.0)
                i, t = int(src), src - int(src)
                A[j, i] += 1 - t
                A[j, min(i + 1, n_in - 1)] += t
    return A


def _reference(x, out, mode, corners, scales):
    """``x`` (N, C, *spatial) resampled by one matrix per axis, and those matrices."""
    spatial = x.ndim - 2
    mats = [
        _weights_1d(mode, x.shape[2 + d], out[d], corners, scales[d], spatial)
        for d in range(spatial)
    ]
    y = x.astype(np.float64)
    for d, A in enumerate(mats):
        y = np.moveaxis(np.tensordot(A, np.moveaxis(y, 2 + d, 0), axes=1), 0, 2 + d)
    return y, mats


_CASES = [
    # (spatial shape, mode, size, scale_factor, align_corners)
    ((5,), "nearest", 9, None, None),
    ((4,), "nearest", None, 2.5, None),
    ((6,), "nearest-exact", 4, None, None),
    ((5,), "linear", 8, None, False),
    ((5,), "linear", None, 1.7, None),
    ((5,), "linear", 3, None, True),
    ((7,), "area", 3, None, None),
    ((3, 4), "nearest", (6, 8), None, None),
    ((3, 5), "nearest", None, (2.0, 1.5), None),
    ((4, 5), "bilinear", (7, 3), None, False),
    ((4, 5), "bilinear", None, 2, True),
    ((4, 5), "bilinear", None, (1.25, 1.0), None),
    ((5, 4), "bicubic", (8, 6), None, False),
    ((5, 4), "bicubic", (3, 7), None, True),
    ((6, 7), "area", (4, 3), None, None),
    ((6, 7), "nearest-exact", None, 0.6, None),
    ((3, 4, 2), "nearest", (5, 4, 4), None, None),
    ((3, 4, 2), "trilinear", (5, 2, 3), None, False),
    ((3, 4, 2), "trilinear", None, 1.5, True),
    ((4, 4, 6), "area", (2, 3, 4), None, None),
]


def _call(case, x):
    _, mode, size, scale, corners = case
    return F.interpolate(x, size=size, scale_factor=scale, mode=mode, align_corners=corners)


def _sizes(case):
    shape, _, size, scale, _ = case
    n = len(shape)
    if size is not None:
        return tuple(size) if isinstance(size, tuple) else (size,) * n, (None,) * n
    scales = scale if isinstance(scale, tuple) else (scale,) * n
    return tuple(math.floor(s * f) for s, f in zip(shape, scales, strict=True)), scales


@pytest.mark.parametrize("case", _CASES, ids=lambda c: f"{c[1]}-{len(c[0])}d-{c[2] or c[3]}")
def test_interpolate_matches_pytorchs_formulas(case, rng):
    x = rng.standard_normal((2, 3, *case[0])).astype(np.float32)
    out, scales = _sizes(case)
    want, _ = _reference(x, out, case[1], bool(case[4]), scales)
    got = _call(case, md.asarray(x))
    assert got.shape == want.shape and got.dtype == md.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.requires("autograd")
@pytest.mark.parametrize(
    "case", [c for c in _CASES if c[1] != "nearest-exact"], ids=lambda c: f"{c[1]}-{c[2] or c[3]}"
)
def test_interpolate_gradient_is_the_transposed_resampling(case, rng):
    x0 = rng.standard_normal((1, 2, *case[0])).astype(np.float32)
    out, scales = _sizes(case)
    g = rng.standard_normal((1, 2, *out)).astype(np.float32)
    _, mats = _reference(x0, out, case[1], bool(case[4]), scales)
    want = g.astype(np.float64)
    for d, A in enumerate(mats):
        want = np.moveaxis(np.tensordot(A.T, np.moveaxis(want, 2 + d, 0), axes=1), 0, 2 + d)
    x = md.tensor(x0, requires_grad=True)
    assert isinstance(x, nn.Parameter)
    (_call(case, x) * md.asarray(g)).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-4, atol=1e-5)


def test_nearest_keeps_integer_and_bool_dtypes_and_an_unchanged_size_copies():
    x = md.asarray(np.arange(6, dtype=np.int32).reshape(1, 1, 2, 3))
    y = F.interpolate(x, scale_factor=2)
    assert y.dtype == md.int32
    np.testing.assert_array_equal(
        y.numpy()[0, 0], np.arange(6).reshape(2, 3).repeat(2, 0).repeat(2, 1)
    )
    same = F.interpolate(x, size=(2, 3))
    assert same is not x
    np.testing.assert_array_equal(same.numpy(), x.numpy())
    m = md.asarray(np.array([[[True, False]]]))
    np.testing.assert_array_equal(F.interpolate(m, size=4).numpy(), [[[True, True, False, False]]])


def test_area_downsampling_is_adaptive_average_pooling(rng):
    x = md.asarray(rng.standard_normal((2, 3, 7, 9)).astype(np.float32))
    np.testing.assert_allclose(
        F.interpolate(x, size=(3, 4), mode="area").numpy(),
        F.adaptive_avg_pool2d(x, (3, 4)).numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_the_layers_are_interpolate(rng):
    x = md.asarray(rng.standard_normal((1, 2, 3, 4)).astype(np.float32))
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"
    np.testing.assert_array_equal(
        up(x).numpy(), F.interpolate(x, scale_factor=2.0, mode="bilinear").numpy()
    )
    assert repr(nn.Upsample(size=(5, 6))) == "Upsample(size=(5, 6), mode='nearest')"
    near = nn.UpsamplingNearest2d(scale_factor=3)
    np.testing.assert_array_equal(near(x).numpy(), F.interpolate(x, scale_factor=3).numpy())
    bil = nn.UpsamplingBilinear2d(size=(5, 7))
    want = F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True)
    np.testing.assert_array_equal(bil(x).numpy(), want.numpy())
    assert list(nn.Sequential(up, nn.Conv2d(2, 1, 3)).state_dict()) == ["1.weight", "1.bias"]


def test_compiled_interpolation_equals_eager(bk, rng):
    """Compiled where the backend compiles: the positions and weights are constants of the
    graph."""
    x = md.asarray(rng.standard_normal((2, 3, 4, 5)).astype(np.float32))

    def f(x):
        return F.interpolate(x, scale_factor=(1.5, 2.0), mode="bicubic") * 2.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = md.jit(f)(x)
    np.testing.assert_allclose(got.numpy(), f(x).numpy(), rtol=1e-5, atol=1e-5)
    found = [w for w in caught if issubclass(w.category, md.JitWarning)]
    assert len(found) == (0 if "jit" in bk.capabilities else 1), found


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, ValueError, "exactly one of size and scale_factor"),
        ({"size": 4, "scale_factor": 2}, ValueError, "exactly one of size and scale_factor"),
        ({"size": 4, "mode": "cubic"}, ValueError, "mode to be one of"),
        ({"size": 4, "mode": "bilinear"}, ValueError, "4-D input .* for mode 'bilinear'"),
        ({"size": 4, "align_corners": True}, ValueError, "align_corners can only be set"),
        ({"size": (4, 4)}, ValueError, "one value per spatial dimension"),
        ({"size": 0}, ValueError, "sizes of at least 1"),
        ({"scale_factor": 0.1}, ValueError, "at least one element"),
        ({"scale_factor": -2.0}, ValueError, "positive, finite scale factors"),
        ({"size": "4"}, TypeError, "numbers for size"),
        ({"size": 4, "mode": "linear", "antialias": True}, NotImplementedError, "antialias"),
    ],
)
def test_interpolate_refuses_what_pytorch_refuses(kwargs, error, match):
    x = md.asarray(np.ones((1, 2, 5), np.float32))
    with pytest.raises(error, match=match):
        F.interpolate(x, **kwargs)


def test_interpolating_modes_need_floating_point():
    x = md.asarray(np.ones((1, 1, 3), np.int64))
    with pytest.raises(TypeError, match=r"floating-point input for mode 'linear'.*x\.float"):
        F.interpolate(x, size=5, mode="linear")
