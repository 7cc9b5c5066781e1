"""PaddlePaddle lowerings of the Array API functions beyond the core op table."""

from __future__ import annotations

import paddle
from paddle.utils import dlpack as _dlpack

__all__ = ["LOWERINGS"]


def _truth(fn):
    def reduce(x, axis, keepdims):
        if axis is not None and not axis:
            return x.clone()
        return fn(x, axis=None if axis is None else list(axis), keepdim=keepdims)

    return reduce


def _sortable(fn):
    """bool has no sort kernel: sort it as uint8 (back to bool for values, not for indices)."""

    def sort(x, axis, descending):
        if x.dtype == paddle.bool:
            out = fn(x.astype(paddle.uint8), axis=axis, descending=descending, stable=True)
            return out.astype(paddle.bool) if fn is paddle.sort else out
        return fn(x, axis=axis, descending=descending, stable=True)

    return sort


#: the dtype each of Paddle's kernels without small-integer (or float16) variants runs in
_WIDER = {
    paddle.bool: paddle.int32,
    paddle.uint8: paddle.int32,
    paddle.int8: paddle.int32,
    paddle.int16: paddle.int32,
    paddle.float16: paddle.float32,
}


def _widened(x):
    return x.astype(_WIDER[x.dtype]) if x.dtype in _WIDER else x


def _searchsorted(a, v, side):
    return paddle.searchsorted(_widened(a), _widened(v), right=side == "right")


def _repeat(x, repeats, axis):
    """repeat_interleave in a dtype it has a kernel for, then back to x's (complex: its
    parts)."""
    if x.is_complex():
        return paddle.complex(_repeat(x.real(), repeats, axis), _repeat(x.imag(), repeats, axis))
    out = paddle.repeat_interleave(_widened(x), repeats, axis)
    return out.astype(x.dtype) if x.dtype in _WIDER else out


def _nonzero(x):
    return tuple(i.reshape([-1]) for i in paddle.nonzero(x, as_tuple=True))


def _take(x, idx, axis):
    small = x.dtype in _WIDER and x.dtype != paddle.bool  # index_select has bool, not uint8
    out = paddle.index_select(_widened(x) if small else x, idx.reshape([-1]), axis=axis)
    out = out.astype(x.dtype) if small else out
    return out.reshape(list(x.shape[:axis]) + list(idx.shape) + list(x.shape[axis + 1 :]))


def _sign(x):
    if x.dtype in (paddle.float16, paddle.bfloat16, paddle.float32, paddle.float64):
        return paddle.sign(x)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


class ArrayApiOps:
    acos = staticmethod(paddle.acos)
    acosh = staticmethod(paddle.acosh)
    asin = staticmethod(paddle.asin)
    asinh = staticmethod(paddle.asinh)
    atan = staticmethod(paddle.atan)
    atanh = staticmethod(paddle.atanh)
    cosh = staticmethod(paddle.cosh)
    sinh = staticmethod(paddle.sinh)
    tan = staticmethod(paddle.tan)
    expm1 = staticmethod(paddle.expm1)
    log2 = staticmethod(paddle.log2)
    log10 = staticmethod(paddle.log10)
    ceil = staticmethod(paddle.ceil)
    trunc = staticmethod(paddle.trunc)
    round = staticmethod(lambda x: paddle.round(x))
    sign = staticmethod(_sign)
    isnan = staticmethod(paddle.isnan)
    isinf = staticmethod(paddle.isinf)
    isfinite = staticmethod(paddle.isfinite)
    signbit = staticmethod(paddle.signbit)
    atan2 = staticmethod(paddle.atan2)
    hypot = staticmethod(paddle.hypot)
    copysign = staticmethod(paddle.copysign)
    logaddexp = staticmethod(paddle.logaddexp)
    bitwise_and = staticmethod(paddle.bitwise_and)
    bitwise_or = staticmethod(paddle.bitwise_or)
    bitwise_xor = staticmethod(paddle.bitwise_xor)
    bitwise_left_shift = staticmethod(paddle.bitwise_left_shift)
    bitwise_right_shift = staticmethod(paddle.bitwise_right_shift)
    bitwise_invert = staticmethod(paddle.bitwise_not)
    all = staticmethod(_truth(paddle.all))
    any = staticmethod(_truth(paddle.any))
    cumulative_sum = staticmethod(lambda x, axis: paddle.cumsum(x, axis=axis))
    sort = staticmethod(_sortable(paddle.sort))
    argsort = staticmethod(_sortable(paddle.argsort))
    searchsorted = staticmethod(_searchsorted)
    nonzero = staticmethod(_nonzero)
    take = staticmethod(_take)
    flip = staticmethod(lambda x, axes: paddle.flip(x, list(axes)))
    roll = staticmethod(lambda x, shifts, axes: paddle.roll(x, list(shifts), list(axes)))
    broadcast_to = staticmethod(lambda x, shape: paddle.broadcast_to(x, list(shape)).clone())
    repeat = staticmethod(_repeat)
    tile = staticmethod(lambda x, reps: paddle.tile(x, list(reps)))
    tril = staticmethod(lambda x, k: paddle.tril(x, k))
    triu = staticmethod(lambda x, k: paddle.triu(x, k))
    to_dlpack = staticmethod(_dlpack.to_dlpack)
    from_dlpack = staticmethod(_dlpack.from_dlpack)
    real = staticmethod(paddle.real)
    imag = staticmethod(paddle.imag)
    conj = staticmethod(paddle.conj)


#: op name -> native function, for the adapter's op_table
LOWERINGS = {k: getattr(ArrayApiOps, k) for k in vars(ArrayApiOps) if not k.startswith("_")}
