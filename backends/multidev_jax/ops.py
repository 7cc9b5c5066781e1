"""The JAX op table: ``jax.numpy`` by name (it follows NumPy), ``jax.nn`` for the activations,
the lowerings of this package's modules; every entry through ``autograd.recorded`` (Variables
read as their arrays, the call put on the tape while recording)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from multidev.contract import native_astype, op_table
from multidev.op_specs import SPECS

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


_TABLE = op_table(
    jnp,
    jax.nn,
    modules=[array_api, sequence_ops, losses, cnn],
    reduce=_reduce,
    relu=_relu,
    argmax=_arg(jnp.argmax),
    argmin=_arg(jnp.argmin),
    clip=lambda x, lo, hi: jnp.clip(x, lo, hi).astype(x.dtype),
    copy=lambda x: jnp.array(x, copy=True),
    getitem=getitem,
    concat=lambda xs, axis: jnp.concatenate(xs, axis=axis),
    stack=lambda xs, axis: jnp.stack(xs, axis=axis),
    astype=native_astype("jax", NATIVE, {}),
)

OPS = type(
    "JaxOps",
    (type(_TABLE),),
    {n: staticmethod(recorded(getattr(_TABLE, n))) for n in SPECS if hasattr(_TABLE, n)},
)()
