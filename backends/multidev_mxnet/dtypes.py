"""multidev dtypes and their MXNet counterparts: NumPy dtypes, without int16, bfloat16, the
complex dtypes and uint16/uint32/uint64, which MXNet does not have (``mx.np`` refuses them)."""

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
    md.uint16: "md.int32",
    md.uint32: "md.int64",
    md.uint64: "md.int64 (values up to 2**63 - 1)",
}
NATIVE: dict[md.DType, np.dtype] = {
    dt: np.dtype(dt.name) for dt in md.ALL if dt not in ALTERNATIVES
}
