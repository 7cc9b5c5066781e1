"""multidev dtypes and their MXNet counterparts: NumPy dtypes, without int16 and bfloat16,
which MXNet does not have."""

from __future__ import annotations

import numpy as np

from multidev import dtypes as md
from multidev.contract import dtype_error

__all__ = ["ALTERNATIVES", "NATIVE", "native"]

#: what to use instead of the dtypes MXNet lacks
ALTERNATIVES = {md.int16: "md.int32", md.bfloat16: "md.float32 (or md.float16)"}
NATIVE: dict[md.DType, np.dtype] = {
    dt: np.dtype(dt.name) for dt in md.ALL if dt not in ALTERNATIVES
}


def native(dt: md.DType) -> np.dtype:
    """MXNet's dtype for ``dt``; TypeError naming the alternative where MXNet has none."""
    try:
        return NATIVE[dt]
    except KeyError:
        raise dtype_error("mxnet", NATIVE, dt, ALTERNATIVES) from None
