"""The core's indexing planner (``multidev.indexing``), lowered with NumPy's own primitives and
compared with NumPy's indexing: every key kind, where the result axes land, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

from multidev.indexing import Gather, checked_key, gather

_X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)


def _mask_ndim(k):
    return k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else None


def _take_nd(x, idxs, shape):
    return x[tuple(np.broadcast_to(i, shape) for i in idxs)]


def _prims(mask):
    return Gather(
        constant=np.asarray,
        indices=lambda k, n: np.where(k < 0, k + n, k).astype(np.int64),
        nonzero=np.nonzero,
        take=lambda x, idx, axis: np.take(x, idx, axis=axis),
        take_nd=_take_nd,
        permute=np.transpose,
        mask=mask,
    )


KEYS = [
    (slice(None), np.array([2, -1])),
    (np.array([[0, 1], [1, 0]]),),
    (np.array([0, 1]), np.array([1, 2])),
    (np.array([0, 1]), slice(None), np.array([1, 2])),
    (0, slice(None), np.array([0, 1])),
    (slice(None), np.array([[1], [2]]), np.array([0, 3])),
    (slice(None), 1, np.array([0, 3]), slice(None, None, -2)),
    (None, np.array([1, 0]), Ellipsis, -1),
    (_X[:, 0, 0, 0] > 30,),
    (_X[:, :, 0, 0] > 20,),
    (Ellipsis, _X[0, 0, 0] > 2),
    (_X > 50,),
    (_X[:, :, :, 0] > 30, np.array([0])),
    (slice(None), _X[0, :, :, 0] > 20, np.array([1])),
    (np.array([], dtype=np.int64),),
    (np.array([0, 1], np.uint8),),
    (True,),
    (False, np.array([1])),
    (np.bool_(True), np.int64(-1)),
    (np.array(True), 0),
    ([1, 0], slice(1, 3)),
]


@pytest.mark.parametrize("mask", [None, lambda x, m, axis: x[(slice(None),) * axis + (m,)]])
@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_gather_matches_numpy(key, mask):
    got = gather(_X, key, _X.shape, _prims(mask), _mask_ndim)
    want = _X[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ((0, np.array([1]), 4), r"within shape \(2, 3, 4, 5\)\. Received: 4 for axis 2"),
        ((np.ones(3, bool), np.array([0])), r"boolean mask of shape \(2,\) at axis 0"),
        ((np.array([0, 1]), np.array([0, 1, 2])), "broadcast together"),
        ((Ellipsis, np.array([0]), Ellipsis), "at most one Ellipsis"),
    ],
)
def test_gather_refuses_bad_keys_with_index_errors(key, match):
    with pytest.raises(IndexError, match=match):
        gather(_X, key, _X.shape, _prims(None), _mask_ndim)


def test_checked_key_counts_from_the_start_and_checks_bounds():
    def indices(k, n):
        assert ((-n <= k) & (k < n)).all()
        return k % n

    key = checked_key((Ellipsis, np.array([-1, 2]), -2), _X.shape, _mask_ndim, indices)
    assert [type(k) for k in key[:2]] == [slice, slice]
    assert key[2].tolist() == [3, 2] and key[3] == 3
    np.testing.assert_array_equal(_X[key], _X[..., [-1, 2], -2])
    with pytest.raises(IndexError, match=r"Received: 5 for axis 3, whose length is 5"):
        checked_key((0, 0, 0, 5), _X.shape, _mask_ndim, indices)
    mask = _X[0] > 3
    assert checked_key((0, mask, None, True), _X.shape, _mask_ndim, indices)[1] is mask
