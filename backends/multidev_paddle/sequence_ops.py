"""Paddle lowerings of the sequence ops (``multidev.nn.sequence_functional``)."""

from __future__ import annotations

import paddle
import paddle.nn.functional as F

__all__ = ["SEQUENCE_LOWERINGS"]


#: op name -> lowering, passed to this adapter's op_table
SEQUENCE_LOWERINGS = {
    "embedding": lambda w, idx: F.embedding(idx, w),
    "one_hot": lambda idx, n: F.one_hot(idx, n).astype(paddle.int64),
    "stop_gradient": lambda x: x.detach(),
    "layer_norm": lambda x, w, b, eps: F.layer_norm(
        x, [x.shape[-1]], weight=w, bias=b, epsilon=eps
    ),
    "gelu": lambda x, tanh: F.gelu(x, approximate=tanh),
}
