"""Elementwise functions of operands that broadcast to a zero-size result give that empty
result on every backend. MXNet's ``where`` kernel aborts the whole process on such broadcasts,
and its adapter's logaddexp and shifts used it; the array-api-tests suite draws these shapes."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md

SHAPES = [((0, 3), (3,)), ((0, 3), (1,)), ((3,), (0, 1)), ((0,), ())]


@pytest.mark.parametrize(("a", "b"), SHAPES)
def test_logaddexp_of_a_zero_size_broadcast(a, b):
    out = md.logaddexp(md.zeros(a), md.ones(b))
    assert out.shape == np.broadcast_shapes(a, b)


@pytest.mark.parametrize(("a", "b"), SHAPES)
@pytest.mark.parametrize("dtype", ["int32", "uint8"])
def test_shifts_of_a_zero_size_broadcast(a, b, dtype):
    x, y = md.zeros(a, dtype=dtype), md.ones(b, dtype=dtype)
    assert md.bitwise_left_shift(x, y).shape == np.broadcast_shapes(a, b)
    assert md.bitwise_right_shift(x, y).shape == np.broadcast_shapes(a, b)
