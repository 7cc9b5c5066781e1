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


def _halves(x, y):
    """The shift ``y`` clipped to the bit width minus one, as two powers of 2 that each fit
    x's dtype (MXNet 1.9 has no shift kernel: shifts are products and floor divisions, and
    2**31 overflows int32)."""
    bits = x.dtype.itemsize * 8
    s = mnp.minimum(y, bits - 1).astype(x.dtype)
    first = mnp.floor(s.astype("float64") / 2).astype(x.dtype)  # no integer // kernel
    two = mnp.full_like(x, 2)
    return bits, mnp.power(two, first).astype(x.dtype), mnp.power(two, s - first).astype(x.dtype)


def _left_shift(x, y):
    """``x << y``: the product wraps as a shift does; shifts by the bit width or more give 0."""
    bits, p1, p2 = _halves(x, y)
    return mnp.where(y >= bits, mnp.zeros_like(x), x * p1 * p2)


def _right_shift(x, y):
    """``x >> y`` (arithmetic): two floor divisions; shifts by the bit width or more give the
    sign fill (0, or -1 for negative x; as a shift by the bit width minus one does for signed
    dtypes)."""
    from .ops import OPS  # the op table's floor division (MXNet has no integer //)

    bits, p1, p2 = _halves(x, y)
    out = OPS.floor_divide(OPS.floor_divide(x, p1), p2)
    return mnp.where(y >= bits, mnp.zeros_like(x), out) if x.dtype.kind == "u" else out


def _repeat(x, repeats, axis):
    if isinstance(repeats, mnp.ndarray) and repeats.size == 0:
        return x.copy()  # counts for an empty axis (mnp.repeat takes no empty list): empty
    return mnp.repeat(x, repeats, axis=axis)


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
    "repeat": _repeat,
    "triu": lambda x, k: x - mnp.tril(x, k - 1),
    "to_dlpack": lambda x: x.to_dlpack_for_read(),
    "from_dlpack": _from_dlpack,
}
