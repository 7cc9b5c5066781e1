"""The conformance suite's ops written directly in MXNet's NumPy interface (not through
multidev): NumPy arrays in, NumPy arrays out.

Each function runs with MXNet's NumPy semantics on (``mx.util.use_np``), so the module works
whether or not the multidev adapter has been set up. ``log_softmax`` runs MXNet's kernel in
float64 and rounds the result back: in float32 that kernel is only accurate to about 1e-4
relative, short of the suite's tolerance.
"""

from __future__ import annotations

import mxnet as mx
import numpy as np
from mxnet import gluon, npx
from mxnet import np as mnp

from multidev.testing.reference import native_table

from .cnn_reference import CNN_OPS
from .sequence_reference import SEQUENCE_OPS

__all__ = ["OPS"]


def _mx(a) -> mnp.ndarray:
    a = np.asarray(a)
    return mnp.array(a, dtype=a.dtype)


def _log_softmax(x, axis):
    return npx.log_softmax(x.astype(np.float64), axis=axis).astype(x.dtype)


def _linear(x, w, b):
    if b is None:
        return npx.fully_connected(x, w, num_hidden=w.shape[0], no_bias=True, flatten=False)
    return npx.fully_connected(x, w, b, num_hidden=w.shape[0], flatten=False)


def _grads(fn, xs, gy=None) -> tuple:
    """Gradients of sum(fn(*xs) * gy) (of fn(...) itself when gy is None) by mx.autograd."""
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        out = fn(*xs)
    out.backward(gy)
    return tuple(x.grad for x in xs)


def _mse(a, b):
    return mnp.mean(mnp.square(a - b))


def _cross_entropy(labels):
    labels = _mx(np.asarray(labels, dtype=np.int64))
    return lambda z: -mnp.mean(npx.pick(npx.log_softmax(z, axis=-1), labels, axis=-1))


def _native_sgd_step(module: gluon.Block, x, y, lr: float):
    """One step of a gluon Trainer with 'sgd' over module.collect_params() on the MSE of
    module(x) against y (gradients zeroed first); returns the loss."""
    params = module.collect_params()
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": lr})
    params.zero_grad()
    with mx.autograd.record():
        loss = _mse(module(x), y)
    loss.backward()
    trainer.step(1)
    return loss


_TABLE = native_table(
    _mx,
    lambda x: x.asnumpy(),
    {
        "conv2d": lambda x, w, b, s, p, d, g: npx.convolution(
            x,
            w,
            b,
            kernel=w.shape[2:],
            stride=s,
            dilate=d,
            pad=p,
            num_filter=w.shape[0],
            num_group=g,
            no_bias=False,
            layout="NCHW",
        ),
        "sigmoid": npx.sigmoid,
        "relu": npx.relu,
        "softmax": lambda x, axis: npx.softmax(x, axis=axis),
        "log_softmax": _log_softmax,
        "sum": lambda x, axis, keepdims: mnp.sum(x, axis=axis, keepdims=keepdims),
        "mean": lambda x, axis, keepdims: mnp.mean(x, axis=axis, keepdims=keepdims),
        "max": lambda x, axis, keepdims: mnp.max(x, axis=axis, keepdims=keepdims),
        "argmax": lambda x, axis: mnp.argmax(x, axis=axis),
        "reshape": mnp.reshape,
        "permute_dims": mnp.transpose,
        "concat": lambda xs, axis: mnp.concatenate(xs, axis=axis),
        "stack": lambda xs, axis: mnp.stack(xs, axis=axis),
        "where": mnp.where,
        "clip": mnp.clip,
        "linear": _linear,
        # gradients by mx.autograd (gy: the output's gradient; losses are scalars)
        "grad_linear": lambda x, w, b, gy: _grads(_linear, (x, w, b), gy),
        "grad_relu": lambda x, gy: _grads(npx.relu, (x,), gy)[0],
        "grad_softmax": lambda x, axis, gy: _grads(lambda t: npx.softmax(t, axis=axis), (x,), gy)[
            0
        ],
        "grad_mse_loss": lambda a, b: _grads(_mse, (a, b))[0],
        "grad_cross_entropy": lambda z, labels: _grads(_cross_entropy(labels), (z,))[0],
        # native interop: what MXNet's own tools see of net.native
        "native_parameters": lambda module: list(module.collect_params().values()),
        "native_sgd_step": _native_sgd_step,
    },
    mnp,
)

#: name -> the op computed by MXNet on NumPy arrays, returning a NumPy array
OPS = {name: mx.util.use_np(fn) for name, fn in _TABLE.items()}
OPS.update(
    {
        name: mx.util.use_np(fn)
        for name, fn in native_table(_mx, lambda x: x.asnumpy(), SEQUENCE_OPS).items()
    }
)
OPS.update(
    {
        name: mx.util.use_np(fn)
        for name, fn in native_table(_mx, lambda x: x.asnumpy(), CNN_OPS).items()
    }
)
