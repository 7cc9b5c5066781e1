"""NumPy lowerings of ``md.linalg`` and ``md.fft`` (``numpy.linalg``, ``numpy.fft``), written
for NumPy 1.23 and 2.x alike; results are always ``np.ndarray``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from multidev.contract import Extension

__all__ = ["FFT", "LINALG"]


def _arrays(out: Any) -> Any:
    if isinstance(out, tuple):  # NumPy's named results (EighResult, SVDResult, ...)
        return tuple(np.asarray(o) for o in out)
    return np.asarray(out)


class _NumpyExtension(Extension):
    """NumPy reduces 2-d input to scalars: every lowering returns arrays."""

    def lowering(self, name: str) -> Callable[..., Any] | None:
        fn = super().lowering(name)
        if fn is None:
            return None
        return lambda *args, **kwargs: _arrays(fn(*args, **kwargs))


LINALG = _NumpyExtension(
    np.linalg,
    svdvals=lambda x: np.linalg.svd(x, compute_uv=False),
    pinv=lambda x, rtol: np.linalg.pinv(x, rcond=rtol),
    cross=np.cross,
    diagonal=lambda x, offset: np.diagonal(x, offset, -2, -1),
    vector_norm=lambda x, ord: np.linalg.norm(x, ord, axis=-1),
)
FFT = _NumpyExtension(np.fft)
