"""Expected values for the conformance suite, computed with PyTorch's own API (not through
multidev). Integer input to ops defined on floating point only (mean, softmax, log_softmax)
is computed in float32, as multidev does."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch
import torch.nn.functional as F

from multidev.testing.reference import native_table

from .cnn_reference import CNN_OPS
from .sequence_reference import SEQUENCE_OPS

__all__ = ["OPS"]

_BF16 = np.dtype(ml_dtypes.bfloat16)


def _t(a: np.ndarray) -> torch.Tensor:
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


def _reduce(fn, t: torch.Tensor, axis, keepdims: bool) -> torch.Tensor:
    if axis is None:
        return fn(t, dim=tuple(range(t.dim())), keepdim=True) if keepdims else fn(t)
    if isinstance(axis, (list, tuple)) and not axis:  # reduce over no axis: the input itself
        return t
    return fn(t, dim=tuple(axis) if isinstance(axis, (list, tuple)) else axis, keepdim=keepdims)


def _grads(fn, ts, gy=None) -> tuple[torch.Tensor, ...]:
    """Gradients of sum(fn(*ts) * gy) (of fn(...) itself when gy is None) by torch.autograd."""
    ts = [t.requires_grad_() for t in ts]
    fn(*ts).backward(gy)
    return tuple(t.grad for t in ts)


def _native_sgd_step(module: torch.nn.Module, x, y, lr: float) -> torch.Tensor:
    """One step of torch.optim.SGD on the MSE of module(x) against y; returns the loss."""
    opt = torch.optim.SGD(module.parameters(), lr=lr)
    opt.zero_grad()
    loss = F.mse_loss(module(x), y)
    loss.backward()
    opt.step()
    return loss


OPS = native_table(
    _t,
    _np,
    {
        "sigmoid": torch.sigmoid,
        "relu": torch.relu,
        "softmax": lambda t, axis: torch.softmax(_float(t), dim=axis),
        "log_softmax": lambda t, axis: torch.log_softmax(_float(t), dim=axis),
        "sum": lambda t, axis, keepdims: _reduce(torch.sum, t, axis, keepdims),
        "mean": lambda t, axis, keepdims: _reduce(torch.mean, _float(t), axis, keepdims),
        "max": lambda t, axis, keepdims: _reduce(torch.amax, t, axis, keepdims),
        "argmax": lambda t, axis: torch.argmax(t, dim=axis),
        "reshape": lambda t, shape: torch.reshape(t, tuple(shape)),
        "permute_dims": lambda t, axes: torch.permute(t, tuple(axes)),
        "concat": lambda ts, axis: torch.cat(ts, dim=axis),
        "stack": lambda ts, axis: torch.stack(ts, dim=axis),
        "where": torch.where,
        "clip": torch.clamp,
        "linear": F.linear,
        "conv2d": lambda x, w, b, s, p, d, g: F.conv2d(x, w, b, s, p, d, g),
        "max_pool2d_indices": lambda x, k, s, p, d, ceil: F.max_pool2d(
            x, k, s, p, d, ceil, return_indices=True
        ),
        "pad": lambda x, pad, mode: F.pad(x, pad, mode=mode),
        # gradients by torch.autograd (gy: the output's gradient; losses are scalars)
        "grad_linear": lambda x, w, b, gy: _grads(F.linear, (x, w, b), gy),
        "grad_relu": lambda x, gy: _grads(torch.relu, (x,), gy)[0],
        "grad_softmax": lambda x, axis, gy: _grads(lambda t: torch.softmax(t, axis), (x,), gy)[0],
        "grad_mse_loss": lambda a, b: _grads(F.mse_loss, (a, b))[0],
        "grad_cross_entropy": lambda z, labels: _grads(
            lambda t: F.cross_entropy(t, torch.as_tensor(labels).to(torch.int64)), (z,)
        )[0],
        # native interop: what torch's own tools see of net.native
        "native_parameters": lambda module: list(module.parameters()),
        "native_sgd_step": _native_sgd_step,
    },
    torch,
)

OPS.update(native_table(_t, _np, SEQUENCE_OPS))
OPS.update(native_table(_t, _np, CNN_OPS))
