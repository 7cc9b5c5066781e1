"""PyTorch lowerings of ``md.linalg`` and ``md.fft``: ``torch.linalg`` and ``torch.fft`` spell
the Array API's functions as the core calls them, except where listed."""

from __future__ import annotations

import torch

from multidev.contract import Extension

__all__ = ["FFT", "LINALG"]

LINALG = Extension(
    torch.linalg,
    vector_norm=lambda x, ord: torch.linalg.vector_norm(x, ord, dim=-1),
)
FFT = Extension(torch.fft)
