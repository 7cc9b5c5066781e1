"""Exact arithmetic on ``mxnet.numpy`` arrays where MXNet's kernels differ from NumPy: floor
division and remainder (integers exactly, floats with NumPy's signs of zero and infinities),
the sign bit, and ``where`` without MXNet's zero-size broadcast abort. A leaf of the adapter's
modules: the op table (``ops``), the Array API lowerings (``array_api``) and the optimiser's
updates (``updates``) all import from here."""

from __future__ import annotations

import mxnet as mx
import numpy as np
from mxnet import np as mnp

from multidev.contract import as_tensors

from .fill import F64
from .indexing import BOOL, UINT8, like

__all__ = [
    "FLOATS",
    "floor_divide",
    "int_divmod",
    "no_bool",
    "remainder",
    "signbit",
    "signed_zero",
    "where",
    "zeros",
]

F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
#: the floating-point dtypes MXNet holds
FLOATS = frozenset({F16, F32, F64})


def zeros(shape, like):
    return mnp.zeros(shape, dtype=like.dtype, ctx=like.ctx)


def signbit(x):
    """Whether x's sign bit is set, by MXNet's kernels: x < 0, or 1 / x < 0 for -0 (``mnp.signbit``
    is NumPy's own ufunc, run on the host). No MXNet kernel reads the sign of a NaN: False."""
    if x.dtype.kind != "f":
        return x < 0
    return (x < 0) + (1 / x < 0)  # bool + bool: logical or


def no_bool(name: str, x) -> None:
    if x.dtype == BOOL:
        raise TypeError(
            f"Expected numeric tensors for {name}. Received: bool tensors. "
            "Cast them first, e.g. with .astype(md.int64)."
        )


def where(cond, a, b):
    if 0 not in cond.shape and 0 not in a.shape and 0 not in b.shape:
        return mnp.where(cond, a, b)
    # MXNet's where aborts the process when it broadcasts zero-size arrays
    return zeros(np.broadcast_shapes(cond.shape, a.shape, b.shape), a)


def int_divmod(a, b):
    """Exact floor division and remainder of integer arrays, as NumPy computes them (x // 0
    and x % 0 are 0; MXNet's own mod goes through float64 and loses digits beyond 2**53)."""
    zero = b == 0
    signed = a.dtype != UINT8
    special = zero + (b == -1) if signed else zero  # bool + bool: logical or
    safe = where(special, like(b, 1), b)  # never divide by 0, nor INT_MIN by -1 (a trap)
    # rounding toward zero, computed exactly by MXNet's integer kernel
    q = mx.nd.broadcast_div(a.as_nd_ndarray(), safe.as_nd_ndarray()).as_np_ndarray()
    r = a - q * safe
    if signed:
        q = where(b == -1, -a, q)
        off = (r != 0) * ((r < 0) != (b < 0))  # bool * bool: logical and
        q = q - off.astype(q.dtype)
        r = r + b * off.astype(r.dtype)
    keep = mnp.logical_not(zero).astype(q.dtype)
    return q * keep, r


def signed_zero(x, sign):
    """x with each zero given the sign bit of ``sign`` (MXNet's float mod and floor give +0
    or -0 where NumPy's sign rule asks for the other; its copysign gets zeros wrong too)."""
    if x.size == 0:
        return x
    zero = mnp.abs(x)
    return where(x == 0, where(signbit(sign), -zero, zero), x)


def floor_divide(a, b):
    """NumPy's floor division: rounds toward minus infinity; x // 0 is ±inf/nan for floats
    and 0 for integers."""
    a, b = as_tensors(a, b, like)
    no_bool("//", a)
    if a.dtype in FLOATS:
        m = mnp.mod(a, b)
        div = (a - m) / b
        # a finite x // an infinite y of the other sign: MXNet's mod is y, NumPy's quotient -1
        div = where(mnp.isinf(m) * mnp.isfinite(a), like(div, -1), div)
        q = mnp.floor(div)
        q = q + (div - q > 0.5).astype(q.dtype)
        # a zero quotient has the sign of a / b, as in NumPy (MXNet's is +0)
        q = signed_zero(q, a / b)
        return where(b == 0, a / b, q)
    return int_divmod(a, b)[0]


def remainder(a, b):
    """NumPy's remainder: the sign of the divisor; x % 0 is nan for floats and 0 for integers."""
    a, b = as_tensors(a, b, like)
    no_bool("%", a)
    if a.dtype in FLOATS:
        m = signed_zero(mnp.mod(a, b), b)  # a zero remainder has the divisor's sign
        return where(b == 0, like(m, np.nan), m)
    return int_divmod(a, b)[1]
