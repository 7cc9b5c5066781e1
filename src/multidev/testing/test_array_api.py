"""Section "array_api": the Array API 2023.12 functions beyond the "ops" section, each against
NumPy itself (the standard's reference semantics) and against the NumPy reference backend
(dtype included), plus the namespace plumbing: version, namespace info, dtype queries, DLPack.
"""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md

RTOL, ATOL = 1e-5, 1e-6


def _arrays(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    p = rng.uniform(0.1, 0.9, (3, 4)).astype(np.float32)
    i = rng.integers(-5, 5, (3, 4))
    return a, p, i


def _desc_argsort(x, axis):
    rev = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(x.shape[axis] - 1 - rev, axis)


# name -> (multidev call on md tensors, the same in NumPy, inputs)
def _cases(rng):
    a, p, i = _arrays(rng)
    nz = np.where(i == 0, 1, i)
    cases = {
        "acos": (md.acos, np.arccos, (p,)),
        "acosh": (md.acosh, np.arccosh, (p + 1,)),
        "asin": (md.asin, np.arcsin, (p,)),
        "asinh": (md.asinh, np.arcsinh, (a,)),
        "atan": (md.atan, np.arctan, (a,)),
        "atanh": (md.atanh, np.arctanh, (p,)),
        "cosh": (md.cosh, np.cosh, (a,)),
        "sinh": (md.sinh, np.sinh, (a,)),
        "tan": (md.tan, np.tan, (a,)),
        "expm1": (md.expm1, np.expm1, (a,)),
        "log1p": (md.log1p, np.log1p, (p,)),
        "log2": (md.log2, np.log2, (p,)),
        "log10": (md.log10, np.log10, (p,)),
        "reciprocal": (md.reciprocal, np.reciprocal, (a,)),
        "reciprocal_int": (md.reciprocal, lambda x: 1 / x.astype(np.float32), (nz,)),
        "ceil": (md.ceil, np.ceil, (a * 3,)),
        "trunc": (md.trunc, np.trunc, (a * 3,)),
        "round": (md.round, np.round, (np.array([0.5, 1.5, 2.5, -0.5, -1.7], np.float32),)),
        "sign": (md.sign, np.sign, (a,)),
        "sign_int": (md.sign, np.sign, (i,)),
        "ceil_int": (md.ceil, np.ceil, (i,)),
        "isnan": (md.isnan, np.isnan, (np.array([1.0, np.nan, np.inf], np.float32),)),
        "isinf": (md.isinf, np.isinf, (np.array([1.0, np.nan, -np.inf], np.float32),)),
        "isfinite": (md.isfinite, np.isfinite, (np.array([1.0, np.nan, np.inf], np.float32),)),
        "isnan_int": (md.isnan, np.isnan, (i,)),
        "signbit": (md.signbit, np.signbit, (np.array([-0.0, 0.0, -2.0, 3.0], np.float32),)),
        "atan2": (md.atan2, np.arctan2, (a, p - 0.5)),
        "hypot": (md.hypot, np.hypot, (a, p)),
        "copysign": (md.copysign, np.copysign, (a, p - 0.5)),
        "logaddexp": (md.logaddexp, np.logaddexp, (a, p)),
        "bitwise_and": (md.bitwise_and, np.bitwise_and, (i, i + 3)),
        "bitwise_or": (md.bitwise_or, np.bitwise_or, (i, i + 3)),
        "bitwise_xor": (md.bitwise_xor, np.bitwise_xor, (i, i + 3)),
        "bitwise_invert": (md.bitwise_invert, np.invert, (i,)),
        "left_shift": (lambda x: md.bitwise_left_shift(x, 2), lambda x: x << 2, (np.abs(i),)),
        "right_shift": (lambda x: md.bitwise_right_shift(x, 1), lambda x: x >> 1, (i,)),
        "logical_xor": (md.logical_xor, np.logical_xor, (a > 0, p > 0.5)),
        "all": (lambda x: md.all(x > 0, axis=1), lambda x: np.all(x > 0, axis=1), (a,)),
        "any": (
            lambda x: md.any(x > 0, axis=(0, 1), keepdims=True),
            lambda x: np.any(x > 0, axis=(0, 1), keepdims=True),
            (a,),
        ),
        "std": (
            lambda x: md.std(x, axis=0, correction=1),
            lambda x: np.std(x, axis=0, ddof=1),
            (a,),
        ),
        "var": (md.var, np.var, (a,)),
        "cumulative_sum": (
            lambda x: md.cumulative_sum(x, axis=1),
            lambda x: np.cumsum(x, axis=1),
            (a,),
        ),
        "cumulative_sum_initial": (
            lambda x: md.cumulative_sum(x, axis=0, include_initial=True),
            lambda x: np.concatenate([np.zeros((1, 4), np.int64), np.cumsum(x, axis=0)]),
            (i,),
        ),
        "sort": (md.sort, np.sort, (a,)),
        "sort_descending": (
            lambda x: md.sort(x, axis=0, descending=True),
            lambda x: -np.sort(-x, axis=0),
            (i,),
        ),
        "argsort": (md.argsort, lambda x: np.argsort(x, kind="stable"), (i,)),
        "argsort_descending": (
            lambda x: md.argsort(x, axis=1, descending=True),
            lambda x: _desc_argsort(x, 1),
            (i,),
        ),
        "searchsorted": (
            lambda s, v: md.searchsorted(s, v, side="right"),
            lambda s, v: np.searchsorted(s, v, side="right"),
            (np.sort(a.ravel()), p),
        ),
        "take": (
            lambda x: md.take(x, md.asarray([2, 0, 2]), axis=1),
            lambda x: np.take(x, [2, 0, 2], axis=1),
            (a,),
        ),
        "flip": (md.flip, np.flip, (a,)),
        "flip_axis": (lambda x: md.flip(x, axis=0), lambda x: np.flip(x, 0), (a,)),
        "roll": (
            lambda x: md.roll(x, (1, -2), axis=(0, 1)),
            lambda x: np.roll(x, (1, -2), (0, 1)),
            (a,),
        ),
        "roll_flat": (lambda x: md.roll(x, 5), lambda x: np.roll(x, 5), (a,)),
        "broadcast_to": (
            lambda x: md.broadcast_to(x[0], (2, 4)),
            lambda x: np.broadcast_to(x[0], (2, 4)),
            (a,),
        ),
        "repeat": (lambda x: md.repeat(x, 2, axis=0), lambda x: np.repeat(x, 2, 0), (a,)),
        "repeat_flat": (lambda x: md.repeat(x, 3), lambda x: np.repeat(x, 3), (i,)),
        "tile": (lambda x: md.tile(x, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3)), (a,)),
        "tril": (lambda x: md.tril(x, k=1), lambda x: np.tril(x, 1), (a,)),
        "triu": (lambda x: md.triu(x, k=-1), lambda x: np.triu(x, -1), (i,)),
        "moveaxis": (
            lambda x: md.moveaxis(md.reshape(x, (3, 2, 2)), 0, -1),
            lambda x: np.moveaxis(x.reshape(3, 2, 2), 0, -1),
            (a,),
        ),
        "matrix_transpose": (md.matrix_transpose, lambda x: np.swapaxes(x, -1, -2), (a,)),
        "vecdot": (md.vecdot, lambda x, y: np.sum(x * y, axis=-1), (a, p)),
        "tensordot": (
            lambda x, y: md.tensordot(x, y, axes=([1], [1])),
            lambda x, y: np.tensordot(x, y, axes=([1], [1])),
            (a, p),
        ),
        "linspace": (
            lambda: md.linspace(-1, 2, 7),
            lambda: np.linspace(-1, 2, 7, dtype=np.float32),
            (),
        ),
        "not_equal": (md.not_equal, np.not_equal, (i, i[::-1])),
        "less_equal": (md.less_equal, np.less_equal, (i, i[::-1])),
        "greater_equal": (md.greater_equal, np.greater_equal, (i, i[::-1])),
        "floor_divide": (md.floor_divide, np.floor_divide, (i, nz)),
        "remainder": (md.remainder, np.remainder, (i, nz)),
    }
    return cases


CASES = list(_cases(np.random.default_rng(0)))


def _run_md(fn, arrays):
    return fn(*[md.asarray(x) for x in arrays])


@pytest.mark.parametrize("name", CASES)
def test_matches_numpy(name, rng):
    fn, np_fn, arrays = _cases(rng)[name]
    got = _run_md(fn, arrays)
    want = np.asarray(np_fn(*arrays))
    assert got.shape == want.shape
    assert got.device is md.default_device()
    np.testing.assert_allclose(got.numpy(), want, rtol=RTOL, atol=ATOL, equal_nan=True)


@pytest.mark.parametrize("name", CASES)
def test_matches_numpy_reference_backend(name, rng):
    fn, _, arrays = _cases(rng)[name]
    got = _run_md(fn, arrays)
    with md.use_backend("numpy"):
        want = _run_md(fn, arrays)
    assert got.dtype is want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL, equal_nan=True)


def test_tuple_results(rng):
    a, _, i = _arrays(rng)
    idx = md.nonzero(md.asarray(i))
    for got, want in zip(idx, np.nonzero(i), strict=True):
        assert got.dtype is md.int64
        np.testing.assert_array_equal(got.numpy(), want)
    rows = md.unstack(md.asarray(a), axis=1)
    assert len(rows) == 4
    np.testing.assert_array_equal(rows[2].numpy(), a[:, 2])
    b1, b2 = md.broadcast_arrays(md.asarray(a[0]), md.asarray(a[:, :1]))
    np.testing.assert_array_equal(b1.numpy(), np.broadcast_to(a[0], (3, 4)))
    np.testing.assert_array_equal(b2.numpy(), np.broadcast_to(a[:, :1], (3, 4)))
    for indexing in ("xy", "ij"):
        grids = md.meshgrid(md.arange(3), md.arange(4), indexing=indexing)
        for got, want in zip(
            grids, np.meshgrid(np.arange(3), np.arange(4), indexing=indexing), strict=True
        ):
            np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("values", [[3, 1, 3, 2, 1, 3], [[2.5, -1.0], [2.5, 0.0]], [7]])
def test_unique(values):
    host = np.asarray(values)
    x = md.asarray(host)
    want = np.unique(host, return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(md.unique_values(x).numpy(), want[0])
    counts = md.unique_counts(x)
    np.testing.assert_array_equal(counts.values.numpy(), want[0])
    np.testing.assert_array_equal(counts.counts.numpy(), want[3])
    inv = md.unique_inverse(x)
    assert inv.inverse_indices.shape == x.shape
    np.testing.assert_array_equal(inv.inverse_indices.numpy().ravel(), want[2].ravel())
    both = md.unique_all(x)
    np.testing.assert_array_equal(both.indices.numpy(), want[1])
    assert both.counts.dtype is md.int64 and both.values.device is x.device


def test_namespace():
    x = md.ones((2, 3))
    assert md.__array_api_version__ == "2023.12"
    assert x.__array_namespace__() is md
    assert x.__array_namespace__(api_version="2023.12") is md
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")
    assert x.mT.shape == (3, 2)
    info = md.__array_namespace_info__()
    assert info.default_device() is md.default_device()
    assert md.default_device() in info.devices()
    assert info.default_dtypes()["real floating"] is md.float32
    assert info.dtypes(kind="integral")["int64"] is md.int64
    assert "bool" in info.dtypes() and "float32" in info.dtypes()
    assert info.capabilities()["boolean indexing"] is True


def test_dtype_queries():
    assert md.isdtype(md.int8, "signed integer") and not md.isdtype(md.uint8, "signed integer")
    assert md.isdtype(md.float16, ("integral", "real floating"))
    assert md.isdtype(md.bool, md.bool) and not md.isdtype(md.bool, "numeric")
    assert md.result_type(md.int8, md.uint8) is md.int16
    assert md.result_type(md.ones(2, dtype=md.int32), 1.0) is md.float32
    assert md.can_cast(md.int8, md.int32) and not md.can_cast(md.float32, md.int64)
    f = md.finfo(md.float32)
    assert (f.bits, f.eps, f.max) == (
        32,
        float(np.finfo(np.float32).eps),
        float(np.finfo(np.float32).max),
    )
    assert md.finfo(md.bfloat16).bits == 16
    assert (md.iinfo(md.int8).min, md.iinfo(md.uint8).max) == (-128, 255)
    with pytest.raises(TypeError, match="iinfo"):
        md.finfo(md.int32)
    with pytest.raises(ValueError, match="kind"):
        md.isdtype(md.int8, "whole")


def test_dlpack_round_trip():
    x = md.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert x.__dlpack_device__() == (1, 0)
    y = md.from_dlpack(x)
    assert y.device is x.device and y.dtype is md.float32
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    host = np.arange(4, dtype=np.int32)
    z = md.from_dlpack(host)  # another producer: NumPy
    assert z.dtype is md.int32 and z.device is md.default_device()
    np.testing.assert_array_equal(z.numpy(), host)
    np.testing.assert_array_equal(np.from_dlpack(x), x.numpy())  # multidev as the producer
    with pytest.raises(TypeError, match="__dlpack__"):
        md.from_dlpack([1, 2])


def test_from_dlpack_of_an_unaligned_buffer_computes():
    # a float32 view 4 bytes into an allocation: no framework kernel may assume more alignment
    raw = np.zeros(4 * 15 + 4, np.uint8)[4:]
    host = raw.view(np.float32).reshape(3, 5)
    host[...] = np.arange(15, dtype=np.float32).reshape(3, 5)
    y = md.from_dlpack(host) * 2.0 + 1.0
    np.testing.assert_array_equal(y.numpy(), host * 2 + 1)


def test_errors_are_clear():
    x = md.ones((2, 3))
    with pytest.raises(ValueError, match="broadcasts to"):
        md.broadcast_to(x, (4, 3))
    with pytest.raises(TypeError, match="integer or bool"):
        md.bitwise_and(x, x)
    with pytest.raises(ValueError, match="axis="):
        md.take(x, md.asarray([0]))
    with pytest.raises(TypeError, match="integer indices"):
        md.take(x, md.asarray([0.0]), axis=0)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "uint8", "uint16", "uint32"])
def test_sums_and_products_in_a_narrow_dtype_hold_it(bk, name):
    """``md.sum(x, dtype=md.int32)`` and the like: the frameworks that accumulate narrow
    integers in 64 bits (NumPy, PyTorch, JAX, Paddle) gave a 64-bit native tensor labelled
    with the narrow dtype; the values wrap as NumPy's accumulation in that dtype."""
    dt = getattr(md, name)
    if dt not in bk.dtypes:
        pytest.skip(f"the {bk.name} backend does not hold {name}")
    a = (np.arange(1, 13) * 37).reshape(3, 4).astype(name)
    x = md.asarray(a)
    for got, want in [
        (md.sum(x, dtype=dt), np.sum(a, dtype=name)),
        (md.sum(x, axis=1, dtype=dt), np.sum(a, axis=1, dtype=name)),
        (md.prod(x, axis=0, dtype=dt), np.prod(a, axis=0, dtype=name)),
        (md.cumulative_sum(x, axis=1, dtype=dt), np.cumsum(a, axis=1, dtype=name)),
    ]:
        assert got.dtype is dt and bk.dtype_of(got._native) is dt
        np.testing.assert_array_equal(got.numpy(), want)
