"""Sequence and attention computations in MXNet's own code (Gluon recurrent layers), for the
conformance sections "recurrent" and "attention"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mxnet import autograd, gluon, npx
from mxnet import np as mnp

__all__ = ["OPS"]


def _rnn_layer(mode, x, weights, num_layers, bidirectional, gy):
    """gluon.rnn.GRU/LSTM/RNN (layout NTC) on the given weights: (y, dx, *dweights)."""
    H = weights[1].shape[1]
    kw = {"layout": "NTC", "bidirectional": bidirectional, "input_size": x.shape[-1]}
    if mode == "gru":
        m = gluon.rnn.GRU(H, num_layers, **kw)
    elif mode == "lstm":
        m = gluon.rnn.LSTM(H, num_layers, **kw)
    else:
        m = gluon.rnn.RNN(H, num_layers, activation="tanh", **kw)
    m.initialize()
    params = list(m.collect_params().values())
    for p, w in zip(params, weights, strict=True):
        p.set_data(w)
    x.attach_grad()
    with autograd.record():
        y = m(x)
    y.backward(gy)
    return (y, x.grad, *(p.grad() for p in params))


def _attention(q, k, v, mask, is_causal, gy):
    """softmax(q kᵀ/√E + mask) v from MXNet's matmul and softmax: (out, dq, dk, dv)."""
    for t in (q, k, v):
        t.attach_grad()
    with autograd.record():
        s = mnp.matmul(q, mnp.swapaxes(k, -1, -2)) / float(q.shape[-1]) ** 0.5
        if is_causal:
            mask = mnp.tril(mnp.ones((s.shape[-2], s.shape[-1]))) > 0
        if mask is not None:
            s = mnp.where(mask, s, mnp.full(s.shape, float("-inf")))
        out = mnp.matmul(npx.softmax(s, axis=-1), v)
    out.backward(gy)
    return out, q.grad, k.grad, v.grad


def _gelu(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + mnp.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))
    return npx.leaky_relu(x, act_type="gelu")


OPS: dict[str, Callable[..., Any]] = {
    "rnn_layer": _rnn_layer,
    "attention": _attention,
    "layer_norm": lambda x, w, b, eps: npx.layer_norm(x, w, b, axis=-1, eps=eps),
    "gelu": _gelu,
    "embedding": lambda idx, w: npx.embedding(idx, w, w.shape[0], w.shape[1]),
}
