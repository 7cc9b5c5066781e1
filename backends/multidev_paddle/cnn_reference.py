"""Pooling and normalisation in Paddle's own code (``paddle.nn.functional``), for the
conformance sections "conv" and "norm": (x, ...) native tensors in, native tensors out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import paddle
import paddle.nn.functional as F

__all__ = ["OPS"]


def _batch_norm_train(x, w, b, eps):
    c = x.shape[1]
    mean, var = paddle.zeros([c]), paddle.ones([c])  # running statistics it updates in place
    return F.batch_norm(x, mean, var, w, b, training=True, epsilon=eps)


OPS: dict[str, Callable[..., Any]] = {
    "max_pool2d": lambda x, k, s, p: F.max_pool2d(x, k, s, p),
    "avg_pool2d": lambda x, k, s, p: F.avg_pool2d(x, k, s, p, exclusive=False),
    "adaptive_avg_pool2d": F.adaptive_avg_pool2d,
    "batch_norm_train": _batch_norm_train,
    "group_norm": lambda x, groups, w, b, eps: F.group_norm(x, groups, eps, w, b),
}
