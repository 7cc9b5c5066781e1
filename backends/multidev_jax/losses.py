"""JAX lowering of the fused loss op (``multidev.nn.functional.cross_entropy``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["LOWERINGS"]


def _cross_entropy(x, labels, reduction):
    """``-log_softmax(x)[i, labels[i]]`` by ``jax.nn.log_softmax`` and a gather; IndexError for
    labels outside [0, C) (JAX's gather would clamp them)."""
    c = x.shape[1]
    if labels.size and not isinstance(labels, jax.core.Tracer):  # unknown inside md.jit
        lo, hi = int(jnp.min(labels)), int(jnp.max(labels))
        if lo < 0 or hi >= c:
            bad = lo if lo < 0 else hi
            raise IndexError(f"Expected class labels in [0, {c}). Received: label {bad}.")
    picked = jnp.take_along_axis(jax.nn.log_softmax(x, axis=1), labels[:, None], axis=1)
    loss = -picked[:, 0]
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS: dict[str, Any] = {"cross_entropy": _cross_entropy}
