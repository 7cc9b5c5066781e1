"""``md.linalg.vector_norm(x, axis=())``: no axis reduced, so each element is a vector of one
element and its norm is its magnitude (for ``ord=0``, whether it is non-zero), in x's shape.
The array-api-tests suite draws ``axis=()``; multidev used to raise ValueError for it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import multidev as md


@pytest.mark.parametrize("ord", [2, 1, 3.5, math.inf, -math.inf, -1, -2, 0])
@pytest.mark.parametrize("shape", [(2, 3), (4,), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norm_over_no_axes_is_the_magnitude(ord, shape, keepdims):
    v = np.array([-1.5, 0.0, 2.0, -0.25, 3.0, -4.0], np.float32)[: math.prod(shape)]
    v = v.reshape(shape)
    out = md.linalg.vector_norm(md.asarray(v), axis=(), ord=ord, keepdims=keepdims)
    want = (v != 0).astype(np.float32) if ord == 0 else np.abs(v)
    assert out.shape == v.shape
    assert out.dtype == md.float32
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
