"""The conformance suite's ops written directly in MXNet's NumPy interface (not through
multidev): NumPy arrays in, NumPy arrays out.

Each function runs with MXNet's NumPy semantics on (``mx.util.use_np``), so the module works
whether or not the multidev adapter has been set up. ``log_softmax`` runs MXNet's kernel in
float64 and rounds the result back: in float32 that kernel is only accurate to about 1e-4
relative, short of the suite's tolerance.
"""

from __future__ import annotations

from collections.abc import Callable

import mxnet as mx
import numpy as np
from mxnet import np as mnp
from mxnet import npx

__all__ = ["OPS"]


def _mx(a) -> mnp.ndarray:
    a = np.asarray(a)
    return mnp.array(a, dtype=a.dtype)


def _out(x) -> np.ndarray:
    return x.asnumpy()


def _binary(fn: Callable) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda a, b: _out(fn(_mx(a), _mx(b)))


def _unary(fn: Callable) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: _out(fn(_mx(a)))


def _log_softmax(a, axis):
    x = _mx(a)
    return _out(npx.log_softmax(x.astype(np.float64), axis=axis).astype(x.dtype))


def _linear(x, weight, bias):
    w = _mx(weight)
    if bias is None:
        y = npx.fully_connected(_mx(x), w, num_hidden=w.shape[0], no_bias=True, flatten=False)
    else:
        y = npx.fully_connected(_mx(x), w, _mx(bias), num_hidden=w.shape[0], flatten=False)
    return _out(y)


_RAW: dict[str, Callable[..., np.ndarray]] = {
    "add": _binary(mnp.add),
    "subtract": _binary(mnp.subtract),
    "multiply": _binary(mnp.multiply),
    "divide": _binary(mnp.divide),
    "maximum": _binary(mnp.maximum),
    "matmul": _binary(mnp.matmul),
    "exp": _unary(mnp.exp),
    "log": _unary(mnp.log),
    "sqrt": _unary(mnp.sqrt),
    "abs": _unary(mnp.abs),
    "tanh": _unary(mnp.tanh),
    "sigmoid": _unary(npx.sigmoid),
    "relu": _unary(npx.relu),
    "softmax": lambda a, axis: _out(npx.softmax(_mx(a), axis=axis)),
    "log_softmax": _log_softmax,
    "sum": lambda a, axis, keepdims: _out(mnp.sum(_mx(a), axis=axis, keepdims=keepdims)),
    "mean": lambda a, axis, keepdims: _out(mnp.mean(_mx(a), axis=axis, keepdims=keepdims)),
    "max": lambda a, axis, keepdims: _out(mnp.max(_mx(a), axis=axis, keepdims=keepdims)),
    "argmax": lambda a, axis: _out(mnp.argmax(_mx(a), axis=axis)),
    "reshape": lambda a, shape: _out(mnp.reshape(_mx(a), shape)),
    "permute_dims": lambda a, axes: _out(mnp.transpose(_mx(a), axes)),
    "concat": lambda arrays, axis: _out(mnp.concatenate([_mx(a) for a in arrays], axis=axis)),
    "stack": lambda arrays, axis: _out(mnp.stack([_mx(a) for a in arrays], axis=axis)),
    "where": lambda cond, a, b: _out(mnp.where(_mx(cond), _mx(a), _mx(b))),
    "clip": lambda a, lo, hi: _out(mnp.clip(_mx(a), lo, hi)),
    "linear": _linear,
}

#: name -> the op computed by MXNet on NumPy arrays, returning a NumPy array
OPS: dict[str, Callable[..., np.ndarray]] = {name: mx.util.use_np(fn) for name, fn in _RAW.items()}
