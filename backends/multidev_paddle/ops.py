"""The Paddle op table: NumPy semantics on Paddle tensors.

Paddle lacks many CPU kernels (float16 and bfloat16 arithmetic, small integers, bool). An op
that meets a dtype without a kernel on a place computes in a wider dtype (float32, int32) and
casts back, which gives NumPy's results, integer wrap-around included; it learns this on the
first failure, so later calls pay one dictionary lookup.
"""

from __future__ import annotations

import math
import operator
from functools import partial
from typing import Any

import paddle
import paddle.nn.functional as F
from paddle.base.framework import EagerParamBase

from multidev import dtypes as _dt
from multidev.contract import (
    NoKernel,
    as_tensors,
    clip_bounds,
    divisor_signed,
    nan_first,
    native_astype,
    op_table,
    reduction,
    widening,
)
from multidev.indexing import (
    bool_mask_ndim,
    check_index_range,
    checked_key,
    key_items,
    new_axes_first,
)

from . import array_api, cnn, losses, sequence_ops
from .dtypes import ALTERNATIVES, NATIVE, dtype_name, md_dtype

__all__ = ["FLOATS", "OPS", "native_key"]

_Tensor = paddle.Tensor
_F32, _INT32, _INT64 = paddle.float32, paddle.int32, paddle.int64
_INF = math.inf
FLOATS = frozenset({_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64})
_INDEX_DTYPES = frozenset({_dt.int64, _dt.int32, _dt.bool})
_PLAIN_KEYS = (int, slice)
_INDEX_ARRAYS = (paddle.Tensor, EagerParamBase, paddle.pir.Value)
_mask_ndim = bool_mask_ndim(_INDEX_ARRAYS, paddle.bool)

#: the dtype an op computes in where Paddle has no kernel for the tensor's own dtype
_WIDER = {
    _dt.float16: _F32,
    _dt.bfloat16: _F32,
    _dt.uint8: _INT32,
    _dt.int8: _INT32,
    _dt.int16: _INT32,
    _dt.bool: _INT32,
}
#: the dtypes no op widens: ``_wide``'s ops on them are the framework's own
_PLAIN_DTYPES = frozenset({_dt.float32, _dt.float64})
#: the same for ops that NumPy and PyTorch do not define on bool (``-``, ``//``, ``%``, ``**``)
_NUMERIC_WIDER = {k: v for k, v in _WIDER.items() if k is not _dt.bool}
_NUMERIC = frozenset({"subtract", "floor_divide", "remainder", "pow"})


#: Paddle's "no kernel" error; operands under paddle.jit.to_static are static values, not
#: tensors (their kernels are chosen when the program runs), and are never widened
_NO_KERNEL = NoKernel(
    raised=lambda e: isinstance(e, RuntimeError) and "The kernel with key" in str(e),
    dtype=lambda t: md_dtype(t.dtype),
    is_tensor=lambda a: isinstance(a, _Tensor),
    place=lambda t: t.place,
    refuse=lambda t, name: TypeError(
        f"Expected a tensor dtype that Paddle's {name} supports. Received: "
        f"{dtype_name(t.dtype)} on {t.place}. Cast it first, e.g. with md.astype(x, md.float32)."
    ),
)


def _wide(fn, name: str, *, cast: int | None = None):
    """``fn`` (Paddle's, or Python's operator) that computes in a wider dtype where Paddle has
    no kernel for the input's dtype (``contract.widening``): arguments of the first tensor's
    dtype among the first ``cast`` are widened; results of bool and index ops stay as they
    are, the others go back to the input's dtype."""
    wider = _NUMERIC_WIDER if name in _NUMERIC else _WIDER
    op = widening(fn, name, _NO_KERNEL, wider, count=cast)
    # Paddle has every kernel for float32 and float64: the core's operators call fn directly
    op.plain, op.plain_dtypes = fn, _PLAIN_DTYPES  # type: ignore[attr-defined]
    return op


def _full0(like, value):
    """A 0-d tensor holding ``value`` with ``like``'s dtype and place."""
    return paddle.full([], value, dtype=like.dtype, device=like.place)


def _tensor_operands(fn):
    """``fn(a, b)`` for Paddle functions that take tensors only (``contract.as_tensors``)."""
    return lambda a, b: fn(*as_tensors(a, b, _full0))


_ZERO_DIVISOR = (
    "Expected non-zero divisors for integer // and %. Received: a zero divisor. "
    "Divide in floating point (x / y) or mask the zeros first."
)


def _integer_division(fn, name: str):
    """``fn`` (// or %) on tensors (Paddle's // with a Python scalar turns a 0-d tensor into
    shape (1,)), computed wider where Paddle lacks a kernel. Paddle reports an integer division
    by zero as an InvalidArgument error, except where it broadcasts a 0-d dividend: that kernel
    dies of SIGFPE, so a 0-d integer dividend has its divisors checked first."""

    def op(a, b):
        if (
            isinstance(a, _Tensor)
            and a.ndim == 0
            and isinstance(b, _Tensor)
            and b.ndim > 0
            and not (b.is_floating_point() or b.is_complex())
            and bool((b == 0).any())
        ):
            raise ZeroDivisionError(_ZERO_DIVISOR)
        try:
            return fn(a, b)
        except Exception as e:
            if "division by zero" not in str(e):
                raise
            raise ZeroDivisionError(_ZERO_DIVISOR) from None

    return _wide(_tensor_operands(op), name)


def _complex_scalar(fn, name: str):
    """``_wide(fn)`` (``/``, ``**``) with a Python complex ``b`` made a 0-d tensor first:
    Paddle's operators turn a 0-d tensor into shape (1,) with one. Two tensors (the core's
    operators) go to ``fn`` itself."""
    op = _wide(lambda a, b: fn(a, _full0(a, b) if type(b) is complex else b), name)
    op.plain = fn
    return op


def _take_along_axis(x, indices, axis):
    """Paddle's take_along_axis has no complex kernels: complex tensors' real and imaginary
    parts are taken apart."""
    if x.is_complex():
        return paddle.complex(
            paddle.take_along_axis(paddle.real(x), indices, axis),
            paddle.take_along_axis(paddle.imag(x), indices, axis),
        )
    return paddle.take_along_axis(x, indices, axis)


def _clip(x, lo, hi):
    """NumPy's clip (``contract.clip_bounds``): integer tensors keep their dtype."""
    dt = md_dtype(x.dtype)
    return paddle.clip(x, *clip_bounds(lo, hi, None if dt is None else dt.numpy))


def _extremum(fn, bound):
    """``maximum`` or ``minimum`` (``fn``); with a Python scalar, a clip of the tensor at it
    (``bound(x, scalar)``)."""

    def op(a, b):
        if isinstance(a, _Tensor) and isinstance(b, _Tensor):
            return fn(a, b)
        return bound(a, b) if isinstance(a, _Tensor) else bound(b, a)

    return op


def _relu(x):
    """max(x, 0) keeping NaN (Paddle's relu turns NaN into 0)."""
    if md_dtype(x.dtype) in FLOATS:
        return F.hardtanh(x, 0.0, _INF)
    return _clip(x, 0, None)


#: Paddle's reductions as (x, axis, keepdims) ops (an empty axis list is 'every axis' to Paddle)
_reduction = partial(reduction, copy=paddle.clone, keepdims="keepdim", axes=list)


def _log_softmax(x, axis):
    """Paddle's log_softmax clips at -64 (log-probabilities below it come back as -64)."""
    shifted = x - paddle.max(x, axis=axis, keepdim=True).detach()
    return shifted - paddle.log(paddle.sum(paddle.exp(shifted), axis=axis, keepdim=True))


def _softmax(x, axis):
    """Paddle's softmax with exact zeros below exp(-63). Its kernel clips the shifted logits
    at -64 (as its log_softmax does), so a masked logit (d2l sets them to -1e6) came out as
    exp(-64) / sum = 1e-28 where exp underflows to 0; every value the clip touched is below
    exp(-64), and the true ones there are as small, so they become 0."""
    # thresholded_relu: x where x > threshold, else 0, in one kernel (softmax is positive)
    return F.thresholded_relu(F.softmax(x, axis=axis), threshold=_SOFTMAX_FLOOR)


_SOFTMAX_FLOOR = math.exp(-63.0)


def _index(k):
    if isinstance(k, _Tensor) and md_dtype(k.dtype) not in _INDEX_DTYPES:
        return k.astype(_INT64)  # NumPy reads small-integer arrays as positions; Paddle refuses
    return k


def _bounded(k: Any, size: int) -> Any:
    """An integer index array checked against the axis length: Paddle's kernels read and
    write outside the tensor for an out-of-range entry (garbage values, a corrupted heap).
    Inside a to_static trace the values are not known."""
    if isinstance(k, paddle.pir.Value) or not k.size:
        return k
    lo, hi = (int(v) for v in paddle.stack([k.min(), k.max()]).numpy())
    check_index_range(lo, hi, size)
    return k  # Paddle counts negative entries from the end itself


def native_key(x: Any, key: Any) -> Any:
    """The key of ``x[key]`` with index arrays Paddle reads as masks turned into int64
    positions, and integer index arrays bounds-checked."""
    if type(key) in _PLAIN_KEYS:
        return key
    key = tuple(_index(k) for k in key) if type(key) is tuple else _index(key)
    if any(isinstance(k, _INDEX_ARRAYS) and k.dtype != paddle.bool for k in key_items(key)):
        return checked_key(key, x.shape, _mask_ndim, _bounded)
    return key


def _getitem(x: Any, key: Any) -> Any:
    key = native_key(x, key)
    plan = new_axes_first(key, x.shape, _mask_ndim, _INDEX_ARRAYS)
    if plan is not None:  # Paddle reads garbage for a new axis beside an index array
        x, key = paddle.reshape(x, plan[0]), plan[1]
    return x[key]


#: where(cond, a, b) with the values first: their dtype is the one that widens
_where_values = _wide(lambda a, b, cond: paddle.where(cond, a, b), "where", cast=2)


def _linear(x, weight, bias):
    """x @ weight.T + bias with PyTorch's (out_features, in_features) weight."""
    out = paddle.matmul(x, weight, transpose_y=True)
    return out if bias is None else out + bias


OPS = op_table(
    paddle,
    # lowerings: array_api.py (the Array API beyond the core table), sequence ops, losses, cnn
    modules=[array_api, sequence_ops, losses, cnn],
    wrap=_wide,
    reduce=_reduction,  # sum, mean, prod, max, min (through _wide: computed wider where needed)
    floor_divide=_integer_division(operator.floordiv, "floor_divide"),
    divide=_complex_scalar(operator.truediv, "divide"),
    pow=_complex_scalar(operator.pow, "pow"),
    take_along_axis=_wide(_take_along_axis, "take_along_axis"),
    # Paddle's einsum has float32, float64 and complex kernels only: half precision computes
    # in float32; integers are refused (_NO_KERNEL.refuse), as float64 would not be exact
    einsum=widening(paddle.einsum, "einsum", _NO_KERNEL, {_dt.float16: _F32, _dt.bfloat16: _F32}),
    remainder=divisor_signed(
        _integer_division(operator.mod, "remainder"),
        lambda r, b: paddle.copysign(r, paddle.full_like(r, b) if type(b) in (int, float) else b),
        paddle.is_floating_point,
    ),
    maximum=_wide(_extremum(paddle.maximum, lambda x, s: _clip(x, s, None)), "maximum"),
    minimum=_wide(_extremum(paddle.minimum, lambda x, s: _clip(x, None, s)), "minimum"),
    # exact float comparison (Paddle's own == counts values within epsilon as equal)
    equal=_wide(array_api.equal, "equal"),
    not_equal=_wide(array_api.not_equal, "not_equal"),
    logical_and=_tensor_operands(paddle.logical_and),
    logical_or=_tensor_operands(paddle.logical_or),
    relu=_wide(_relu, "relu"),
    logical_not=paddle.logical_not,
    permute_dims=lambda x, axes: paddle.transpose(x, list(axes)),
    where=lambda cond, a, b: _where_values(a, b, cond),
    clip=_wide(_clip, "clip"),
    softmax=_wide(_softmax, "softmax"),
    log_softmax=_wide(_log_softmax, "log_softmax"),
    getitem=_getitem,
    astype=native_astype("paddle", NATIVE, ALTERNATIVES),
    linear=_wide(_linear, "linear"),
)
# argmax/argmin as NumPy: the first NaN wins (Paddle skips NaN)
nan_first(OPS, lambda x: md_dtype(x.dtype) in FLOATS, ask=True)
