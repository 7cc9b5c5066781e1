"""The conformance suite's native reference: each computation written in TensorFlow's own
public API (not through multidev)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tensorflow.experimental.numpy as tnp

from multidev.testing.reference import gradient_keys, native_table

from . import cnn_reference, sequence_reference

__all__ = ["OPS"]


def _linear(x, weight, bias):
    """``tf.keras.layers.Dense`` holding weight.T (PyTorch's (out, in) layout) and bias."""
    layer = tf.keras.layers.Dense(weight.shape[0], use_bias=bias is not None, dtype=x.dtype.name)
    layer.build((None, weight.shape[1]))
    w = tf.transpose(weight).numpy()
    layer.set_weights([w] if bias is None else [w, bias.numpy()])
    return layer(x[None])[0] if x.shape.rank == 1 else layer(x)


def _grads(fn, ts, gy=None) -> tuple:
    """Gradients of sum(fn(*ts) * gy) (of fn(...) itself when gy is None) by GradientTape."""
    with tf.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        out = fn(*ts)
    return tuple(tape.gradient(out, list(ts), output_gradients=gy))


def _mse(a, b):
    return tf.math.reduce_mean(tf.math.squared_difference(a, b))


def _native_sgd_step(module: tf.Module, x, y, lr: float):
    """One step of a Keras SGD optimizer over module.trainable_variables on the MSE of
    module(x) against y; returns the loss."""
    opt = tf.keras.optimizers.SGD(learning_rate=lr)
    with tf.GradientTape() as tape:
        loss = _mse(module(x), y)
    variables = module.trainable_variables
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
    return loss


OPS = native_table(
    lambda a: tf.constant(np.asarray(a)),
    lambda x: np.asarray(x.numpy(), dtype=x.dtype.as_numpy_dtype),  # 0-d: an array too
    {
        "conv2d": lambda x, w, b, s, p, d, g: tf.transpose(
            tf.nn.bias_add(
                tf.nn.conv2d(
                    tf.transpose(x, (0, 2, 3, 1)),
                    tf.transpose(w, (2, 3, 1, 0)),
                    (1, *s, 1),
                    [[0, 0], [p[0], p[0]], [p[1], p[1]], [0, 0]],
                    dilations=(1, *d, 1),
                ),
                b,
            ),
            (0, 3, 1, 2),
        ),
        "matmul": tnp.matmul,
        "argmax": tnp.argmax,  # axis None: the flattened tensor's index, as in NumPy
        "linear": _linear,
        # gradients by tf.GradientTape (gy: the output's gradient; losses are scalars)
        **gradient_keys(
            _grads,
            lambda a, w, b: tf.linalg.matmul(a, w, transpose_b=True) + b,
            *(tf.nn.relu, tf.nn.softmax, _mse),
            lambda z, y: tf.math.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, z)),
        ),
        # native interop: what TensorFlow's own tools see of net.native
        "native_parameters": lambda module: list(module.trainable_variables),
        "native_sgd_step": _native_sgd_step,
    },
    *(tf.math, tf.nn, tf),
    modules=[sequence_reference, cnn_reference],
)
