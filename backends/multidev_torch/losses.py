"""PyTorch lowering of the fused loss op (``multidev.nn.functional.cross_entropy``)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["LOWERINGS"]

#: torch's kernel skips the labels equal to its ``ignore_index`` (-100 by default, which must be
#: refused like any negative label): int64's least value, which the lowering raises by one
_IGNORED = torch.iinfo(torch.int64).min


def _cross_entropy(x, labels, reduction):
    """torch's fused log-softmax and NLL kernel; IndexError for labels outside [0, C) (all of
    them: no label equals ``_IGNORED`` once clamped above it)."""
    checked = labels.clamp(min=_IGNORED + 1)
    return F.cross_entropy(x, checked, ignore_index=_IGNORED, reduction=reduction)


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS: dict[str, Any] = {"cross_entropy": _cross_entropy}
