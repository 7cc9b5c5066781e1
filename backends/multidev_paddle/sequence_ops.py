"""Paddle lowerings of the sequence ops (``multidev.nn.sequence_functional``)."""

from __future__ import annotations

import paddle
import paddle.nn.functional as F

__all__ = ["SequenceOps"]


class SequenceOps:
    embedding = staticmethod(lambda w, idx: F.embedding(idx, w))
    one_hot = staticmethod(lambda idx, n: F.one_hot(idx, n).astype(paddle.int64))
    stop_gradient = staticmethod(lambda x: x.detach())
    layer_norm = staticmethod(
        lambda x, w, b, eps: F.layer_norm(x, [x.shape[-1]], weight=w, bias=b, epsilon=eps)
    )
    gelu = staticmethod(lambda x, tanh: F.gelu(x, approximate=tanh))
