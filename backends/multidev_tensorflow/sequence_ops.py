"""TensorFlow lowerings of the sequence ops (``multidev.nn.sequence_functional``).

TensorFlow has no fused CPU kernel for PyTorch's GRU/LSTM formulation, so the RNN is the
core's loop over time steps (each step a few TensorFlow kernels)."""

from __future__ import annotations

import tensorflow as tf

__all__ = ["LOWERINGS"]


def _layer_norm(x, w, b, eps):
    mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
    return tf.nn.batch_normalization(x, mean, var, b, w, eps)


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS = {
    "embedding": lambda w, idx: tf.gather(w, idx),
    "one_hot": lambda idx, n: tf.one_hot(idx, n, dtype=tf.int64),
    "stop_gradient": tf.stop_gradient,
    "layer_norm": _layer_norm,
    "gelu": lambda x, tanh: tf.nn.gelu(x, approximate=tanh),
}
