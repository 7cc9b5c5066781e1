"""JAX lowerings of ``md.linalg`` and ``md.fft``: ``jax.numpy.linalg`` and ``jax.numpy.fft``
spell the Array API's functions as the core calls them, except where listed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp

from multidev.contract import Extension

from .autograd import recorded

__all__ = ["FFT", "LINALG"]


class _RecordedExtension(Extension):
    """Each lowering through ``autograd.recorded``, like the op table: Variables read as their
    arrays, the call put on the tape while recording."""

    def lowering(self, name: str) -> Callable[..., Any] | None:
        fn = super().lowering(name)
        return None if fn is None else recorded(fn)


LINALG = _RecordedExtension(
    jnp.linalg,
    svdvals=lambda x: jnp.linalg.svd(x, compute_uv=False),
    pinv=lambda x, rtol: jnp.linalg.pinv(x, rtol=rtol),
    cross=jnp.cross,
    diagonal=lambda x, offset: jnp.diagonal(x, offset, -2, -1),
    vector_norm=lambda x, ord: jnp.linalg.vector_norm(x, ord=ord, axis=-1),
)
FFT = _RecordedExtension(jnp.fft)
