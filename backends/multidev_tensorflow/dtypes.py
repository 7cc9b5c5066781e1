"""multidev dtypes and their TensorFlow counterparts (TensorFlow has every one of them)."""

from __future__ import annotations

import tensorflow as tf

from multidev import dtypes as md

__all__ = ["NATIVE"]

NATIVE: dict[md.DType, tf.DType] = {dt: tf.as_dtype(dt.name) for dt in md.EVERY}
