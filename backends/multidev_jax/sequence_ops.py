"""JAX lowerings of the sequence ops (``multidev.nn.sequence_functional``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["LOWERINGS"]


def _layer_norm(x, w, b, eps):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return ((x - mean) * jax.lax.rsqrt(var + eps) * w + b).astype(x.dtype)


def _attention(q, k, v, mask, scale):
    """softmax(q k^T * scale + mask) v over the last two axes, by ``jnp.einsum``."""
    s = jnp.einsum("...qd,...kd->...qk", q, k) * scale
    if mask is not None:
        s = s + mask
    return jnp.einsum("...qk,...kd->...qd", jax.nn.softmax(s, axis=-1), v).astype(q.dtype)


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS = {
    "embedding": lambda w, idx: jnp.take(w, idx, axis=0),
    "one_hot": lambda idx, n: jax.nn.one_hot(idx, n, dtype=jnp.int64),
    "stop_gradient": jax.lax.stop_gradient,
    "layer_norm": _layer_norm,
    "gelu": lambda x, tanh: jax.nn.gelu(x, approximate=bool(tanh)).astype(x.dtype),
    "scaled_dot_product_attention": _attention,
}
