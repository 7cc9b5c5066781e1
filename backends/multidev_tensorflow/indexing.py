"""NumPy indexing on TensorFlow tensors and variables.

Reading: ints, slices, None and Ellipsis go straight to TensorFlow's strided slicing; integer
tensors go through ``tf.gather``, boolean masks through ``tf.boolean_mask``, and several
index arrays at once through ``tf.gather_nd`` with NumPy's rules for where the indexed axes
land. Writing: an immutable ``tf.Tensor`` gets a replacement tensor
(``tf.tensor_scatter_nd_update`` at the positions the key selects); a ``tf.Variable`` is
assigned in place.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from multidev.indexing import Gather, checked_key, gather, is_full, key_items

__all__ = ["getitem", "setitem"]

_TENSORS = (tf.Tensor, tf.Variable)
_INDEX_DTYPES = (tf.int32, tf.int64)


# ---------------------------------------------------------------- reading


def _needs_advanced(keys: tuple) -> bool:
    scalar_dtypes = set()  # TensorFlow's strided slice needs one dtype for its 0-d indices
    for k in keys:
        if isinstance(k, _TENSORS):
            if k.shape.rank != 0 or k.dtype not in _INDEX_DTYPES:
                return True
            scalar_dtypes.add(k.dtype)
        elif isinstance(k, (bool, np.bool_, list, np.ndarray)):
            return True
    return len(scalar_dtypes) > 1


def getitem(x, key):
    """``x[key]`` with NumPy semantics."""
    if type(key) is int:
        return _take(x, (key,))
    keys = key if type(key) is tuple else (key,)
    if keys and all(type(k) is int for k in keys):
        return _take(x, keys)
    try:
        if not _needs_advanced(keys):
            return x[key]
        return gather(x, keys, x.shape.as_list(), _GATHER, _mask_ndim)
    except tf.errors.InvalidArgumentError as e:
        items = ", ".join(map(_describe, key_items(key)))
        # TensorFlow's message without its node and op decorations
        reason = e.message.splitlines()[0].split("}} ", 1)[-1].split(" [Op:", 1)[0]
        raise IndexError(
            f"Expected indices within shape {tuple(x.shape)}. Received: [{items}] ({reason})"
        ) from None


def _take(x, ints: tuple):
    """Integer keys through gather (TensorFlow's strided slicing costs several times more)."""
    pos = checked_key(ints, x.shape.as_list(), _mask_ndim, _index)[: len(ints)]
    if len(pos) == 1:
        return tf.gather(x, pos[0])
    if len(pos) > _GATHER_ND_COLUMNS:
        return _take_nd(x, list(pos), ())
    return tf.gather_nd(x, pos)


#: tf.gather_nd takes at most 7 index columns; more indexed axes are merged into one first
_GATHER_ND_COLUMNS = 7


def _describe(k) -> str:
    """A key item as the error shows it (tensors by shape and dtype)."""
    if isinstance(k, _TENSORS):
        return f"tensor(shape={tuple(k.shape)}, dtype={k.dtype.name})"
    return repr(k)


def _index(k, n: int):
    """An int64 index tensor with negative entries counted from the end of a length-n axis."""
    if k.dtype not in _INDEX_DTYPES:
        k = tf.cast(k, tf.int64)
    return tf.where(k < 0, k + n, k)


def _mask_ndim(k) -> int | None:
    return k.shape.rank if isinstance(k, _TENSORS) and k.dtype == tf.bool else None


def _take_nd(x, idxs: list, shape: tuple):
    """x at the positions ``idxs`` give for its leading axes: ``tf.gather_nd``, or one gather
    on the merged leading axes where there are more than it takes."""
    idx = tf.stack([tf.broadcast_to(tf.cast(i, tf.int64), shape) for i in idxs], axis=-1)
    if len(idxs) <= _GATHER_ND_COLUMNS:
        return tf.gather_nd(x, idx)
    k = len(idxs)  # the leading axes merged into one (row-major), the positions flattened
    strides = np.cumprod([1, *x.shape.as_list()[k - 1 : 0 : -1]])[::-1]
    dims = tf.shape(x)
    merged = tf.reshape(x, tf.concat([[tf.reduce_prod(dims[:k])], dims[k:]], axis=0))
    return tf.gather(merged, tf.tensordot(idx, tf.constant(strides, tf.int64), 1))


_GATHER = Gather(
    constant=tf.constant,
    indices=_index,
    nonzero=lambda m: tf.unstack(tf.where(m), num=m.shape.rank, axis=1),
    take=lambda x, idx, axis: tf.gather(x, idx, axis=axis),
    take_nd=_take_nd,
    permute=tf.transpose,
    mask=lambda x, m, axis: tf.boolean_mask(x, m, axis=axis),
)


# ---------------------------------------------------------------- writing


def _value(x, value):
    """``value`` as a tensor of x's dtype."""
    if isinstance(value, tf.Variable):
        value = value.read_value()
    if isinstance(value, tf.Tensor):
        return value if value.dtype == x.dtype else tf.cast(value, x.dtype)
    return tf.constant(np.asarray(value, dtype=x.dtype.as_numpy_dtype))


def _broadcast(v, shape: list):
    vs = v.shape.as_list()
    if vs == shape:
        return v
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
    try:
        return tf.broadcast_to(tf.reshape(v, vs), shape)
    except (tf.errors.InvalidArgumentError, ValueError):
        raise ValueError(
            f"Expected a value that broadcasts to shape {tuple(shape)}. "
            f"Received: shape {tuple(v.shape)}"
        ) from None


def _replace(x, key, v):
    shape = x.shape.as_list()
    if is_full(key):
        return _broadcast(v, shape)
    size = int(np.prod(shape, dtype=np.int64))
    positions = getitem(tf.reshape(tf.range(size, dtype=tf.int64), shape), key)
    v = _broadcast(v, positions.shape.as_list())
    flat = tf.tensor_scatter_nd_update(
        tf.reshape(x, (-1,)), tf.reshape(positions, (-1, 1)), tf.reshape(v, (-1,))
    )
    return tf.reshape(flat, shape)


def setitem(x, key, value):
    """``x[key] = value``: in place on a tf.Variable (returned), else the replacement tensor."""
    with tf.device(x.device):
        v = _value(x, value)
        if not isinstance(x, tf.Variable):
            return _replace(x, key, v)
        if is_full(key):
            x.assign(_broadcast(v, x.shape.as_list()))
        elif not _needs_advanced(key_items(key)):
            part = x[key]
            part.assign(_broadcast(v, part.shape.as_list()))
        else:
            x.assign(_replace(x.read_value(), key, v))
    return x
