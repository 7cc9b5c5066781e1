"""Pooling and normalisation in PyTorch's own code (``torch.nn.functional``), for the
conformance sections "conv" and "norm": (x, ...) native tensors in, native tensors out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.nn.functional as F

__all__ = ["OPS"]

OPS: dict[str, Callable[..., Any]] = {
    "max_pool2d": lambda x, k, s, p: F.max_pool2d(x, k, s, p),
    "avg_pool2d": lambda x, k, s, p: F.avg_pool2d(x, k, s, p, count_include_pad=True),
    "adaptive_avg_pool2d": F.adaptive_avg_pool2d,
    "batch_norm_train": lambda x, w, b, eps: F.batch_norm(x, None, None, w, b, True, 0.1, eps),
    "group_norm": lambda x, groups, w, b, eps: F.group_norm(x, groups, w, b, eps),
}
