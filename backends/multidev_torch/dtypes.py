"""multidev dtypes and their PyTorch counterparts (PyTorch has every one of them)."""

from __future__ import annotations

import torch

from multidev import dtypes as md

__all__ = ["NATIVE"]

NATIVE: dict[md.DType, torch.dtype] = {dt: getattr(torch, dt.name) for dt in md.EVERY}
