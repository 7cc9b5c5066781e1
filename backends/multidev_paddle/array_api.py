"""PaddlePaddle lowerings of the Array API functions beyond the core op table."""

from __future__ import annotations

from typing import Any

import paddle
from paddle.utils import dlpack as _dlpack

from multidev.contract import reduction

__all__ = ["LOWERINGS", "equal", "not_equal"]


#: dtypes Paddle has no sort kernel for, and the one each sorts in exactly
_SORTS_AS = {paddle.bool: paddle.uint8, paddle.int8: paddle.int16}


def _sortable(fn):
    """bool and int8 have no sort kernel: sort them as uint8 / int16 (exact; values back to
    x's dtype, not indices)."""

    def sort(x, axis, descending):
        if x.dtype in _SORTS_AS:
            out = fn(x.astype(_SORTS_AS[x.dtype]), axis=axis, descending=descending, stable=True)
            return out.astype(x.dtype) if fn is paddle.sort else out
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
    if isinstance(repeats, paddle.Tensor) and repeats.size == 0:
        return x.clone()  # repeats for an empty axis (repeat_interleave rejects them): empty
    if x.is_complex():
        return paddle.complex(_repeat(x.real(), repeats, axis), _repeat(x.imag(), repeats, axis))
    out = paddle.repeat_interleave(_widened(x), repeats, axis)
    return out.astype(x.dtype) if x.dtype in _WIDER else out


def _nonzero(x):
    """uint8 and int8 have no nonzero kernel: their non-zero pattern as bool, which has."""
    x = x.astype(paddle.bool) if x.dtype in (paddle.uint8, paddle.int8) else x
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


_FLOATS = (paddle.float16, paddle.bfloat16, paddle.float32, paddle.float64)
_COMPLEX = (paddle.complex64, paddle.complex128)


def equal(a, b):
    """``a == b`` exactly: Paddle's equal kernel counts floats within the dtype's epsilon of
    each other as equal (``1e-87 == 0`` in float64), so floats compare by ``<=`` and ``>=``
    (False for NaN) and complex numbers by their parts."""
    dtype = (a if isinstance(a, paddle.Tensor) else b).dtype
    if dtype in _FLOATS:
        return paddle.logical_and(a <= b, a >= b)
    if dtype in _COMPLEX:
        return paddle.logical_and(equal(_real(a), _real(b)), equal(_imag(a), _imag(b)))
    return a == b


def not_equal(a, b):
    """``a != b`` exactly (see ``equal``)."""
    return paddle.logical_not(equal(a, b))


def _real(v):
    return paddle.real(v) if isinstance(v, paddle.Tensor) else complex(v).real


def _imag(v):
    return paddle.imag(v) if isinstance(v, paddle.Tensor) else complex(v).imag


#: the Array API ops Paddle spells differently (the rest: by name on ``paddle``)
LOWERINGS: dict[str, Any] = {
    "sign": _sign,
    "all": reduction(paddle.all, paddle.clone, keepdims="keepdim", axes=list),
    "any": reduction(paddle.any, paddle.clone, keepdims="keepdim", axes=list),
    "cumulative_sum": lambda x, axis: paddle.cumsum(x, axis=axis),
    "sort": _sortable(paddle.sort),
    "argsort": _sortable(paddle.argsort),
    "searchsorted": _searchsorted,
    "nonzero": _nonzero,
    "take": _take,
    "broadcast_to": lambda x, shape: paddle.broadcast_to(x, list(shape)).clone(),
    "repeat": _repeat,
    "to_dlpack": _dlpack.to_dlpack,
    "from_dlpack": _dlpack.from_dlpack,
}
