"""``LayerNorm``, ``GELU``, ``Softmax`` and ``TransformerEncoderLayer``, as in ``torch.nn``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..creation import asarray
from ..dispatch import as_tensor
from ..tensors import Tensor
from . import functional as F
from . import sequence_functional as SF
from .attention import MultiheadAttention
from .layers import Dropout, Linear
from .module import Block
from .parameter import Parameter

__all__ = ["GELU", "LayerNorm", "RMSNorm", "Softmax", "Softmin", "TransformerEncoderLayer"]


class LayerNorm(Block):
    """Normalise over the last axes (``normalized_shape``), then scale and shift.

    ``weight`` starts at ones and ``bias`` at zeros, as in PyTorch.
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        if not shape or any(not isinstance(s, int) or s <= 0 for s in shape):
            raise ValueError(
                f"Expected normalized_shape of positive ints. Received: {normalized_shape!r}"
            )
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(asarray(np.ones(shape, np.float32), dtype=dtype, device=device))
            if bias:
                zeros = np.zeros(shape, np.float32)
                self.bias = Parameter(asarray(zeros, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Any) -> Tensor:
        return SF.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class RMSNorm(Block):
    """Divide by the root mean square over the last axes (``normalized_shape``), then scale;
    ``weight`` starts at ones and ``eps`` None is the dtype's machine epsilon, as in
    PyTorch."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        if not shape or any(not isinstance(s, int) or s <= 0 for s in shape):
            raise ValueError(
                f"Expected normalized_shape of positive ints. Received: {normalized_shape!r}"
            )
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(asarray(np.ones(shape, np.float32), dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, input: Any) -> Tensor:
        return SF.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class GELU(Block):
    """x·Φ(x) (``approximate="none"``) or its tanh approximation (``"tanh"``)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"Expected approximate 'none' or 'tanh'. Received: {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Any) -> Tensor:
        return SF.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Block):
    """softmax along ``dim``; with ``dim=None``, PyTorch's legacy choice (0 for 0-, 1- and
    3-D input, else 1)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Any) -> Tensor:
        x = as_tensor(input)
        dim = self.dim
        if dim is None:
            dim = 0 if x.ndim in (0, 1, 3) else 1
        return F.softmax(x, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Softmax):
    """softmin along ``dim`` (``dim=None`` as ``Softmax``'s)."""

    def forward(self, input: Any) -> Tensor:
        return super().forward(-as_tensor(input))


_ACTIVATIONS: dict[str, Callable[[Any], Tensor]] = {"relu": F.relu, "gelu": SF.gelu}


class TransformerEncoderLayer(Block):
    """Self-attention then a feed-forward network, each with a residual connection and
    ``LayerNorm`` (after, or before with ``norm_first``), as ``torch.nn.TransformerEncoderLayer``.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Any], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(
                    f"Expected activation 'relu', 'gelu' or a callable. Received: {activation!r}"
                )
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def forward(
        self,
        src: Any,
        src_mask: Any = None,
        src_key_padding_mask: Any = None,
        is_causal: bool = False,
    ) -> Tensor:
        x = as_tensor(src)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, mask: Any, key_padding_mask: Any, is_causal: bool) -> Tensor:
        out = self.self_attn(
            x,
            x,
            x,
            attn_mask=mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))
