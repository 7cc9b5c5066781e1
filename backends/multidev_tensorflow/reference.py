"""The conformance suite's native reference: each computation written in TensorFlow's own
public API (not through multidev), from NumPy arrays to a NumPy array."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

__all__ = ["OPS"]


def _np(x) -> np.ndarray:
    out = x.numpy()
    return out if isinstance(out, np.ndarray) else np.asarray(out, dtype=x.dtype.as_numpy_dtype)


def _t(a):
    return tf.constant(np.asarray(a))


def _binary(fn):
    return lambda a, b: _np(fn(_t(a), _t(b)))


def _unary(fn):
    return lambda a: _np(fn(_t(a)))


def _reduce(fn):
    return lambda a, axis=None, keepdims=False: _np(fn(_t(a), axis=axis, keepdims=keepdims))


def _argmax(a, axis=None):
    x = _t(a)
    if axis is None:
        x, axis = tf.reshape(x, (-1,)), 0
    return _np(tf.math.argmax(x, axis=axis, output_type=tf.int64))


def _matmul(a, b):
    return _np(tf.experimental.numpy.matmul(_t(a), _t(b)))


def _clip(a, lo, hi):
    x = _t(a)
    if lo is not None:
        x = tf.math.maximum(x, tf.constant(lo, x.dtype))
    if hi is not None:
        x = tf.math.minimum(x, tf.constant(hi, x.dtype))
    return _np(x)


def _linear(x, weight, bias):
    """``tf.keras.layers.Dense`` holding weight.T (PyTorch's (out, in) layout) and bias."""
    x = np.asarray(x)
    weight = np.asarray(weight)
    layer = tf.keras.layers.Dense(weight.shape[0], use_bias=bias is not None, dtype=x.dtype.name)
    layer.build((None, weight.shape[1]))
    layer.set_weights([weight.T] if bias is None else [weight.T, np.asarray(bias)])
    if x.ndim == 1:
        return _np(layer(_t(x[None]))[0])
    return _np(layer(_t(x)))


def _grads(fn, arrays, gy=None) -> tuple[np.ndarray, ...]:
    """Gradients of sum(fn(*arrays) * gy) (of fn(...) itself when gy is None) by GradientTape."""
    ts = [_t(a) for a in arrays]
    with tf.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        out = fn(*ts)
    grads = tape.gradient(out, ts, output_gradients=None if gy is None else _t(gy))
    return tuple(_np(g) for g in grads)


def _grad_linear(x, weight, bias, gy):
    return _grads(
        lambda a, w, b: tf.linalg.matmul(a, w, transpose_b=True) + b, (x, weight, bias), gy
    )


def _grad_mse_loss(input, target):
    return _grads(
        lambda a, b: tf.math.reduce_mean(tf.math.squared_difference(a, b)), (input, target)
    )[0]


def _grad_cross_entropy(logits, labels):
    labels = tf.constant(np.asarray(labels, dtype=np.int64))

    def loss(t):
        per_sample = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=t)
        return tf.math.reduce_mean(per_sample)

    return _grads(loss, (logits,))[0]


def _native_sgd_step(module: tf.Module, x, y, lr: float) -> np.ndarray:
    """One step of a Keras SGD optimizer over module.trainable_variables on the MSE of
    module(x) against y; returns the loss."""
    opt = tf.keras.optimizers.SGD(learning_rate=lr)
    with tf.GradientTape() as tape:
        loss = tf.math.reduce_mean(tf.math.squared_difference(module(_t(x)), _t(y)))
    variables = module.trainable_variables
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
    return _np(loss)


OPS: dict[str, Callable[..., np.ndarray]] = {
    "add": _binary(tf.math.add),
    "subtract": _binary(tf.math.subtract),
    "multiply": _binary(tf.math.multiply),
    "divide": _binary(tf.math.truediv),
    "maximum": _binary(tf.math.maximum),
    "matmul": _matmul,
    "exp": _unary(tf.math.exp),
    "log": _unary(tf.math.log),
    "sqrt": _unary(tf.math.sqrt),
    "abs": _unary(tf.math.abs),
    "tanh": _unary(tf.math.tanh),
    "sigmoid": _unary(tf.math.sigmoid),
    "relu": _unary(tf.nn.relu),
    "softmax": lambda a, axis=-1: _np(tf.nn.softmax(_t(a), axis=axis)),
    "log_softmax": lambda a, axis=-1: _np(tf.nn.log_softmax(_t(a), axis=axis)),
    "sum": _reduce(tf.math.reduce_sum),
    "mean": _reduce(tf.math.reduce_mean),
    "max": _reduce(tf.math.reduce_max),
    "argmax": _argmax,
    "reshape": lambda a, shape: _np(tf.reshape(_t(a), shape)),
    "permute_dims": lambda a, axes: _np(tf.transpose(_t(a), perm=axes)),
    "concat": lambda arrays, axis=0: _np(tf.concat([_t(a) for a in arrays], axis=axis)),
    "stack": lambda arrays, axis=0: _np(tf.stack([_t(a) for a in arrays], axis=axis)),
    "where": lambda cond, a, b: _np(tf.where(_t(cond), _t(a), _t(b))),
    "clip": _clip,
    "linear": _linear,
    # gradients by tf.GradientTape (gy: the output's gradient; losses are scalars)
    "grad_linear": _grad_linear,  # -> (grad x, grad weight, grad bias)
    "grad_relu": lambda x, gy: _grads(tf.nn.relu, (x,), gy)[0],
    "grad_softmax": lambda x, axis, gy: _grads(lambda t: tf.nn.softmax(t, axis=axis), (x,), gy)[0],
    "grad_mse_loss": _grad_mse_loss,
    "grad_cross_entropy": _grad_cross_entropy,
    # native interop: what TensorFlow's own tools see of net.native
    "native_parameters": lambda module: list(module.trainable_variables),
    "native_sgd_step": _native_sgd_step,
}
