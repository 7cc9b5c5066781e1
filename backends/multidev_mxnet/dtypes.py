"""multidev dtypes and their MXNet counterparts: NumPy dtypes, without int16, bfloat16 and the
complex dtypes, which MXNet does not have."""

from __future__ import annotations

import numpy as np

from multidev import dtypes as md
from multidev.contract import dtype_error

__all__ = ["ALTERNATIVES", "NATIVE", "native"]

#: what to use instead of the dtypes MXNet lacks
ALTERNATIVES = {
    md.int16: "md.int32",
    md.bfloat16: "md.float32 (or md.float16)",
    md.complex64: "a pair of md.float32 tensors (real and imaginary parts)",
    md.complex128: "a pair of md.float64 tensors (real and imaginary parts)",
}
NATIVE: dict[md.DType, np.dtype] = {
    dt: np.dtype(dt.name) for dt in md.ALL if dt not in ALTERNATIVES
}


def native(dt: md.DType) -> np.dtype:
    """MXNet's dtype for ``dt``; TypeError naming the alternative where MXNet has none."""
    try:
        return NATIVE[dt]
    except KeyError:
        raise dtype_error("mxnet", NATIVE, dt, ALTERNATIVES) from None
