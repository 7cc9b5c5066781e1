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

from multidev.contract import key_axes

__all__ = ["getitem", "setitem"]

_TENSORS = (tf.Tensor, tf.Variable)
_FULL = slice(None)
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
        return _advanced(x, keys)
    except tf.errors.InvalidArgumentError as e:
        raise IndexError(
            f"Expected indices within shape {tuple(x.shape)}. Received: {_describe(key)} "
            f"({_reason(e)})"
        ) from None


def _take(x, ints: tuple):
    """Integer keys through gather (TensorFlow's strided slicing costs several times more)."""
    shape = x.shape.as_list()
    if len(ints) > len(shape):
        raise IndexError(
            f"Expected at most {len(shape)} indices for a {len(shape)}-d tensor. Received: {ints}"
        )
    pos = []
    for i, n in zip(ints, shape[: len(ints)], strict=True):
        if not -n <= i < n:
            raise IndexError(
                f"Expected indices within shape {tuple(shape)}. Received: {list(ints)} "
                f"(index {i} is out of range for an axis of length {n})"
            )
        pos.append(i + n if i < 0 else i)
    if len(pos) == 1:
        return tf.gather(x, pos[0])
    if len(pos) > _GATHER_ND_COLUMNS:
        flat = int(np.ravel_multi_index(pos, shape[: len(pos)]))
        return tf.gather(_merge_leading(x, len(pos)), flat)
    return tf.gather_nd(x, pos)


#: tf.gather_nd takes at most 7 index columns; more indexed axes are merged into one first
_GATHER_ND_COLUMNS = 7


def _merge_leading(x, k: int):
    """``x`` with its first ``k`` axes merged into one (row-major), for one ``tf.gather``."""
    shape = tf.shape(x)
    return tf.reshape(x, tf.concat([[tf.reduce_prod(shape[:k])], shape[k:]], axis=0))


def _reason(e: tf.errors.OpError) -> str:
    """TensorFlow's message without its node and op decorations."""
    return e.message.splitlines()[0].split("}} ", 1)[-1].split(" [Op:", 1)[0]


def _describe(key) -> str:
    keys = key if type(key) is tuple else (key,)
    parts = [
        f"tensor(shape={tuple(k.shape)}, dtype={k.dtype.name})"
        if isinstance(k, _TENSORS)
        else repr(k)
        for k in keys
    ]
    return "[" + ", ".join(parts) + "]"


def _as_tensor(k):
    """Lists and NumPy arrays in a key become tensors; Python and 0-d bools become bools."""
    if isinstance(k, (list, np.ndarray)):
        arr = np.asarray(k)
        if arr.dtype.kind != "b":
            arr = arr.astype(np.int64)
        return tf.constant(arr)
    if isinstance(k, np.bool_):
        return bool(k)
    if isinstance(k, _TENSORS) and k.dtype == tf.bool and k.shape.rank == 0:
        return bool(k)
    if isinstance(k, np.integer):
        return int(k)
    return k


def _index(k, n: int):
    """An int64 index tensor with negative entries counted from the end of a length-n axis."""
    if isinstance(k, int):
        if not -n <= k < n:
            raise IndexError(f"Expected an index in [-{n}, {n}). Received: {k}")
        return tf.constant(k % n if n else k, tf.int64)
    if k.dtype not in _INDEX_DTYPES:
        k = tf.cast(k, tf.int64)
    if k.dtype.is_unsigned:
        return k
    return tf.where(k < 0, k + n, k)


def _mask_ndim(k) -> int | None:
    return k.shape.rank if isinstance(k, _TENSORS) and k.dtype == tf.bool else None


def _advanced(x, keys: tuple):
    shape = x.shape.as_list()
    items = key_axes(tuple(_as_tensor(k) for k in keys), len(shape), _mask_ndim)
    basic: list = []
    adv: list = []  # (axis of the basic-indexed tensor, int64 index tensor)
    arrays = 0
    mask_at = None
    axis = 0
    for k, dim in items:
        if k is None:
            basic.append(None)
            axis += 1
        elif isinstance(k, bool):
            basic.append(None)
            adv.append((axis, tf.zeros((int(k),), tf.int64)))
            arrays += 1
            axis += 1
        elif isinstance(k, slice):
            basic.append(k)
            axis += 1
        elif isinstance(k, _TENSORS) and k.dtype == tf.bool:
            m = k.shape.rank
            if k.shape.as_list() != shape[dim : dim + m]:
                raise IndexError(
                    f"Expected a boolean mask of shape {tuple(shape[dim : dim + m])} at axis {dim}. "
                    f"Received: shape {tuple(k.shape)}"
                )
            coords = tf.where(k)
            mask_at = (axis, k)
            for j in range(m):
                basic.append(_FULL)
                adv.append((axis, coords[:, j]))
                axis += 1
            arrays += 1
        else:
            basic.append(_FULL)
            adv.append((axis, _index(k, shape[dim])))
            arrays += isinstance(k, _TENSORS)
            axis += 1
    if any(b is None or b != _FULL for b in basic):
        x = x[tuple(basic)]
    if mask_at is not None and arrays == 1 and len(adv) == mask_at[1].shape.rank:
        return tf.boolean_mask(x, mask_at[1], axis=mask_at[0])
    if len(adv) == 1:
        return tf.gather(x, adv[0][1], axis=adv[0][0])
    return _gather_nd(x, adv)


def _gather_nd(x, adv: list):
    axes = [a for a, _ in adv]
    shapes = [tuple(i.shape) for _, i in adv]
    try:
        bshape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(
            f"Expected index arrays that broadcast together. Received: shapes {shapes}"
        ) from None
    idx = tf.stack([tf.broadcast_to(tf.cast(i, tf.int64), bshape) for _, i in adv], axis=-1)
    rank = x.shape.rank
    rest = [d for d in range(rank) if d not in axes]
    perm = axes + rest
    if perm != list(range(rank)):
        x = tf.transpose(x, perm)
    if len(axes) > _GATHER_ND_COLUMNS:
        strides = np.cumprod([1, *x.shape.as_list()[len(axes) - 1 : 0 : -1]])[::-1]
        flat = tf.tensordot(tf.cast(idx, tf.int64), tf.constant(strides, tf.int64), 1)
        out = tf.gather(_merge_leading(x, len(axes)), flat)
    else:
        out = tf.gather_nd(x, idx)
    first = axes[0]
    if first > 0 and axes == list(range(first, first + len(axes))):
        nb = len(bshape)
        order = [*range(nb, nb + first), *range(nb), *range(nb + first, nb + len(rest))]
        out = tf.transpose(out, order)
    return out


# ---------------------------------------------------------------- writing


def _is_full(key) -> bool:
    if key is Ellipsis or (type(key) is slice and key == _FULL):
        return True
    return type(key) is tuple and all(
        k is Ellipsis or (type(k) is slice and k == _FULL) for k in key
    )


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
    if _is_full(key):
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
        keys = key if type(key) is tuple else (key,)
        if _is_full(key):
            x.assign(_broadcast(v, x.shape.as_list()))
        elif not _needs_advanced(keys):
            part = x[key]
            part.assign(_broadcast(v, part.shape.as_list()))
        else:
            x.assign(_replace(x.read_value(), key, v))
    return x
