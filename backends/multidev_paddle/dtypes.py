"""multidev dtypes and their Paddle counterparts (Paddle has every one of them)."""

from __future__ import annotations

from typing import Any

import paddle

from multidev import dtypes as md
from multidev.contract import dtype_lookup

__all__ = ["NATIVE", "dtype_name", "md_dtype"]

NATIVE: dict[md.DType, Any] = {dt: getattr(paddle, dt.name) for dt in md.EVERY}
#: multidev's dtype for a Paddle dtype, or None where multidev has none
md_dtype = dtype_lookup(NATIVE)


def dtype_name(native: Any) -> str:
    """The dtype's name without Paddle's prefix, multidev's name for those it has ('float32')."""
    return str(native).replace("paddle.", "")
