"""Sequence and attention computations in TensorFlow's own code (Keras recurrent layers), for
the conformance sections "recurrent" and "attention".

Keras orders a GRU's gates z, r, h where PyTorch orders them r, z, n, keeps kernels transposed
(input, gates), and an LSTM or SimpleRNN has one bias (PyTorch's b_ih + b_hh)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

__all__ = ["OPS"]


def _swap_rz(a, H):
    return tf.concat([a[H : 2 * H], a[:H], a[2 * H :]], 0)


def _keras_direction(mode, w, reverse):
    """A built Keras layer for one layer and direction holding PyTorch's weights w."""
    w_ih, w_hh, b_ih, b_hh = w
    H = w_hh.shape[1]
    kw = {"return_sequences": True, "go_backwards": reverse}
    if mode == "gru":
        layer = keras.layers.GRU(H, reset_after=True, **kw)
        layer.build((None, None, w_ih.shape[1]))
        layer.cell.kernel.assign(tf.transpose(_swap_rz(w_ih, H)))
        layer.cell.recurrent_kernel.assign(tf.transpose(_swap_rz(w_hh, H)))
        layer.cell.bias.assign(tf.stack([_swap_rz(b_ih, H), _swap_rz(b_hh, H)]))
    else:
        cls = keras.layers.LSTM if mode == "lstm" else keras.layers.SimpleRNN
        layer = cls(H, **kw)
        layer.build((None, None, w_ih.shape[1]))
        layer.cell.kernel.assign(tf.transpose(w_ih))
        layer.cell.recurrent_kernel.assign(tf.transpose(w_hh))
        layer.cell.bias.assign(b_ih + b_hh)
    return layer


def _torch_grads(mode, layer, g, H):
    """Keras variable gradients g (kernel, recurrent kernel, bias) in PyTorch's layout."""
    gk, grk, gb = g
    if mode == "gru":
        return [
            _swap_rz(tf.transpose(gk), H),
            _swap_rz(tf.transpose(grk), H),
            _swap_rz(gb[0], H),
            _swap_rz(gb[1], H),
        ]
    return [tf.transpose(gk), tf.transpose(grk), gb, gb]


def _rnn_layer(mode, x, weights, num_layers, bidirectional, gy):
    """Keras GRU/LSTM/SimpleRNN per layer and direction: (y, dx, *dweights)."""
    dirs = 2 if bidirectional else 1
    H = weights[1].shape[1]
    layers = [
        _keras_direction(mode, weights[4 * i : 4 * i + 4], reverse=i % 2 == 1)
        for i in range(num_layers * dirs)
    ]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = x
        for layer_i in range(num_layers):
            outs = []
            for d in range(dirs):
                y = layers[layer_i * dirs + d](h)
                outs.append(tf.reverse(y, [1]) if d == 1 else y)
            h = outs[0] if dirs == 1 else tf.concat(outs, -1)
        loss = tf.reduce_sum(h * gy)
    grads = [tape.gradient(loss, x)]
    for layer in layers:
        c = layer.cell
        g = tape.gradient(loss, [c.kernel, c.recurrent_kernel, c.bias])
        grads += _torch_grads(mode, layer, g, H)
    return (h, *grads)


def _attention(q, k, v, mask, is_causal, gy):
    """softmax(q kᵀ/√E + mask) v from TensorFlow's matmul and softmax: (out, dq, dk, dv)."""
    with tf.GradientTape() as tape:
        tape.watch([q, k, v])
        s = tf.matmul(q, k, transpose_b=True) / float(q.shape[-1]) ** 0.5
        if is_causal:
            mask = tf.linalg.band_part(tf.ones((s.shape[-2], s.shape[-1]), tf.bool), -1, 0)
        if mask is not None:
            s = tf.where(mask, s, tf.fill(tf.shape(s), float("-inf")))
        out = tf.matmul(tf.nn.softmax(s, -1), v)
        loss = tf.reduce_sum(out * gy)
    return (out, *tape.gradient(loss, [q, k, v]))


def _layer_norm(x, w, b, eps):
    layer = keras.layers.LayerNormalization(epsilon=eps)
    layer.build(x.shape)
    layer.gamma.assign(w)
    layer.beta.assign(b)
    return layer(x)


OPS: dict[str, Callable[..., Any]] = {
    "rnn_layer": _rnn_layer,
    "attention": _attention,
    "layer_norm": _layer_norm,
    "gelu": lambda x, approximate: tf.nn.gelu(x, approximate=approximate == "tanh"),
    "embedding": lambda idx, w: tf.nn.embedding_lookup(w, idx),
}
