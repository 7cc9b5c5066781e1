"""``md.copysign`` on the backend named by MULTIDEV_BACKEND against NumPy: the sign bit of
both operands decides, signed zeros included (MXNet's own copysign compares with 0); -0.0 as a
fill value or a Python scalar operand keeps its sign (MXNet reads the text "-0" as +0)."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import registry

X1 = [-0.0, 0.0, -1.5, 1.5, 0.0, -0.0, 3.0, -2.0]
X2 = [2.0, -2.0, 2.0, -0.0, 0.0, -0.0, -np.inf, np.inf]


def _dtypes() -> list:
    caps = registry.current().capabilities
    return [np.float32, np.float64] if "float64" in caps else [np.float32]


@pytest.mark.parametrize("dtype", _dtypes())
def test_copysign_takes_the_sign_bit_of_zeros(dtype):
    a, b = np.array(X1, dtype), np.array(X2, dtype)
    out = np.asarray(md.copysign(md.asarray(a), md.asarray(b)).numpy())
    expected = np.copysign(a, b)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))


def test_copysign_broadcasts_a_python_scalar_and_a_row():
    a = np.array([[-0.0, 1.0], [2.0, -3.0]], np.float32)
    row = np.array([-0.0, 0.0], np.float32)
    out = np.asarray(md.copysign(md.asarray(a), md.asarray(row)).numpy())
    np.testing.assert_array_equal(np.signbit(out), np.signbit(np.copysign(a, row)))
    out = np.asarray(md.copysign(md.asarray(a), -0.0).numpy())
    np.testing.assert_array_equal(np.signbit(out), np.ones_like(a, bool))


@pytest.mark.parametrize("dtype", _dtypes())
def test_a_negative_zero_fill_keeps_its_sign(dtype):
    md_dtype = md.float32 if dtype is np.float32 else md.float64
    out = np.asarray(md.full((3,), -0.0, dtype=md_dtype).numpy())
    np.testing.assert_array_equal(np.signbit(out), [True, True, True])
    np.testing.assert_array_equal(np.signbit(np.asarray(md.full((2,), 0.0).numpy())), [False] * 2)


@pytest.mark.parametrize("dtype", _dtypes())
def test_round_and_sign_give_zeros_numpys_sign(dtype):
    """round keeps the sign of its input (-0.5 rounds to -0.0; MXNet gave +0.0); sign of
    -0.0 is +0.0 (XLA gave -0.0), as NumPy and PyTorch."""
    x = np.array([-0.5, -0.2, 0.5, 1.5, -2.5, -0.0, 0.0, -3.0, np.inf, -np.inf], dtype)
    for name in ("round", "sign"):
        out = np.asarray(getattr(md, name)(md.asarray(x)).numpy())
        expected = getattr(np, name)(x)
        np.testing.assert_array_equal(out, expected, err_msg=name)
        np.testing.assert_array_equal(np.signbit(out), np.signbit(expected), err_msg=name)
