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


def _sign(x):
    """torch.sign gives 0 for NaN; the standard keeps NaN."""
    return torch.where(torch.isnan(x), x, torch.sign(x)) if x.is_floating_point() else torch.sign(x)


class ArrayApiOps:
    acos = staticmethod(torch.acos)
    acosh = staticmethod(torch.acosh)
    asin = staticmethod(torch.asin)
    asinh = staticmethod(torch.asinh)
    atan = staticmethod(torch.atan)
    atanh = staticmethod(torch.atanh)
    cosh = staticmethod(torch.cosh)
    sinh = staticmethod(torch.sinh)
    tan = staticmethod(torch.tan)
    expm1 = staticmethod(torch.expm1)
    log2 = staticmethod(torch.log2)
    log10 = staticmethod(torch.log10)
    ceil = staticmethod(torch.ceil)
    trunc = staticmethod(torch.trunc)
    round = staticmethod(torch.round)
    sign = staticmethod(_sign)
    isnan = staticmethod(torch.isnan)
    isinf = staticmethod(torch.isinf)
    isfinite = staticmethod(torch.isfinite)
    signbit = staticmethod(torch.signbit)
    atan2 = staticmethod(torch.atan2)
    hypot = staticmethod(torch.hypot)
    copysign = staticmethod(torch.copysign)
    logaddexp = staticmethod(torch.logaddexp)
    bitwise_and = staticmethod(torch.bitwise_and)
    bitwise_or = staticmethod(torch.bitwise_or)
    bitwise_xor = staticmethod(torch.bitwise_xor)
    bitwise_left_shift = staticmethod(torch.bitwise_left_shift)
    bitwise_right_shift = staticmethod(torch.bitwise_right_shift)
    bitwise_invert = staticmethod(torch.bitwise_not)
    all = staticmethod(_truth(torch.all))
    any = staticmethod(_truth(torch.any))
    cumulative_sum = staticmethod(lambda x, axis: torch.cumsum(x, dim=axis))
    sort = staticmethod(
        lambda x, axis, descending: torch.sort(x, dim=axis, descending=descending, stable=True)[0]
    )
    argsort = staticmethod(
        lambda x, axis, descending: torch.argsort(x, dim=axis, descending=descending, stable=True)
    )
    searchsorted = staticmethod(lambda a, v, side: torch.searchsorted(a, v, side=side))
    nonzero = staticmethod(_nonzero)
    take = staticmethod(
        lambda x, idx, axis: torch.index_select(x, axis, idx.reshape(-1)).reshape(
            x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
        )
    )
    flip = staticmethod(lambda x, axes: torch.flip(x, axes))
    roll = staticmethod(lambda x, shifts, axes: torch.roll(x, shifts, axes))
    broadcast_to = staticmethod(lambda x, shape: torch.broadcast_to(x, shape).clone())
    repeat = staticmethod(_repeat)
    tile = staticmethod(torch.tile)
    tril = staticmethod(lambda x, k: torch.tril(x, k))
    triu = staticmethod(lambda x, k: torch.triu(x, k))
    to_dlpack = staticmethod(lambda x: x.__dlpack__())
    from_dlpack = staticmethod(torch.from_dlpack)
    real = staticmethod(lambda x: torch.real(x).clone())
    imag = staticmethod(lambda x: torch.imag(x).clone())
    conj = staticmethod(torch.conj_physical)


#: op name -> native function, for the adapter's op_table
LOWERINGS = {k: getattr(ArrayApiOps, k) for k in vars(ArrayApiOps) if not k.startswith("_")}
