"""``LayerNorm``, ``GELU``, ``Softmax`` and ``TransformerEncoderLayer``, as in ``torch.nn``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..creation import asarray
from ..dispatch import as_tensor
from ..tensors import Tensor
from . import functional as F
from . import init
from . import sequence_functional as SF
from .attention import MultiheadAttention
from .layers import Dropout, Linear
from .module import Block, ModuleList
from .parameter import Parameter

__all__ = [
    "GELU",
    "LayerNorm",
    "RMSNorm",
    "Softmax",
    "Softmin",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]


def _normalized_shape(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    """The trailing shape a LayerNorm or RMSNorm normalises over, checked."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or any(not isinstance(s, int) or s <= 0 for s in shape):
        raise ValueError(
            f"Expected normalized_shape of positive ints. Received: {normalized_shape!r}"
        )
    return shape


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
        shape = _normalized_shape(normalized_shape)
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
        shape = _normalized_shape(normalized_shape)
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
        self.activation = _activation(activation)

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


def _activation(activation: str | Callable[[Any], Tensor]) -> Callable[[Any], Tensor]:
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(
                f"Expected activation 'relu', 'gelu' or a callable. Received: {activation!r}"
            )
        return _ACTIVATIONS[activation]
    return activation


class TransformerDecoderLayer(Block):
    """Self-attention, attention over the encoder's output (``memory``), then a feed-forward
    network, each with a residual connection and ``LayerNorm`` (after, or before with
    ``norm_first``), as ``torch.nn.TransformerDecoderLayer``."""

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
        attn = {"dropout": dropout, "bias": bias, "batch_first": batch_first, **kw}
        self.self_attn = MultiheadAttention(d_model, nhead, **attn)
        self.multihead_attn = MultiheadAttention(d_model, nhead, **attn)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self,
        tgt: Any,
        memory: Any,
        tgt_mask: Any = None,
        memory_mask: Any = None,
        tgt_key_padding_mask: Any = None,
        memory_key_padding_mask: Any = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x, mem = as_tensor(tgt), as_tensor(memory)
        causal, mem_causal = bool(tgt_is_causal), bool(memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, causal)
            x = x + self._mha_block(
                self.norm2(x), mem, memory_mask, memory_key_padding_mask, mem_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, causal))
            x = self.norm2(
                x + self._mha_block(x, mem, memory_mask, memory_key_padding_mask, mem_causal)
            )
            x = self.norm3(x + self._ff_block(x))
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

    def _mha_block(
        self, x: Tensor, mem: Tensor, mask: Any, key_padding_mask: Any, is_causal: bool
    ) -> Tensor:
        out = self.multihead_attn(
            x,
            mem,
            mem,
            attn_mask=mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout2(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Block):
    """``num_layers`` copies of ``encoder_layer`` (each starting from its values, as PyTorch
    copies it), then ``norm`` if given."""

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Block | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self, src: Any, mask: Any = None, src_key_padding_mask: Any = None, is_causal: Any = None
    ) -> Tensor:
        x = as_tensor(src)
        for layer in self.layers:
            x = layer(x, mask, src_key_padding_mask, bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Block):
    """``num_layers`` copies of ``decoder_layer``, then ``norm`` if given."""

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Block | None = None
    ) -> None:
        super().__init__()
        self.layers = ModuleList(copy.deepcopy(decoder_layer) for _ in range(num_layers))
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Any,
        memory: Any,
        tgt_mask: Any = None,
        memory_mask: Any = None,
        tgt_key_padding_mask: Any = None,
        memory_key_padding_mask: Any = None,
        tgt_is_causal: Any = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = as_tensor(tgt)
        for layer in self.layers:
            x = layer(
                x,
                memory,
                tgt_mask,
                memory_mask,
                tgt_key_padding_mask,
                memory_key_padding_mask,
                bool(tgt_is_causal),
                memory_is_causal,
            )
        return x if self.norm is None else self.norm(x)


class Transformer(Block):
    """An encoder and a decoder of ``num_encoder_layers`` and ``num_decoder_layers`` layers,
    each followed by a ``LayerNorm``, every matrix Xavier-uniform, as
    ``torch.nn.Transformer``."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Any], Tensor] = "relu",
        custom_encoder: Block | None = None,
        custom_decoder: Block | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer = {
            "dim_feedforward": dim_feedforward,
            "dropout": dropout,
            "activation": activation,
            "layer_norm_eps": layer_norm_eps,
            "batch_first": batch_first,
            "norm_first": norm_first,
            "bias": bias,
            **kw,
        }
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **layer),
            num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw),
        )
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **layer),
            num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw),
        )
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src: Any,
        tgt: Any,
        src_mask: Any = None,
        tgt_mask: Any = None,
        memory_mask: Any = None,
        src_key_padding_mask: Any = None,
        tgt_key_padding_mask: Any = None,
        memory_key_padding_mask: Any = None,
        src_is_causal: Any = None,
        tgt_is_causal: Any = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """The (sz, sz) float mask with -inf above the diagonal and 0 elsewhere: position i
        attends to positions up to i."""
        mask = np.triu(np.full((sz, sz), -np.inf, np.float32), 1)
        return asarray(mask, dtype=dtype, device=device)
