"""NumPy lowerings of the Array API functions beyond the core op table: the plainest NumPy,
as the conformance suite's expected values (made ``np.ndarray`` by the op table)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["LOWERINGS", "QUIET"]


#: ops whose NumPy function warns on values outside its domain (the result says it: nan, inf)
QUIET = frozenset(
    {"acos", "acosh", "asin", "atanh", "cosh", "sinh", "expm1", "log2", "log10", "reciprocal"}
    | {"nextafter"}
)


def _sort(x, axis, descending):
    if descending:
        return np.flip(np.sort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return np.sort(x, axis=axis, kind="stable")


def _argsort(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64)
    n = x.shape[axis]
    rev = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - rev, axis).astype(np.int64)


#: the Array API ops NumPy spells differently (the rest: by name on ``np``)
LOWERINGS: dict[str, Any] = {
    "all": lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims),
    "any": lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims),
    "cumulative_sum": lambda x, axis: np.cumsum(x, axis=axis, dtype=x.dtype),
    "cumulative_prod": lambda x, axis: np.cumprod(x, axis=axis, dtype=x.dtype),
    "sort": _sort,
    "argsort": _argsort,
    "searchsorted": lambda a, v, side: np.searchsorted(a, v, side=side).astype(np.int64),
    "nonzero": lambda x: tuple(i.astype(np.int64) for i in np.nonzero(x)),
    "take": lambda x, idx, axis: np.take(x, idx, axis=axis),
    "flip": lambda x, axes: np.flip(x, axes).copy(),
    "broadcast_to": lambda x, shape: np.broadcast_to(x, shape).copy(),
    "repeat": lambda x, repeats, axis: np.repeat(x, repeats, axis=axis),
    "to_dlpack": lambda x: x.__dlpack__(),
    # np.real/np.imag of a complex array are views: a tensor owns its values
    "real": lambda x: np.real(x).copy(),
    "imag": lambda x: np.imag(x).copy(),
}
