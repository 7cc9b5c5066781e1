"""Pooling and normalisation in TensorFlow's own code (``tf.nn`` in NHWC, its CPU kernels'
layout, and Keras' ``GroupNormalization``), for the conformance sections "conv" and
"norm": NCHW native tensors in and out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

__all__ = ["OPS"]


def _nhwc_pool(pool, fill):
    def run(x, k, s, p):
        xh = tf.transpose(x, (0, 2, 3, 1))
        pads = [[0, 0], [p[0], p[0]], [p[1], p[1]], [0, 0]]
        y = pool(tf.pad(xh, pads, constant_values=fill), k, s, "VALID")
        return tf.transpose(y, (0, 3, 1, 2))

    return run


def _adaptive_avg_pool2d(x, size):
    """The mean over each of PyTorch's adaptive windows (floor(i*H/out) to ceil((i+1)*H/out))."""
    (h, w), (oh, ow) = x.shape[2:], size
    rows = [
        tf.stack(
            [
                tf.reduce_mean(
                    x[
                        :,
                        :,
                        i * h // oh : -(-(i + 1) * h // oh),
                        j * w // ow : -(-(j + 1) * w // ow),
                    ],
                    axis=(2, 3),
                )
                for j in range(ow)
            ],
            axis=-1,
        )
        for i in range(oh)
    ]
    return tf.stack(rows, axis=-2)


def _batch_norm_train(x, w, b, eps):
    mean, var = tf.nn.moments(x, axes=[0, 2, 3], keepdims=True)
    shape = (1, -1, 1, 1)
    return tf.nn.batch_normalization(x, mean, var, tf.reshape(b, shape), tf.reshape(w, shape), eps)


def _group_norm(x, groups, w, b, eps):
    layer = keras.layers.GroupNormalization(groups, axis=1, epsilon=eps)
    layer.build(x.shape)
    layer.gamma.assign(w)
    layer.beta.assign(b)
    return layer(x)


OPS: dict[str, Callable[..., Any]] = {
    "max_pool2d": _nhwc_pool(tf.nn.max_pool2d, float("-inf")),
    "avg_pool2d": _nhwc_pool(tf.nn.avg_pool2d, 0.0),
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "batch_norm_train": _batch_norm_train,
    "group_norm": _group_norm,
}
