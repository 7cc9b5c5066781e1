"""MXNet lowerings of the Array API functions beyond the core op table (``mxnet.np``; the few
it lacks are compositions of its kernels)."""

from __future__ import annotations

import math
from typing import Any

import mxnet as mx
from mxnet import np as mnp

from multidev.contract import reduction

__all__ = ["LOWERINGS"]


def _sort(x, axis, descending):
    if x.dtype == bool:
        return _sort(x.astype("uint8"), axis, descending).astype(bool)
    if descending:
        return mnp.flip(mnp.sort(mnp.flip(x, axis), axis=axis), axis)
    return mnp.sort(x, axis=axis)


def _argsort(x, axis, descending):
    if x.dtype == bool:
        x = x.astype("uint8")
    if not descending:
        return mnp.argsort(x, axis=axis).astype("int64")
    rev = mnp.argsort(mnp.flip(x, axis), axis=axis).astype("int64")
    return mnp.flip(x.shape[axis] - 1 - rev, axis)


def _logaddexp(a, b):
    m = mnp.maximum(a, b)
    out = m + mnp.log1p(mnp.exp(-mnp.abs(a - b)))
    return mnp.where(a == b, a + math.log(2.0), out)


def _left_shift(x, y):
    return x * mnp.power(mnp.full_like(x, 2), y).astype(x.dtype)


def _right_shift(x, y):
    from .ops import OPS  # the op table's floor division (MXNet has no integer //)

    return OPS.floor_divide(x, mnp.power(mnp.full_like(x, 2), y).astype(x.dtype))


def _sign(x):
    if x.dtype.kind == "f":
        return mnp.sign(x)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def _from_dlpack(obj):
    return mx.nd.from_dlpack(obj.__dlpack__()).as_np_ndarray()


#: the Array API ops MXNet spells differently (the rest: by name on ``mxnet.np``)
LOWERINGS: dict[str, Any] = {
    "sign": _sign,
    "logaddexp": _logaddexp,
    "bitwise_left_shift": _left_shift,
    "bitwise_right_shift": _right_shift,
    "all": reduction(mnp.all, mnp.copy),
    "any": reduction(mnp.any, mnp.copy),
    "cumulative_sum": lambda x, axis: mnp.cumsum(x, axis=axis, dtype=x.dtype),
    "sort": _sort,
    "argsort": _argsort,
    "searchsorted": lambda a, v, side: mnp.searchsorted(a, v, side=side).astype("int64"),
    "nonzero": lambda x: tuple(i.astype("int64") for i in mnp.nonzero(x)),
    "take": lambda x, idx, axis: mnp.take(x, idx, axis=axis),
    "broadcast_to": lambda x, shape: mnp.broadcast_to(x, shape).copy(),
    "repeat": lambda x, repeats, axis: mnp.repeat(x, repeats, axis=axis),
    "triu": lambda x, k: x - mnp.tril(x, k - 1),
    "to_dlpack": lambda x: x.to_dlpack_for_read(),
    "from_dlpack": _from_dlpack,
}
