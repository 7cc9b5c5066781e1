"""More of PyTorch's activations and shape functions, as functions (``F.silu``,
``F.leaky_relu``, ``F.normalize``, ``F.pixel_shuffle``, ...) and layers (``nn.SiLU``,
``nn.LeakyReLU``, ``nn.PixelShuffle``, ...), each composed of multidev ops (one framework
kernel a step), so that every backend runs them on its own kernels and differentiates them."""

from __future__ import annotations

import math
from typing import Any

from .. import array_api, linalg, ops
from ..dispatch import as_tensor as _tensor
from ..dispatch import call as _call
from ..dispatch import floating as _floating
from ..dispatch import wrap as _wrap
from ..tensors import Tensor
from .module import Block

__all__ = [
    "ELU",
    "GLU",
    "SELU",
    "CosineSimilarity",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "Mish",
    "PixelShuffle",
    "PixelUnshuffle",
    "SiLU",
    "Softplus",
    "cosine_similarity",
    "elu",
    "glu",
    "hardtanh",
    "leaky_relu",
    "logsigmoid",
    "mish",
    "normalize",
    "pixel_shuffle",
    "pixel_unshuffle",
    "selu",
    "sigmoid",
    "silu",
    "softplus",
]

#: SELU's constants (Klambauer et al., as PyTorch has them)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


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


def sigmoid(input: Any) -> Tensor:
    """Elementwise logistic function ``1 / (1 + exp(-x))``, the framework's kernel."""
    x = _x(input)
    return _wrap(x, _call(x, "sigmoid", x._native), x._dtype)


def silu(input: Any) -> Tensor:
    """``x * sigmoid(x)`` (swish)."""
    x = _x(input)
    return x * sigmoid(x)


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


def selu(input: Any) -> Tensor:
    """``scale * elu(x, alpha)`` with SELU's fixed constants."""
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


def mish(input: Any) -> Tensor:
    """``x * tanh(softplus(x))``."""
    x = _x(input)
    return x * ops.tanh(softplus(x))


def glu(input: Any, dim: int = -1) -> Tensor:
    """The gated linear unit: ``a * sigmoid(b)`` for the two halves ``a``, ``b`` of ``input``
    along ``dim``, whose size must be even."""
    x = _x(input)
    size = x.shape[dim] if x.ndim else 0
    if size % 2 or not size:
        raise ValueError(
            f"Expected an even size along dim {dim} to split in halves. Received: shape {x.shape}."
        )
    axis = dim % x.ndim
    a = x[(slice(None),) * axis + (slice(0, size // 2),)]
    b = x[(slice(None),) * axis + (slice(size // 2, size),)]
    return a * sigmoid(b)


def normalize(input: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``: each slice scaled to unit p-norm."""
    x = _x(input)
    norm = linalg.vector_norm(x, axis=dim, keepdims=True, ord=p)
    return x / ops.maximum(norm, eps)


def cosine_similarity(x1: Any, x2: Any, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between ``x1`` and ``x2`` (broadcast together) along ``dim``:
    ``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))``, as PyTorch computes it."""
    a, b = _x(x1), _x(_tensor(x2, x1))
    a, b = array_api.broadcast_arrays(a, b)
    return ops.sum(normalize(a, 2.0, dim, eps) * normalize(b, 2.0, dim, eps), axis=dim)


def _upscale(r: Any, what: str) -> int:
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ValueError(f"Expected a positive integer {what}. Received: {r!r}.")
    return r


def pixel_shuffle(input: Any, upscale_factor: int) -> Tensor:
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r): each group of r * r channels becomes an
    r x r block of pixels (sub-pixel convolution's upsampling)."""
    x, r = _tensor(input), _upscale(upscale_factor, "upscale_factor")
    if x.ndim < 3 or x.shape[-3] % (r * r):
        raise ValueError(
            f"Expected (*, C * {r * r}, H, W): at least 3 dimensions, channels divisible by "
            f"upscale_factor**2 = {r * r}. Received: shape {x.shape}."
        )
    *lead, c, h, w = x.shape
    # the leading dimensions as one: six in the transpose, MXNet's most
    y = ops.reshape(x, (math.prod(lead), c // (r * r), r, r, h, w))
    y = ops.permute_dims(y, (0, 1, 4, 2, 5, 3))
    return ops.reshape(y, (*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Any, downscale_factor: int) -> Tensor:
    """The inverse of ``pixel_shuffle``: (*, C, H * r, W * r) -> (*, C * r * r, H, W)."""
    x, r = _tensor(input), _upscale(downscale_factor, "downscale_factor")
    if x.ndim < 3 or x.shape[-2] % r or x.shape[-1] % r:
        raise ValueError(
            f"Expected (*, C, H, W) with H and W divisible by downscale_factor = {r}. "
            f"Received: shape {x.shape}."
        )
    *lead, c, h, w = x.shape
    y = ops.reshape(x, (math.prod(lead), c, h // r, r, w // r, r))
    y = ops.permute_dims(y, (0, 1, 3, 5, 2, 4))
    return ops.reshape(y, (*lead, c * r * r, h // r, w // r))


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


class SELU(Block):
    """``selu`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return selu(X)


class Mish(Block):
    """``mish`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return mish(X)


class GLU(Block):
    """``glu`` as a layer."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, X: Any) -> Tensor:
        return glu(X, self.dim)


class CosineSimilarity(Block):
    """``cosine_similarity`` as a layer."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Any, x2: Any) -> Tensor:
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PixelShuffle(Block):
    """``pixel_shuffle`` as a layer."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = _upscale(upscale_factor, "upscale_factor")

    def forward(self, X: Any) -> Tensor:
        return pixel_shuffle(X, self.upscale_factor)


class PixelUnshuffle(Block):
    """``pixel_unshuffle`` as a layer."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = _upscale(downscale_factor, "downscale_factor")

    def forward(self, X: Any) -> Tensor:
        return pixel_unshuffle(X, self.downscale_factor)
