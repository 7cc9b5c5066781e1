"""PyTorch lowerings of the convolution, pooling, normalisation and padding ops (arguments
already checked and made explicit by ``multidev.nn.functional_cnn``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from multidev.contract import channel_fold

#: the lowerings, found by op name by the adapter's op_table
__all__ = [
    *("adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "conv2d", "conv_transpose2d"),
    *("group_norm", "interpolate", "max_pool2d", "pad"),
    "batch_norm_train",
]


def _flat(pads) -> tuple[int, ...]:
    """Per-dimension (before, after) pairs, first dimension first, as F.pad's flat list."""
    out: list[int] = []
    for lo, hi in reversed(pads):
        out += [lo, hi]
    return tuple(out)


def _symmetric(pads) -> tuple[int, ...] | None:
    return tuple(lo for lo, _ in pads) if all(lo == hi for lo, hi in pads) else None


def conv2d(x, w, b, stride, pads, dilation, groups):
    sym: tuple[int, ...] | int | None = _symmetric(pads)  # 0 once padded explicitly
    if sym is None:
        x, sym = F.pad(x, _flat(pads)), 0
    return F.conv2d(x, w, b, stride, sym, dilation, groups)


def conv_transpose2d(x, w, b, stride, padding, output_padding, dilation, groups):
    return F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)


def max_pool2d(x, kernel, stride, pads):
    sym: tuple[int, ...] | int | None = _symmetric(pads)  # 0 once padded explicitly
    if sym is None:
        x, sym = F.pad(x, _flat(pads), value=float("-inf")), 0
    return F.max_pool2d(x, kernel, stride, sym)


def avg_pool2d(x, kernel, stride, pads):
    sym: tuple[int, ...] | int | None = _symmetric(pads)  # 0 once padded explicitly
    if sym is None:
        x, sym = F.pad(x, _flat(pads)), 0
    return F.avg_pool2d(x, kernel, stride, sym, count_include_pad=True)


def batch_norm(x, mean, var, w, b, eps):
    return F.batch_norm(x, mean, var, w, b, mean is None, 0.0, eps)


def batch_norm_train(x, w, b, eps, mean, var, momentum):
    # PyTorch's kernel updates the running statistics in place by the rule the core wants;
    # it takes both or neither
    c = x.shape[1]
    m = torch.zeros(c, dtype=x.dtype, device=x.device) if mean is None and var is not None else mean
    v = torch.ones(c, dtype=x.dtype, device=x.device) if var is None and mean is not None else var
    return F.batch_norm(x, m, v, w, b, True, momentum, eps), mean, var


def pad(x, pads, mode, value):
    if mode == "constant":
        return F.pad(x, _flat(pads), value=value)
    # reflect/replicate kernels take (N, C, *spatial) with 1 to 3 spatial dimensions
    fold = channel_fold(x.shape, pads)
    if fold is None:
        return x.clone()
    first, lead, folded = fold
    y = F.pad(x.reshape(folded), _flat(pads[first:]), mode)
    return y.reshape(*lead, *y.shape[1:])


adaptive_avg_pool2d = F.adaptive_avg_pool2d
group_norm = F.group_norm


def interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor):
    """torch's own resampling kernels (multidev's positions and weights are PyTorch's)."""
    return F.interpolate(
        x,
        size=size,
        scale_factor=scale_factor,
        mode=mode,
        align_corners=align_corners,
        recompute_scale_factor=recompute_scale_factor,
    )
