"""Activation functions and losses on md Tensors."""

from __future__ import annotations

from ..ops import _call, _floating, _tensor, _wrap
from ..tensor import Tensor

__all__ = ["log_softmax", "relu", "sigmoid", "softmax", "tanh"]


def relu(x) -> Tensor:
    """max(x, 0), elementwise."""
    x = _tensor(x)
    return _wrap(x, _call(x, "relu", x._native), x._dtype)


def sigmoid(x) -> Tensor:
    x = _floating(_tensor(x))
    return _wrap(x, _call(x, "sigmoid", x._native), x._dtype)


def tanh(x) -> Tensor:
    x = _floating(_tensor(x))
    return _wrap(x, _call(x, "tanh", x._native), x._dtype)


def softmax(x, dim: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed stably."""
    x = _floating(_tensor(x))
    return _wrap(x, _call(x, "softmax", x._native, dim % max(x.ndim, 1)), x._dtype)


def log_softmax(x, dim: int = -1) -> Tensor:
    x = _floating(_tensor(x))
    return _wrap(x, _call(x, "log_softmax", x._native, dim % max(x.ndim, 1)), x._dtype)
