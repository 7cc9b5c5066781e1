"""MXNet lowerings of the Array API functions beyond the core op table (``mxnet.np``; the few
it lacks are compositions of its kernels)."""

from __future__ import annotations

import math

import mxnet as mx
from mxnet import np as mnp

__all__ = ["LOWERINGS"]


def _truth(fn):
    def reduce(x, axis, keepdims):
        if axis is not None and not axis:
            return x.copy()
        return fn(x, axis=axis, keepdims=keepdims)

    return reduce


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


class ArrayApiOps:
    acos = staticmethod(mnp.arccos)
    acosh = staticmethod(mnp.arccosh)
    asin = staticmethod(mnp.arcsin)
    asinh = staticmethod(mnp.arcsinh)
    atan = staticmethod(mnp.arctan)
    atanh = staticmethod(mnp.arctanh)
    cosh = staticmethod(mnp.cosh)
    sinh = staticmethod(mnp.sinh)
    tan = staticmethod(mnp.tan)
    expm1 = staticmethod(mnp.expm1)
    log2 = staticmethod(mnp.log2)
    log10 = staticmethod(mnp.log10)
    ceil = staticmethod(mnp.ceil)
    trunc = staticmethod(mnp.trunc)
    round = staticmethod(mnp.round)
    sign = staticmethod(_sign)
    isnan = staticmethod(mnp.isnan)
    isinf = staticmethod(mnp.isinf)
    isfinite = staticmethod(mnp.isfinite)
    signbit = staticmethod(mnp.signbit)
    atan2 = staticmethod(mnp.arctan2)
    hypot = staticmethod(mnp.hypot)
    copysign = staticmethod(mnp.copysign)
    logaddexp = staticmethod(_logaddexp)
    bitwise_and = staticmethod(mnp.bitwise_and)
    bitwise_or = staticmethod(mnp.bitwise_or)
    bitwise_xor = staticmethod(mnp.bitwise_xor)
    bitwise_left_shift = staticmethod(_left_shift)
    bitwise_right_shift = staticmethod(_right_shift)
    bitwise_invert = staticmethod(mnp.invert)
    all = staticmethod(_truth(mnp.all))
    any = staticmethod(_truth(mnp.any))
    cumulative_sum = staticmethod(lambda x, axis: mnp.cumsum(x, axis=axis, dtype=x.dtype))
    sort = staticmethod(_sort)
    argsort = staticmethod(_argsort)
    searchsorted = staticmethod(
        lambda a, v, side: mnp.searchsorted(a, v, side=side).astype("int64")
    )
    nonzero = staticmethod(lambda x: tuple(i.astype("int64") for i in mnp.nonzero(x)))
    take = staticmethod(lambda x, idx, axis: mnp.take(x, idx, axis=axis))
    flip = staticmethod(lambda x, axes: mnp.flip(x, axes))
    roll = staticmethod(lambda x, shifts, axes: mnp.roll(x, shifts, axes))
    broadcast_to = staticmethod(lambda x, shape: mnp.broadcast_to(x, shape).copy())
    repeat = staticmethod(lambda x, repeats, axis: mnp.repeat(x, repeats, axis=axis))
    tile = staticmethod(mnp.tile)
    tril = staticmethod(lambda x, k: mnp.tril(x, k))
    triu = staticmethod(lambda x, k: x - mnp.tril(x, k - 1))
    to_dlpack = staticmethod(lambda x: x.to_dlpack_for_read())
    from_dlpack = staticmethod(_from_dlpack)


#: op name -> native function, for the adapter's op_table
LOWERINGS = {k: getattr(ArrayApiOps, k) for k in vars(ArrayApiOps) if not k.startswith("_")}
