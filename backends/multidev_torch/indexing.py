"""NumPy indexing on PyTorch tensors: negative slice steps (PyTorch has no negative strides)
and small-integer index arrays (NumPy reads them as positions, PyTorch uint8 as masks)."""

from __future__ import annotations

import torch

from multidev.contract import key_axes
from multidev.indexing import bool_mask_ndim, key_items

__all__ = ["getitem", "write"]

_INDEX_DTYPES = frozenset({torch.int64, torch.int32, torch.bool})
_mask_ndim = bool_mask_ndim(torch.Tensor, torch.bool)


def _plain_key(key) -> bool:
    """Whether PyTorch indexes with ``key`` exactly as NumPy does."""
    for k in key if type(key) is tuple else (key,):
        if type(k) is slice:
            if k.step is not None and k.step < 0:
                return False
        elif isinstance(k, torch.Tensor) and k.dtype not in _INDEX_DTYPES:
            return False
    return True


def _positive_steps(x, key):
    """``x[key]`` through ``x`` flipped and ``key`` rewritten so that every slice has a
    positive step and every index tensor is int64 (NumPy reads uint8 arrays as integer
    indices, PyTorch as masks)."""
    out, flips = [], []
    for k, dim in key_axes(key_items(key), x.dim(), _mask_ndim):
        if type(k) is slice and k.step is not None and k.step < 0:
            size = x.shape[dim]
            r = range(*k.indices(size))
            if len(r):
                flips.append(dim)
                k = slice(size - 1 - r[0], size - r[-1], -r.step)
            else:
                k = slice(0, 0)
        elif isinstance(k, torch.Tensor) and k.dtype not in _INDEX_DTYPES:
            k = k.to(torch.int64)
        out.append(k)
    return (x.flip(flips) if flips else x)[tuple(out)]


def getitem(x, key):
    return x[key] if _plain_key(key) else _positive_steps(x, key)


def write(x, key, value) -> None:
    if _plain_key(key):
        x[key] = value
        return
    # PyTorch has no negative strides (and reads uint8 index arrays as masks): select the
    # flat positions with NumPy's reading of the key, then write through them
    positions = torch.arange(x.numel(), device=x.device).reshape(x.shape)
    x[torch.unravel_index(getitem(positions, key), x.shape)] = value
