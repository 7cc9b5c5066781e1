"""Expected values for the conformance suite, computed with JAX's own API (not through
multidev): ``jax.numpy``, ``jax.nn``, ``jax.lax`` and gradients by ``jax.vjp``. The entries not
written here are JAX's functions of the names the suite uses (``multidev.testing.reference``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from multidev.testing import reference as ref

from . import sequence_reference

__all__ = ["OPS"]


def _grads(fn, ts, gy=None):
    """The gradients of sum(fn(*ts) * gy) (of fn(*ts) itself when gy is None) by ``jax.vjp``."""
    out, vjp = jax.vjp(fn, *ts)
    return vjp(jnp.ones_like(out) if gy is None else gy)


def _mse(a, b):
    return jnp.mean(jnp.square(a - b))


def _cross_entropy(z, labels):
    logp = jax.nn.log_softmax(z, axis=1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def _linear(x, w, b):
    y = x @ w.T
    return y if b is None else y + b


def _conv2d(x, w, b, stride, padding, dilation, groups):
    y = lax.conv_general_dilated(
        x,
        w,
        tuple(stride),
        [(p, p) for p in padding],
        rhs_dilation=tuple(dilation),
        dimension_numbers=("NCHW", "OIHW", "NCHW"),
        feature_group_count=groups,
    )
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def _pool(init, op, mean):
    def pool(x, k, s, p):
        y = lax.reduce_window(
            x, init, op, (1, 1, *k), (1, 1, *s), ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1]))
        )
        return y / (k[0] * k[1]) if mean else y

    return pool


def _standardize(x, axes, eps):
    mean = jnp.mean(x, axis=axes, keepdims=True)
    return (x - mean) / jnp.sqrt(jnp.var(x, axis=axes, keepdims=True) + eps)


def _per_channel(y, w, b):
    return y * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)


def _adaptive_avg_pool2d(x, size):
    h, w = x.shape[2:]
    oh, ow = size
    rows = [(i * h // oh, -(-(i + 1) * h // oh)) for i in range(oh)]
    cols = [(j * w // ow, -(-(j + 1) * w // ow)) for j in range(ow)]
    out = [[jnp.mean(x[:, :, r0:r1, c0:c1], axis=(2, 3)) for c0, c1 in cols] for r0, r1 in rows]
    return jnp.stack([jnp.stack(r, axis=-1) for r in out], axis=-2)


def _native_parameters(module):
    return module.parameters()


def _native_sgd_step(module, x, y, lr):
    """One SGD step on the MSE of module(x) against y, by ``jax.value_and_grad`` of the
    loss as a function of the module's Variables' arrays; returns the loss."""
    params = module.parameters()

    def loss_of(values):
        before = [p.value for p in params]
        for p, v in zip(params, values, strict=True):
            p.value = v
        try:
            return _mse(module(x), y)
        finally:
            for p, v in zip(params, before, strict=True):
                p.value = v

    loss, grads = jax.value_and_grad(loss_of)([p.value for p in params])
    for p, g in zip(params, grads, strict=True):
        p.value = p.value - lr * g
    return loss


OPS = ref.native_table(
    lambda a: jnp.asarray(a),
    np.asarray,
    {
        "linear": _linear,
        "concat": lambda xs, axis: jnp.concatenate(xs, axis=axis),
        "relu": jax.nn.relu,
        "conv2d": _conv2d,
        "max_pool2d": _pool(-jnp.inf, lax.max, False),
        "avg_pool2d": _pool(0.0, lax.add, True),
        "adaptive_avg_pool2d": _adaptive_avg_pool2d,
        "batch_norm_train": lambda x, w, b, eps: _per_channel(
            _standardize(x, (0, 2, 3), eps), w, b
        ),
        "group_norm": lambda x, groups, w, b, eps: _per_channel(
            _standardize(x.reshape(x.shape[0], groups, -1), -1, eps).reshape(x.shape), w, b
        ),
        "layer_norm": lambda x, w, b, eps: _standardize(x, -1, eps) * w + b,
        "gelu": lambda x, approximate: jax.nn.gelu(x, approximate=approximate == "tanh"),
        "embedding": lambda idx, w: w[idx],
        "native_parameters": _native_parameters,
        "native_sgd_step": _native_sgd_step,
    },
    jnp,
    jax.nn,
    modules=[sequence_reference],
    grads=_grads,
    losses=(_mse, _cross_entropy),
)
