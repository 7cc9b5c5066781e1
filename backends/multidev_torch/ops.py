"""The PyTorch op table: NumPy semantics where PyTorch's kernels differ or are missing."""

from __future__ import annotations

from functools import partial

import torch

from multidev.contract import op_table, reduction, summed_matmul

from . import array_api, cnn, losses, sequence_ops, unsigned
from .dtypes import NATIVE
from .indexing import getitem

__all__ = ["OPS"]

#: torch's reductions as (x, axis, keepdims) ops
_reduction = partial(reduction, copy=torch.clone, axis="dim", keepdims="keepdim")


def _matmul(a, b):
    """torch.matmul; exact sums for the dtypes its kernels lack (bool; integers on CUDA)."""
    try:
        return torch.matmul(a, b)
    except RuntimeError as e:
        if a.dtype.is_floating_point or a.dim() == 0 or b.dim() == 0:
            raise
        try:
            return summed_matmul(a, b, torch.unsqueeze, torch.squeeze, torch.Tensor.to, torch.int64)
        except (RuntimeError, ValueError):
            raise e from None


def _clip(x, lo, hi):
    out = torch.clamp(x, lo, hi)
    return out if out.dtype is x.dtype else out.to(x.dtype)


OPS = op_table(
    torch,
    # lowerings: array_api.py (the Array API beyond the core table), sequence ops, losses, cnn
    modules=[array_api, sequence_ops, losses, cnn],
    reduce=_reduction,  # sum and mean
    matmul=_matmul,
    max=_reduction(torch.amax),  # torch.max(x, dim) also gives the indices
    min=_reduction(torch.amin),
    prod=_reduction(torch.prod, per_axis=True),
    clip=_clip,
    getitem=getitem,
    astype=lambda x, dt: x.to(NATIVE[dt]),
    # (x, weight (out, in), bias or None): the fused layer op behind nn.Linear
    linear=torch.nn.functional.linear,
)
# uint16, uint32 and uint64: PyTorch's shell dtypes, their missing kernels lowered
unsigned.lower(OPS)
