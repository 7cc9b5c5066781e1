"""PyTorch lowerings of the Array API functions beyond the core op table."""

from __future__ import annotations

from typing import Any

import torch

from multidev.contract import divisor_signed, reduction

__all__ = ["LOWERINGS"]


def _nonzero(x):
    return tuple(torch.nonzero(x, as_tuple=True)) if x.dim() else ()


def _scalar_operand(fn):
    """``fn(a, b)`` where ``b`` may be a Python scalar (the core passes one of a's dtype):
    ``torch.maximum``/``torch.minimum`` take tensors only."""

    def op(a, b):
        if not isinstance(b, torch.Tensor):
            b = torch.tensor(b, dtype=a.dtype, device=a.device)
        return fn(a, b)

    return op


def _repeat(x, repeats, axis):
    return torch.repeat_interleave(x, repeats, dim=axis)


def _sign(x):
    """torch.sign gives 0 for NaN; the standard keeps NaN."""
    return torch.where(torch.isnan(x), x, torch.sign(x)) if x.is_floating_point() else torch.sign(x)


#: the Array API ops PyTorch spells differently (the rest: by name on ``torch``)
LOWERINGS: dict[str, Any] = {
    "maximum": _scalar_operand(torch.maximum),
    "remainder": divisor_signed(torch.remainder, torch.copysign, torch.is_floating_point),
    "minimum": _scalar_operand(torch.minimum),
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
    "sign": _sign,
    # torch.real/torch.imag are views and torch.conj only sets a lazy bit: own the values
    "real": lambda x: torch.real(x).clone(),
    "imag": lambda x: torch.imag(x).clone(),
    "conj": torch.conj_physical,
}
