"""JAX lowerings of the Array API functions beyond the core op table (``jax.numpy`` follows
NumPy; these are the calls that differ)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from multidev.contract import divisor_signed

from .indexing import _index

__all__ = ["LOWERINGS"]


def _nonzero(x):
    return tuple(i.astype(jnp.int64) for i in jnp.nonzero(x)) if x.ndim else ()


def _take(x, idx, axis):
    return jnp.take(x, _index(idx, x.shape[axis]), axis=axis)


def _take_along_axis(x, idx, axis):
    return jnp.take_along_axis(x, _index(idx, x.shape[axis]), axis=axis)


#: the Array API ops JAX spells differently (the rest: by name on ``jax.numpy``)
LOWERINGS: dict[str, Any] = {
    "all": lambda x, axis, keepdims: jnp.all(x, axis=axis, keepdims=keepdims),
    "any": lambda x, axis, keepdims: jnp.any(x, axis=axis, keepdims=keepdims),
    "cumulative_sum": lambda x, axis: jnp.cumsum(x, axis=axis, dtype=x.dtype),
    "cumulative_prod": lambda x, axis: jnp.cumprod(x, axis=axis, dtype=x.dtype),
    "sort": lambda x, axis, descending: jnp.sort(x, axis=axis, stable=True, descending=descending),
    "argsort": lambda x, axis, descending: jnp.argsort(
        x, axis=axis, stable=True, descending=descending
    ).astype(jnp.int64),
    "searchsorted": lambda a, v, side: jnp.searchsorted(a, v, side=side).astype(jnp.int64),
    "nonzero": _nonzero,
    "take": _take,
    "take_along_axis": _take_along_axis,
    "flip": lambda x, axes: jnp.flip(x, axes),
    "broadcast_to": lambda x, shape: jnp.broadcast_to(x, shape),
    "repeat": lambda x, repeats, axis: jnp.repeat(x, repeats, axis=axis),
    "to_dlpack": lambda x: x.__dlpack__(),
    # XLA's sign of -0.0 is -0.0; NumPy's and PyTorch's is 0.0
    "sign": lambda x: jnp.where(x == 0, jnp.zeros_like(x), jnp.sign(x)),
    # XLA's remainder gives a zero result the sign of x1 (-0.0 % 2 is -0.0)
    "remainder": divisor_signed(
        jnp.remainder, jnp.copysign, lambda x: jnp.issubdtype(x.dtype, jnp.floating)
    ),
}
