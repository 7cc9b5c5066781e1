"""PyTorch lowerings of the Array API functions beyond the core op table."""

from __future__ import annotations

from typing import Any

import torch

from multidev.contract import reduction

__all__ = ["LOWERINGS"]


def _nonzero(x):
    return tuple(torch.nonzero(x, as_tuple=True)) if x.dim() else ()


def _repeat(x, repeats, axis):
    return torch.repeat_interleave(x, repeats, dim=axis)


#: the Array API ops PyTorch spells differently (the rest: by name on ``torch``)
LOWERINGS: dict[str, Any] = {
    "all": reduction(torch.all, torch.clone, axis="dim", keepdims="keepdim", per_axis=True),
    "any": reduction(torch.any, torch.clone, axis="dim", keepdims="keepdim", per_axis=True),
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
