"""PaddlePaddle lowerings of ``md.linalg`` and ``md.fft``: ``paddle.linalg`` and ``paddle.fft``,
except where Paddle spells a function differently."""

from __future__ import annotations

import paddle

from multidev.contract import Extension
from multidev.errors import UnsupportedOperationError

__all__ = ["FFT", "LINALG"]


def _slogdet(x):
    out = paddle.linalg.slogdet(x)  # sign and log|det| stacked on a new first axis
    return out[0], out[1]


def _real_only(name, fn):
    """``fn`` for Paddle kernels registered for float32/float64 only: complex input gets a typed
    error instead of Paddle's NotFound RuntimeError."""

    def lowered(x, *args, **kwargs):
        if x.is_complex():
            raise UnsupportedOperationError(
                f"Expected real floating-point input for linalg.{name} on the paddle backend. "
                f"Received: {str(x.dtype).replace('paddle.', '')}; Paddle has no complex "
                f"{name} kernel. Use another backend (md.set_backend('torch')) for complex "
                "matrices."
            )
        return fn(x, *args, **kwargs)

    return lowered


def _svdvals(x):
    """paddle.linalg.svdvals flattens every batch axis into one; the stack's shape restored.
    Its kernel is real-only: complex matrices' singular values come from Paddle's SVD."""
    if x.is_complex():
        return paddle.linalg.svd(x, full_matrices=False)[1]
    return paddle.linalg.svdvals(x).reshape([*x.shape[:-2], min(x.shape[-2:])])


def _cross(a, b):
    """uint8, int8 and int16 have no cross kernel: int32 products, wrapped back (exact modulo
    2**8 / 2**16, as the small dtype's own arithmetic)."""
    if a.dtype in (paddle.uint8, paddle.int8, paddle.int16):
        out = paddle.cross(a.astype(paddle.int32), b.astype(paddle.int32), axis=-1)
        return out.astype(a.dtype)
    return paddle.cross(a, b, axis=-1)


def _pinv(x, rtol):
    """``paddle.linalg.pinv`` returns the conjugate of complex matrices' pseudo-inverse:
    complex ones through their SVD (singular values at or below ``rtol`` times the largest
    count as zero)."""
    if not x.is_complex():
        return paddle.linalg.pinv(x, rcond=rtol)
    u, s, vh = paddle.linalg.svd(x, full_matrices=False)
    keep = s > rtol * s.max(axis=-1, keepdim=True)
    s_inv = paddle.where(keep, 1 / paddle.where(keep, s, paddle.ones_like(s)), paddle.zeros_like(s))
    v = vh.conj().transpose([*range(vh.ndim - 2), vh.ndim - 1, vh.ndim - 2])
    uh = u.conj().transpose([*range(u.ndim - 2), u.ndim - 1, u.ndim - 2])
    return paddle.matmul(v * s_inv.unsqueeze(-2).astype(x.dtype), uh)


LINALG = Extension(
    paddle.linalg,
    slogdet=_slogdet,
    pinv=_pinv,
    cross=_cross,
    svdvals=_svdvals,
    cholesky=_real_only("cholesky", paddle.linalg.cholesky),
    solve=_real_only("solve", paddle.linalg.solve),
    diagonal=lambda x, offset: paddle.diagonal(x, offset, -2, -1),
    vector_norm=lambda x, ord: paddle.linalg.vector_norm(x, p=ord, axis=-1),
)
FFT = Extension(paddle.fft)
