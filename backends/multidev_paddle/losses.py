"""Paddle lowering of the fused loss op (``multidev.nn.functional.cross_entropy``).

Not ``paddle.nn.functional.cross_entropy``: its kernel clips log-probabilities at -64 (a loss
of 2000 comes back as 64), reads labels beyond int32 modulo 2**32 (label 2**40 is class 0)
and skips one label value silently (``ignore_index``, -100 by default). ``logsumexp`` and
``index_sample`` are Paddle's fused kernels for the same loss without those three.
"""

from __future__ import annotations

from typing import Any

import paddle

__all__ = ["LOWERINGS"]

_REDUCE = {"mean": paddle.mean, "sum": paddle.sum, "none": lambda loss: loss}


def _cross_entropy(x, labels, reduction):
    """``logsumexp(x) - x[i, labels[i]]`` per sample, then the reduction; IndexError for
    labels outside [0, C) (``index_sample`` checks them)."""
    try:
        picked = paddle.index_sample(x, labels.unsqueeze(-1)).squeeze(-1)
    except ValueError as e:
        raise IndexError(str(e).strip().splitlines()[0]) from e
    return _REDUCE[reduction](paddle.logsumexp(x, axis=-1) - picked)


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS: dict[str, Any] = {"cross_entropy": _cross_entropy}
