"""``MultiheadAttention``, as ``torch.nn.MultiheadAttention``: the same arguments, parameters
(``in_proj_weight``, ``in_proj_bias``, ``out_proj``), masks, returned weights and printing."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..creation import asarray
from ..dispatch import as_tensor
from ..errors import ShapeError
from ..random import host_uniform
from ..tensors import Tensor
from . import functional as F
from . import sequence_functional as SF
from .layers import Linear
from .module import Block
from .parameter import Parameter

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under the name PyTorch gives ``MultiheadAttention.out_proj``."""


def _additive(mask: Any, like: Tensor, what: str) -> Tensor:
    """A bool mask (True = masked out) or a float mask as a float mask added to the scores."""
    m = as_tensor(mask, like)
    if m._dtype is _dt.bool:
        ninf = as_tensor(np.full((), -np.inf, like._dtype.numpy), like)
        zero = as_tensor(np.zeros((), like._dtype.numpy), like)
        return ops.where(m, ninf, zero)
    if m._dtype.kind != "f":
        raise TypeError(f"Expected a bool or floating {what}. Received: dtype {m._dtype}")
    return m if m._dtype is like._dtype else ops.astype(m, like._dtype)


class MultiheadAttention(Block):
    """Attention with ``num_heads`` heads over ``embed_dim`` features.

    Initialised as in PyTorch: ``in_proj_weight`` (3·embed_dim, embed_dim) Xavier-uniform,
    ``in_proj_bias`` and ``out_proj.bias`` zero, ``out_proj.weight`` as a ``Linear``'s. With
    ``kdim`` or ``vdim`` other than ``embed_dim`` the projections are separate parameters,
    ``q_proj_weight`` (E, E), ``k_proj_weight`` (E, kdim) and ``v_proj_weight`` (E, vdim),
    each Xavier-uniform, and ``in_proj_weight`` is None. ``add_bias_kv`` and
    ``add_zero_attn`` are not supported.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(
                "Expected positive embed_dim divisible by num_heads. Received: "
                f"embed_dim={embed_dim}, num_heads={num_heads}"
            )
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError(
                "Expected add_bias_kv=False and add_zero_attn=False. Received: "
                f"add_bias_kv={add_bias_kv}, add_zero_attn={add_zero_attn}"
            )
        for name, dim in (("kdim", kdim), ("vdim", vdim)):
            if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0):
                raise ValueError(f"Expected a positive int or None for {name}. Received: {dim!r}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"Expected a dropout probability in [0, 1]. Received: {dropout}")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = float(dropout)
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        # out_proj is built (drawing a Linear's weight) before in_proj_weight, as in PyTorch
        out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, device=device, dtype=dtype
        )
        if self._qkv_same_embed_dim:
            bound = math.sqrt(6.0 / (embed_dim + 3 * embed_dim))
            w = host_uniform((3 * embed_dim, embed_dim), -bound, bound)
            self.in_proj_weight = Parameter(asarray(w, dtype=dtype, device=device))
        else:  # separate projections (Xavier-uniform each), as PyTorch for kdim/vdim != embed_dim
            for name, dim in (("q", embed_dim), ("k", self.kdim), ("v", self.vdim)):
                bound = math.sqrt(6.0 / (embed_dim + dim))
                w = host_uniform((embed_dim, dim), -bound, bound)
                setattr(
                    self, f"{name}_proj_weight", Parameter(asarray(w, dtype=dtype, device=device))
                )
            self.register_parameter("in_proj_weight", None)
        if bias:
            zeros = np.zeros(3 * embed_dim, np.float32)
            self.in_proj_bias = Parameter(asarray(zeros, dtype=dtype, device=device))
            out_proj.bias = Parameter(
                asarray(np.zeros(embed_dim, np.float32), dtype=dtype, device=device)
            )
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = out_proj
        self.add_zero_attn = False
        self.bias_k = self.bias_v = None

    def forward(
        self,
        query: Any,
        key: Any,
        value: Any,
        key_padding_mask: Any = None,
        need_weights: bool = True,
        attn_mask: Any = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Returns (attn_output, attn_weights or None) in the layout of ``query``.

        Masks: ``key_padding_mask`` (N, S) and ``attn_mask`` (L, S) or (N·num_heads, L, S),
        bool (True = not attended) or float (added to the scores). ``is_causal`` with no
        ``attn_mask`` masks out keys after each query.
        """
        q, k, v = as_tensor(query), as_tensor(key), as_tensor(value)
        shapes = (q.shape, k.shape, v.shape)
        unbatched = q.ndim == 2
        if q.ndim not in (2, 3) or k.ndim != q.ndim or v.ndim != q.ndim:
            raise ValueError(
                "Expected query, key and value all 3-D (batched) or all 2-D (unbatched). "
                f"Received: shapes {q.shape}, {k.shape}, {v.shape}"
            )
        for name, t, dim in (
            ("query", q, self.embed_dim),
            ("key", k, self.kdim),
            ("value", v, self.vdim),
        ):
            if t.shape[-1] != dim:
                raise ValueError(
                    f"Expected {name} with {dim} features (last axis). Received: {t.shape}"
                )
        if unbatched:
            q, k, v = (ops.expand_dims(t, 0) for t in (q, k, v))
            if key_padding_mask is not None:
                key_padding_mask = ops.expand_dims(as_tensor(key_padding_mask, q), 0)
        elif not self.batch_first:
            q, k, v = (ops.transpose(t, 0, 1) for t in (q, k, v))
        N, L, E = q.shape
        S = k.shape[1]
        if k.shape[:2] != v.shape[:2] or k.shape[0] != N:
            raise ShapeError(
                "Expected key and value of one length (one value per key) and query, key and "
                f"value of one batch size. Received: shapes {', '.join(map(str, shapes))} "
                "(query, key, value).",
                op="MultiheadAttention",
                shapes=shapes,
            )
        h, d = self.num_heads, self.head_dim
        b = self.in_proj_bias
        bs = (None, None, None) if b is None else (b[:E], b[E : 2 * E], b[2 * E :])
        if self._qkv_same_embed_dim:
            W = self.in_proj_weight
            ws = (W[:E], W[E : 2 * E], W[2 * E :])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        qp = F.linear(q, ws[0], bs[0])
        kp = F.linear(k, ws[1], bs[1])
        vp = F.linear(v, ws[2], bs[2])
        qh, kh, vh = (
            ops.transpose(ops.reshape(t, (N, n, h, d)), 1, 2)
            for t, n in ((qp, L), (kp, S), (vp, S))
        )
        mask = None
        if attn_mask is not None:
            mask = _additive(attn_mask, qh, "attn_mask")
            if mask.ndim == 3:
                mask = ops.reshape(mask, (N, h, L, S))
        elif is_causal:
            causal = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf)
            mask = as_tensor(causal.astype(qh._dtype.numpy), qh)
        if key_padding_mask is not None:
            kpm = ops.reshape(_additive(key_padding_mask, qh, "key_padding_mask"), (N, 1, 1, S))
            mask = kpm if mask is None else mask + kpm
        p = self.dropout if self.training else 0.0
        scale = 1.0 / math.sqrt(d)
        weights = None
        if need_weights:
            weights, out = SF.attention_weights_and_output(qh, kh, vh, mask, p, scale)
        else:
            out = SF.scaled_dot_product_attention(qh, kh, vh, mask, p, False, scale)
        out = self.out_proj(ops.reshape(ops.transpose(out, 1, 2), (N, L, E)))
        if weights is not None and average_attn_weights:
            weights = ops.mean(weights, axis=1)
        if unbatched:
            out = ops.squeeze(out, 0)
            weights = None if weights is None else ops.squeeze(weights, 0)
        elif not self.batch_first:
            out = ops.transpose(out, 0, 1)
        return out, weights
