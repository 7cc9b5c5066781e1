"""MXNet lowerings of the Array API functions beyond the core op table (``mxnet.np``; the few
it lacks are compositions of its kernels)."""

from __future__ import annotations

import math
from typing import Any

import mxnet as mx
import numpy as np
from mxnet import np as mnp

from multidev.contract import reduction

from .arithmetic import floor_divide, signbit
from .fill import full

__all__ = ["LOWERINGS", "signbit"]

_INT64 = "int64"


def _sort(x, axis, descending):
    if x.dtype == bool:
        return _sort(x.astype("uint8"), axis, descending).astype(bool)
    if x.dtype.kind == "f":  # MXNet's sort misplaces NaNs: through the argsort below
        return _along(x, _argsort(x, axis, descending), axis)
    if descending:
        return mnp.flip(mnp.sort(mnp.flip(x, axis), axis=axis), axis)
    return mnp.sort(x, axis=axis)


def _along(x, idx, axis):
    """``x`` picked by ``idx`` (int64, x's shape) along ``axis``, with MXNet's take kernel
    (its ``take_along_axis`` runs NumPy on the host)."""
    n = x.shape[axis]
    moved = mnp.moveaxis(x, axis, -1)
    rows = moved.size // n
    flat = mnp.moveaxis(idx, axis, -1).reshape((rows, n))
    flat = flat + (mnp.arange(rows, dtype="int64") * n).reshape((rows, 1))
    return mnp.moveaxis(mnp.take(moved.reshape(-1), flat).reshape(moved.shape), -1, axis)


def _argsort(x, axis, descending):
    """Stable, NaN greater than every number (PyTorch's order): MXNet's argsort (an
    introsort) reorders ties past 16 elements and misplaces NaNs, so the values, NaN as +inf,
    are sorted once, each run of equal sorted values numbered (NaNs after +inf), and the int64
    key run * n + position (distinct for every element, so any sort of it is exact) sorted."""
    if x.dtype == bool:
        x = x.astype("uint8")
    n = x.shape[axis]
    if x.size == 0 or n < 2:
        return mnp.argsort(x, axis=axis).astype("int64")
    nan = None
    if x.dtype.kind == "f":
        nan = mnp.isnan(x)
        x = mnp.where(nan, mnp.full_like(x, float("inf")), x)
    order = mnp.argsort(x, axis=axis).astype("int64")
    ranked = _along(x, order, axis)
    new_run = mnp.take(ranked, mnp.arange(1, n), axis=axis) != mnp.take(
        ranked, mnp.arange(n - 1), axis=axis
    )
    first = mnp.zeros_like(mnp.take(order, mnp.arange(1), axis=axis))
    runs = mnp.concatenate([first, mnp.cumsum(new_run.astype("int64"), axis=axis)], axis=axis)
    inverse = mnp.argsort(order, axis=axis).astype("int64")  # a permutation: no ties
    run = _along(runs, inverse, axis)
    if nan is not None:
        run = run + n * nan.astype("int64")
    if descending:
        run = 2 * n - 1 - run
    shape = [1] * x.ndim
    shape[axis] = n
    position = mnp.arange(n, dtype="int64").reshape(tuple(shape))
    return mnp.argsort(run * n + position, axis=axis).astype("int64")


def _flip(x, axes):
    """MXNet 1.9's flip kernel has no bool: through uint8."""
    if x.dtype == bool:
        return mnp.flip(x.astype("uint8"), axes).astype(bool)
    return mnp.flip(x, axes)


def _roll(x, shifts, axes):
    """MXNet 1.9's roll kernel has no bool: through uint8."""
    if x.dtype == bool:
        return mnp.roll(x.astype("uint8"), shifts, axes).astype(bool)
    return mnp.roll(x, shifts, axes)


def _logaddexp(a, b):
    m = mnp.maximum(a, b)
    out = m + mnp.log1p(mnp.exp(-mnp.abs(a - b)))
    if out.size == 0:  # MXNet's where aborts the process on zero-size broadcasts
        return out
    return mnp.where(a == b, a + full((), math.log(2.0), a.dtype, a.ctx), out)


def _halves(x, y):
    """The shift ``y`` clipped to the bit width minus one, as two powers of 2 that each fit
    x's dtype (MXNet 1.9 has no shift kernel: shifts are products and floor divisions, and
    2**31 overflows int32)."""
    bits = x.dtype.itemsize * 8
    s = mnp.minimum(y, bits - 1).astype(x.dtype)
    first = mnp.floor(s.astype("float64") / 2).astype(x.dtype)  # no integer // kernel
    two = mnp.full_like(x, 2)
    return bits, mnp.power(two, first).astype(x.dtype), mnp.power(two, s - first).astype(x.dtype)


def _left_shift(x, y):
    """``x << y``: the product wraps as a shift does; shifts by the bit width or more give 0."""
    bits, p1, p2 = _halves(x, y)
    out = x * p1 * p2
    if out.size == 0:  # MXNet's where aborts the process on zero-size broadcasts
        return out
    return mnp.where(y >= bits, mnp.zeros_like(x), out)


def _right_shift(x, y):
    """``x >> y`` (arithmetic): two floor divisions; shifts by the bit width or more give the
    sign fill (0, or -1 for negative x; as a shift by the bit width minus one does for signed
    dtypes)."""
    bits, p1, p2 = _halves(x, y)
    out = floor_divide(floor_divide(x, p1), p2)  # MXNet has no integer //
    if x.dtype.kind != "u" or out.size == 0:  # (MXNet's where aborts on zero-size broadcasts)
        return out
    return mnp.where(y >= bits, mnp.zeros_like(x), out)


def _searchsorted(a, v, side):
    """Where v's elements go into the sorted 1-d a: a binary search by MXNet's kernels, all
    elements at once (``mnp.searchsorted`` is NumPy's, on the host). NaNs sort last, as in
    NumPy."""
    n = a.shape[0]
    lo = mnp.zeros(v.shape, dtype=_INT64, ctx=v.ctx)
    if n == 0 or v.size == 0:
        return lo
    hi = lo + n
    for _ in range(n.bit_length()):  # each step halves every interval [lo, hi)
        mid = ((lo + hi) / 2).astype(_INT64)  # exact: lo + hi < 2**53
        am = mnp.take(a, mnp.minimum(mid, n - 1))
        after = am < v if side == "left" else am <= v  # v goes after a[mid]
        if a.dtype.kind == "f":  # NaN sorts after every number, and (side right) after NaN
            nan_v = mnp.isnan(v)
            after = after + (nan_v * mnp.logical_not(mnp.isnan(am)) if side == "left" else nan_v)
        after = after * (lo < hi)  # bool * bool: logical and
        lo = mnp.where(after, mid + 1, lo)
        hi = mnp.where(after, hi, mid)
    return lo


def _repeat(x, repeats, axis):
    if isinstance(repeats, mnp.ndarray):
        if repeats.size == 0:
            return x.copy()  # counts for an empty axis (mnp.repeat takes no empty list): empty
        # mnp.repeat takes one int count only: element i of the result comes from the
        # source element whose running count first exceeds i
        ends = mnp.cumsum(repeats.astype(_INT64))
        total = int(ends[-1].item())  # the result's length, which the counts decide
        at = mnp.arange(total, dtype=_INT64, ctx=x.ctx)
        return mnp.take(x, _searchsorted(ends, at, "right"), axis=axis)
    return mnp.repeat(x, repeats, axis=axis)


def _sign(x):
    if x.dtype.kind == "f":
        return mnp.where(mnp.isnan(x), x, mnp.sign(x))  # MXNet's sign(NaN) is 0
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def _take_along_axis(x, idx, axis):
    """``x`` picked by ``idx`` (int64, x's shape but along ``axis``) with MXNet's take kernel
    on the flattened tensor (its ``take_along_axis`` runs NumPy on the host)."""
    n, m = x.shape[axis], idx.shape[axis]
    moved_idx = mnp.moveaxis(idx, axis, -1)
    if moved_idx.size == 0:
        return mnp.moveaxis(mnp.zeros(moved_idx.shape, dtype=x.dtype), -1, axis)
    rows = moved_idx.size // m
    flat = moved_idx.reshape((rows, m)) + (mnp.arange(rows, dtype="int64") * n).reshape((rows, 1))
    picked = mnp.take(mnp.moveaxis(x, axis, -1).reshape(-1), flat)
    return mnp.moveaxis(picked.reshape(moved_idx.shape), -1, axis)


def _cumulative_prod(x, axis):
    """Running products (MXNet has no cumprod kernel): a log-depth scan, each step multiplying
    by the running products ``k`` places back (ones before the start)."""
    n = x.shape[axis]
    out, k = x, 1
    while k < n:
        ones_shape = list(x.shape)
        ones_shape[axis] = k
        back = mnp.concatenate(
            [
                mnp.ones(tuple(ones_shape), dtype=x.dtype),
                mnp.take(out, mnp.arange(n - k), axis=axis),
            ],
            axis=axis,
        )
        out, k = out * back, 2 * k
    return out


def _nextafter(x1, x2):
    """The next representable value after ``x1`` toward ``x2`` (MXNet has no nextafter
    kernel): ``x1`` plus a step of 0.6 to 1.2 units in the last place of ``x1`` (at least the
    smallest subnormal), which the addition itself rounds to exactly one unit; equal operands
    give ``x2``, NaN gives NaN and an infinity steps to the largest finite value."""
    info = np.finfo(x1.dtype)
    # the smallest subnormal and the largest value as exact powers of two: MXNet's scalar
    # parser refuses subnormal scalars and rounds the largest float64 off by two units
    two = mnp.ones_like(x1) * 2.0
    tiny = mnp.power(two, float(np.log2(info.smallest_subnormal)))
    largest = mnp.power(two, float(info.maxexp - 1)) * float(2 - info.eps)
    step = mnp.maximum(mnp.abs(x1) * float(info.eps * 0.6), tiny)
    toward = mnp.where(x2 > x1, mnp.ones_like(x1), -mnp.ones_like(x1))
    out = x1 + toward * step
    out = mnp.where(mnp.isinf(x1), mnp.sign(x1) * largest, out)
    out = mnp.where(x1 == x2, x2, out)
    return mnp.where(mnp.isnan(x1), x1, mnp.where(mnp.isnan(x2), x2, out))


def _copysign(x1, x2):
    """x1's magnitude with x2's sign bit, read by ``signbit`` (MXNet's copysign compares with 0,
    so it keeps -0 for a positive x2 and +x for x2 = -0)."""
    return mnp.where(signbit(x1) != signbit(x2), -x1, x1)


def _from_dlpack(obj):
    return mx.nd.from_dlpack(obj.__dlpack__()).as_np_ndarray()


#: the Array API ops MXNet spells differently (the rest: by name on ``mxnet.np``)
LOWERINGS: dict[str, Any] = {
    "sign": _sign,
    "signbit": signbit,
    "copysign": _copysign,
    "logaddexp": _logaddexp,
    "bitwise_left_shift": _left_shift,
    "bitwise_right_shift": _right_shift,
    "all": reduction(mnp.all, mnp.copy),
    "any": reduction(mnp.any, mnp.copy),
    # MXNet's cumsum has no uint8 output: int32, wrapped back (exact modulo 2**8)
    "cumulative_sum": lambda x, axis: (
        mnp.cumsum(x, axis=axis, dtype="int32").astype("uint8")
        if x.dtype == np.uint8
        else mnp.cumsum(x, axis=axis, dtype=x.dtype)
    ),
    "cumulative_prod": _cumulative_prod,
    "nextafter": _nextafter,
    "sort": _sort,
    "argsort": _argsort,
    "flip": _flip,
    "roll": _roll,
    "searchsorted": _searchsorted,
    "nonzero": lambda x: tuple(i.astype("int64") for i in mnp.nonzero(x)),
    "take": lambda x, idx, axis: mnp.take(x, idx, axis=axis),
    "take_along_axis": _take_along_axis,
    "broadcast_to": lambda x, shape: mnp.broadcast_to(x, shape).copy(),
    "repeat": _repeat,
    "triu": lambda x, k: x - mnp.tril(x, k - 1),
    "to_dlpack": lambda x: x.to_dlpack_for_read(),
    "from_dlpack": _from_dlpack,
}
