"""Expected values for the conformance suite, computed with PaddlePaddle's own API.

Each entry takes NumPy arrays and returns a NumPy array; nothing here goes through multidev.
Tensors are made on the CPU place. Integer input to ops defined on floating point only (mean,
softmax, log_softmax) is computed in float32, as multidev does.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="No ccache found")
    import paddle

import paddle.nn.functional as F

__all__ = ["OPS"]

_BF16 = np.dtype(ml_dtypes.bfloat16)
_CPU = paddle.CPUPlace()


def _t(a) -> paddle.Tensor:
    arr = np.array(a)
    if arr.dtype == _BF16:  # Paddle reads uint16 data as bfloat16
        return paddle.to_tensor(arr.view(np.uint16), place=_CPU)
    return paddle.to_tensor(arr, place=_CPU)


def _np(t: paddle.Tensor) -> np.ndarray:
    out = t.numpy()
    return out.view(_BF16) if t.dtype == paddle.bfloat16 else out


def _float(t: paddle.Tensor) -> paddle.Tensor:
    return t if t.is_floating_point() else t.astype(paddle.float32)


def _reduce(fn, t: paddle.Tensor, axis, keepdims: bool) -> paddle.Tensor:
    if axis is None:
        return fn(t, axis=None, keepdim=keepdims)
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not axes:  # reduce over no axis: the input itself (Paddle reads [] as every axis)
        return t
    return fn(t, axis=axes, keepdim=keepdims)


def _unary(fn) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: _np(fn(_t(a)))


def _binary(fn) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda a, b: _np(fn(_t(a), _t(b)))


def _linear(x, weight, bias) -> np.ndarray:
    """Paddle's linear takes the weight as (in_features, out_features)."""
    w = _t(weight).t()
    return _np(F.linear(_t(x), w, None if bias is None else _t(bias)))


def _concat(arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
    return _np(paddle.concat([_t(a) for a in arrays], axis=axis))


def _stack(arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
    return _np(paddle.stack([_t(a) for a in arrays], axis=axis))


def _grads(fn, arrays: Sequence[np.ndarray], gy=None) -> tuple[np.ndarray, ...]:
    """Gradients of sum(fn(*arrays) * gy) (of fn(...) itself when gy is None) by Paddle's
    autograd."""
    ts = [_t(a) for a in arrays]
    for t in ts:
        t.stop_gradient = False
    fn(*ts).backward(None if gy is None else _t(gy))
    return tuple(_np(t.grad) for t in ts)


def _grad_linear(x, weight, bias, gy):
    return _grads(
        lambda a, w, b: F.linear(a, paddle.transpose(w, [1, 0]), b), (x, weight, bias), gy
    )


def _grad_cross_entropy(logits, labels):
    target = paddle.to_tensor(np.asarray(labels, dtype=np.int64))
    return _grads(lambda z: F.cross_entropy(z, target), (logits,))[0]


def _native_sgd_step(module: paddle.nn.Layer, x, y, lr: float) -> np.ndarray:
    """One step of paddle.optimizer.SGD over module.parameters() on the MSE of module(x)
    against y; returns the loss."""
    opt = paddle.optimizer.SGD(learning_rate=lr, parameters=module.parameters())
    opt.clear_grad()
    loss = F.mse_loss(module(_t(x)), _t(y))
    loss.backward()
    opt.step()
    return _np(loss)


OPS: dict[str, Callable[..., np.ndarray]] = {
    "add": _binary(paddle.add),
    "subtract": _binary(paddle.subtract),
    "multiply": _binary(paddle.multiply),
    "divide": _binary(paddle.divide),
    "maximum": _binary(paddle.maximum),
    "matmul": _binary(paddle.matmul),
    "exp": _unary(paddle.exp),
    "log": _unary(paddle.log),
    "sqrt": _unary(paddle.sqrt),
    "abs": _unary(paddle.abs),
    "tanh": _unary(paddle.tanh),
    "sigmoid": _unary(F.sigmoid),
    "relu": _unary(F.relu),
    "softmax": lambda a, axis: _np(F.softmax(_float(_t(a)), axis=axis)),
    "log_softmax": lambda a, axis: _np(F.log_softmax(_float(_t(a)), axis=axis)),
    "sum": lambda a, axis, keepdims: _np(_reduce(paddle.sum, _t(a), axis, keepdims)),
    "mean": lambda a, axis, keepdims: _np(_reduce(paddle.mean, _float(_t(a)), axis, keepdims)),
    "max": lambda a, axis, keepdims: _np(_reduce(paddle.max, _t(a), axis, keepdims)),
    "argmax": lambda a, axis: _np(paddle.argmax(_t(a), axis=axis)),
    "reshape": lambda a, shape: _np(paddle.reshape(_t(a), list(shape))),
    "permute_dims": lambda a, axes: _np(paddle.transpose(_t(a), list(axes))),
    "concat": _concat,
    "stack": _stack,
    "where": lambda cond, a, b: _np(paddle.where(_t(cond), _t(a), _t(b))),
    "clip": lambda a, lo, hi: _np(paddle.clip(_t(a), lo, hi)),
    "linear": _linear,
    # gradients by Paddle's autograd (gy: the output's gradient; losses are scalars)
    "grad_linear": _grad_linear,  # -> (grad x, grad weight, grad bias)
    "grad_relu": lambda x, gy: _grads(F.relu, (x,), gy)[0],
    "grad_softmax": lambda x, axis, gy: _grads(lambda t: F.softmax(t, axis=axis), (x,), gy)[0],
    "grad_mse_loss": lambda input, target: _grads(F.mse_loss, (input, target))[0],
    "grad_cross_entropy": _grad_cross_entropy,
    # native interop: what Paddle's own tools see of net.native
    "native_parameters": lambda module: list(module.parameters()),
    "native_sgd_step": _native_sgd_step,
}
