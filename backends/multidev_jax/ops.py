"""The JAX op table: ``jax.numpy`` by name (it follows NumPy), ``jax.nn`` for the activations,
the lowerings of this package's modules; every entry through ``autograd.recorded`` (Variables
read as their arrays, the call put on the tape while recording)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from multidev.contract import clip_bounds, native_astype, op_table, wrapped_table

from . import array_api, cnn, losses, sequence_ops
from .autograd import recorded
from .dtypes import NATIVE
from .indexing import getitem

__all__ = ["OPS"]


def _reduce(fn):
    return lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims)


def _arg(fn):
    return lambda x, axis: fn(x, axis=axis).astype(jnp.int64)


def _relu(x):
    return jnp.maximum(x, jnp.zeros((), x.dtype))


def _clip(x, lo, hi):
    """jnp.clip; integer bounds as arrays of x's dtype (``contract.clip_bounds``): a Python
    int bound beyond int64 (a uint64 one) does not reach a jitted function."""
    if jnp.issubdtype(x.dtype, jnp.integer):
        lo, hi = (jnp.asarray(v, x.dtype) for v in clip_bounds(lo, hi, jnp.dtype(x.dtype)))
    return jnp.clip(x, lo, hi).astype(x.dtype)


def _pow(a, b):
    """jnp.power; on unsigned integers (whose powers jnp.power gets wrong once they wrap, as
    3**100 in uint16) square-and-multiply over the exponent's bits, each step elementwise."""
    dt = jnp.result_type(a)
    if dt.kind != "u" or not hasattr(a, "dtype"):
        return jnp.power(a, b)
    e = jnp.asarray(b, dt)
    out = jnp.ones(jnp.broadcast_shapes(jnp.shape(a), jnp.shape(e)), dt)
    base = jnp.broadcast_to(a, out.shape)
    for _ in range(8 * dt.itemsize):
        out = jnp.where(e & 1, out * base, out)
        base, e = base * base, e >> 1
    return out


_TABLE = op_table(
    jnp,
    jax.nn,
    modules=[array_api, sequence_ops, losses, cnn],
    reduce=_reduce,
    relu=_relu,
    pow=_pow,
    argmax=_arg(jnp.argmax),
    argmin=_arg(jnp.argmin),
    clip=_clip,
    copy=lambda x: jnp.array(x, copy=True),
    getitem=getitem,
    concat=lambda xs, axis: jnp.concatenate(xs, axis=axis),
    stack=lambda xs, axis: jnp.stack(xs, axis=axis),
    astype=native_astype("jax", NATIVE, {}),
)

OPS = wrapped_table(_TABLE, recorded)
