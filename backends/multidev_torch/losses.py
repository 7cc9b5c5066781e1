"""PyTorch lowering of the fused loss op (``multidev.nn.functional.cross_entropy``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["LOSS_LOWERINGS"]

#: the label torch's kernel skips (``ignore_index``): int64's least value, which no class
#: has, rather than torch's default -100, which must be refused like any negative label
_NO_IGNORED_LABEL = torch.iinfo(torch.int64).min


def _cross_entropy(x, labels, reduction):
    """torch's fused log-softmax and NLL kernel; IndexError for labels outside [0, C)."""
    return F.cross_entropy(x, labels, ignore_index=_NO_IGNORED_LABEL, reduction=reduction)


#: op name -> lowering, passed to this adapter's op_table
LOSS_LOWERINGS = {"cross_entropy": _cross_entropy}
