"""multidev dtypes and their MXNet counterparts: NumPy dtypes, without int16, bfloat16 and the
complex dtypes, which MXNet does not have."""

from __future__ import annotations

import numpy as np

from multidev import dtypes as md

__all__ = ["ALTERNATIVES", "NATIVE"]

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
