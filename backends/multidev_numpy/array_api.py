"""NumPy lowerings of the Array API functions beyond the core op table: the plainest NumPy,
as the conformance suite's expected values. Results are always ``np.ndarray``."""

from __future__ import annotations

import numpy as np

__all__ = ["LOWERINGS"]


def _arr(fn):
    def wrapped(*args):
        out = fn(*args)
        return out if type(out) is np.ndarray else np.asarray(out)

    return staticmethod(wrapped)


def _quiet(fn):
    def wrapped(*args):
        with np.errstate(all="ignore"):
            return fn(*args)

    return wrapped


def _sort(x, axis, descending):
    if descending:
        return np.flip(np.sort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return np.sort(x, axis=axis, kind="stable")


def _argsort(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64)
    n = x.shape[axis]
    rev = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - rev, axis).astype(np.int64)


class ArrayApiOps:
    acos = _arr(_quiet(np.arccos))
    acosh = _arr(_quiet(np.arccosh))
    asin = _arr(_quiet(np.arcsin))
    asinh = _arr(np.arcsinh)
    atan = _arr(np.arctan)
    atanh = _arr(_quiet(np.arctanh))
    cosh = _arr(_quiet(np.cosh))
    sinh = _arr(_quiet(np.sinh))
    tan = _arr(np.tan)
    expm1 = _arr(_quiet(np.expm1))
    log2 = _arr(_quiet(np.log2))
    log10 = _arr(_quiet(np.log10))
    ceil = _arr(np.ceil)
    trunc = _arr(np.trunc)
    round = _arr(np.round)
    sign = _arr(np.sign)
    isnan = _arr(np.isnan)
    isinf = _arr(np.isinf)
    isfinite = _arr(np.isfinite)
    signbit = _arr(np.signbit)
    atan2 = _arr(np.arctan2)
    hypot = _arr(np.hypot)
    copysign = _arr(np.copysign)
    logaddexp = _arr(np.logaddexp)
    bitwise_and = _arr(np.bitwise_and)
    bitwise_or = _arr(np.bitwise_or)
    bitwise_xor = _arr(np.bitwise_xor)
    bitwise_left_shift = _arr(np.left_shift)
    bitwise_right_shift = _arr(np.right_shift)
    bitwise_invert = _arr(np.invert)
    all = _arr(lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims))
    any = _arr(lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims))
    cumulative_sum = _arr(lambda x, axis: np.cumsum(x, axis=axis, dtype=x.dtype))
    sort = _arr(_sort)
    argsort = _arr(_argsort)
    searchsorted = _arr(lambda a, v, side: np.searchsorted(a, v, side=side).astype(np.int64))
    nonzero = staticmethod(lambda x: tuple(i.astype(np.int64) for i in np.nonzero(x)))
    take = _arr(lambda x, idx, axis: np.take(x, idx, axis=axis))
    flip = _arr(lambda x, axes: np.flip(x, axes).copy())
    roll = _arr(lambda x, shifts, axes: np.roll(x, shifts, axes))
    broadcast_to = _arr(lambda x, shape: np.broadcast_to(x, shape).copy())
    repeat = _arr(lambda x, repeats, axis: np.repeat(x, repeats, axis=axis))
    tile = _arr(np.tile)
    tril = _arr(lambda x, k: np.tril(x, k))
    triu = _arr(lambda x, k: np.triu(x, k))
    to_dlpack = staticmethod(lambda x: x.__dlpack__())
    from_dlpack = _arr(np.from_dlpack)
    real = _arr(lambda x: np.real(x).copy())
    imag = _arr(lambda x: np.imag(x).copy())
    conj = _arr(np.conj)


#: op name -> native function, for the adapter's op_table
LOWERINGS = {k: getattr(ArrayApiOps, k) for k in vars(ArrayApiOps) if not k.startswith("_")}
