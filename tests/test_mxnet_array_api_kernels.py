"""Kernel gaps of MXNet 1.9 that the adapter fills, checked on every backend against NumPy:
a stable argsort (MXNet's reorders ties past 16 elements) with NaNs ordered as PyTorch
orders them, sort with NaNs, flip/roll of bool tensors, writes into 0-d bool tensors."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md


def _stable(v: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(v, axis=axis, kind="stable")
    flipped = np.argsort(np.flip(v, axis), axis=axis, kind="stable")
    return v.shape[axis] - 1 - np.flip(flipped, axis)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "uint8", "bool"])
@pytest.mark.parametrize(("shape", "axis"), [((50,), -1), ((7, 33), 0), ((3, 5, 40), 1)])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_is_stable_with_many_ties(dtype, shape, axis, descending):
    if not hasattr(md, dtype):
        pytest.skip(f"no {dtype}")
    v = np.random.default_rng(0).integers(0, 4, shape).astype(dtype)
    if v.dtype.kind == "f":
        v[v == 3] = np.nan
    got = md.argsort(md.asarray(v), axis=axis, descending=descending).numpy()
    np.testing.assert_array_equal(got, _stable(v, axis, descending))


@pytest.mark.parametrize("descending", [False, True])
def test_sort_orders_nans_last_ascending(descending):
    v = np.array([1, np.nan, 0, 1, np.nan, 0, 2, -np.inf, np.inf] * 3, np.float32)
    got = md.sort(md.asarray(v), descending=descending).numpy()
    want = np.sort(v) if not descending else np.flip(np.sort(v))
    np.testing.assert_array_equal(got, want)


def test_unique_all_gives_first_occurrences():
    out = md.unique_all(md.asarray([5] * 20 + [1] * 20))
    np.testing.assert_array_equal(out.values.numpy(), [1, 5])
    np.testing.assert_array_equal(out.indices.numpy(), [20, 0])


def test_flip_and_roll_of_bool():
    v = np.arange(12).reshape(3, 4) % 3 == 0
    x = md.asarray(v)
    np.testing.assert_array_equal(md.flip(x, axis=1).numpy(), np.flip(v, 1))
    np.testing.assert_array_equal(md.flip(x).numpy(), np.flip(v))
    np.testing.assert_array_equal(md.roll(x, 1, axis=0).numpy(), np.roll(v, 1, 0))


def test_writes_into_a_0d_bool_tensor():
    x = md.asarray(False)
    x[()] = md.asarray(True)
    assert x.item() is True
    y = md.asarray(False)
    y |= True
    y &= md.asarray(True)
    y ^= False
    assert y.item() is True and y.dtype is md.bool
