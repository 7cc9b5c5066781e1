"""Sequence and attention computations in JAX's own code (``jax.lax.scan`` over the time
steps, ``jax.nn`` activations, gradients by ``jax.vjp``), for the conformance sections
"recurrent" and "attention". Weights come in PyTorch's layout and gate order (GRU: r, z, n;
LSTM: i, f, g, o)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["OPS"]


def _cell(mode: str) -> Callable[..., Any]:
    def step(carry, xw):
        h, c = carry
        gi, w_hh, b_hh = xw
        gh = h @ w_hh.T + b_hh
        if mode == "gru":
            ir, iz, in_ = jnp.split(gi, 3, axis=-1)
            hr, hz, hn = jnp.split(gh, 3, axis=-1)
            r = jax.nn.sigmoid(ir + hr)
            z = jax.nn.sigmoid(iz + hz)
            n = jnp.tanh(in_ + r * hn)
            h = (1 - z) * n + z * h
        elif mode == "lstm":
            i, f, g, o = jnp.split(gi + gh, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
        else:
            h = jnp.tanh(gi + gh)
        return (h, c), h

    return step


def _direction(mode, x, w_ih, w_hh, b_ih, b_hh, reverse):
    """One direction of one layer over batch-first x: (N, T, H)."""
    n = x.shape[0]
    hidden = w_hh.shape[1]
    gi = jnp.swapaxes(x @ w_ih.T + b_ih, 0, 1)  # (T, N, G)
    h0 = jnp.zeros((n, hidden), x.dtype)
    step = _cell(mode)

    def body(carry, g):
        return step(carry, (g, w_hh, b_hh))

    _, ys = lax.scan(body, (h0, h0), gi, reverse=reverse)
    return jnp.swapaxes(ys, 0, 1)


def _rnn(mode, num_layers, bidirectional):
    dirs = 2 if bidirectional else 1

    def run(x, *weights):
        for layer in range(num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = weights[
                    (layer * dirs + d) * 4 : (layer * dirs + d + 1) * 4
                ]
                outs.append(_direction(mode, x, w_ih, w_hh, b_ih, b_hh, reverse=d == 1))
            x = jnp.concatenate(outs, axis=-1)
        return x

    return run


def _rnn_layer(mode, x, weights, num_layers, bidirectional, gy):
    """GRU/LSTM/RNN (batch-first, biases, torch's layout): (y, dx, *dweights)."""
    y, vjp = jax.vjp(_rnn(mode, num_layers, bidirectional), x, *weights)
    return (y, *vjp(gy))


def _attention(q, k, v, mask, is_causal, gy):
    """softmax(q k^T / sqrt(E)) v (bool mask, True = attend): (out, dq, dk, dv)."""

    def sdpa(q, k, v):
        s = jnp.einsum("...qd,...kd->...qk", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
        if mask is not None:
            s = jnp.where(mask, s, -jnp.inf)
        if is_causal:
            lq, lk = s.shape[-2:]
            s = jnp.where(jnp.tril(jnp.ones((lq, lk), bool)), s, -jnp.inf)
        return jnp.einsum("...qk,...kd->...qd", jax.nn.softmax(s, axis=-1), v)

    out, vjp = jax.vjp(sdpa, q, k, v)
    return (out, *vjp(gy))


OPS: dict[str, Callable[..., Any]] = {"rnn_layer": _rnn_layer, "attention": _attention}
