"""NumPy lowerings of the sequence ops (``multidev.nn.sequence_functional``), the reference."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["LOWERINGS"]

_erf = np.frompyfunc(math.erf, 1, 1)


def _layer_norm(x, w, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + x.dtype.type(eps)) * w + b).astype(x.dtype)


def _gelu(x, tanh):
    if tanh:
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        return (0.5 * x * (1 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * x * (1 + _erf(x / math.sqrt(2)).astype(np.float64))).astype(x.dtype)


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS = {
    "embedding": lambda w, idx: np.asarray(w[idx]),
    "one_hot": lambda idx, n: np.eye(n, dtype=np.int64)[idx],
    "stop_gradient": lambda x: x,
    "layer_norm": _layer_norm,
    "gelu": _gelu,
}
