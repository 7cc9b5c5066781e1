"""TensorFlow lowerings of ``md.linalg`` and ``md.fft``: ``tf.linalg`` where it spells a
function as the core calls it, TF kernels composed where it does not (``tf.signal``'s
one-axis transforms act on the last axis, with ``fft_length`` instead of ``n`` and without
``norm``)."""

from __future__ import annotations

import math

import tensorflow as tf

from multidev.contract import Extension

__all__ = ["FFT", "LINALG"]


def _svd(x, full_matrices):
    s, u, v = tf.linalg.svd(x, full_matrices=full_matrices)
    return u, s, tf.linalg.adjoint(v)


def _matrix_power(x, n):
    if n < 0:
        x, n = tf.linalg.inv(x), -n
    out = tf.eye(x.shape[-1], batch_shape=x.shape[:-2], dtype=x.dtype)
    while n:  # binary exponentiation: log2(n) products
        if n & 1:
            out = tf.linalg.matmul(out, x)
        x, n = tf.linalg.matmul(x, x), n >> 1
    return out


def _diagonal(x, offset):
    """``tf.linalg.diag_part`` rejects an offset past the last diagonal (k <= -M or k >= N);
    the standard gives an empty diagonal there."""
    m, n = x.shape[-2], x.shape[-1]
    if offset >= n or offset <= -m:
        return tf.zeros((*x.shape[:-2], 0), dtype=x.dtype)
    return tf.linalg.diag_part(x, k=offset)


def _pinv(x, rtol):
    """``tf.linalg.pinv`` takes real matrices only: complex ones through their SVD (singular
    values at or below ``rtol`` times the largest count as zero)."""
    if not x.dtype.is_complex:
        return tf.linalg.pinv(x, rcond=rtol)
    s, u, v = tf.linalg.svd(x, full_matrices=False)
    keep = s > rtol * tf.reduce_max(s, axis=-1, keepdims=True)
    s_inv = tf.where(keep, 1 / tf.where(keep, s, tf.ones_like(s)), tf.zeros_like(s))
    return tf.linalg.matmul(v * tf.cast(s_inv[..., None, :], x.dtype), u, adjoint_b=True)


LINALG = Extension(
    tf.linalg,
    qr=lambda x, mode: tf.linalg.qr(x, full_matrices=mode == "complete"),
    svd=_svd,
    svdvals=lambda x: tf.linalg.svd(x, compute_uv=False),
    pinv=_pinv,
    matrix_power=_matrix_power,
    diagonal=_diagonal,
    vector_norm=lambda x, ord: tf.norm(x, ord=ord, axis=-1),
)


def _last(fn, axis, x):
    """fn applied along the last axis of ``x`` moved from ``axis``, moved back."""
    rank = x.shape.rank
    axis %= rank
    if axis == rank - 1:
        return fn(x)
    perm = [a for a in range(rank) if a != axis] + [axis]
    back = [perm.index(a) for a in range(rank)]
    return tf.transpose(fn(tf.transpose(x, perm)), back)


def _fit(x, n):
    """``x`` cropped or zero-padded to ``n`` along the last axis."""
    size = x.shape[-1]
    if n < size:
        return x[..., :n]
    if n > size:
        pad = [[0, 0]] * (x.shape.rank - 1) + [[0, n - size]]
        return tf.pad(x, pad)
    return x


def _scale(out, n, norm, inverse):
    """The Array API's normalisations, TF's kernels computing "backward"."""
    if norm == "backward":
        return out
    if norm == "ortho":
        factor = math.sqrt(n) if inverse else 1 / math.sqrt(n)
    else:  # "forward"
        factor = n if inverse else 1 / n
    return out * tf.cast(factor, out.dtype)


def _complex(x):
    return (
        x
        if x.dtype.is_complex
        else tf.cast(x, tf.complex64 if x.dtype != tf.float64 else tf.complex128)
    )


def _c2c(kernel, inverse):
    def transform(x, n, axis, norm):
        def run(v):
            v = _complex(v)
            v = _fit(v, v.shape[-1] if n is None else n)
            return _scale(kernel(v), v.shape[-1], norm, inverse)

        return _last(run, axis, x)

    return transform


def _rfft(x, n, axis, norm):
    def run(v):
        m = v.shape[-1] if n is None else n
        return _scale(tf.signal.rfft(v, fft_length=[m]), m, norm, False)

    return _last(run, axis, x)


def _irfft(x, n, axis, norm):
    def run(v):
        m = 2 * (v.shape[-1] - 1) if n is None else n
        v = _fit(v, m // 2 + 1)
        return _scale(tf.signal.irfft(v, fft_length=[m]), m, norm, True)

    return _last(run, axis, x)


#: hfft and ihfft are irfft and rfft of the conjugate with the normalisation swapped
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


_fft = _c2c(tf.signal.fft, False)
_ifft = _c2c(tf.signal.ifft, True)


def _separable(one_axis, real=None, real_first=True):
    """An n-d transform as one-axis transforms applied axis by axis (TensorFlow's FFTND has
    no CPU kernel). ``real`` transforms the last of ``axes`` (the real-input half): first for
    rfftn, after the complex axes for irfftn."""

    def transform(x, s, axes, norm):
        sizes = [None] * len(axes) if s is None else list(s)
        if real is not None and real_first:
            x = real(x, sizes[-1], axes[-1], norm)
        complex_axes = axes if real is None else axes[:-1]
        for a, n in zip(complex_axes, sizes, strict=False):
            x = one_axis(x, n, a, norm)
        if real is not None and not real_first:
            x = real(x, sizes[-1], axes[-1], norm)
        return x

    return transform


FFT = Extension(
    fft=_fft,
    ifft=_ifft,
    rfft=_rfft,
    irfft=_irfft,
    hfft=lambda x, n, axis, norm: _irfft(tf.math.conj(x), n, axis, _SWAP[norm]),
    ihfft=lambda x, n, axis, norm: tf.math.conj(_rfft(x, n, axis, _SWAP[norm])),
    fftn=_separable(_fft),
    ifftn=_separable(_ifft),
    rfftn=_separable(_fft, _rfft),
    irfftn=_separable(_ifft, _irfft, real_first=False),
)
