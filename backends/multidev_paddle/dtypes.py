"""multidev dtypes and their Paddle counterparts: every one but uint16, uint32 and uint64,
which Paddle does not have (its ``paddle.uint16`` is bfloat16's storage type)."""

from __future__ import annotations

from typing import Any

import paddle

from multidev import dtypes as md
from multidev.contract import dtype_lookup

__all__ = ["ALTERNATIVES", "NATIVE", "dtype_name", "md_dtype"]

#: what to use instead of the dtypes Paddle lacks
ALTERNATIVES = {
    md.uint16: "md.int32",
    md.uint32: "md.int64",
    md.uint64: "md.int64 (values up to 2**63 - 1)",
}
NATIVE: dict[md.DType, Any] = {
    dt: getattr(paddle, dt.name) for dt in md.EVERY if dt not in ALTERNATIVES
}
#: multidev's dtype for a Paddle dtype, or None where multidev has none
md_dtype = dtype_lookup(NATIVE)


def dtype_name(native: Any) -> str:
    """The dtype's name without Paddle's prefix, multidev's name for those it has ('float32')."""
    return str(native).replace("paddle.", "")
