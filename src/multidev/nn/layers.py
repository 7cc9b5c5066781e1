"""Layers: ``Linear``, ``LazyLinear``, activations, ``Flatten`` and ``Dropout``."""

from __future__ import annotations

import math
from typing import Any

from .. import ops
from ..creation import asarray
from ..dispatch import as_tensor
from ..tensors import Tensor
from . import functional as F
from . import init
from .module import Block
from .parameter import Parameter, UninitializedParameter

__all__ = [
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "Flatten",
    "LazyLinear",
    "Linear",
    "LogSoftmax",
    "Sigmoid",
    "Tanh",
    "Unflatten",
]

_SQRT5 = math.sqrt(5)


def _check_features(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"Expected a non-negative int for {name}. Received: {value!r}")
    return value


class Linear(Block):
    """``y = x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features).

    Initialised as in PyTorch: weight from ``kaiming_uniform_(a=sqrt(5))``, i.e.
    U(-1/sqrt(in_features), 1/sqrt(in_features)), then bias from the same range, drawn in that
    order from multidev's host generator.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.in_features = _check_features("in_features", in_features)
        self.out_features = _check_features("out_features", out_features)
        w = init.kaiming_uniform_sample((out_features, in_features), a=_SQRT5)
        self.weight = Parameter(asarray(w, dtype=dtype, device=device))
        if bias:
            b = init.bias_uniform_sample((out_features,), in_features)
            self.bias = Parameter(asarray(b, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """Draw new values with the default initialisation."""
        init.kaiming_uniform_(self.weight, a=_SQRT5)
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, X: Any) -> Tensor:
        return F.linear(X, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class LazyLinear(Linear):
    """A ``Linear`` whose ``in_features`` is inferred from its first input's last dimension.

    Until that first call its parameters are uninitialised (``p.initialized`` is False and
    reading them raises ``md.DeferredInitializationError``); the call materialises them with
    the default initialisation, runs any ``nn.init`` function applied to them meanwhile, and
    the layer becomes a plain ``Linear``.
    """

    _lazy = True
    cls_to_become = Linear

    def __init__(
        self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        Block.__init__(self)
        self.in_features = 0
        self.out_features = _check_features("out_features", out_features)
        self.weight = UninitializedParameter(dtype=dtype, device=device)
        if bias:
            self.bias = UninitializedParameter(dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)

    def initialize_parameters(self, X: Any, *args: Any, **kwargs: Any) -> None:
        w = self.weight
        if not isinstance(w, UninitializedParameter):
            self.in_features = w.shape[1]
        else:
            shape = X.shape if isinstance(X, Tensor) else as_tensor(X).shape
            if not shape:
                raise ValueError(
                    "Expected an input with at least one dimension to infer in_features. "
                    "Received: a 0-d tensor"
                )
            self.in_features = in_features = shape[-1]
            w._materialize(init.kaiming_uniform_sample((self.out_features, in_features), a=_SQRT5))
        b = self.bias
        if isinstance(b, UninitializedParameter):
            b._materialize(init.bias_uniform_sample((self.out_features,), self.in_features))

    def lazy_parameter_shapes(
        self, loaded: dict[str, tuple[int, ...]]
    ) -> dict[str, tuple[int | str, ...]]:
        """What ``load_state_dict`` may put into the uninitialised parameters: a weight of
        ``(out_features, in_features)`` for any ``in_features``, and a bias of
        ``(out_features,)``."""
        w = self.weight
        if w.initialized:
            in_features: int | str = w.shape[1]
        else:
            got = loaded.get("weight")
            in_features = got[1] if got is not None and len(got) == 2 else "in_features"
        return {"weight": (self.out_features, in_features), "bias": (self.out_features,)}

    def reset_parameters(self) -> None:
        if self.weight.initialized:
            super().reset_parameters()


class Sigmoid(Block):
    def forward(self, X: Any) -> Tensor:
        return F.sigmoid(X)


class Tanh(Block):
    def forward(self, X: Any) -> Tensor:
        return F.tanh(X)


class Flatten(Block):
    """Merge dimensions ``start_dim`` … ``end_dim`` into one (by default all but the batch)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, X: Any) -> Tensor:
        return ops.flatten(X, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Block):
    """Split dimension ``dim`` into ``unflattened_size`` (one entry may be -1)."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, X: Any) -> Tensor:
        x = as_tensor(X)
        d = self.dim % x.ndim if -x.ndim <= self.dim < x.ndim else self.dim
        if not 0 <= d < x.ndim:
            raise ValueError(
                f"Expected dim in [-{x.ndim}, {x.ndim}) for Unflatten. Received: dim={self.dim} "
                f"for input of shape {x.shape}"
            )
        return ops.reshape(x, (*x.shape[:d], *self.unflattened_size, *x.shape[d + 1 :]))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Unfold(Block):
    """``F.unfold`` as a layer: sliding blocks as columns."""

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = (
            kernel_size,
            dilation,
            padding,
            stride,
        )

    def forward(self, X: Any) -> Tensor:
        return F.unfold(X, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
            f"stride={self.stride}"
        )


class Fold(Unfold):
    """``F.fold`` as a layer: columns summed back into an image of ``output_size``."""

    def __init__(
        self,
        output_size: Any,
        kernel_size: Any,
        dilation: Any = 1,
        padding: Any = 0,
        stride: Any = 1,
    ) -> None:
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, X: Any) -> Tensor:
        return F.fold(
            X, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, {super().extra_repr()}"


class Dropout(Block):
    """During training, zero each element with probability ``p`` and scale the rest by
    1 / (1 - p); in ``eval()`` mode, pass the input through unchanged."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Expected a dropout probability in [0, 1]. Received: {p!r}")
        self.p = p
        self.inplace = inplace

    def forward(self, X: Any) -> Tensor:
        return F.dropout(X, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class LogSoftmax(Block):
    """``log_softmax`` as a layer."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, X: Any) -> Tensor:
        return F.log_softmax(X, self.dim)


class Dropout1d(Dropout):
    """``F.dropout1d`` in training, the identity in ``eval()``: whole channels of (N, C, L)."""

    def forward(self, X: Any) -> Tensor:
        return F.dropout1d(X, self.p, self.training)


class Dropout2d(Dropout):
    """``F.dropout2d`` in training, the identity in ``eval()``: whole channels of (N, C, H, W)."""

    def forward(self, X: Any) -> Tensor:
        return F.dropout2d(X, self.p, self.training)


class Dropout3d(Dropout):
    """``F.dropout3d`` in training, the identity in ``eval()``: whole channels of 3-D maps."""

    def forward(self, X: Any) -> Tensor:
        return F.dropout3d(X, self.p, self.training)
