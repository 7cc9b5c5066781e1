"""``md.linalg``: the Array API 2023.12 linear-algebra extension.

Each function is declared once here: its checks, its options and the one native call it makes,
``_native(x, name, *args)``, which runs the adapter's lowering (``Adapter.linalg``: by default
the framework's function of that name, e.g. ``torch.linalg.qr``, called as written here). The
options a framework spells in many ways (norm orders, tolerances, the axis of ``cross``, the
upper Cholesky factor, batch broadcasting of ``solve``) are handled here once, with native ops.
Gradients flow wherever the framework's kernel has them. A function the framework lacks raises
``UnsupportedOperationError`` naming it and the backend.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, NamedTuple

import numpy as np

from . import array_api, ops
from . import dtypes as _dt
from .dispatch import as_tensor, check_same, floating, on, wrap
from .errors import ShapeError
from .tensors import Tensor

__all__ = [
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]

#: the main namespace's functions that the extension shares
matmul = ops.matmul
matrix_transpose = array_api.matrix_transpose
tensordot = array_api.tensordot
vecdot = array_api.vecdot


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def _native(x: Tensor, name: str, *args: Any, **kwargs: Any) -> Any:
    """The adapter's lowering of ``linalg.<name>`` run on native ``args`` on x's device."""
    bk = x._bk
    fn = bk.linalg.require("linalg", name, bk.name)
    return on(bk, x._dev, lambda: fn(*args, **kwargs))


def _matrices(x: Any, name: str, square: bool = False) -> Tensor:
    """``x`` as a floating-point stack of matrices (integer input in float32)."""
    x = floating(as_tensor(x))
    if x.ndim < 2:
        raise ShapeError(
            f"Expected a matrix or a stack of matrices for linalg.{name}. Received: shape "
            f"{x.shape}",
            op=f"linalg.{name}",
            shapes=(x.shape,),
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise ShapeError(
            f"Expected square matrices for linalg.{name}. Received: shape {x.shape}",
            op=f"linalg.{name}",
            shapes=(x.shape,),
        )
    return x


def _eps_tol(x: Tensor) -> float:
    """The Array API's default relative tolerance: max(M, N) times the dtype's epsilon."""
    return builtins.max(x.shape[-2:]) * array_api.finfo(x._dtype).eps


def _cutoff(x: Tensor, s: Tensor, rtol: Any) -> Tensor:
    """The singular values at or below which ``pinv`` and ``matrix_rank`` count one as zero:
    ``rtol`` (a number, or a tensor broadcast against the stack's batch shape) times the
    largest singular value of each matrix, shape ``(..., 1)``."""
    if rtol is None:
        rtol = _eps_tol(x)
    if isinstance(rtol, Tensor):
        rtol = ops.reshape(ops.astype(rtol, s._dtype, copy=False), (*rtol.shape, 1))
    return rtol * ops.max(s, axis=-1, keepdims=True)


def _real(out: Tensor) -> Tensor:
    """A norm or log-magnitude in the real dtype the standard asks for (TensorFlow and Paddle
    return complex input's in a complex dtype, with a zero imaginary part)."""
    return array_api.real(out) if out._dtype.kind == "c" else out


# ---------------------------------------------------------------- decompositions


def cholesky(x: Any, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive-definite matrices: lower-triangular L with
    ``x = L @ L.mT``, or its transpose ``U`` (``x = U.mT @ U``) when ``upper``."""
    x = _matrices(x, "cholesky", square=True)
    lower = wrap(x, _native(x, "cholesky", x._native), x._dtype)
    return matrix_transpose(lower) if upper else lower


def eigh(x: Any, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices."""
    x = _matrices(x, "eigh", square=True)
    w, v = _native(x, "eigh", x._native)
    return EighResult(wrap(x, w), wrap(x, v, x._dtype))  # eigenvalues are real


def eigvalsh(x: Any, /) -> Tensor:
    """Eigenvalues (ascending) of symmetric matrices."""
    x = _matrices(x, "eigvalsh", square=True)
    return wrap(x, _native(x, "eigvalsh", x._native))


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """The QR decomposition ``x = Q @ R`` (``mode`` "reduced": Q is (..., M, K) with K =
    min(M, N); "complete": Q is (..., M, M))."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"Expected mode 'reduced' or 'complete'. Received: {mode!r}")
    x = _matrices(x, "qr")
    q, r = _native(x, "qr", x._native, mode=mode)
    return QRResult(wrap(x, q, x._dtype), wrap(x, r, x._dtype))


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """The singular value decomposition ``x = U @ diag(S) @ Vh`` (S descending)."""
    x = _matrices(x, "svd")
    u, s, vh = _native(x, "svd", x._native, full_matrices=full_matrices)
    return SVDResult(wrap(x, u, x._dtype), wrap(x, s), wrap(x, vh, x._dtype))


def svdvals(x: Any, /) -> Tensor:
    """The singular values of matrices, descending."""
    x = _matrices(x, "svdvals")
    return wrap(x, _native(x, "svdvals", x._native))


# ---------------------------------------------------------------- solving and inverting


def det(x: Any, /) -> Tensor:
    """The determinants of square matrices."""
    x = _matrices(x, "det", square=True)
    return wrap(x, _native(x, "det", x._native), x._dtype)


def slogdet(x: Any, /) -> SlogdetResult:
    """The sign and the natural log of the absolute value of the determinants (exact where
    ``det`` overflows)."""
    x = _matrices(x, "slogdet", square=True)
    sign, logabs = _native(x, "slogdet", x._native)
    return SlogdetResult(wrap(x, sign, x._dtype), _real(wrap(x, logabs)))


def inv(x: Any, /) -> Tensor:
    """The inverses of square matrices."""
    x = _matrices(x, "inv", square=True)
    return wrap(x, _native(x, "inv", x._native), x._dtype)


def pinv(x: Any, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverses; singular values at or below ``rtol`` times the
    largest are treated as zero (default: max(M, N) times the dtype's epsilon). ``rtol`` is a
    number or a tensor broadcast against the batch shape ``x.shape[:-2]``."""
    x = _matrices(x, "pinv")
    if not isinstance(rtol, Tensor):
        tol = _eps_tol(x) if rtol is None else float(rtol)
        return wrap(x, _native(x, "pinv", x._native, rtol=tol), x._dtype)
    # one tolerance per matrix: the framework's pinv takes a number, so build it from the SVD
    u, s, vh = svd(x, full_matrices=False)
    keep = s > _cutoff(x, s, rtol)
    s_inv = ops.where(keep, 1 / ops.where(keep, s, 1), 0)
    s_inv = ops.astype(ops.reshape(s_inv, (*s_inv.shape[:-1], 1, s_inv.shape[-1])), x._dtype)
    v = array_api.conj(matrix_transpose(vh)) if x._dtype.kind == "c" else matrix_transpose(vh)
    uh = array_api.conj(matrix_transpose(u)) if x._dtype.kind == "c" else matrix_transpose(u)
    return ops.matmul(v * s_inv, uh)


def solve(x1: Any, x2: Any, /) -> Tensor:
    """The solutions X of ``x1 @ X = x2``: ``x2`` is a vector when it is 1-d, else a stack of
    matrices; batch axes broadcast."""
    a = _matrices(x1, "solve", square=True)
    b = as_tensor(x2, a)
    check_same(a, b)
    dt = _dt.result_type(a._dtype, floating(b)._dtype)
    a, b = ops.astype(a, dt, copy=False), ops.astype(b, dt, copy=False)
    vector = b.ndim == 1
    if vector:
        b = ops.reshape(b, (b.shape[0], 1))
    if b.shape[-2] != a.shape[-1]:
        raise ShapeError(
            f"Expected x2 with {a.shape[-1]} rows to match x1 of shape {a.shape} for "
            f"linalg.solve. Received: shape {x2.shape if isinstance(x2, Tensor) else b.shape}",
            op="linalg.solve",
            shapes=(a.shape, x2.shape if isinstance(x2, Tensor) else b.shape),
        )
    batch = _broadcast_batch(a.shape[:-2], b.shape[:-2], "linalg.solve")
    a = array_api.broadcast_to(a, batch + a.shape[-2:])
    b = array_api.broadcast_to(b, batch + b.shape[-2:])
    out = wrap(a, _native(a, "solve", a._native, b._native), dt)
    return ops.reshape(out, out.shape[:-1]) if vector else out


def _broadcast_batch(s1: tuple[int, ...], s2: tuple[int, ...], name: str) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(s1, s2))
    except ValueError:
        raise ShapeError(
            f"Expected batch shapes that broadcast for {name}. Received: {s1} and {s2}",
            op=name,
            shapes=(s1, s2),
        ) from None


def matrix_power(x: Any, n: int, /) -> Tensor:
    """``x`` multiplied by itself ``n`` times (the identity for 0; powers of the inverse for
    negative ``n``)."""
    x = _matrices(x, "matrix_power", square=True)
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"Expected an integer power. Received: {n!r}")
    return wrap(x, _native(x, "matrix_power", x._native, n), x._dtype)


def matrix_rank(x: Any, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The ranks (int64): how many singular values exceed ``rtol`` times the largest (default
    max(M, N) times the dtype's epsilon; a number, or a tensor broadcast against the batch
    shape ``x.shape[:-2]``)."""
    x = _matrices(x, "matrix_rank")
    s = svdvals(x)
    if not isinstance(rtol, Tensor) and rtol is not None:
        rtol = float(rtol)
    return ops.sum(s > _cutoff(x, s, rtol), axis=-1)


# ---------------------------------------------------------------- products and norms


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The cross products of 3-vectors along ``axis`` (batch axes broadcast)."""
    a = as_tensor(x1)
    b = as_tensor(x2, a)
    check_same(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"Expected 3-vectors for linalg.cross. Received: shapes {a.shape} and {b.shape}",
            op="linalg.cross",
            shapes=(a.shape, b.shape),
        )
    a, b = array_api.broadcast_arrays(a, b)
    ax = ops._axis(a, axis)
    if a.shape[ax] != 3:
        raise ShapeError(
            f"Expected size 3 along axis {axis} for linalg.cross. Received: shapes {a.shape} "
            f"and {b.shape}",
            op="linalg.cross",
            shapes=(a.shape, b.shape),
        )
    dt = _dt.result_type(a._dtype, b._dtype)
    a, b = ops.astype(a, dt, copy=False), ops.astype(b, dt, copy=False)
    last = a.ndim - 1
    if ax != last:
        a, b = array_api.moveaxis(a, ax, last), array_api.moveaxis(b, ax, last)
    out = wrap(a, _native(a, "cross", a._native, b._native), dt)
    return array_api.moveaxis(out, last, ax) if ax != last else out


def outer(x1: Any, x2: Any, /) -> Tensor:
    """The outer product of two vectors: ``out[i, j] = x1[i] * x2[j]``."""
    a = as_tensor(x1)
    b = as_tensor(x2, a)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(
            f"Expected two 1-d tensors for linalg.outer. Received: shapes {a.shape} and {b.shape}",
            op="linalg.outer",
            shapes=(a.shape, b.shape),
        )
    return ops.reshape(a, (a.shape[0], 1)) * ops.reshape(b, (1, b.shape[0]))


def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonals of matrices (positive: above the main diagonal)."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ShapeError(
            f"Expected a matrix or a stack of matrices for linalg.diagonal. Received: shape "
            f"{x.shape}",
            op="linalg.diagonal",
            shapes=(x.shape,),
        )
    return wrap(x, _native(x, "diagonal", x._native, offset=int(offset)), x._dtype)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sums along the ``offset``-th diagonals (in ``dtype``; integers sum in int64)."""
    d = diagonal(x, offset=offset)
    if dtype is not None:
        d = ops.astype(d, dtype, copy=False)
    out = ops.sum(d, axis=-1)
    return out if dtype is None else ops.astype(out, dtype, copy=False)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: float = 2) -> Tensor:
    """The ``ord``-norms of vectors along ``axis`` (all axes by default): any real ``ord``,
    ``inf`` (largest magnitude), ``-inf`` (smallest) or 0 (the count of non-zeros)."""
    x = floating(as_tensor(x))
    if x.ndim == 0 and axis is None:  # a 0-d tensor is a vector of one element
        out = vector_norm(ops.reshape(x, (1,)), axis=0, ord=ord)
        return ops.reshape(out, ())
    axes = ops._axes(x, axis)
    # axis=() makes each element a vector of its own: its norm is its magnitude
    axes = tuple(range(x.ndim)) if axes is None else axes
    keep = tuple(1 if a in axes else n for a, n in enumerate(x.shape))
    rest = [a for a in range(x.ndim) if a not in axes]
    flat = ops.reshape(
        ops.permute_dims(x, rest + list(axes)),
        (*tuple(x.shape[a] for a in rest), math.prod(x.shape[a] for a in axes)),
    )
    ord = float(ord)
    if ord == math.inf or ord == -math.inf:
        mag = abs(flat)
        out = ops.max(mag, axis=-1) if ord > 0 else ops.min(mag, axis=-1)
    elif ord == 0:
        out = ops.astype(ops.sum(flat != 0, axis=-1), _dt.real_dtype(x._dtype))
    elif ord < 0:
        out = ops.sum(abs(flat) ** ord, axis=-1) ** (1 / ord)
    else:
        out = _real(wrap(x, _native(x, "vector_norm", flat._native, ord)))
    return ops.reshape(out, keep) if keepdims else out


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:
    """Norms of matrices: "fro" (Frobenius), "nuc" (sum of singular values), 2 / -2 (largest /
    smallest singular value), 1 / -1 (largest / smallest column sum of magnitudes), ``inf`` /
    ``-inf`` (the same over rows)."""
    x = _matrices(x, "matrix_norm")
    if ord == "fro":
        out = vector_norm(x, axis=(-2, -1))
    elif ord in ("nuc", 2, -2):
        s = svdvals(x)
        out = ops.sum(s, axis=-1) if ord == "nuc" else (ops.max if ord == 2 else ops.min)(s, -1)
    elif ord in (1, -1, math.inf, -math.inf):
        sums = ops.sum(abs(x), axis=-2 if ord in (1, -1) else -1)
        out = (ops.max if ord > 0 else ops.min)(sums, -1)
    else:
        raise ValueError(
            "Expected ord 'fro', 'nuc', 1, -1, 2, -2, inf or -inf for matrix_norm. "
            f"Received: {ord!r}"
        )
    return ops.reshape(out, (*out.shape, 1, 1)) if keepdims else out
