"""Expected values for the conformance suite, computed with PyTorch's own API.

Each entry takes NumPy arrays and returns a NumPy array; nothing here goes through multidev.
Integer input to ops defined on floating point only (mean, softmax, log_softmax) is computed
in float32, as multidev does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["OPS"]

_BF16 = np.dtype(ml_dtypes.bfloat16)


def _t(a) -> torch.Tensor:
    arr = np.array(a)  # a writable, C-contiguous copy that torch may alias
    if arr.dtype == _BF16:
        return torch.from_numpy(arr.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(arr)


def _np(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype is torch.bfloat16:
        return t.view(torch.int16).numpy().view(_BF16)
    return t.numpy()


def _float(t: torch.Tensor) -> torch.Tensor:
    return t if t.is_floating_point() else t.to(torch.float32)


def _dims(axis) -> tuple[int, ...] | int | None:
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


def _reduce(fn, t: torch.Tensor, axis, keepdims: bool) -> torch.Tensor:
    if axis is None:
        return fn(t, dim=tuple(range(t.dim())), keepdim=True) if keepdims else fn(t)
    if isinstance(axis, (list, tuple)) and not axis:  # reduce over no axis: the input itself
        return t
    return fn(t, dim=_dims(axis), keepdim=keepdims)


def _unary(fn) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: _np(fn(_t(a)))


def _binary(fn) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda a, b: _np(fn(_t(a), _t(b)))


def _linear(x, weight, bias) -> np.ndarray:
    return _np(F.linear(_t(x), _t(weight), None if bias is None else _t(bias)))


def _concat(arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
    return _np(torch.cat([_t(a) for a in arrays], dim=axis))


def _stack(arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
    return _np(torch.stack([_t(a) for a in arrays], dim=axis))


def _grads(fn, arrays: Sequence[np.ndarray], gy=None) -> tuple[np.ndarray, ...]:
    """Gradients of sum(fn(*arrays) * gy) (of fn(...) itself when gy is None) by torch.autograd."""
    ts = [_t(a).requires_grad_() for a in arrays]
    fn(*ts).backward(None if gy is None else _t(gy))
    return tuple(_np(t.grad) for t in ts)


def _grad_linear(x, weight, bias, gy):
    return _grads(F.linear, (x, weight, bias), gy)


def _grad_softmax(x, axis, gy):
    return _grads(lambda t: torch.softmax(t, dim=axis), (x,), gy)[0]


def _grad_cross_entropy(logits, labels):
    target = torch.from_numpy(np.asarray(labels, dtype=np.int64))
    return _grads(lambda t: F.cross_entropy(t, target), (logits,))[0]


def _native_sgd_step(module: torch.nn.Module, x, y, lr: float) -> np.ndarray:
    """One step of torch.optim.SGD on the MSE of module(x) against y; returns the loss."""
    opt = torch.optim.SGD(module.parameters(), lr=lr)
    opt.zero_grad()
    loss = F.mse_loss(module(_t(x)), _t(y))
    loss.backward()
    opt.step()
    return _np(loss)


OPS: dict[str, Callable[..., np.ndarray]] = {
    "add": _binary(torch.add),
    "subtract": _binary(torch.sub),
    "multiply": _binary(torch.mul),
    "divide": _binary(torch.div),
    "maximum": _binary(torch.maximum),
    "matmul": _binary(torch.matmul),
    "exp": _unary(torch.exp),
    "log": _unary(torch.log),
    "sqrt": _unary(torch.sqrt),
    "abs": _unary(torch.abs),
    "tanh": _unary(torch.tanh),
    "sigmoid": _unary(torch.sigmoid),
    "relu": _unary(torch.relu),
    "softmax": lambda a, axis: _np(torch.softmax(_float(_t(a)), dim=axis)),
    "log_softmax": lambda a, axis: _np(torch.log_softmax(_float(_t(a)), dim=axis)),
    "sum": lambda a, axis, keepdims: _np(_reduce(torch.sum, _t(a), axis, keepdims)),
    "mean": lambda a, axis, keepdims: _np(_reduce(torch.mean, _float(_t(a)), axis, keepdims)),
    "max": lambda a, axis, keepdims: _np(_reduce(torch.amax, _t(a), axis, keepdims)),
    "argmax": lambda a, axis: _np(torch.argmax(_t(a), dim=axis)),
    "reshape": lambda a, shape: _np(torch.reshape(_t(a), tuple(shape))),
    "permute_dims": lambda a, axes: _np(torch.permute(_t(a), tuple(axes))),
    "concat": _concat,
    "stack": _stack,
    "where": lambda cond, a, b: _np(torch.where(_t(cond), _t(a), _t(b))),
    "clip": lambda a, lo, hi: _np(torch.clamp(_t(a), lo, hi)),
    "linear": _linear,
    # gradients by torch.autograd (gy: the output's gradient; losses are scalars)
    "grad_linear": _grad_linear,  # -> (grad x, grad weight, grad bias)
    "grad_relu": lambda x, gy: _grads(torch.relu, (x,), gy)[0],
    "grad_softmax": _grad_softmax,
    "grad_mse_loss": lambda input, target: _grads(F.mse_loss, (input, target))[0],
    "grad_cross_entropy": _grad_cross_entropy,
    # native interop: what torch's own tools see of net.native
    "native_parameters": lambda module: list(module.parameters()),
    "native_sgd_step": _native_sgd_step,
}
