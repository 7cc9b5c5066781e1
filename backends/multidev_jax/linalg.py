"""JAX lowerings of ``md.linalg`` and ``md.fft``: ``jax.numpy.linalg`` and ``jax.numpy.fft``
spell the Array API's functions as the core calls them, except where listed."""

from __future__ import annotations

import jax.numpy as jnp

from multidev.contract import Extension

from .autograd import recorded

__all__ = ["FFT", "LINALG"]


# each lowering through ``autograd.recorded``, like the op table: Variables read as their
# arrays, the call put on the tape while recording
LINALG = Extension(
    jnp.linalg,
    svdvals=lambda x: jnp.linalg.svd(x, compute_uv=False),
    pinv=lambda x, rtol: jnp.linalg.pinv(x, rtol=rtol),
    cross=jnp.cross,
    diagonal=lambda x, offset: jnp.diagonal(x, offset, -2, -1),
    vector_norm=lambda x, ord: jnp.linalg.vector_norm(x, ord=ord, axis=-1),
).wrapped(recorded)
FFT = Extension(jnp.fft).wrapped(recorded)
