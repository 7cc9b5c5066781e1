"""More of PyTorch's activations and shape functions, as functions (``F.silu``,
``F.leaky_relu``, ``F.normalize``, ``F.pixel_shuffle``, ...) and layers (``nn.SiLU``,
``nn.LeakyReLU``, ``nn.PixelShuffle``, ...), each composed of multidev ops (one framework
kernel a step), so that every backend runs them on its own kernels and differentiates them."""

from __future__ import annotations

import math
from typing import Any

from .. import array_api, creation, linalg, ops
from ..dispatch import as_tensor as _tensor
from ..dispatch import call as _call
from ..dispatch import floating as _floating
from ..dispatch import unop as _unop
from ..dispatch import wrap as _wrap
from ..dtypes import float32
from ..tensors import Tensor
from .module import Block
from .parameter import Parameter

__all__ = [
    "CELU",
    "ELU",
    "GLU",
    "SELU",
    "CosineSimilarity",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "Mish",
    "PReLU",
    "PixelShuffle",
    "PixelUnshuffle",
    "ReLU",
    "ReLU6",
    "SiLU",
    "Softplus",
    "Softsign",
    "Tanhshrink",
    "Threshold",
    "celu",
    "cosine_similarity",
    "elu",
    "glu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "leaky_relu",
    "logsigmoid",
    "mish",
    "normalize",
    "pixel_shuffle",
    "pixel_unshuffle",
    "prelu",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "softplus",
    "softsign",
    "tanhshrink",
    "threshold",
]

#: SELU's constants (Klambauer et al., as PyTorch has them)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _x(input: Any) -> Tensor:
    return _floating(_tensor(input))


def relu(input: Any, inplace: bool = False) -> Tensor:
    """max(x, 0), elementwise, the framework's kernel. ``inplace`` is accepted as PyTorch's;
    the result is a new tensor."""
    return _unop(_tensor(input), "relu")


def leaky_relu(input: Any, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``negative_slope * x`` elsewhere."""
    x = _x(input)
    return ops.where(x > 0, x, x * negative_slope)


def elu(input: Any, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    x = _x(input)
    return ops.where(x > 0, x, array_api.expm1(ops.minimum(x, 0.0)) * alpha)


def sigmoid(input: Any) -> Tensor:
    """Elementwise logistic function ``1 / (1 + exp(-x))``, the framework's kernel."""
    x = _x(input)
    return _wrap(x, _call(x, "sigmoid", x._native), x._dtype)


def silu(input: Any, inplace: bool = False) -> Tensor:
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


def hardtanh(
    input: Any, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """``x`` clipped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError(
            f"Expected min_val <= max_val. Received: min_val={min_val}, max_val={max_val}."
        )
    return ops.clip(_x(input), min_val, max_val)


def selu(input: Any, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with SELU's fixed constants."""
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


def mish(input: Any, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    x = _x(input)
    return x * ops.tanh(softplus(x))


def relu6(input: Any, inplace: bool = False) -> Tensor:
    """``x`` clipped to [0, 6]."""
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input: Any, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``: 0 below -3, 1 above 3, linear between."""
    return relu6(_x(input) + 3.0) / 6.0


def hardswish(input: Any, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    x = _x(input)
    return x * hardsigmoid(x)


def celu(input: Any, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise ValueError("Expected a nonzero alpha for celu. Received: alpha=0.")
    x = _x(input)
    return ops.where(x > 0, x, array_api.expm1(ops.minimum(x, 0.0) / alpha) * alpha)


def softsign(input: Any) -> Tensor:
    """``x / (1 + |x|)``."""
    x = _x(input)
    return x / (ops.abs(x) + 1.0)


def tanhshrink(input: Any) -> Tensor:
    """``x - tanh(x)``."""
    x = _x(input)
    return x - ops.tanh(x)


def threshold(input: Any, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    x = _tensor(input)
    return ops.where(x > threshold, x, value)


def prelu(input: Any, weight: Any) -> Tensor:
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` has one element, or one per
    channel (dimension 1 of ``input``)."""
    x = _x(input)
    w = _tensor(weight, x)
    if w.ndim != 1 or (w.shape[0] != 1 and (x.ndim < 2 or w.shape[0] != x.shape[1])):
        raise ValueError(
            "Expected a 1-D weight of one element or of the input's channel count (dimension "
            f"1) for prelu. Received: weight of shape {w.shape} for input of shape {x.shape}."
        )
    if x.ndim >= 2:
        w = ops.reshape(w, (w.shape[0],) + (1,) * (x.ndim - 2))
    return ops.where(x > 0, x, x * w)


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


class _InPlace(Block):
    """A layer with PyTorch's ``inplace`` flag, accepted and printed; the result is a new
    tensor and the input keeps its values (as code that uses the layer's result expects)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def _flag(self) -> str:
        return ", inplace=True" if self.inplace else ""

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_InPlace):
    """max(x, 0), elementwise."""

    def forward(self, X: Any) -> Tensor:
        return relu(X)


class LeakyReLU(_InPlace):
    """``leaky_relu`` as a layer."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def forward(self, X: Any) -> Tensor:
        return leaky_relu(X, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{self._flag()}"


class ELU(_InPlace):
    """``elu`` as a layer."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, X: Any) -> Tensor:
        return elu(X, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{self._flag()}"


class CELU(ELU):
    """``celu`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return celu(X, self.alpha)


class SiLU(_InPlace):
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

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class LogSigmoid(Block):
    """``logsigmoid`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return logsigmoid(X)


class Hardtanh(_InPlace):
    """``hardtanh`` as a layer."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, X: Any) -> Tensor:
        return hardtanh(X, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{self._flag()}"


class ReLU6(Hardtanh):
    """``relu6`` as a layer."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _InPlace.extra_repr(self)


class SELU(_InPlace):
    """``selu`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return selu(X)


class Mish(_InPlace):
    """``mish`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return mish(X)


class Hardsigmoid(_InPlace):
    """``hardsigmoid`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return hardsigmoid(X)


class Hardswish(_InPlace):
    """``hardswish`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return hardswish(X)


class Softsign(Block):
    """``softsign`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return softsign(X)


class Tanhshrink(Block):
    """``tanhshrink`` as a layer."""

    def forward(self, X: Any) -> Tensor:
        return tanhshrink(X)


class Threshold(_InPlace):
    """``threshold`` as a layer."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.threshold = threshold
        self.value = value

    def forward(self, X: Any) -> Tensor:
        return threshold(X, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{self._flag()}"


class PReLU(Block):
    """``prelu`` with a learned slope: ``num_parameters`` of them (1, or the input's channel
    count), each starting at ``init``."""

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        value = creation.full((num_parameters,), init, dtype=dtype or float32, device=device)
        self.weight = Parameter(value)

    def forward(self, X: Any) -> Tensor:
        return prelu(X, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(Block):
    """``glu`` as a layer."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, X: Any) -> Tensor:
        return glu(X, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


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

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Block):
    """``pixel_unshuffle`` as a layer."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = _upscale(downscale_factor, "downscale_factor")

    def forward(self, X: Any) -> Tensor:
        return pixel_unshuffle(X, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
