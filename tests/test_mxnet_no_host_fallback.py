"""MXNet's ``mxnet.numpy`` module forwards some names to NumPy on the host (its ``fallback``
list: signbit, searchsorted, ...). The MXNet op table must lower every op to MXNet's own
kernels instead; and the ops it rebuilds from them (signbit, sign, searchsorted, repeat with
a count per element, which MXNet's repeat does not take) keep NumPy's values."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import registry
from multidev.op_specs import SPECS

#: ops that only complex input reaches, which MXNet cannot hold (md.real of a real tensor is
#: answered by the core without the op)
_COMPLEX_ONLY = {"real", "imag", "conj"}


def test_no_mxnet_op_runs_numpy_on_the_host():
    if registry.current().name != "mxnet":
        pytest.skip("MXNet's fallback to NumPy only concerns the mxnet backend")
    from mxnet import np as mnp
    from mxnet.numpy import fallback

    host = {id(getattr(mnp, n)) for n in fallback.__all__ if hasattr(mnp, n)}
    ops = registry.current().ops
    found = [n for n in SPECS if n not in _COMPLEX_ONLY and id(getattr(ops, n, None)) in host]
    assert found == []


def test_signbit_and_sign_match_numpy():
    v = np.array([-0.0, 0.0, 1.5, -2.0, np.inf, -np.inf, np.nan], np.float32)
    x = md.asarray(v)
    np.testing.assert_array_equal(md.signbit(x).numpy()[:-1], np.signbit(v)[:-1])
    np.testing.assert_array_equal(md.sign(x).numpy(), np.sign(v))  # sign(NaN) is NaN
    zero_d = md.signbit(md.asarray(np.float64(-0.0)))
    assert zero_d.shape == () and zero_d.dtype == md.bool and bool(zero_d)


def test_every_dtype_the_namespace_info_lists_can_be_created():
    for name, dt in md.__array_namespace_info__().dtypes().items():
        assert md.zeros(2, dtype=dt).dtype == dt, name


def _searchsorted_cases(dtype: str, nans: bool):
    rng = np.random.default_rng(1)
    for n in (0, 1, 2, 7, 33):
        a = np.sort(rng.integers(0, 6, n).astype(dtype))
        v = rng.integers(-1, 7, 11).astype(dtype)
        if nans:
            a[-2:] = np.nan  # NaNs sort last
            v[::4] = np.nan
        yield a, v


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_searchsorted_matches_numpy(side, dtype):
    for a, v in _searchsorted_cases(dtype, nans=False):
        got = md.searchsorted(md.asarray(a), md.asarray(v), side=side)
        np.testing.assert_array_equal(got.numpy(), np.searchsorted(a, v, side=side))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_places_nans_as_numpy_does(side):
    if registry.current().name not in ("numpy", "mxnet"):
        pytest.skip("PyTorch's, TensorFlow's and Paddle's kernels place NaNs their own way")
    for a, v in _searchsorted_cases("float32", nans=True):
        got = md.searchsorted(md.asarray(a), md.asarray(v), side=side)
        np.testing.assert_array_equal(got.numpy(), np.searchsorted(a, v, side=side))


@pytest.mark.parametrize("axis", [0, 1, None])
def test_repeat_with_a_count_per_element_matches_numpy(axis):
    v = np.arange(12, dtype=np.float32).reshape(3, 4)
    counts = np.array([2, 0, 1] if axis == 0 else [1, 3, 0, 2] if axis == 1 else [1, 0] * 6)
    got = md.repeat(md.asarray(v), md.asarray(counts), axis=axis)
    np.testing.assert_array_equal(got.numpy(), np.repeat(v, counts, axis=axis))
