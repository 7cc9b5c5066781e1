"""The Array API 2024.12 additions on the backend named by MULTIDEV_BACKEND, against NumPy's
results: ``diff``, ``nextafter``, ``count_nonzero``, ``cumulative_prod``, ``take_along_axis``,
Python scalars on either side of the binary functions and in ``where``/``result_type``, exact
float equality and 0-d index tensors of mixed integer dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import registry

RNG = np.random.default_rng(2024)


def _np(t: md.Tensor) -> np.ndarray:
    return np.asarray(t.numpy())


def _float_dtypes() -> list:
    caps = registry.current().capabilities
    return [md.float32, md.float64] if "float64" in caps else [md.float32]


@pytest.mark.parametrize("name", ["nextafter", "cumulative_prod", "take_along_axis"])
def test_each_adapter_lowers_the_new_ops_natively(name):
    # in the adapter's own op table: not composed on the host
    assert callable(getattr(registry.current().ops, name, None))


@pytest.mark.parametrize(
    ("axis", "n", "pre", "app"),
    [(-1, 1, False, False), (0, 2, False, False), (1, 1, True, True), (-1, 3, True, False)],
)
def test_diff_matches_numpy(axis, n, pre, app):
    a = RNG.standard_normal((3, 5)).astype(np.float32)
    shape = list(a.shape)
    shape[axis] = 2
    p = RNG.standard_normal(shape).astype(np.float32) if pre else None
    q = RNG.standard_normal(shape).astype(np.float32) if app else None
    kw = {}
    if p is not None:
        kw["prepend"] = p
    if q is not None:
        kw["append"] = q
    got = md.diff(
        md.asarray(a),
        axis=axis,
        n=n,
        **{k: md.asarray(v) for k, v in kw.items()},
    )
    assert got.dtype is md.float32
    np.testing.assert_allclose(_np(got), np.diff(a, n=n, axis=axis, **kw), rtol=1e-5, atol=1e-5)


def test_diff_of_integers_and_bools():
    a = np.array([1, 4, 9, 16, 25], dtype=np.int32)
    got = md.diff(md.asarray(a), n=2)
    assert got.dtype is md.int32 and _np(got).tolist() == np.diff(a, n=2).tolist()
    b = np.array([True, True, False, True])
    got = md.diff(md.asarray(b))
    assert got.dtype is md.bool and _np(got).tolist() == np.diff(b).tolist()


def test_diff_refuses_0d_and_negative_n():
    with pytest.raises(ValueError, match="at least one dimension"):
        md.diff(md.asarray(1.0))
    with pytest.raises(ValueError, match="non-negative int n"):
        md.diff(md.asarray([1.0, 2.0]), n=-1)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_cumulative_prod_matches_numpy(dtype):
    a = RNG.integers(-3, 4, size=(3, 4)).astype(dtype)
    x = md.asarray(a)
    got = md.cumulative_prod(x, axis=1)
    want_dtype = md.float32 if dtype == "float32" else md.int64
    assert got.dtype is want_dtype
    np.testing.assert_allclose(_np(got), np.cumprod(a, axis=1))
    got = md.cumulative_prod(x, axis=0, include_initial=True)
    assert got.shape == (4, 4)
    np.testing.assert_allclose(_np(got)[0], np.ones(4))
    np.testing.assert_allclose(_np(got)[1:], np.cumprod(a, axis=0))


def test_cumulative_prod_long_axis_and_dtype():
    # a length that is no power of two, so every step of a scan-based lowering is exercised
    a = RNG.uniform(0.5, 1.5, size=(2, 37)).astype(np.float32)
    got = md.cumulative_prod(md.asarray(a), axis=-1, dtype=_float_dtypes()[-1])
    assert got.dtype is _float_dtypes()[-1]
    np.testing.assert_allclose(_np(got), np.cumprod(a.astype(np.float64), axis=-1), rtol=1e-5)
    with pytest.raises(ValueError, match="axis="):
        md.cumulative_prod(md.asarray(a))


def test_count_nonzero_matches_numpy():
    a = RNG.integers(0, 3, size=(2, 3, 4)).astype(np.float32)
    x = md.asarray(a)
    assert _np(md.count_nonzero(x)).item() == np.count_nonzero(a)
    got = md.count_nonzero(x, axis=(0, 2), keepdims=True)
    assert got.dtype is md.int64 and got.shape == (1, 3, 1)
    assert _np(got).ravel().tolist() == np.count_nonzero(a, axis=(0, 2)).tolist()
    b = md.asarray(np.array([[True, False], [True, True]]))
    assert _np(md.count_nonzero(b, axis=1)).tolist() == [1, 2]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tiny_floats_are_not_equal_to_zero(dtype):
    # Paddle's equal kernel counted values within epsilon of each other as equal
    if getattr(md, dtype) not in _float_dtypes():
        pytest.skip(f"{registry.current().name} has no {dtype}")
    tiny = 1e-30 if dtype == "float32" else 1e-87
    x = md.asarray(np.array([tiny, 0.0, 1.0, np.nan], dtype=dtype))
    assert _np(x == 0).tolist() == [False, True, False, False]
    assert _np(x != 0).tolist() == [True, False, True, True]
    assert _np(md.equal(x, x)).tolist() == [True, True, True, False]
    assert _np(md.count_nonzero(x)).item() == 3


def test_take_along_axis_matches_numpy():
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    idx = np.array([[3, -1], [0, 2], [-4, 1]])
    got = md.take_along_axis(md.asarray(a), md.asarray(idx), axis=1)
    np.testing.assert_array_equal(_np(got), np.take_along_axis(a, idx % 4, axis=1))
    # the default axis is -1; the other axes broadcast
    row = np.array([[2, 0, 1]])
    got = md.take_along_axis(md.asarray(a[:, :3]), md.asarray(row))
    np.testing.assert_array_equal(_np(got), np.take_along_axis(a[:, :3], row, axis=-1))
    col = np.array([[1], [0]])
    got = md.take_along_axis(md.asarray(a), md.asarray(col), axis=0)
    assert got.shape == (2, 4)
    np.testing.assert_array_equal(_np(got), np.take_along_axis(a, col, axis=0))
    order = md.argsort(md.asarray(a), axis=0)
    np.testing.assert_array_equal(
        _np(md.take_along_axis(md.asarray(a), order, axis=0)), np.sort(a, axis=0)
    )


def test_take_along_axis_refuses_bad_indices():
    x = md.asarray(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="rank of x"):
        md.take_along_axis(x, md.asarray([0, 1]), axis=1)
    with pytest.raises(TypeError, match="integer indices"):
        md.take_along_axis(x, md.asarray([[0.0]]), axis=1)
    with pytest.raises(ValueError, match="broadcast"):
        md.take_along_axis(x, md.asarray(np.zeros((3, 1), np.int64)), axis=1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nextafter_matches_numpy(dtype):
    if getattr(md, dtype) not in _float_dtypes():
        pytest.skip(f"{registry.current().name} has no {dtype}")
    info = np.finfo(dtype)
    edges = [info.max, info.smallest_normal, info.smallest_subnormal, -1e-3, 0.1]
    a = np.array([1.0, 1.0, 0.0, -0.0, 0.0, np.inf, -np.inf, np.nan, 2.0, 2.0, 3.5, *edges], dtype)
    b = np.array(
        [2.0, 0.0, -1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 3.0, 3.5, np.inf, 0, 0, -1, -5], dtype
    )
    got = md.nextafter(md.asarray(a), md.asarray(b))
    assert got.dtype is getattr(md, dtype)
    with np.errstate(over="ignore"):  # max toward inf is inf
        np.testing.assert_array_equal(_np(got), np.nextafter(a, b))
    signs = np.signbit(_np(md.nextafter(md.asarray(a[2:5]), md.asarray(b[2:5]))))
    assert signs.tolist() == np.signbit(np.nextafter(a[2:5], b[2:5])).tolist()


_BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}


@pytest.mark.parametrize("name", sorted(_BINARY))
@pytest.mark.parametrize("scalar_first", [False, True], ids=["x_op_2", "2_op_x"])
def test_python_int_either_side_keeps_the_tensor_dtype(name, scalar_first):
    a = np.array([1, 5, -7, 9], dtype=np.int32)
    x = md.asarray(a)
    fn = getattr(md, name)
    got = fn(3, x) if scalar_first else fn(x, 3)
    cmp = name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
    assert got.dtype is (md.bool if cmp else md.int32)
    three = np.int32(3)
    want = _BINARY[name](three, a) if scalar_first else _BINARY[name](a, three)
    assert _np(got).tolist() == want.tolist()


@pytest.mark.parametrize("name", ["atan2", "copysign", "hypot", "logaddexp", "nextafter", "divide"])
@pytest.mark.parametrize("scalar_first", [False, True], ids=["x_op_2", "2_op_x"])
def test_python_float_either_side_of_float_functions(name, scalar_first):
    a = np.array([0.5, -2.0, 3.0], dtype=np.float32)
    x = md.asarray(a)
    fn = getattr(md, name)
    got = fn(1.5, x) if scalar_first else fn(x, 1.5)
    assert got.dtype is md.float32
    s = np.float32(1.5)
    want = getattr(np, name.replace("atan2", "arctan2"))(*((s, a) if scalar_first else (a, s)))
    np.testing.assert_allclose(_np(got), want, rtol=1e-6)


def test_where_and_result_type_with_scalars():
    cond = md.asarray([True, False, True])
    x = md.asarray(np.array([1, 2, 3], dtype=np.int32))
    for out in (md.where(cond, x, 0), md.where(cond, 7, x)):
        assert out.dtype is md.int32
    assert _np(md.where(cond, 7, x)).tolist() == [7, 2, 7]
    assert md.where(cond, x, 0.5).dtype is md.float32
    assert md.result_type(md.int8, 1) is md.int8
    assert md.result_type(md.int8, 1.0) is md.float32
    if "complex" in registry.current().capabilities:
        assert md.result_type(md.float32, 1j) is md.complex64
        got = md.add(1j, md.asarray([1.0]))
        assert got.dtype is md.complex64 and _np(got).tolist() == [1 + 1j]


def test_mixed_integer_dtypes_of_0d_indices():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    x = md.asarray(a)
    i, j = md.asarray(2), md.asarray(np.int32(3))
    assert _np(x[i, j]).item() == a[2, 3]
    assert _np(x[0, md.asarray(np.array([1, 4], np.int32))]).tolist() == [1.0, 4.0]


def test_remainder_zero_takes_the_sign_of_the_divisor():
    # torch's kernel kept the sign of x1 (-0.0 % 2 was -0.0)
    a = np.array([-0.0, 0.0, 4.0, -4.0, 5.5], np.float32)
    b = np.array([2.0, -2.0, -2.0, 2.0, 2.0], np.float32)
    got = md.remainder(md.asarray(a), md.asarray(b))
    np.testing.assert_array_equal(_np(got), np.remainder(a, b))
    assert np.signbit(_np(got)).tolist() == np.signbit(np.remainder(a, b)).tolist()
    x = md.asarray(a)
    x %= md.asarray(b)
    assert np.signbit(_np(x)).tolist() == np.signbit(np.remainder(a, b)).tolist()
