"""NumPy indexing on JAX arrays: JAX clamps out-of-range integer indices when reading and
drops them when writing (its kernels run without errors), so keys with integers or integer
index arrays are bounds-checked first (``multidev.indexing.checked_key``); writes go through
``x.at[key].set(value)``, which makes a new array."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from multidev.indexing import bool_mask_ndim, check_index_range, checked_key, key_items

__all__ = ["getitem", "setitem"]

_mask_ndim = bool_mask_ndim(jax.Array, np.dtype(np.bool_))


def _index(k: Any, size: int) -> Any:
    """An integer index array bounds-checked, with negative entries counted from the end."""
    k = k.astype(jnp.int64) if k.dtype != jnp.int64 else k
    if isinstance(k, jax.core.Tracer):  # inside md.jit: the values are not known
        return jnp.where(k < 0, k + size, k)
    if k.size:
        lo, hi = int(jnp.min(k)), int(jnp.max(k))
        check_index_range(lo, hi, size)
        if lo < 0:
            k = jnp.where(k < 0, k + size, k)
    return k


def _needs_check(key: Any) -> bool:
    return any(
        (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))
        or (isinstance(k, jax.Array) and k.dtype != jnp.bool_)
        for k in key_items(key)
    )


def _checked(x: Any, key: Any) -> Any:
    if type(key) is not tuple and x.ndim == 0:
        return key
    return checked_key(key, x.shape, _mask_ndim, _index) if _needs_check(key) else key


def getitem(x: Any, key: Any) -> Any:
    return x[_checked(x, key)]


def setitem(x: Any, key: Any, value: Any) -> Any:
    """A new array: ``x`` with ``x[key] = value`` (value cast to x's dtype)."""
    if isinstance(value, jax.Array) and value.dtype != x.dtype:
        value = value.astype(x.dtype)
    elif x.dtype == np.bool_ and not isinstance(value, jax.Array):
        value = bool(value)  # JAX warns on a Python int written into a bool array
    key = _checked(x, key)
    try:
        return x.at[key].set(value)
    except ValueError:
        # NumPy drops a value's leading axes of length 1 that the target lacks; JAX refuses
        if not isinstance(value, jax.Array) or not value.ndim or value.shape[0] != 1:
            raise
    lead = 0
    while lead < value.ndim and value.shape[lead] == 1:
        lead += 1
    for drop in range(1, lead + 1):
        try:
            return x.at[key].set(value.reshape(value.shape[drop:]))
        except ValueError:
            if drop == lead:
                raise
    raise AssertionError("unreachable")
