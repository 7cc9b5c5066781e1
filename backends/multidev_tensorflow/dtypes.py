"""multidev dtypes and their TensorFlow counterparts (TensorFlow has every one of them)."""

from __future__ import annotations

import tensorflow as tf

from multidev import dtypes as md

__all__ = ["FROM_NATIVE", "NATIVE", "unsupported"]

NATIVE = {
    md.bool: tf.bool,
    md.uint8: tf.uint8,
    md.int8: tf.int8,
    md.int16: tf.int16,
    md.int32: tf.int32,
    md.int64: tf.int64,
    md.float16: tf.float16,
    md.bfloat16: tf.bfloat16,
    md.float32: tf.float32,
    md.float64: tf.float64,
}
FROM_NATIVE = {v: k for k, v in NATIVE.items()}


def unsupported(dtype) -> TypeError:
    """The error for a TensorFlow tensor whose dtype multidev does not have."""
    names = ", ".join(d.name for d in NATIVE)
    return TypeError(
        f"Expected a TensorFlow tensor of one of multidev's dtypes ({names}). Received: "
        f"dtype {getattr(dtype, 'name', dtype)} on the tensorflow backend. Cast it first, "
        "e.g. with tf.cast(x, tf.float32), or use tf.math.real/tf.math.imag for complex values."
    )
