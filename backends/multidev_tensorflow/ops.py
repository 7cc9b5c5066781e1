"""The TensorFlow op table: NumPy/PyTorch semantics on eager tensors.

Each op calls TensorFlow's kernel directly. TensorFlow lacks some kernels (arithmetic on
bool, ``abs``/``negative``/``pow`` on unsigned integers, ``matmul`` on integers narrower than
32 bits and on unsigned ones, ...); those
raise, and only then a slower path computes the result in a wider dtype and casts it
back, so the common path pays nothing for them.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow.experimental.numpy as tnp

from multidev.contract import (
    NoKernel,
    clip_bounds,
    divisor_signed,
    nan_first,
    op_table,
    reduced_exponents,
    vector_matmul,
    widening,
)

from . import array_api, cnn, losses, sequence_ops
from .dtypes import NATIVE
from .indexing import getitem

__all__ = ["OPS"]

_NO_KERNEL_ERRORS = (
    tf.errors.InvalidArgumentError,
    tf.errors.NotFoundError,
    tf.errors.UnimplementedError,
)
#: the dtype an op computes in where TensorFlow has no kernel for the operand's: a wider
#: signed one, or for uint64 int64 (casts between the two keep the bits, and +, -, * and
#: powers modulo 2**64 are the same on both)
_WIDE = {
    tf.bool: tf.int32,
    tf.uint8: tf.int32,
    tf.int8: tf.int32,
    tf.int16: tf.int32,
    tf.uint16: tf.int32,
    tf.uint32: tf.int64,
    tf.uint64: tf.int64,
}
_cast = tf.cast


#: TensorFlow's "no kernel for this dtype" errors (its integer division by zero raises one too)
_NO_KERNEL = NoKernel(raised=lambda e: isinstance(e, _NO_KERNEL_ERRORS), cast=_cast)


def _check(name):
    """The clearer errors for what TensorFlow's binary kernels refuse, before a wider try."""

    def check(args, dt):
        b = args[1]
        if dt == tf.bool and name == "subtract":
            raise TypeError(
                "Expected numeric tensors for subtract. Received: bool tensors. "
                "Compare masks with != (exclusive or) or invert one with ~."
            )
        if (
            name in ("floor_divide", "remainder")
            and not dt.is_floating
            and bool(tf.reduce_any(tf.equal(_as_int64(b), 0)))
        ):
            raise ZeroDivisionError(
                f"Expected a divisor without zeros for integer {name}. Received: a divisor "
                "holding 0. Use floating-point tensors to get inf/nan instead."
            )
        if name == "pow" and dt.is_integer and bool(tf.reduce_any(tf.less(_as_int64(b), 0))):
            raise ValueError(
                "Expected non-negative exponents for integer pow. Received: a negative exponent. "
                "Use a floating-point base, e.g. x.astype(md.float32) ** -1."
            )

    return check


def _as_int64(a):
    return _cast(a, tf.int64) if hasattr(a, "dtype") else int(a)


def _binary(fast, name):
    return widening(fast, name, _NO_KERNEL, _WIDE, check=_check(name))


def _raw(op):
    """TensorFlow's raw op ``op`` on two operands: the kernel that ``a + b`` (``*``, ``-``) on
    TensorFlow tensors runs, without ``tf.math``'s name scope and conversions (several µs)."""
    return lambda a, b: op(x=a, y=b)


#: the binary ops that are tf.math's function of their name, computed wider where it has no kernel
_WIDENED = ("pow", "maximum", "minimum", "less", "less_equal", "greater", "greater_equal")
_mm2 = _binary(tf.linalg.matmul, "matmul")


def _matmul(a, b):
    """Array API matmul: 1-D operands are promoted to matrices and the added axis removed."""
    if a.shape.rank == 0 or b.shape.rank == 0:
        raise ValueError(
            "Expected tensors with at least one dimension for matmul. "
            f"Received: shapes {tuple(a.shape)} and {tuple(b.shape)}. Use * for scalars."
        )
    return vector_matmul(_mm2, a, b, tf.expand_dims, tf.squeeze)


def _linear(x, w, b):
    """``x @ w.T + b`` with PyTorch's (out_features, in_features) weight: one matmul with a
    transposed operand for 2-D input, ``tensordot`` over the last axis for other ranks.

    TensorFlow's CPU matmul with a transposed right operand is slow when that operand is the
    larger one (measured 1 thread: batch 128, 1024 by 1024 weight, 14 ms against 5 ms), so
    for twice or more as many outputs as rows it computes ``(w @ x.T).T`` instead, on weights
    of 2**20 elements or more (on smaller ones the transposes cost more than they save: 256
    by 256, batch 32, took a training step to twice the native one's time)."""
    if x.shape.rank == 2:
        rows, outs = x.shape[0], w.shape[0]
        big = (w.shape.num_elements() or 0) >= 1 << 20
        if big and rows is not None and outs is not None and outs >= 2 * rows:
            y = tf.transpose(tf.linalg.matmul(w, x, transpose_b=True))
        else:
            y = tf.linalg.matmul(x, w, transpose_b=True)
    else:
        y = tf.tensordot(x, w, [[x.shape.rank - 1], [1]])
    if b is None:
        return y
    # bias_add's gradient is one reduction kernel, where a broadcasting + costs several
    return tf.nn.bias_add(y, b) if y.shape.rank >= 2 else y + b


# ---------------------------------------------------------------- reductions


def _reduction(fn, name, bool_fn=None):
    """An (x, axis, keepdims) reduction; bool input goes to ``bool_fn`` where given, and the
    dtypes TensorFlow has no kernel for reduce in int64."""

    def reduce(x, axis, keepdims):
        f = bool_fn if bool_fn is not None and x.dtype == tf.bool else fn
        return f(x, axis=None if axis is None else list(axis), keepdims=keepdims)

    return widening(reduce, name, _NO_KERNEL, dict.fromkeys(_WIDE, tf.int64), count=1)


def _arg(fn):
    """argmax/argmin as int64 (the first NaN wins: ``contract.nan_first`` below); axis None
    (TensorFlow's is 0) and a 0-d tensor's axis reduce the flattened tensor."""

    def op(x, axis):
        if axis is None or x.shape.rank == 0:
            x, axis = tf.reshape(x, (-1,)), 0
        return fn(x, axis=axis, output_type=tf.int64)

    return op


# ---------------------------------------------------------------- others


def _clip(x, lo, hi):
    """NumPy's clip (``contract.clip_bounds``: bounds of x's kind, None the dtype's end)."""
    dt = x.dtype
    if dt == tf.bool:
        return _cast(_clip(_cast(x, tf.int32), lo, hi), tf.bool)
    lo, hi = clip_bounds(lo, hi, np.dtype(dt.as_numpy_dtype))
    return tf.clip_by_value(x, tf.constant(lo, dt), tf.constant(hi, dt))


_SMALL_INTS = frozenset({tf.uint8, tf.int8, tf.int16, tf.uint16})


def _astype(x, dt):
    """tf.cast; floats reach 8- and 16-bit integers through int64 so that out-of-range
    values wrap as in NumPy instead of saturating."""
    native = NATIVE[dt]
    if native in _SMALL_INTS and x.dtype.is_floating:
        x = _cast(x, tf.int64)
    return _cast(x, native)


def copy(x):
    """A tensor with its own buffer: CPU tensors may alias NumPy memory (zero-copy creation),
    so they are deep-copied; elsewhere ``identity`` already gives a new buffer."""
    if "CPU" in x.device:
        return tf.raw_ops.DeepCopy(x=x)
    return tf.identity(x)


def _copy_gradient(op: Any, grad: Any) -> Any:
    """A copy passes its gradient through, as ``identity`` does (``x.clone()`` and
    ``x.to(device)`` under a tape)."""
    return grad


# TensorFlow registers no gradient for DeepCopy: a tape over x.clone() raised LookupError
with contextlib.suppress(KeyError):  # a TensorFlow that has one keeps its own
    tf.RegisterGradient("DeepCopy")(_copy_gradient)


OPS = op_table(
    tf.math,
    tf.bitwise,
    tf,
    tf.nn,
    tnp,
    # lowerings: array_api.py (the Array API beyond the core table), sequence ops, losses, cnn
    modules=[array_api, sequence_ops, losses, cnn],
    **{name: _binary(getattr(tf.math, name), name) for name in _WIDENED if name != "pow"},
    # uint64 powers are computed in int64: exponents of 2**63 or more reduced first
    pow=reduced_exponents(
        _binary(tf.math.pow, "pow"), tf.where, lambda t: np.dtype(t.dtype.as_numpy_dtype)
    ),
    add=_binary(_raw(tf.raw_ops.AddV2), "add"),
    subtract=_binary(_raw(tf.raw_ops.Sub), "subtract"),
    multiply=_binary(_raw(tf.raw_ops.Mul), "multiply"),
    divide=tf.math.truediv,
    floor_divide=_binary(tf.math.floordiv, "floor_divide"),
    remainder=divisor_signed(
        _binary(tf.math.floormod, "remainder"),
        lambda r, b: array_api.LOWERINGS["copysign"](r, tf.cast(b, r.dtype)),
        lambda r: r.dtype.is_floating,
    ),
    matmul=_matmul,
    # (x, weight (out, in), bias or None): the layer op behind nn.Linear
    linear=_linear,
    equal=tf.math.equal,
    not_equal=tf.math.not_equal,
    negative=widening(tf.math.negative, "negative", _NO_KERNEL, _WIDE),
    sum=_reduction(tf.math.reduce_sum, "sum", tf.math.reduce_any),
    mean=_reduction(tf.math.reduce_mean, "mean"),
    max=_reduction(tf.math.reduce_max, "max", tf.math.reduce_any),
    min=_reduction(tf.math.reduce_min, "min", tf.math.reduce_all),
    prod=_reduction(tf.math.reduce_prod, "prod", tf.math.reduce_all),
    argmax=_arg(tf.math.argmax),
    argmin=_arg(tf.math.argmin),
    clip=_clip,
    getitem=getitem,
    astype=_astype,
    copy=copy,
)
nan_first(OPS, lambda x: x.dtype.is_floating)
