"""TensorFlow lowering of the fused loss op (``multidev.nn.functional.cross_entropy``)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["LOWERINGS"]

_REDUCE = {"mean": tf.math.reduce_mean, "sum": tf.math.reduce_sum, "none": lambda loss: loss}


def _cross_entropy(x, labels, reduction):
    """TensorFlow's fused sparse softmax cross-entropy kernel, then the reduction. Its CPU
    kernel refuses labels outside [0, C) (InvalidArgumentError, made an IndexError when run
    eagerly; inside a ``tf.function`` TensorFlow raises its own when the graph runs). Its GPU
    kernel raises nothing: such a row's loss and gradient are NaN (TensorFlow's documented
    behaviour; not checked on a GPU here)."""
    try:
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x)
    except tf.errors.InvalidArgumentError as e:
        raise IndexError(e.message.split("}} ")[-1].split(" [Op:")[0]) from e
    return _REDUCE[reduction](loss)


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS: dict[str, Any] = {"cross_entropy": _cross_entropy}
