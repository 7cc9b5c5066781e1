"""Expected values for the conformance suite, computed with PaddlePaddle's own API (not
through multidev), on the CPU place. Integer input to ops defined on floating point only
(mean, softmax, log_softmax) is computed in float32, as multidev does."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np

from multidev.testing.reference import native_table

from .cnn_reference import CNN_OPS
from .sequence_reference import SEQUENCE_OPS

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="No ccache found")
    import paddle

import paddle.nn.functional as F

__all__ = ["OPS"]

_BF16 = np.dtype(ml_dtypes.bfloat16)
_CPU = paddle.CPUPlace()


def _t(a: np.ndarray) -> paddle.Tensor:
    arr = np.array(a)
    if arr.dtype == _BF16:  # Paddle reads uint16 data as bfloat16
        return paddle.to_tensor(arr.view(np.uint16), place=_CPU)
    return paddle.to_tensor(arr, place=_CPU)


def _np(t: paddle.Tensor) -> np.ndarray:
    out = t.numpy()
    return out.view(_BF16) if t.dtype == paddle.bfloat16 else out


def _float(t: paddle.Tensor) -> paddle.Tensor:
    return t if t.is_floating_point() else t.astype(paddle.float32)


def _reduce(fn):
    def reduce(t, axis, keepdims: bool):
        if axis is None:
            return fn(t, axis=None, keepdim=keepdims)
        axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        if not axes:  # reduce over no axis: the input itself (Paddle reads [] as every axis)
            return t
        return fn(t, axis=axes, keepdim=keepdims)

    return reduce


def _linear(x, weight, bias):
    """Paddle's linear takes the weight as (in_features, out_features)."""
    return F.linear(x, paddle.transpose(weight, [1, 0]), bias)


def _grads(fn, ts, gy=None) -> tuple:
    """Gradients of sum(fn(*ts) * gy) (of fn(...) itself when gy is None) by Paddle's autograd."""
    for t in ts:
        t.stop_gradient = False
    fn(*ts).backward(gy)
    return tuple(t.grad for t in ts)


def _native_sgd_step(module: paddle.nn.Layer, x, y, lr: float):
    """One step of paddle.optimizer.SGD over module.parameters() on the MSE of module(x)
    against y; returns the loss."""
    opt = paddle.optimizer.SGD(learning_rate=lr, parameters=module.parameters())
    opt.clear_grad()
    loss = F.mse_loss(module(x), y)
    loss.backward()
    opt.step()
    return loss


OPS = native_table(
    _t,
    _np,
    {
        "conv2d": lambda x, w, b, s, p, d, g: F.conv2d(x, w, b, list(s), list(p), list(d), g),
        "sigmoid": F.sigmoid,
        "relu": F.relu,
        "softmax": lambda t, axis: F.softmax(_float(t), axis=axis),
        "log_softmax": lambda t, axis: F.log_softmax(_float(t), axis=axis),
        "sum": _reduce(paddle.sum),
        "mean": lambda t, axis, keepdims: _reduce(paddle.mean)(_float(t), axis, keepdims),
        "max": _reduce(paddle.max),
        "argmax": lambda t, axis: paddle.argmax(t, axis=axis),
        "reshape": lambda t, shape: paddle.reshape(t, list(shape)),
        "permute_dims": lambda t, axes: paddle.transpose(t, list(axes)),
        "concat": lambda ts, axis: paddle.concat(ts, axis=axis),
        "stack": lambda ts, axis: paddle.stack(ts, axis=axis),
        "where": paddle.where,
        "clip": paddle.clip,
        "linear": _linear,
        # gradients by Paddle's autograd (gy: the output's gradient; losses are scalars)
        "grad_linear": lambda x, w, b, gy: _grads(_linear, (x, w, b), gy),
        "grad_relu": lambda x, gy: _grads(F.relu, (x,), gy)[0],
        "grad_softmax": lambda x, axis, gy: _grads(lambda t: F.softmax(t, axis=axis), (x,), gy)[0],
        "grad_mse_loss": lambda a, b: _grads(F.mse_loss, (a, b))[0],
        "grad_cross_entropy": lambda z, labels: _grads(
            lambda t: F.cross_entropy(t, paddle.to_tensor(np.asarray(labels, dtype=np.int64))),
            (z,),
        )[0],
        # native interop: what Paddle's own tools see of net.native
        "native_parameters": lambda module: list(module.parameters()),
        "native_sgd_step": _native_sgd_step,
    },
    paddle,
)

OPS.update(native_table(_t, _np, SEQUENCE_OPS))
OPS.update(native_table(_t, _np, CNN_OPS))
