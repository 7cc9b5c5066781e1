"""``argmax``/``argmin`` with ``keepdims`` give NumPy's shape and positions on the selected
backend (the core keeps the reduced axes; an adapter's op drops them)."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md

_A = np.array([[3, 7, 7, 1], [9, 0, 4, 9], [2, 2, 8, 5]], np.float32)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_keepdims_keeps_the_reduced_axes_with_length_one(name, axis, dtype):
    a = _A.astype(dtype) if dtype != "bool" else _A > 4
    out = getattr(md, name)(md.asarray(a), axis=axis, keepdims=True)
    expected = getattr(np, name)(a, axis=axis, keepdims=True)
    assert out.shape == expected.shape
    assert out.dtype is md.int64
    np.testing.assert_array_equal(out.numpy(), expected)


def test_keepdims_of_a_0d_tensor_is_0d():
    out = md.argmax(md.asarray(np.float32(2.5)), keepdims=True)
    assert out.shape == () and out.item() == 0
