"""Float64 values that keep every bit on their way into MXNet.

MXNet hands a fill value (and a scalar operand) to its kernels as text, which its own parser
(dmlc-core's strtod) reads up to a few ulps off for most float64 values: ``mnp.full((), 0.1,
dtype="float64")`` is exact, ``2.0**-24`` and ``2.220271855863707e16`` are not. It reads
integers below 2**53 exactly, so ``full`` builds such a value as ``m * 2**e`` from them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mxnet import np as mnp

__all__ = ["F64", "exact_float64", "full"]

F64 = np.dtype(np.float64)
_EXACT_INT = 2**53  # integers below this reach MXNet's kernels unchanged
_STEP = 52  # the largest power of two applied per multiplication (2**52 is below _EXACT_INT)


def exact_float64(value: Any) -> bool:
    """Whether MXNet reads the float64 ``value`` exactly as it is (integers below 2**53 but
    -0.0, infinities, NaN); anything else goes through ``full``'s exact construction."""
    if isinstance(value, (bool, int)):
        return abs(value) < _EXACT_INT
    v = float(value)
    if v == 0:
        return math.copysign(1.0, v) > 0  # MXNet reads -0.0 as +0.0
    return not math.isfinite(v) or (v.is_integer() and abs(v) < _EXACT_INT)


def full(shape: tuple[int, ...], value: Any, dtype: np.dtype, ctx: Any) -> mnp.ndarray:
    """``mnp.full(shape, value, dtype, ctx)``, holding exactly ``value`` for float64 (and -0.0
    for every float dtype): an odd integer m below 2**53 filled in, then scaled by 2**e in
    steps of at most 2**52, each exact (intermediate values lie between m and m * 2**e, so no
    bit is lost)."""
    if dtype.kind == "f" and value == 0 and math.copysign(1.0, float(value)) < 0:
        return -mnp.zeros(shape, dtype=dtype, ctx=ctx)  # MXNet reads -0.0 as +0.0
    if dtype != F64 or exact_float64(value):
        return mnp.full(shape, value, dtype=dtype, ctx=ctx)
    mantissa, e = math.frexp(float(value))
    m = int(mantissa * _EXACT_INT)
    e -= 53
    zeros = (m & -m).bit_length() - 1  # trailing zero bits of m (m != 0: value is not 0)
    m >>= zeros
    e += zeros
    out = mnp.full(shape, m, dtype=dtype, ctx=ctx)
    while e > 0:
        k = min(e, _STEP)
        out = out * (1 << k)
        e -= k
    while e < 0:
        k = min(-e, _STEP)
        out = out / (1 << k)
        e += k
    return out
