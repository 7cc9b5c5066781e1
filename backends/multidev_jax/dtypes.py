"""multidev dtypes and their JAX counterparts: JAX uses NumPy's dtype objects (``ml_dtypes``
for bfloat16) and has every one of multidev's dtypes once ``jax_enable_x64`` is on."""

from __future__ import annotations

from typing import Any

from multidev import dtypes as md

__all__ = ["NATIVE"]

NATIVE: dict[md.DType, Any] = {dt: dt.numpy for dt in md.EVERY}
