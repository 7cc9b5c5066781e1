"""Sequence and attention computations in Paddle's own code (``paddle.nn`` layers), for the
conformance sections "recurrent" and "attention"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import paddle
import paddle.nn.functional as F

__all__ = ["OPS"]

_RNN = {"gru": paddle.nn.GRU, "lstm": paddle.nn.LSTM, "rnn_tanh": paddle.nn.SimpleRNN}


def _rnn_layer(mode, x, weights, num_layers, bidirectional, gy):
    """paddle.nn.GRU/LSTM/SimpleRNN (batch-major) on the given weights: (y, dx, *dweights)."""
    m = _RNN[mode](
        x.shape[-1],
        weights[1].shape[1],
        num_layers,
        direction="bidirect" if bidirectional else "forward",
    )
    params = list(m.parameters())
    for p, w in zip(params, weights, strict=True):
        p.set_value(w)
    x.stop_gradient = False
    y = m(x)[0]
    (y * gy).sum().backward()
    return (y, x.grad, *(p.grad for p in params))


def _attention(q, k, v, mask, is_causal, gy):
    """softmax(q kᵀ/√E + mask) v from Paddle's matmul and softmax: (out, dq, dk, dv)."""
    for t in (q, k, v):
        t.stop_gradient = False
    s = paddle.matmul(q, k, transpose_y=True) / float(q.shape[-1]) ** 0.5
    if is_causal:
        L, S = s.shape[-2], s.shape[-1]
        mask = paddle.tril(paddle.ones([L, S], dtype="bool"))
    if mask is not None:
        s = paddle.where(mask, s, paddle.full_like(s, float("-inf")))
    out = paddle.matmul(F.softmax(s, axis=-1), v)
    (out * gy).sum().backward()
    return out, q.grad, k.grad, v.grad


OPS: dict[str, Callable[..., Any]] = {
    "rnn_layer": _rnn_layer,
    "attention": _attention,
    # Paddle's kernel refuses an epsilon above 1e-3: the definition in Paddle's own ops then
    "layer_norm": lambda x, w, b, eps: (
        F.layer_norm(x, [x.shape[-1]], w, b, eps)
        if eps <= 1e-3
        else (x - x.mean(-1, keepdim=True))
        / paddle.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps)
        * w
        + b
    ),
    "gelu": lambda x, approximate: F.gelu(x, approximate=approximate == "tanh"),
    "embedding": lambda idx, w: F.embedding(idx, w),
}
