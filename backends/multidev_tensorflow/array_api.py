"""TensorFlow lowerings of the Array API functions beyond the core op table (``tf.math``,
``tf.bitwise`` and, where ``tf.math`` lacks one, ``tf.experimental.numpy``: all TF kernels)."""

from __future__ import annotations

import tensorflow as tf
import tensorflow.experimental.numpy as tnp

__all__ = ["LOWERINGS"]

_SAME_WIDTH_INT = {2: tf.int16, 4: tf.int32, 8: tf.int64}


def _signbit(x):
    return tf.bitcast(x, _SAME_WIDTH_INT[x.dtype.size]) < 0


def _trunc(x):
    return tf.where(x < 0, tf.math.ceil(x), tf.math.floor(x))


def _copysign(a, b):
    mag = tf.math.abs(a)
    return tf.where(_signbit(b), -mag, mag)


def _sortable(fn):
    """bool has no sort kernel: sort it as uint8."""

    def sort(x, axis, descending):
        direction = "DESCENDING" if descending else "ASCENDING"
        if x.dtype == tf.bool:
            return tf.cast(fn(tf.cast(x, tf.uint8), axis, direction), tf.bool)
        return fn(x, axis, direction)

    return sort


def _sort(x, axis, direction):
    if x.dtype.is_floating:
        return tnp.take_along_axis(x, _argsort(x, axis, direction), axis)
    return tf.sort(x, axis=axis, direction=direction)


def _argsort(x, axis, direction):
    """Stable; NaN sorts last ascending and first descending, as NumPy's sort (tf.argsort
    leaves NaN wherever its comparisons put it)."""
    if not x.dtype.is_floating:
        return tf.cast(tf.argsort(x, axis=axis, direction=direction, stable=True), tf.int64)
    nan = tf.math.is_nan(x)
    order = tf.argsort(tf.where(nan, tf.zeros_like(x), x), axis, direction, stable=True)
    flags = tnp.take_along_axis(tf.cast(nan, tf.int32), order, axis)
    last = tf.argsort(flags, axis, direction, stable=True)
    return tf.cast(tnp.take_along_axis(order, last, axis), tf.int64)


def _argsort_any(x, axis, descending):
    direction = "DESCENDING" if descending else "ASCENDING"
    if x.dtype == tf.bool:
        x = tf.cast(x, tf.uint8)
    return _argsort(x, axis, direction)


def _repeat(x, repeats, axis):
    """tf.repeat's kernels take int32 repeat counts only."""
    if tf.is_tensor(repeats):
        repeats = tf.cast(repeats, tf.int32)
    return tf.repeat(x, repeats, axis=axis)


def _searchsorted(a, v, side):
    flat = tf.reshape(v, [-1])
    out = tf.searchsorted(a, flat, side=side, out_type=tf.int64)
    return tf.reshape(out, tf.shape(v))


def _nonzero(x):
    idx = tf.where(tf.cast(x, tf.bool))
    return tuple(idx[:, i] for i in range(x.shape.rank))


def _truth(fn):
    def reduce(x, axis, keepdims):
        if axis is not None and not axis:
            return tf.identity(x)
        return fn(x, axis=None if axis is None else list(axis), keepdims=keepdims)

    return reduce


class ArrayApiOps:
    acos = staticmethod(tf.math.acos)
    acosh = staticmethod(tf.math.acosh)
    asin = staticmethod(tf.math.asin)
    asinh = staticmethod(tf.math.asinh)
    atan = staticmethod(tf.math.atan)
    atanh = staticmethod(tf.math.atanh)
    cosh = staticmethod(tf.math.cosh)
    sinh = staticmethod(tf.math.sinh)
    tan = staticmethod(tf.math.tan)
    expm1 = staticmethod(tf.math.expm1)
    log2 = staticmethod(tnp.log2)
    log10 = staticmethod(tnp.log10)
    ceil = staticmethod(tf.math.ceil)
    trunc = staticmethod(_trunc)
    round = staticmethod(tf.math.round)
    sign = staticmethod(tf.math.sign)
    isnan = staticmethod(tf.math.is_nan)
    isinf = staticmethod(tf.math.is_inf)
    isfinite = staticmethod(tf.math.is_finite)
    signbit = staticmethod(_signbit)
    atan2 = staticmethod(tf.math.atan2)
    hypot = staticmethod(tnp.hypot)
    copysign = staticmethod(_copysign)
    logaddexp = staticmethod(tnp.logaddexp)
    bitwise_and = staticmethod(tf.bitwise.bitwise_and)
    bitwise_or = staticmethod(tf.bitwise.bitwise_or)
    bitwise_xor = staticmethod(tf.bitwise.bitwise_xor)
    bitwise_left_shift = staticmethod(tf.bitwise.left_shift)
    bitwise_right_shift = staticmethod(tf.bitwise.right_shift)
    bitwise_invert = staticmethod(tf.bitwise.invert)
    all = staticmethod(_truth(tf.math.reduce_all))
    any = staticmethod(_truth(tf.math.reduce_any))
    cumulative_sum = staticmethod(lambda x, axis: tf.math.cumsum(x, axis=axis))
    sort = staticmethod(_sortable(_sort))
    argsort = staticmethod(_argsort_any)
    searchsorted = staticmethod(_searchsorted)
    nonzero = staticmethod(_nonzero)
    take = staticmethod(lambda x, idx, axis: tf.gather(x, idx, axis=axis))
    flip = staticmethod(lambda x, axes: tf.reverse(x, list(axes)))
    roll = staticmethod(lambda x, shifts, axes: tf.roll(x, list(shifts), list(axes)))
    broadcast_to = staticmethod(tf.broadcast_to)
    repeat = staticmethod(_repeat)
    tile = staticmethod(lambda x, reps: tf.tile(x, list(reps)))
    tril = staticmethod(lambda x, k: tnp.tril(x, k))
    triu = staticmethod(lambda x, k: tnp.triu(x, k))
    to_dlpack = staticmethod(tf.experimental.dlpack.to_dlpack)
    from_dlpack = staticmethod(lambda obj: tf.experimental.dlpack.from_dlpack(obj.__dlpack__()))
    real = staticmethod(tf.math.real)
    imag = staticmethod(tf.math.imag)
    conj = staticmethod(tf.math.conj)


#: op name -> native function, for the adapter's op_table
LOWERINGS = {k: getattr(ArrayApiOps, k) for k in vars(ArrayApiOps) if not k.startswith("_")}
