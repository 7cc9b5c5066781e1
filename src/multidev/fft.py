"""``md.fft``: the Array API 2023.12 FFT extension.

The transforms are declared once here and run the adapter's lowering (``Adapter.fft``: by
default the framework's function of that name, e.g. ``torch.fft.rfft``, called as
``(x, n, axis, norm)`` or ``(x, s, axes, norm)``). Their results are complex (apart from
``irfft``, ``irfftn`` and ``hfft``), so they need the backend's complex dtypes; a backend
whose framework has no FFT raises ``UnsupportedOperationError``. The helpers ``fftfreq``,
``rfftfreq``, ``fftshift`` and ``ifftshift`` are native ``arange`` / ``roll`` compositions
and work on every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import array_api, creation, ops
from . import dtypes as _dt
from .dispatch import as_tensor, on, wrap
from .tensors import Tensor

__all__ = [
    "fft",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfftn",
    "rfft",
    "rfftfreq",
    "rfftn",
]

_NORMS = ("backward", "ortho", "forward")


def _native(x: Tensor, name: str, *args: Any) -> Tensor:
    """The adapter's lowering of ``fft.<name>`` run on x's device, as a Tensor."""
    bk = x._bk
    fn = bk.fft.require("fft", name, bk.name)
    return wrap(x, on(bk, x._dev, fn, x._native, *args))


def _check_norm(norm: str) -> None:
    if norm not in _NORMS:
        raise ValueError(f"Expected norm among {_NORMS}. Received: {norm!r}")


def _one_axis(name: str, doc: str):
    def transform(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward"):
        x = as_tensor(x)
        _check_norm(norm)
        if n is not None and n < 1:
            raise ValueError(f"Expected n >= 1 for fft.{name}. Received: {n}")
        return _native(x, name, n, ops._axis(x, axis), norm)

    transform.__name__ = name
    transform.__doc__ = (
        doc + " along ``axis``; ``n`` crops or zero-pads that axis first (for the "
        "inverse real transforms: the output length), ``norm`` scales as the standard says."
    )
    return transform


def _many_axes(name: str, doc: str):
    def transform(
        x: Any,
        /,
        *,
        s: Sequence[int] | None = None,
        axes: Sequence[int] | None = None,
        norm: str = "backward",
    ):
        x = as_tensor(x)
        _check_norm(norm)
        if axes is None:
            axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else range(x.ndim)
        ax = tuple(ops._axis(x, a) for a in axes)
        if s is not None and len(s) != len(ax):
            raise ValueError(f"Expected one size per axis. Received: s={s} for axes {ax}")
        return _native(x, name, None if s is None else tuple(int(v) for v in s), ax, norm)

    transform.__name__ = name
    transform.__doc__ = doc + " over ``axes`` (all by default), with sizes ``s``."
    return transform


fft = _one_axis("fft", "The discrete Fourier transform")
ifft = _one_axis("ifft", "The inverse discrete Fourier transform")
rfft = _one_axis("rfft", "The Fourier transform of real input (the non-negative frequencies)")
irfft = _one_axis("irfft", "The inverse of rfft: a real signal")
hfft = _one_axis("hfft", "The Fourier transform of a Hermitian-symmetric signal (real output)")
ihfft = _one_axis("ihfft", "The inverse of hfft")
fftn = _many_axes("fftn", "The n-dimensional discrete Fourier transform")
ifftn = _many_axes("ifftn", "The inverse n-dimensional discrete Fourier transform")
rfftn = _many_axes("rfftn", "The n-dimensional Fourier transform of real input")
irfftn = _many_axes("irfftn", "The inverse of rfftn: a real signal")


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``:
    ``[0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d * n)`` (float32 by default)."""
    if n < 1:
        raise ValueError(f"Expected n >= 1 for fftfreq. Received: {n}")
    dt = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    k = creation.arange(n, dtype=dt, device=device)
    k = ops.where(k < (n + 1) // 2, k, k - n)
    return k / (d * n)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point real transform:
    ``[0, 1, ..., n//2] / (d * n)`` (float32 by default)."""
    if n < 1:
        raise ValueError(f"Expected n >= 1 for rfftfreq. Received: {n}")
    dt = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    return creation.arange(n // 2 + 1, dtype=dt, device=device) / (d * n)


def _shift(x: Any, axes: Any, sign: int) -> Tensor:
    x = as_tensor(x)
    ax = ops._axes(x, axes)
    ax = tuple(range(x.ndim)) if ax is None else ax
    return array_api.roll(x, tuple(sign * (x.shape[a] // 2) for a in ax), axis=ax)


def fftshift(x: Any, /, *, axes: Any = None) -> Tensor:
    """``x`` with the zero frequency moved to the centre of ``axes`` (all by default)."""
    return _shift(x, axes, 1)


def ifftshift(x: Any, /, *, axes: Any = None) -> Tensor:
    """The inverse of fftshift."""
    return _shift(x, axes, -1)
