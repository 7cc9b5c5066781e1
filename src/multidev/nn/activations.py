"""More of PyTorch's activations, as functions (``F.silu``, ``F.leaky_relu``, ...) and layers
(``nn.SiLU``, ``nn.LeakyReLU``, ...), each composed of multidev ops (one framework kernel a
step), so that every backend runs them on its own kernels and differentiates them."""

from __future__ import annotations

from typing import Any

from .. import array_api, ops
from ..dispatch import as_tensor as _tensor
from ..dispatch import call as _call
from ..dispatch import floating as _floating
from ..dispatch import wrap as _wrap
from ..tensors import Tensor
from .module import Block

__all__ = [
    "ELU",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "SiLU",
    "Softplus",
    "elu",
    "hardtanh",
    "leaky_relu",
    "logsigmoid",
    "silu",
    "softplus",
]


def _x(input: Any) -> Tensor:
    return _floating(_tensor(input))


def leaky_relu(input: Any, negative_slope: float = 0.01) -> Tensor:
    """``x`` where positive, ``negative_slope * x`` elsewhere."""
    x = _x(input)
    return ops.where(x > 0, x, x * negative_slope)


def elu(input: Any, alpha: float = 1.0) -> Tensor:
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    x = _x(input)
    return ops.where(x > 0, x, array_api.expm1(ops.minimum(x, 0.0)) * alpha)


def silu(input: Any) -> Tensor:
    """``x * sigmoid(x)`` (swish), the framework's sigmoid kernel."""
    x = _x(input)
    return x * _wrap(x, _call(x, "sigmoid", x._native), x._dtype)


def softplus(input: Any, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``
    (PyTorch's linear region). Computed as ``max(z, 0) + log1p(exp(-|z|))``, which does not
    overflow."""
    x = _x(input)
    z = x * beta
    smooth = (ops.maximum(z, 0.0) + ops.log1p(ops.exp(-ops.abs(z)))) / beta
    return ops.where(z > threshold, x, smooth)


def logsigmoid(input: Any) -> Tensor:
    """``log(sigmoid(x))`` = ``-softplus(-x)``, without overflow."""
    x = _x(input)
    return ops.minimum(x, 0.0) - ops.log1p(ops.exp(-ops.abs(x)))


def hardtanh(input: Any, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``x`` clipped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError(
            f"Expected min_val <= max_val. Received: min_val={min_val}, max_val={max_val}."
        )
    return ops.clip(_x(input), min_val, max_val)


class LeakyReLU(Block):
    """``leaky_relu`` as a layer."""

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, X: Any) -> Tensor:
        return leaky_relu(X, self.negative_slope)


class ELU(Block):
    """``elu`` as a layer."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, X: Any) -> Tensor:
        return elu(X, self.alpha)


class SiLU(Block):
    """``silu`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return silu(X)


class Softplus(Block):
    """``softplus`` as a layer."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, X: Any) -> Tensor:
        return softplus(X, self.beta, self.threshold)


class LogSigmoid(Block):
    """``logsigmoid`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return logsigmoid(X)


class Hardtanh(Block):
    """``hardtanh`` as a layer."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, X: Any) -> Tensor:
        return hardtanh(X, self.min_val, self.max_val)
