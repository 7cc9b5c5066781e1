"""MXNet lowerings of the sequence ops (``multidev.nn.sequence_functional``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mxnet import np as mnp
from mxnet import npx

__all__ = ["LOWERINGS"]


def _gelu(x, tanh):
    if not tanh:
        return npx.leaky_relu(x, act_type="gelu")
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1 + mnp.tanh(inner))


def _rnn(mode, x, h0, c0, weights, num_layers, bidirectional):
    """MXNet's fused RNN operator (cuDNN on GPU): parameters flattened as all weights (layer,
    direction, i2h, h2h), then all biases; gate orders equal PyTorch's."""
    dirs = 2 if bidirectional else 1
    per = len(weights) // (num_layers * dirs)
    groups = [weights[i : i + per] for i in range(0, len(weights), per)]
    ws = [w.reshape(-1) for g in groups for w in g[:2]]
    if per == 4:
        bs = [b.reshape(-1) for g in groups for b in g[2:]]
    else:
        bs = [mnp.zeros((2 * g[0].shape[0],), dtype=x.dtype, ctx=x.ctx) for g in groups]
    params = mnp.concatenate(ws + bs, axis=0)
    kwargs = {"state_cell": c0} if mode == "lstm" else {}
    out = npx.rnn(
        data=x,
        parameters=params,
        state=h0,
        mode=mode,
        state_size=h0.shape[-1],
        num_layers=num_layers,
        bidirectional=bidirectional,
        state_outputs=True,
        **kwargs,
    )
    return (out[0], out[1], out[2]) if mode == "lstm" else (out[0], out[1], None)


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS: dict[str, Callable[..., Any]] = {
    "embedding": lambda w, idx: mnp.take(w, idx, axis=0),
    "one_hot": lambda idx, n: npx.one_hot(idx, n, dtype="int64"),
    "stop_gradient": lambda x: x.detach(),
    "layer_norm": lambda x, w, b, eps: npx.layer_norm(x, w, b, axis=-1, eps=eps),
    "gelu": _gelu,
    "rnn": _rnn,
}
