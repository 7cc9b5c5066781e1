"""Expected values for the conformance suite written directly in NumPy (not through multidev's
op table): the NumPy backend's own reference, the same entries as every adapter's. Integer
input to ops defined on floating point only (mean, softmax, log_softmax) is computed in
float32, as multidev does. The ``grad_*`` entries are the gradients worked out by hand; the
native-module entries exist only where a framework has modules and autograd (not NumPy)."""

from __future__ import annotations

import numpy as np

from multidev.testing.reference import native_table

__all__ = ["OPS"]


def _float(a: np.ndarray) -> np.ndarray:
    return a if a.dtype.kind == "f" else a.astype(np.float32)


def _softmax(a: np.ndarray, axis: int) -> np.ndarray:
    a = _float(a)
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(a: np.ndarray, axis: int) -> np.ndarray:
    a = _float(a)
    shifted = a - a.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    y = x @ w.T
    return y if b is None else y + b


def _grad_linear(x, w, b, gy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """d sum(linear(x, w, b) * gy) / d(x, w, b) for a 2-d x."""
    return gy @ w, gy.T @ x, gy.sum(axis=0)


def _grad_softmax(x: np.ndarray, axis: int, gy: np.ndarray) -> np.ndarray:
    s = _softmax(x, axis)
    return s * (gy - (gy * s).sum(axis=axis, keepdims=True))


def _grad_cross_entropy(z: np.ndarray, labels) -> np.ndarray:
    """d mean_i(-log_softmax(z)[i, labels[i]]) / dz."""
    onehot = np.zeros_like(z)
    onehot[np.arange(z.shape[0]), np.asarray(labels, dtype=np.int64)] = 1
    return (_softmax(z, 1) - onehot) / z.shape[0]


OPS = native_table(
    np.asarray,
    np.asarray,
    {
        "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
        "relu": lambda a: np.maximum(a, 0),
        "softmax": _softmax,
        "log_softmax": _log_softmax,
        "sum": lambda a, axis, keepdims: np.sum(a, axis=_axis(axis), keepdims=keepdims),
        "mean": lambda a, axis, keepdims: np.mean(_float(a), axis=_axis(axis), keepdims=keepdims),
        "max": lambda a, axis, keepdims: np.max(a, axis=_axis(axis), keepdims=keepdims),
        "argmax": lambda a, axis: np.argmax(a, axis=axis),
        "reshape": lambda a, shape: np.reshape(a, tuple(shape)),
        "permute_dims": lambda a, axes: np.transpose(a, tuple(axes)),
        "concat": lambda xs, axis: np.concatenate(xs, axis=axis),
        "stack": lambda xs, axis: np.stack(xs, axis=axis),
        "where": np.where,
        "clip": np.clip,
        "linear": _linear,
        "grad_linear": _grad_linear,
        "grad_relu": lambda x, gy: gy * (x > 0),
        "grad_softmax": _grad_softmax,
        "grad_mse_loss": lambda a, b: 2 * (a - b) / a.size,
        "grad_cross_entropy": _grad_cross_entropy,
    },
    np,
)
