"""NumPy indexing on MXNet arrays: zero-size and 0-d arrays, bool arrays (several of MXNet's
assignment kernels lack bool), and bounds-checked index arrays for assignment."""

from __future__ import annotations

import mxnet as mx
import numpy as np
from mxnet import np as mnp

from multidev.indexing import (
    bool_mask_ndim,
    check_index_range,
    checked_key,
    key_items,
    new_axes_first,
)

from .fill import F64, exact_float64, full

__all__ = ["BOOL", "INT64", "UINT8", "getitem", "like", "recorded_setitem", "setitem"]

BOOL = np.dtype(np.bool_)
UINT8 = np.dtype(np.uint8)
INT64 = np.dtype(np.int64)
_SCALARS = (bool, int, float)
_mask_ndim = bool_mask_ndim(mnp.ndarray, BOOL)


def like(x, value):
    """A 0-d array holding ``value`` with x's dtype and context."""
    return full((), value, x.dtype, x.ctx)


def _has_array(key) -> bool:
    if type(key) is tuple:
        return any(isinstance(k, mnp.ndarray) for k in key)
    return isinstance(key, mnp.ndarray)


def getitem(x, key):
    if _has_array(key) and 0 in x.shape:
        # MXNet's gather kernels crash on zero-size arrays: the result holds no values anyway
        host = tuple(k.asnumpy() if isinstance(k, mnp.ndarray) else k for k in key_items(key))
        shape = np.empty(x.shape, dtype=np.bool_)[host].shape
        return mnp.zeros(shape, dtype=x.dtype, ctx=x.ctx)
    plan = new_axes_first(key, x.shape, _mask_ndim, mnp.ndarray)
    if plan is not None:  # MXNet places a new axis beside an index array elsewhere
        x, key = x.reshape(plan[0]), plan[1]
    try:
        return x[key]
    except IndexError:
        # all a 0-d array takes are keys that only add axes (None, Ellipsis, ())
        if x.ndim != 0 or any(k is not None and k is not Ellipsis for k in key_items(key)):
            raise
    return x.reshape((1,) * sum(k is None for k in key_items(key)))


def _index(k, size: int):
    """An integer index array as int64, bounds-checked and with negative entries counted from
    the end: MXNet's scatter kernels take indices as they are, so a negative or too large one
    would write outside the array."""
    k = k.astype(INT64) if k.dtype != INT64 else k
    if k.size:
        lo, hi = int(k.min()), int(k.max())
        check_index_range(lo, hi, size)
        if lo < 0:
            k = k + (k < 0).astype(INT64) * size
    return k


def _write_zero_dim(x, key, value) -> None:
    """``x[key] = value`` for a 0-d x, whose only keys MXNet takes are ``()``: keys that only
    add axes (None, Ellipsis), or a 0-d bool mask."""
    items = [k for k in key_items(key) if k is not None and k is not Ellipsis]
    if len(items) > 1 or (items and _mask_ndim(items[0]) != 0):
        raise IndexError(f"Expected a key for a 0-d array. Received: {key!r}")
    scalar = isinstance(value, _SCALARS)
    if not scalar:
        if value.size == 0:
            return
        value = value.reshape(())
    if items:
        value = mnp.where(items[0], like(x, value) if scalar else value, x)
    x[()] = value


def setitem(x, key, value):
    """``x[key] = value`` in place; returns x."""
    if type(value) is int and not exact_float64(value):  # beyond 2**53: a C double loses digits
        value = mnp.array(value, dtype=x.dtype, ctx=x.ctx)
    elif type(value) is float and x.dtype == F64 and not exact_float64(value):
        value = full((), value, x.dtype, x.ctx)  # MXNet would read the float from text
    elif x.dtype == BOOL and not isinstance(value, _SCALARS):
        # several of MXNet's assignment kernels lack bool: assign in uint8, copy back
        staged = x.astype(UINT8)
        setitem(staged, key, value.astype(UINT8))
        x[()] = staged.astype(BOOL)  # MXNet refuses x[...] = on a 0-d array
        return x
    if _has_array(key):
        if 0 in x.shape:  # nothing to write (MXNet's scatter kernels crash on it)
            return x
        key = checked_key(key, x.shape, _mask_ndim, _index)
    try:
        x[key] = value
    except IndexError:
        if x.ndim != 0:
            raise
        _write_zero_dim(x, key, value)
    return x


def _in_graph(a) -> bool:
    """Whether ``a`` is a recorded result or a variable of MXNet's autograd graph."""
    try:
        mx.autograd.get_symbol(a)
    except mx.base.MXNetError:
        return False
    return True


def recorded_setitem(x, key, value):
    """``x[key] = value`` while MXNet records: in place where neither side is in the graph,
    else a new array with PyTorch's gradients (the overwritten elements get none, the written
    value gets theirs), since MXNet refuses in-place writes on recorded arrays only after
    making them. A parameter (a variable with a gradient buffer) is written in place,
    unrecorded, as torch's adapter writes a leaf under ``no_grad``."""
    if x.grad is not None:  # a parameter: written unrecorded, as the other adapters do
        with mx.autograd.pause():
            return setitem(x, key, value)
    scalar = isinstance(value, _SCALARS)
    if not _in_graph(x) and (scalar or not _in_graph(value)):
        return setitem(x, key, value)
    if key is Ellipsis or (
        type(key) is tuple and len(key) <= 1 and all(k is Ellipsis for k in key)
    ):
        if scalar:  # x's old values no longer count
            return full(x.shape, value, x.dtype, x.ctx)
        return mnp.broadcast_to(value, x.shape).copy()
    if not scalar and _in_graph(value):
        return _gathered_write(x, key, value)
    with mx.autograd.pause():
        mask = setitem(mnp.zeros(x.shape, dtype=BOOL, ctx=x.ctx), key, True)
        values = setitem(mnp.zeros(x.shape, dtype=x.dtype, ctx=x.ctx), key, value)
    return mnp.where(mask, values, x)


def _gathered_write(x, key, value):
    """``x`` with a recorded ``value`` written at ``x[key]``, out of place: MXNet records no
    partial write, so each written element gathers its value (``take``, whose gradient MXNet
    records) from the value broadcast to ``x[key]``'s shape; the others keep x's. Where the
    key repeats a position, the last write wins, as in place."""
    with mx.autograd.pause():
        shape = getitem(x, key).shape
        n = int(np.prod(shape))
        order = mnp.arange(n, dtype=INT64, ctx=x.ctx).reshape(shape)
        source = setitem(mnp.full(x.shape, -1, dtype=INT64, ctx=x.ctx), key, order)
        written = source >= 0
        source = source * written.astype(INT64)  # 0 where unwritten: a valid index
    while value.ndim > len(shape) and value.shape[0] == 1:  # (1, 1) into x[i], as NumPy
        value = value.reshape(value.shape[1:])
    flat = mnp.broadcast_to(value.astype(x.dtype, copy=False), shape).reshape(-1)
    if n == 0:
        return x.copy()
    return mnp.where(written, mnp.take(flat, source), x)
