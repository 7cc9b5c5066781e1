"""The NumPy op table. Its results are the expected values of the conformance suite, so
every op is written in the plainest NumPy. Results are always ``np.ndarray`` (NumPy returns
scalars for 0-d results; those are wrapped back into 0-d arrays so that they stay mutable).
"""

from __future__ import annotations

import numpy as np

from multidev.contract import native_astype, op_table
from multidev.dispatch import SCALAR_OPERAND_OPS, SPEEDUPS

from . import cnn, sequence_ops
from .array_api import LOWERINGS as ARRAY_API
from .array_api import QUIET
from .dtypes import NATIVE

__all__ = ["OPS"]

_asarray = np.asarray
_ndarray = np.ndarray


def _arr(fn):
    def wrapped(*args):
        out = fn(*args)
        return _asarray(out) if isinstance(out, np.generic) else out

    wrapped.__name__ = getattr(fn, "__name__", "op")
    return wrapped


def _wrap(fn, name):
    """NumPy's function ``fn`` for op ``name``: 0-d results as arrays, domain warnings off
    where the op's result already says it (``QUIET``)."""
    if name not in QUIET:
        return _arr(fn)

    def quiet(*args):
        with np.errstate(all="ignore"):
            return fn(*args)

    return _arr(quiet)


_PY_SCALARS = (int, float, bool)


def _binary(fn):
    """A binary op. NumPy 1.x casts by value when one side is 0-d or a Python scalar; the core
    has already chosen the result dtype, so a Python scalar is given the array's dtype."""
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        if SPEEDUPS is not None:
            # the same in C: the ufunc's result where it is an ndarray, else _asarray of it
            return SPEEDUPS.exact_result(fn, _ndarray, _asarray)

        def binary(a, b):  # two positional operands, an exact type check: the operators' path
            out = fn(a, b)
            return out if type(out) is _ndarray else _asarray(out)

        return binary

    def wrapped(a, b):
        if type(a) in _PY_SCALARS:
            a = b.dtype.type(a)
        elif type(b) in _PY_SCALARS:
            b = a.dtype.type(b)
        out = fn(a, b)
        return _asarray(out) if isinstance(out, np.generic) else out

    return wrapped


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _reduce(fn):
    return lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims)


def _arg(fn):
    return lambda x, axis: _asarray(fn(x, axis=axis), dtype=np.int64)


#: the binary ops (those the core may hand a Python scalar operand, and the logical ones):
#: NumPy's function of the same name, but for divide and pow (NumPy 1 has no np.pow)
_BINARY = {
    name: {"divide": np.true_divide, "pow": np.power}.get(name) or getattr(np, name)
    for name in (*SCALAR_OPERAND_OPS, "logical_and", "logical_or")
}

#: the ops NumPy spells differently from their declaration (each returning 0-d results as arrays)
_LOWERINGS = {
    **ARRAY_API,
    "matmul": np.matmul,
    "negative": np.negative,
    "sigmoid": _sigmoid,
    "relu": lambda x: np.maximum(x, x.dtype.type(0)),
    "argmax": _arg(np.argmax),
    "argmin": _arg(np.argmin),
    "clip": lambda x, lo, hi: np.clip(x, lo, hi).astype(x.dtype, copy=False),
    "softmax": _softmax,
}

OPS = op_table(
    np,
    modules=[sequence_ops, cnn],
    wrap=_wrap,
    reduce=_reduce,
    **{name: _arr(fn) for name, fn in _LOWERINGS.items()},
    **{name: _binary(fn) for name, fn in _BINARY.items()},
    astype=native_astype("numpy", NATIVE, {}),
    copy=np.array,
)
