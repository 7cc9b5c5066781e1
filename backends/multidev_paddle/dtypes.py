"""multidev dtypes and their Paddle counterparts (Paddle has every one of them)."""

from __future__ import annotations

from typing import Any

import paddle

from multidev import dtypes as md

__all__ = ["NATIVE", "dtype_name", "md_dtype"]

NATIVE: dict[md.DType, Any] = {dt: getattr(paddle, dt.name) for dt in md.EVERY}
_FROM_NATIVE = {v: k for k, v in NATIVE.items()}
# Paddle's dtype objects are singletons whose hash and == are slow (~0.5 us): look them up by
# identity first (these objects live as long as Paddle, so their ids are never reused)
_FROM_ID = {id(v): k for k, v in NATIVE.items()}


def md_dtype(dt: Any) -> md.DType | None:
    """multidev's dtype for a Paddle dtype, or None where multidev has none."""
    found = _FROM_ID.get(id(dt))
    return found if found is not None else _FROM_NATIVE.get(dt)


def dtype_name(dt: Any) -> str:
    """The dtype's name without Paddle's prefix ('float32', 'complex64')."""
    found = md_dtype(dt)
    return found.name if found is not None else str(dt).replace("paddle.", "")
