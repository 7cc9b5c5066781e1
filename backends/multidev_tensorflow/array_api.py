"""TensorFlow lowerings of the Array API functions beyond the core op table (``tf.math``,
``tf.bitwise`` and, where ``tf.math`` lacks one, ``tf.experimental.numpy``: all TF kernels)."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow.experimental.numpy as tnp

from multidev.contract import reduction

__all__ = ["ALIGNMENT", "LOWERINGS", "from_dlpack"]

#: bytes: TensorFlow's CPU kernels abort the process on a buffer aligned to less
ALIGNMENT = 64

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


def from_dlpack(obj):
    """A tensor sharing the memory of a DLPack-capable object (or capsule); a CPU buffer not
    aligned to ``ALIGNMENT`` bytes (NumPy aligns to 16), or of a dtype whose address Python
    cannot read (bfloat16), is copied into one TensorFlow owns."""
    capsule = obj.__dlpack__() if hasattr(obj, "__dlpack__") else obj
    x = tf.experimental.dlpack.from_dlpack(capsule)
    if "CPU" in x.device and x.shape.num_elements():
        try:
            view = np.asarray(memoryview(x))
        except (TypeError, ValueError):
            return tf.constant(x.numpy())
        if view.ctypes.data % ALIGNMENT:
            return tf.constant(view)
    return x


#: the Array API ops TensorFlow spells differently (the rest: by name on ``tf.math``,
#: ``tf.bitwise`` and ``tf.experimental.numpy``, in that order)
def _left_shift(x, y):
    """``x << y``; TensorFlow's kernel is wrong for shifts by the bit width or more (int16
    1 << 16 gives -32768), where the standard gives 0."""
    bits = x.dtype.size * 8
    out = tf.bitwise.left_shift(x, tf.minimum(y, bits - 1))
    return tf.where(y >= bits, tf.zeros_like(x), out)


def _right_shift(x, y):
    """``x >> y`` (arithmetic); shifts by the bit width or more give the sign fill (0, or -1
    for negative x), as a shift by the bit width minus one does for signed dtypes."""
    bits = x.dtype.size * 8
    out = tf.bitwise.right_shift(x, tf.minimum(y, bits - 1))
    return tf.where(y >= bits, tf.zeros_like(x), out) if x.dtype.is_unsigned else out


LOWERINGS: dict[str, Any] = {
    "bitwise_left_shift": _left_shift,
    "bitwise_right_shift": _right_shift,
    "trunc": _trunc,
    "signbit": _signbit,
    "copysign": _copysign,
    "all": reduction(tf.math.reduce_all, tf.identity, axes=list),
    "any": reduction(tf.math.reduce_any, tf.identity, axes=list),
    "cumulative_sum": lambda x, axis: tf.math.cumsum(x, axis=axis),
    "sort": _sortable(_sort),
    "argsort": _argsort_any,
    "searchsorted": _searchsorted,
    "nonzero": _nonzero,
    "take": lambda x, idx, axis: tf.gather(x, idx, axis=axis),
    "flip": lambda x, axes: tf.reverse(x, list(axes)),
    "roll": lambda x, shifts, axes: tf.roll(x, list(shifts), list(axes)),
    "broadcast_to": tf.broadcast_to,
    "repeat": _repeat,
    "tile": lambda x, reps: tf.tile(x, list(reps)),
    "to_dlpack": tf.experimental.dlpack.to_dlpack,
    "from_dlpack": from_dlpack,
}
