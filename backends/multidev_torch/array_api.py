"""PyTorch lowerings of the Array API functions beyond the core op table."""

from __future__ import annotations

import torch

__all__ = ["LOWERINGS"]


def _truth(fn):
    def reduce(x, axis, keepdims):
        if axis is None:
            out = fn(x)
            return out.reshape((1,) * x.dim()) if keepdims else out
        if not axis:
            return x.clone()
        for a in sorted(axis, reverse=True):
            x = fn(x, dim=a, keepdim=keepdims)
        return x

    return reduce


def _nonzero(x):
    return tuple(torch.nonzero(x, as_tuple=True)) if x.dim() else ()


def _repeat(x, repeats, axis):
    return torch.repeat_interleave(x, repeats, dim=axis)


#: the Array API ops PyTorch spells differently (the rest: by name on ``torch``)
LOWERINGS = {
    "all": _truth(torch.all),
    "any": _truth(torch.any),
    "cumulative_sum": lambda x, axis: torch.cumsum(x, dim=axis),
    "sort": lambda x, axis, descending: torch.sort(x, dim=axis, descending=descending, stable=True)[
        0
    ],
    "argsort": lambda x, axis, descending: torch.argsort(
        x, dim=axis, descending=descending, stable=True
    ),
    "searchsorted": lambda a, v, side: torch.searchsorted(a, v, side=side),
    "nonzero": _nonzero,
    "take": lambda x, idx, axis: torch.index_select(x, axis, idx.reshape(-1)).reshape(
        x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
    ),
    "broadcast_to": lambda x, shape: torch.broadcast_to(x, shape).clone(),
    "repeat": _repeat,
    "to_dlpack": lambda x: x.__dlpack__(),
}
