"""The NumPy op table. Its results are the expected values of the conformance suite, so
every op is written in the plainest NumPy. Results are always ``np.ndarray`` (NumPy returns
scalars for 0-d results; those are wrapped back into 0-d arrays so that they stay mutable).
"""

from __future__ import annotations

import numpy as np

from multidev.contract import PythonOperatorOps

from .array_api import ArrayApiOps

__all__ = ["Ops", "writable"]

_asarray = np.asarray


def _arr(fn):
    def wrapped(*args):
        out = fn(*args)
        return out if type(out) is np.ndarray else _asarray(out)

    wrapped.__name__ = getattr(fn, "__name__", "op")
    return wrapped


_PY_SCALARS = (int, float, bool)


def _binary(fn):
    """A binary op. NumPy 1.x casts by value when one side is 0-d or a Python scalar; the core
    has already chosen the result dtype, so a Python scalar is given the array's dtype."""
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        return _arr(fn)

    def wrapped(a, b):
        if type(a) in _PY_SCALARS:
            a = b.dtype.type(a)
        elif type(b) in _PY_SCALARS:
            b = a.dtype.type(b)
        out = fn(a, b)
        return out if type(out) is np.ndarray else _asarray(out)

    return wrapped


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis):
    s = x - np.max(x, axis=axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _reduce(fn):
    return _arr(lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims))


def _arg(fn):
    def f(x, axis, keepdims):
        out = fn(x, axis=axis)
        if keepdims:
            out = np.expand_dims(out, tuple(range(x.ndim)) if axis is None else axis)
        return _asarray(out, dtype=np.int64)

    return f


def writable(x: np.ndarray) -> np.ndarray:
    if not x.flags.writeable:
        raise ValueError("Expected a writable array. Received: a read-only NumPy array")
    return x


class Ops(ArrayApiOps, PythonOperatorOps):
    add = staticmethod(_binary(np.add))
    subtract = staticmethod(_binary(np.subtract))
    multiply = staticmethod(_binary(np.multiply))
    divide = staticmethod(_binary(np.true_divide))
    floor_divide = staticmethod(_binary(np.floor_divide))
    remainder = staticmethod(_binary(np.remainder))
    pow = staticmethod(_binary(np.power))
    matmul = staticmethod(_arr(np.matmul))
    maximum = staticmethod(_binary(np.maximum))
    minimum = staticmethod(_binary(np.minimum))
    equal = staticmethod(_binary(np.equal))
    not_equal = staticmethod(_binary(np.not_equal))
    less = staticmethod(_binary(np.less))
    less_equal = staticmethod(_binary(np.less_equal))
    greater = staticmethod(_binary(np.greater))
    greater_equal = staticmethod(_binary(np.greater_equal))
    logical_and = staticmethod(_binary(np.logical_and))
    logical_or = staticmethod(_binary(np.logical_or))
    negative = staticmethod(_arr(np.negative))
    abs = staticmethod(_arr(np.abs))
    exp = staticmethod(_arr(np.exp))
    log = staticmethod(_arr(np.log))
    sqrt = staticmethod(_arr(np.sqrt))
    sin = staticmethod(_arr(np.sin))
    cos = staticmethod(_arr(np.cos))
    tanh = staticmethod(_arr(np.tanh))
    floor = staticmethod(_arr(np.floor))
    logical_not = staticmethod(_arr(np.logical_not))
    sigmoid = staticmethod(_arr(_sigmoid))
    relu = staticmethod(_arr(lambda x: np.maximum(x, x.dtype.type(0))))
    sum = staticmethod(_reduce(np.sum))
    mean = staticmethod(_reduce(np.mean))
    max = staticmethod(_reduce(np.max))
    min = staticmethod(_reduce(np.min))
    prod = staticmethod(_reduce(np.prod))
    argmax = staticmethod(_arg(np.argmax))
    argmin = staticmethod(_arg(np.argmin))
    reshape = staticmethod(_arr(np.reshape))
    permute_dims = staticmethod(_arr(np.transpose))
    concat = staticmethod(_arr(lambda xs, axis: np.concatenate(xs, axis=axis)))
    stack = staticmethod(_arr(lambda xs, axis: np.stack(xs, axis=axis)))
    where = staticmethod(_arr(np.where))
    clip = staticmethod(_arr(lambda x, lo, hi: np.clip(x, lo, hi).astype(x.dtype, copy=False)))
    softmax = staticmethod(_arr(_softmax))
    log_softmax = staticmethod(_arr(_log_softmax))
    getitem = staticmethod(_arr(lambda x, key: x[key]))
    astype = staticmethod(lambda x, dt: x.astype(dt.numpy))
    copy = staticmethod(np.array)
