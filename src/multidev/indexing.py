"""NumPy's indexing rules written once for adapters whose framework's own indexing lacks some
of them: a key is normalised (NumPy scalars, 0-d masks, host arrays, the Ellipsis, integers
bounds-checked and counted from the end) and planned into a few primitive steps (one strided
slice, then a gather along one axis, a boolean mask, or a gather at stacked positions) that an
adapter lowers with its framework's functions (``Gather``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .contract import key_axes

__all__ = [
    "FULL",
    "Gather",
    "check_index_range",
    "checked_key",
    "gather",
    "is_full",
    "key_items",
    "new_axes_first",
]

FULL = slice(None)


def key_items(key: Any) -> tuple:
    """The items of an index key (a key that is no tuple is one item)."""
    return key if type(key) is tuple else (key,)


def is_full(key: Any) -> bool:
    """Whether ``key`` selects every element as it is (``...``, ``:``, or a tuple of them)."""
    return all(k is Ellipsis or (type(k) is slice and k == FULL) for k in key_items(key))


def _bounded(i: int, shape: Sequence[int], dim: int) -> int:
    """The index ``i`` into axis ``dim`` of ``shape`` counted from the start; IndexError naming
    the shape and the axis where it is out of range."""
    n = shape[dim]
    if not -n <= i < n:
        raise IndexError(
            f"Expected indices within shape {tuple(shape)}. Received: {i} for axis {dim}, whose "
            f"length is {n}. Index in [-{n}, {n}) there."
        )
    return i % n


def check_index_range(lo: int, hi: int, size: int) -> None:
    """IndexError where an index array whose smallest entry is ``lo`` and largest ``hi`` has
    an entry out of range for an axis of length ``size`` (for adapters whose kernels do not
    check: they compute ``lo`` and ``hi`` with the framework's own reductions)."""
    bad = hi if hi >= size else (lo if lo < -size else None)
    if bad is not None:
        raise IndexError(
            f"Expected indices in [-{size}, {size}). Received: index {bad}, which is out of "
            f"bounds for an axis of size {size}"
        )


def new_axes_first(
    key: Any, shape: Sequence[int], mask_ndim: Callable[[Any], int | None], arrays: Any
) -> tuple[tuple[int, ...], tuple] | None:
    """For frameworks that misread a new axis (None) beside an index array (Paddle reads
    garbage, MXNet puts the axis elsewhere): the shape of x with the new axes in it and the
    key with full slices in their place, which index it as NumPy indexes x with ``key``.
    None where the key has no None or no array of type ``arrays``."""
    items = key_items(key)
    if not any(k is None for k in items) or not any(isinstance(k, arrays) for k in items):
        return None
    pairs = key_axes(items, len(shape), mask_ndim)
    out = list(shape)
    for i, dim in enumerate(d for k, d in pairs if k is None):
        out.insert(dim + i, 1)
    return tuple(out), tuple(slice(None) if k is None else k for k, _ in pairs)


def checked_key(
    key: Any,
    shape: Sequence[int],
    mask_ndim: Callable[[Any], int | None],
    index: Callable[[Any, int], Any],
) -> tuple:
    """``key`` with its integers bounds-checked and counted from the start, and its integer
    index tensors passed through the adapter's ``index(k, n)`` (n: the axis length), which
    does the same for their entries; the Ellipsis expanded (``key_axes``). For frameworks
    whose kernels take negative or out-of-range indices as they are."""
    out = []
    for k, dim in key_axes(key_items(key), len(shape), mask_ndim):
        if k is None or isinstance(k, (bool, np.bool_, slice)):
            pass
        elif isinstance(k, (int, np.integer)):
            k = _bounded(int(k), shape, dim)
        elif mask_ndim(k) is None:
            k = index(k, shape[dim])
        out.append(k)
    return tuple(out)


class Gather(NamedTuple):
    """An adapter's primitives for ``gather`` (native tensors in and out).

    ``constant(arr)``: a host int64 (or bool) NumPy array as a tensor on the current device;
    ``indices(k, n)``: an integer index tensor as int64 with negative entries counted from the
    end of a length-n axis; ``nonzero(mask)``: one int64 tensor of positions per axis of a
    boolean mask; ``take(x, idx, axis)``: x's entries at ``idx`` (any shape) along ``axis``;
    ``take_nd(x, idxs, shape)``: x's entries at the positions ``idxs`` give for its leading
    axes, broadcast to ``shape`` (the result: ``shape`` then x's other axes);
    ``permute(x, axes)``; ``mask(x, m, axis)``: the framework's boolean mask, where it has
    one; ``slice(x, key)``: its strided slicing (ints, slices and None)."""

    constant: Callable[[np.ndarray], Any]
    indices: Callable[[Any, int], Any]
    nonzero: Callable[[Any], Sequence[Any]]
    take: Callable[[Any, Any, int], Any]
    take_nd: Callable[[Any, list, tuple[int, ...]], Any]
    permute: Callable[[Any, Sequence[int]], Any]
    mask: Callable[[Any, Any, int], Any] | None = None
    slice: Callable[[Any, tuple], Any] = operator.getitem


def _item(k: Any, prims: Gather, mask_ndim: Callable[[Any], int | None]) -> Any:
    """A key item as the planner takes it: NumPy scalars and 0-d masks as Python ones, host
    arrays as tensors (integers as int64)."""
    if isinstance(k, (list, np.ndarray)):
        arr = np.asarray(k)
        k = prims.constant(arr if arr.dtype.kind == "b" else arr.astype(np.int64))
    if isinstance(k, np.bool_) or (k is not None and type(k) is not slice and mask_ndim(k) == 0):
        return bool(k)
    return int(k) if isinstance(k, np.integer) else k


def gather(
    x: Any,
    key: Any,
    shape: Sequence[int],
    prims: Gather,
    mask_ndim: Callable[[Any], int | None],
) -> Any:
    """``x[key]`` with NumPy's semantics for any key (``shape``: x's), from the adapter's
    primitives: one strided slice for the slices and new axes, then one gather for the index
    arrays, masks and the integers among them, whose result axes land where NumPy puts them
    (first, unless the indexed axes are adjacent). IndexError for out-of-range integers, a
    mask whose shape differs from the axes it indexes, or index arrays that do not broadcast."""
    items = key_axes(
        tuple(_item(k, prims, mask_ndim) for k in key_items(key)), len(shape), mask_ndim
    )
    basic: list = []
    adv: list = []  # (axis of the sliced tensor, int64 index tensor)
    arrays, mask_at, axis = 0, None, 0
    for k, dim in items:
        m = None if k is None or type(k) in (bool, int, slice) else mask_ndim(k)
        if k is None or type(k) is bool:
            basic.append(None)
            if k is not None:  # NumPy reads a Python bool as an index array of length 1 or 0
                adv.append((axis, prims.constant(np.zeros(int(k), np.int64))))
                arrays += 1
            axis += 1
        elif type(k) is slice:
            basic.append(k)
            axis += 1
        elif m is not None:
            if tuple(k.shape) != tuple(shape[dim : dim + m]):
                raise IndexError(
                    f"Expected a boolean mask of shape {tuple(shape[dim : dim + m])} at axis "
                    f"{dim}. Received: shape {tuple(k.shape)}"
                )
            mask_at = (axis, k)
            for j, positions in enumerate(prims.nonzero(k)):
                basic.append(FULL)
                adv.append((axis + j, positions))
            arrays += 1
            axis += m
        else:
            basic.append(FULL)
            if type(k) is int:
                adv.append((axis, prims.constant(np.int64(_bounded(k, shape, dim)))))
            else:
                adv.append((axis, prims.indices(k, shape[dim])))
                arrays += 1
            axis += 1
    if not is_full(tuple(basic)):
        x = prims.slice(x, tuple(basic))
    if mask_at is not None and prims.mask and arrays == 1 and len(adv) == len(mask_at[1].shape):
        return prims.mask(x, mask_at[1], mask_at[0])
    if len(adv) == 1:
        return prims.take(x, adv[0][1], adv[0][0])
    return _gather_at(x, adv, prims)


def _gather_at(x: Any, adv: list, prims: Gather) -> Any:
    """x at the positions of several index tensors (``adv``: (axis, tensor)), the indexed
    axes moved first for ``take_nd`` and the result's axes put back where NumPy has them."""
    axes = [a for a, _ in adv]
    shapes = [tuple(i.shape) for _, i in adv]
    try:
        bshape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(
            f"Expected index arrays that broadcast together. Received: shapes {shapes}"
        ) from None
    rank = len(x.shape)
    rest = [d for d in range(rank) if d not in axes]
    perm = axes + rest
    if perm != list(range(rank)):
        x = prims.permute(x, perm)
    out = prims.take_nd(x, [i for _, i in adv], bshape)
    first = axes[0]
    if first > 0 and axes == list(range(first, first + len(axes))):
        nb = len(bshape)
        out = prims.permute(
            out, [*range(nb, nb + first), *range(nb), *range(nb + first, nb + len(rest))]
        )
    return out


def bool_mask_ndim(tensor_types: Any, bool_dtype: Any) -> Callable[[Any], int | None]:
    """An adapter's ``mask_ndim`` hook (``key_axes``, ``checked_key``, ``gather``): the number of
    axes of a key item that is a boolean tensor of ``tensor_types`` (``ndim``), else None."""

    def mask_ndim(k: Any) -> int | None:
        return k.ndim if isinstance(k, tensor_types) and k.dtype == bool_dtype else None

    return mask_ndim
