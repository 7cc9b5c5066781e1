"""Paddle lowering of the fused loss op (``multidev.nn.functional.cross_entropy``)."""

from __future__ import annotations

import paddle.nn.functional as F

__all__ = ["LOSS_LOWERINGS"]

#: the label Paddle's kernel skips (``ignore_index``, an int32): int32's least value, which
#: no class has, rather than Paddle's default -100, which must be refused like any negative
#: label; a negative ``ignore_index`` also keeps the mean a plain mean over the batch
_NO_IGNORED_LABEL = -(2**31)


def _cross_entropy(x, labels, reduction):
    """Paddle's fused softmax-with-cross-entropy kernel (int64 labels, shape (N,)); IndexError
    for labels outside [0, C)."""
    return F.cross_entropy(x, labels, ignore_index=_NO_IGNORED_LABEL, reduction=reduction)


#: op name -> lowering, passed to this adapter's op_table
LOSS_LOWERINGS = {"cross_entropy": _cross_entropy}
