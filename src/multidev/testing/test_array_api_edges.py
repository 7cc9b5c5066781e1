"""Section "array_api" (edges): behaviours the data-apis array-api-tests suite checks and the
NumPy-comparison cases of test_array_api.py do not reach — Python scalars with ``&``/``|``,
NaN in unique_*, empty contractions, the keyword arguments the standard names."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md


def test_bitwise_operators_on_integers_and_scalars():
    x = md.asarray([1, 2, 3], dtype=md.int8)
    assert (x & 1).dtype is md.int8
    np.testing.assert_array_equal((x & 1).numpy(), [1, 0, 1])
    np.testing.assert_array_equal((6 | x).numpy(), [7, 6, 7])
    np.testing.assert_array_equal((~x).numpy(), [-2, -3, -4])
    b = md.asarray([True, False])
    np.testing.assert_array_equal((b & True).numpy(), [True, False])
    np.testing.assert_array_equal((False | b).numpy(), [True, False])
    with pytest.raises(TypeError, match=r"(bool or integer|integer or bool)"):
        md.ones(2) & md.ones(2)


def test_unique_with_nan_keeps_every_nan():
    host = np.array([1.0, np.nan, np.nan, 2.0, 1.0], np.float32)
    out = md.unique_all(md.asarray(host))
    np.testing.assert_array_equal(out.values.numpy(), [1.0, 2.0, np.nan, np.nan])
    np.testing.assert_array_equal(out.counts.numpy(), [2, 1, 1, 1])
    values = out.values.numpy()
    np.testing.assert_array_equal(values[out.inverse_indices.numpy()], host)
    inv = md.unique_inverse(md.asarray([[3, 1], [3, 2]])).inverse_indices
    np.testing.assert_array_equal(inv.numpy(), [[2, 0], [2, 1]])


def test_sign_keeps_nan():
    got = md.sign(md.asarray([np.nan, -2.0, 0.0, 5.0])).numpy()
    np.testing.assert_array_equal(got, [np.nan, -1.0, 0.0, 1.0])


def test_tensordot_of_empty_tensors():
    x = md.zeros((0, 3))
    y = md.zeros((3, 0))
    assert md.tensordot(x, y, axes=1).shape == (0, 0)
    assert md.tensordot(md.zeros((2, 0)), md.zeros((0, 4)), axes=1).shape == (2, 4)
    assert not md.tensordot(md.zeros((2, 0)), md.zeros((0, 4)), axes=1).numpy().any()


def test_standard_keyword_arguments():
    u = md.asarray([200, 100], dtype=md.uint8)
    assert md.sum(u, dtype=md.int32).dtype is md.int32
    assert int(md.sum(u, dtype=md.int32)) == 300
    assert md.prod(u, dtype=md.float32).dtype is md.float32
    assert md.vecdot(u, u).dtype is md.uint8
    assert md.concat([md.ones((2, 2)), md.ones(3)], axis=None).shape == (7,)
    assert md.floor(md.asarray([3, -2], dtype=md.int32)).dtype is md.int32
    x = md.ones(4)
    assert md.astype(x, md.int32, device=x.device).dtype is md.int32
    r = md.reshape(x, shape=(2, 2), copy=True)
    r[0, 0] = 5.0
    assert float(x[0]) == 1.0


def test_namespace_info_lists_the_standard_dtypes_only():
    names = set(md.__array_namespace_info__().dtypes())
    assert "float16" not in names and "bfloat16" not in names
    assert {"bool", "int64", "float32"} <= names


def test_python_scalar_on_the_left_keeps_the_tensor_dtype():
    for dt in (md.int64, md.int32, md.float64, md.uint8):
        x = md.ones(2, dtype=dt)
        assert (0 + x).dtype is dt and (3 - x).dtype is dt
        np.testing.assert_array_equal((3 - x).numpy(), [2, 2])


def test_slice_bounds_may_be_integer_tensors():
    x = md.arange(6)
    start, stop = md.asarray(1), md.asarray(4)
    np.testing.assert_array_equal(x[start:stop].numpy(), [1, 2, 3])


def test_sign_of_unsigned_integers():
    got = md.sign(md.asarray([0, 3], dtype=md.uint8))
    assert got.dtype is md.uint8
    np.testing.assert_array_equal(got.numpy(), [0, 1])


def test_clip_with_tensor_bounds_and_take_with_negative_indices():
    x = md.asarray([1, 5, 9], dtype=md.int32)
    got = md.clip(x, min=md.asarray([2, 2, 2], dtype=md.int32), max=md.asarray(6, dtype=md.int32))
    assert got.dtype is md.int32
    np.testing.assert_array_equal(got.numpy(), [2, 5, 6])
    np.testing.assert_array_equal(md.take(x, md.asarray([0, -1])).numpy(), [1, 9])


def test_expand_dims_refuses_an_axis_out_of_range():
    x = md.ones(3)
    assert md.expand_dims(x, axis=-2).shape == (1, 3)
    with pytest.raises(IndexError, match="axis"):
        md.expand_dims(x, axis=3)
