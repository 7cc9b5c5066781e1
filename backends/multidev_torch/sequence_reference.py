"""Sequence and attention computations in PyTorch's own code (``torch.nn`` layers), for the
conformance sections "recurrent" and "attention"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["OPS"]

_RNN = {"gru": torch.nn.GRU, "lstm": torch.nn.LSTM, "rnn_tanh": torch.nn.RNN}


def _rnn_layer(mode, x, weights, num_layers, bidirectional, gy):
    """torch.nn.GRU/LSTM/RNN (batch-first) on the given weights: (y, dx, *dweights)."""
    m = _RNN[mode](
        x.shape[-1], weights[1].shape[1], num_layers, batch_first=True, bidirectional=bidirectional
    )
    params = list(m.parameters())
    with torch.no_grad():
        for p, w in zip(params, weights, strict=True):
            p.copy_(w)
    x = x.requires_grad_()
    y = m(x)[0]
    y.backward(gy)
    return (y, x.grad, *(p.grad for p in params))


def _lstm_projected_layer(x, state, num_layers, bidirectional, proj_size, gy):
    """torch.nn.LSTM(proj_size=...) (batch-first) loaded with ``state`` (a multidev state
    dict: its keys must be torch's): (y, dx, *dweights in torch's parameter order)."""
    m = torch.nn.LSTM(
        x.shape[-1], state["weight_ih_l0"].shape[0] // 4, num_layers, batch_first=True,
        bidirectional=bidirectional, proj_size=proj_size,
    )  # fmt: skip
    m.load_state_dict({k: torch.as_tensor(v) for k, v in state.items()})
    x = x.requires_grad_()
    y = m(x)[0]
    y.backward(gy)
    return (y, x.grad, *(p.grad for p in m.parameters()))


def _mha_kv(q, k, v, state, num_heads, batch_first, average_attn_weights):
    """torch.nn.MultiheadAttention with kdim/vdim (separate q/k/v projections) loaded with
    ``state`` (a multidev state dict): (output, weights averaged over heads or not)."""
    m = torch.nn.MultiheadAttention(
        q.shape[-1], num_heads, kdim=k.shape[-1], vdim=v.shape[-1], batch_first=batch_first
    )
    m.load_state_dict({k: torch.as_tensor(v) for k, v in state.items()})
    return m(q, k, v, average_attn_weights=average_attn_weights)


def _attention(q, k, v, mask, is_causal, gy):
    """F.scaled_dot_product_attention (bool mask, True = attend): (out, dq, dk, dv)."""
    ts = [t.requires_grad_() for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*ts, attn_mask=mask, is_causal=is_causal)
    out.backward(gy)
    return (out, *(t.grad for t in ts))


def _mha(x, in_w, in_b, out_w, out_b, num_heads, key_padding_mask, attn_mask):
    """torch.nn.MultiheadAttention (batch-first self-attention): (output, averaged weights)."""
    E = x.shape[-1]
    m = torch.nn.MultiheadAttention(E, num_heads, batch_first=True)
    with torch.no_grad():
        m.in_proj_weight.copy_(in_w)
        m.in_proj_bias.copy_(in_b)
        m.out_proj.weight.copy_(out_w)
        m.out_proj.bias.copy_(out_b)
    out, w = m(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    return out, w


OPS: dict[str, Callable[..., Any]] = {
    "rnn_layer": _rnn_layer,
    "attention": _attention,
    "mha": _mha,
    "mha_kv": _mha_kv,
    "lstm_projected_layer": _lstm_projected_layer,
    "layer_norm": lambda x, w, b, eps: F.layer_norm(x, (x.shape[-1],), w, b, eps),
    "gelu": lambda x, approximate: F.gelu(x, approximate=approximate),
    "embedding": lambda idx, w: F.embedding(idx, w),
}
