"""multidev dtypes and their NumPy counterparts (``ml_dtypes.bfloat16`` for bfloat16)."""

from __future__ import annotations

from typing import Any

from multidev import dtypes as md

__all__ = ["NATIVE"]

NATIVE: dict[md.DType, Any] = {dt: dt.numpy for dt in md.EVERY}
