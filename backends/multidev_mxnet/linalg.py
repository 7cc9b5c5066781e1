"""MXNet lowerings of ``md.linalg`` (``mxnet.np.linalg``; what it lacks is composed of its
kernels). MXNet has no FFT in its NumPy interface, so ``md.fft``'s transforms are absent."""

from __future__ import annotations

from mxnet import np as mnp

from multidev.contract import Extension
from multidev.errors import UnsupportedOperationError

from .recording import unrecorded

__all__ = ["FFT", "LINALG"]


def _svd(x, full_matrices=False):
    """MXNet's gesvd takes only M <= N and gives the reduced factors: a taller matrix is
    decomposed through its transpose."""
    m, n = x.shape[-2:]
    if full_matrices and m != n:
        raise UnsupportedOperationError(
            "MXNet computes only the reduced SVD of non-square matrices: use "
            "md.linalg.svd(x, full_matrices=False) on the mxnet backend."
        )
    if m <= n:
        return tuple(mnp.linalg.svd(x))
    u, s, vh = mnp.linalg.svd(mnp.swapaxes(x, -1, -2))
    return mnp.swapaxes(vh, -1, -2), s, mnp.swapaxes(u, -1, -2)


def _cross(a, b):
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return mnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _qr(x, mode):
    if mode != "reduced":
        raise UnsupportedOperationError(
            "MXNet computes only the reduced QR decomposition: use mode='reduced' on the mxnet "
            "backend."
        )
    return tuple(unrecorded(mnp.linalg.qr)(x))  # NumPy's, on the host (recording.recorded)


def _inv(x):
    # MXNet's inverse backward writes nothing into a gradient that accumulates (grad_req
    # "add", which multidev's parameters use): differentiate through an intermediate
    return mnp.linalg.inv(x + 0)


def _diagonal(x, offset):
    """MXNet's diagonal kernel has no bool variant (it fails when the result is read): the
    diagonal of bool matrices taken as uint8 (exact)."""
    if x.dtype == bool:
        return mnp.diagonal(x.astype("uint8"), offset, -2, -1).astype(bool)
    return mnp.diagonal(x, offset, -2, -1)


LINALG = Extension(
    mnp.linalg,
    inv=_inv,
    qr=_qr,
    svd=_svd,
    svdvals=lambda x: _svd(x)[1],
    pinv=lambda x, rtol: mnp.linalg.pinv(x, rtol),
    cross=_cross,
    diagonal=_diagonal,
    vector_norm=lambda x, ord: mnp.linalg.norm(x, ord, axis=-1),
)
FFT = Extension()
