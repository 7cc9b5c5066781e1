"""Resampling as PyTorch has it: ``F.interpolate`` and the ``nn.Upsample`` layers.

Every mode PyTorch has without antialiasing (``nearest``, ``nearest-exact``, ``linear``,
``bilinear``, ``bicubic``, ``trilinear``, ``area``) is separable: each output position along
an axis is a weighted sum of a few input positions along that axis. The positions and weights
depend only on the sizes, so they are computed once on the host with PyTorch's formulas (in
float32, as its kernels compute them, so that the rounding of a position is the same), and
each axis is then resampled on the device by one gather (``take``), one product and one sum:
framework kernels every backend differentiates, on CPU and GPU alike. An adapter whose
framework has PyTorch's resampling kernels (torch) gives them as the op ``interpolate``,
which float32 and float64 inputs run instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import array_api, ops
from ..dispatch import as_tensor as _tensor
from ..dispatch import asarray as _asarray
from ..dispatch import call as _call
from ..dispatch import wrap as _wrap
from ..dtypes import float32, float64
from ..tensors import Tensor
from .module import Block

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "interpolate"]

#: mode -> the number of spatial dimensions it takes (None: any of 1, 2, 3)
_MODES: dict[str, int | None] = {
    "nearest": None,
    "nearest-exact": None,
    "area": None,
    "linear": 1,
    "bilinear": 2,
    "bicubic": 2,
    "trilinear": 3,
}
_LINEAR = ("linear", "bilinear", "trilinear")
_INTERPOLATING = (*_LINEAR, "bicubic")


def _scale(n_in: int, n_out: int, align_corners: bool, scale: float | None, ft: type) -> Any:
    """The step between source positions, as PyTorch's ``area_pixel_compute_scale``: the
    user's ``1 / scale_factor`` where one was given, else the ratio of the sizes."""
    if align_corners:
        return ft(n_in - 1) / ft(n_out - 1) if n_out > 1 else ft(0)
    if scale is not None and scale > 0:
        return ft(1.0 / scale)
    return ft(n_in) / ft(n_out)


def _taps(
    mode: str, n_in: int, n_out: int, align_corners: bool, scale: float | None, ft: type
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(index, weight)``: arrays of shape (taps, n_out); output position j is
    ``sum_k weight[k, j] * input[index[k, j]]`` (``weight`` None: a single tap of weight 1).
    Positions are computed in ``ft``: float64 for float64 inputs, else float32, as PyTorch's
    kernels compute them."""
    dst = np.arange(n_out, dtype=ft)
    last = n_in - 1
    if mode == "area":  # adaptive average pooling: windows [floor(j*in/out), ceil((j+1)*in/out))
        j = np.arange(n_out)
        start, end = (j * n_in) // n_out, -((-(j + 1) * n_in) // n_out)
        width = int((end - start).max()) if n_out else 1
        index = start + np.arange(width)[:, None]
        inside = index < end
        weight = np.where(inside, 1.0 / (end - start), 0.0).astype(ft)
        return np.minimum(index, last), weight
    step = _scale(n_in, n_out, align_corners, scale, ft)
    if mode in ("nearest", "nearest-exact"):
        src = dst * step if mode == "nearest" else (dst + ft(0.5)) * step
        return np.minimum(np.floor(src).astype(np.int64), last)[None], None
    src = dst * step if align_corners else (dst + ft(0.5)) * step - ft(0.5)
    if mode == "bicubic":
        low = np.floor(src)
        t = (src - low).astype(ft)
        a = ft(-0.75)  # the cubic convolution's parameter, as PyTorch's

        def near(d):  # |d| <= 1
            return ((a + 2) * d - (a + 3)) * d * d + 1

        def far(d):  # 1 < |d| < 2
            return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

        weight = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)]).astype(ft)
        index = low.astype(np.int64) + np.arange(-1, 3)[:, None]
        return np.clip(index, 0, last), weight
    src = np.maximum(src, ft(0))  # linear modes: a position before the first counts as it
    low = np.floor(src).astype(np.int64)
    frac = (src - low).astype(ft)
    high = np.minimum(low + 1, last)
    return np.stack([low, high]), np.stack([1 - frac, frac]).astype(ft)


def _resample_axis(x: Tensor, axis: int, index: np.ndarray, weight: np.ndarray | None) -> Tensor:
    """``x`` resampled along ``axis`` by ``index`` and ``weight`` (see ``_taps``): one
    gather of every tap, then the weighted sum over the taps."""
    taps, n_out = index.shape
    gathered = array_api.take(x, _asarray(index.reshape(-1), device=x.device), axis=axis)
    if weight is None:
        return gathered
    shape = x.shape
    gathered = ops.reshape(gathered, (*shape[:axis], taps, n_out, *shape[axis + 1 :]))
    w = _asarray(weight.reshape(taps, n_out, *(1,) * (x.ndim - axis - 1)), device=x.device)
    return ops.sum(gathered * ops.astype(w, x.dtype, copy=False), axis=axis)


def _per_dim(value: Any, n: int, name: str, kind: type) -> tuple:
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != n:
            raise ValueError(
                f"Expected {name} with one value per spatial dimension ({n}) or one value. "
                f"Received: {value!r}"
            )
        values = tuple(value)
    else:
        values = (value,) * n
    if not all(isinstance(v, (int, float, np.integer, np.floating)) for v in values) or any(
        isinstance(v, bool) for v in values
    ):
        raise TypeError(f"Expected numbers for {name}. Received: {value!r}")
    return tuple(kind(v) for v in values)


def interpolate(
    input: Any,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """``input`` (N, C, *spatial) resampled to ``size`` or by ``scale_factor`` along its 1, 2
    or 3 spatial dimensions, as ``torch.nn.functional.interpolate``: the same output sizes
    (``floor(in * scale_factor)``), source positions and weights for every mode."""
    x = _tensor(input)
    if mode not in _MODES:
        raise ValueError(f"Expected mode to be one of {list(_MODES)}. Received: {mode!r}")
    spatial, need = x.ndim - 2, _MODES[mode]
    if spatial not in (1, 2, 3) or need not in (None, spatial):
        wanted = "3-D, 4-D or 5-D" if need is None else f"{need + 2}-D"
        raise ValueError(
            f"Expected a {wanted} input (N, C, *spatial) for mode {mode!r}. "
            f"Received: shape {x.shape}."
        )
    if align_corners is not None and mode not in _INTERPOLATING:
        raise ValueError(
            "align_corners can only be set with the interpolating modes linear, bilinear, "
            f"bicubic and trilinear. Received: align_corners={align_corners} with mode {mode!r}."
        )
    if antialias:
        raise NotImplementedError(
            "F.interpolate(antialias=True) is not provided. Downsample with mode='area' "
            "(an average over each output cell's window) instead."
        )
    if mode != "nearest" and mode != "nearest-exact" and x.dtype.kind != "f":
        raise TypeError(
            f"Expected a floating-point input for mode {mode!r}. Received: {x.dtype}. "
            "Convert it first, e.g. with x.float()."
        )
    if (size is None) == (scale_factor is None):
        raise ValueError(
            "Expected exactly one of size and scale_factor. Received: "
            f"size={size!r}, scale_factor={scale_factor!r}"
        )
    n_in = x.shape[2:]
    scales: tuple[float | None, ...]
    if size is not None:
        out = _per_dim(size, spatial, "size", int)
        if any(o < 1 for o in out):
            raise ValueError(f"Expected sizes of at least 1. Received: size={size!r}")
        scales = (None,) * spatial
    else:
        given = _per_dim(scale_factor, spatial, "scale_factor", float)
        if any(not s > 0 or math.isinf(s) for s in given):
            raise ValueError(f"Expected positive, finite scale factors. Received: {scale_factor!r}")
        out = tuple(math.floor(n * s) for n, s in zip(n_in, given, strict=True))
        if mode != "area" and any(o < 1 for o in out):  # (area: an empty mean, as PyTorch)
            raise ValueError(
                f"Expected an output of at least one element along each axis. Received: "
                f"scale_factor={scale_factor!r} for the spatial shape {n_in}, which gives {out}."
            )
        # recompute_scale_factor: the kernels see the sizes only
        scales = (None,) * spatial if recompute_scale_factor else given
    if x.dtype in (float32, float64) and getattr(x._bk.ops, "interpolate", None) is not None:
        native = _call(
            x,
            "interpolate",
            x._native,
            out if size is not None else None,
            None if size is not None else given,
            mode,
            align_corners,
            recompute_scale_factor,
        )
        return _wrap(x, native, x._dtype)
    corners = bool(align_corners)
    ft = np.float64 if x.dtype == float64 else np.float32
    y = x
    for d in range(spatial):
        scale = scales[d]
        # PyTorch's kernels use the sizes, not the given scale, for an axis whose size a linear
        # mode keeps, and (in 2-D only) where nearest keeps or doubles it
        if (mode in _LINEAR and n_in[d] == out[d]) or (
            mode == "nearest" and spatial == 2 and out[d] in (n_in[d], 2 * n_in[d])
        ):
            scale = None
        if n_in[d] == out[d] and (scale in (None, 1.0) or corners or mode == "area"):
            continue  # each position reads itself
        index, weight = _taps(mode, n_in[d], out[d], corners, scale, ft)
        y = _resample_axis(y, 2 + d, index, weight)
    return x.clone() if y is x else y


class Upsample(Block):
    """``F.interpolate`` as a layer (``torch.nn.Upsample``)."""

    def __init__(
        self,
        size: Any = None,
        scale_factor: Any = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.size = size
        if isinstance(scale_factor, Sequence):
            self.scale_factor: Any = tuple(float(s) for s in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Any) -> Tensor:
        return interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')`` of an (N, C, H, W) input."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)`` of an (N, C, H, W) input."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
