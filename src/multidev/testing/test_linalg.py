"""Section "linalg": ``md.linalg`` (the Array API 2023.12 extension) against NumPy itself (the
standard's reference semantics) and against the NumPy reference backend (dtype included);
decompositions by what they promise (reconstruction, orthogonality, ordering); gradients of
the framework's kernels against float64 finite differences; the errors of bad input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import multidev as md
from multidev import nn

NOT_AN_INT: Any = 1.5
RTOL, ATOL = 2e-4, 2e-4  # float32 factorisations on different LAPACK builds
FD_RTOL, FD_ATOL = 2e-3, 2e-3


def _inputs(rng):
    a = rng.standard_normal((2, 4, 4)).astype(np.float32)
    spd = (a @ a.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)).astype(np.float32)
    wide = rng.standard_normal((3, 5)).astype(np.float32)
    vec = rng.standard_normal((4, 3)).astype(np.float32)
    return spd, wide, vec


def _np_solve(a, b):
    """NumPy 1.x and 2.x alike: b a stack of matrices with a's batch shape."""
    return np.linalg.solve(a, np.broadcast_to(b, a.shape[:-1] + b.shape[-1:]))


# name -> (md call on md tensors, the same in NumPy, inputs)
def _cases(rng):
    spd, wide, vec = _inputs(rng)
    lin = md.linalg
    inf = float("inf")
    return {
        "cholesky": (lin.cholesky, np.linalg.cholesky, (spd,)),
        "cholesky_upper": (
            lambda x: lin.cholesky(x, upper=True),
            lambda x: np.swapaxes(np.linalg.cholesky(x), -1, -2),
            (spd,),
        ),
        "det": (lin.det, np.linalg.det, (spd,)),
        "inv": (lin.inv, np.linalg.inv, (spd,)),
        "eigvalsh": (lin.eigvalsh, np.linalg.eigvalsh, (spd,)),
        "slogdet_sign": (lambda x: lin.slogdet(x).sign, lambda x: np.linalg.slogdet(x)[0], (spd,)),
        "slogdet_logabsdet": (
            lambda x: lin.slogdet(x).logabsdet,
            lambda x: np.linalg.slogdet(x)[1],
            (spd,),
        ),
        "svdvals": (lin.svdvals, lambda x: np.linalg.svd(x, compute_uv=False), (wide,)),
        "svdvals_tall": (lin.svdvals, lambda x: np.linalg.svd(x, compute_uv=False), (wide.T,)),
        "pinv": (lin.pinv, np.linalg.pinv, (wide,)),
        "solve": (lin.solve, _np_solve, (spd, vec)),
        "solve_vector": (lin.solve, np.linalg.solve, (spd[0], vec[:, 0].copy())),
        "matrix_power": (
            lambda x: lin.matrix_power(x, 3),
            lambda x: np.linalg.matrix_power(x, 3),
            (spd,),
        ),
        "matrix_power_0": (
            lambda x: lin.matrix_power(x, 0),
            lambda x: np.linalg.matrix_power(x, 0),
            (spd,),
        ),
        "matrix_power_neg": (
            lambda x: lin.matrix_power(x, -2),
            lambda x: np.linalg.matrix_power(x, -2),
            (spd,),
        ),
        "matrix_rank": (lin.matrix_rank, np.linalg.matrix_rank, (wide,)),
        "matrix_rank_deficient": (
            lin.matrix_rank,
            np.linalg.matrix_rank,
            (np.outer(wide[0], wide[1]).astype(np.float32),),
        ),
        "cross": (lin.cross, np.cross, (vec, vec[::-1].copy())),
        "cross_axis0": (
            lambda a, b: lin.cross(a, b, axis=0),
            lambda a, b: np.cross(a, b, axis=0),
            (vec.T.copy(), vec.T[:, ::-1].copy()),
        ),
        "outer": (lin.outer, np.outer, (wide[0], wide[1, :3].copy())),
        "diagonal": (lin.diagonal, lambda x: np.diagonal(x, 0, -2, -1), (spd,)),
        "diagonal_offset": (
            lambda x: lin.diagonal(x, offset=1),
            lambda x: np.diagonal(x, 1, -2, -1),
            (wide,),
        ),
        "diagonal_negative": (
            lambda x: lin.diagonal(x, offset=-1),
            lambda x: np.diagonal(x, -1, -2, -1),
            (wide,),
        ),
        "trace": (lin.trace, lambda x: np.trace(x, axis1=-2, axis2=-1), (spd,)),
        "trace_offset": (
            lambda x: lin.trace(x, offset=2),
            lambda x: np.trace(x, 2, axis1=-2, axis2=-1),
            (wide,),
        ),
        "vector_norm": (lin.vector_norm, np.linalg.norm, (wide,)),
        "vector_norm_axis": (
            lambda x: lin.vector_norm(x, axis=1, keepdims=True),
            lambda x: np.linalg.norm(x, axis=1, keepdims=True),
            (wide,),
        ),
        "vector_norm_axes": (
            lambda x: lin.vector_norm(x, axis=(0, 2), ord=3),
            lambda x: np.sum(np.abs(x) ** 3, axis=(0, 2)) ** (1 / 3),
            (spd,),
        ),
        "vector_norm_1": (
            lambda x: lin.vector_norm(x, ord=1),
            lambda x: np.sum(np.abs(x)),
            (wide,),
        ),
        "vector_norm_inf": (
            lambda x: lin.vector_norm(x, axis=0, ord=inf),
            lambda x: np.linalg.norm(x, np.inf, axis=0),
            (wide,),
        ),
        "vector_norm_-inf": (
            lambda x: lin.vector_norm(x, axis=0, ord=-inf),
            lambda x: np.linalg.norm(x, -np.inf, axis=0),
            (wide,),
        ),
        "vector_norm_0": (
            lambda x: lin.vector_norm(x, axis=1, ord=0),
            lambda x: np.linalg.norm(x, 0, axis=1),
            (np.where(wide > 0, wide, 0).astype(np.float32),),
        ),
        "vector_norm_-2": (
            lambda x: lin.vector_norm(x, axis=1, ord=-2),
            lambda x: np.linalg.norm(x, -2, axis=1),
            (wide,),
        ),
        **{
            f"matrix_norm_{ord}": (
                lambda x, o=ord: lin.matrix_norm(x, ord=o),
                lambda x, o=ord: np.linalg.norm(x, o, axis=(-2, -1)),
                (spd,),
            )
            for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)
        },
        "matrix_norm_keepdims": (
            lambda x: lin.matrix_norm(x, keepdims=True),
            lambda x: np.linalg.norm(x, axis=(-2, -1), keepdims=True),
            (spd,),
        ),
        "matmul": (lin.matmul, np.matmul, (spd, vec)),
        "matrix_transpose": (lin.matrix_transpose, lambda x: np.swapaxes(x, -1, -2), (wide,)),
        "tensordot": (lin.tensordot, lambda a, b: np.tensordot(a, b, 2), (spd, spd[0])),
        "vecdot": (lin.vecdot, lambda a, b: np.sum(a * b, axis=-1), (vec, vec[::-1].copy())),
    }


CASES = list(_cases(np.random.default_rng(0)))


def _run(fn, arrays):
    return fn(*[md.asarray(a) for a in arrays])


@pytest.mark.parametrize("name", CASES)
def test_matches_numpy(name, rng):
    fn, np_fn, arrays = _cases(rng)[name]
    got = _run(fn, arrays)
    # NumPy in float64, except for ranks, whose tolerance depends on the dtype's epsilon
    exact = [a if name.startswith("matrix_rank") else a.astype(np.float64) for a in arrays]
    want = np.asarray(np_fn(*exact))
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.device is md.default_device()
    np.testing.assert_allclose(got.numpy(), want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", CASES)
def test_matches_numpy_reference_backend(name, rng):
    fn, _, arrays = _cases(rng)[name]
    got = _run(fn, arrays)
    with md.use_backend("numpy"):
        want = _run(fn, arrays)
    assert got.dtype is want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL)


def test_result_dtypes(rng):
    spd, wide, _ = _inputs(rng)
    x = md.asarray(spd)
    assert md.linalg.det(x).dtype is md.float32
    assert md.linalg.matrix_rank(md.asarray(wide)).dtype is md.int64
    assert md.linalg.inv(md.asarray(np.eye(3, dtype=np.int64))).dtype is md.float32
    assert md.linalg.trace(md.asarray(np.eye(3, dtype=np.int32))).dtype is md.int64


def test_eigh(rng):
    spd, _, _ = _inputs(rng)
    w, v = md.linalg.eigh(md.asarray(spd))
    w, v = w.numpy(), v.numpy()
    assert w.shape == (2, 4) and v.shape == (2, 4, 4)
    assert np.all(np.diff(w, axis=-1) >= 0), "eigenvalues ascend"
    np.testing.assert_allclose(w, np.linalg.eigvalsh(spd.astype(np.float64)), rtol=RTOL, atol=ATOL)
    rebuilt = v @ (w[..., None] * np.swapaxes(v, -1, -2))
    np.testing.assert_allclose(rebuilt, spd, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_qr(shape, rng):
    a = rng.standard_normal(shape).astype(np.float32)
    q, r = md.linalg.qr(md.asarray(a))
    q, r = q.numpy(), r.numpy()
    k = min(shape[-2:])
    assert q.shape == (*shape[:-1], k) and r.shape == (*shape[:-2], k, shape[-1])
    np.testing.assert_allclose(q @ r, a, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), (*q.shape[:-2], k, k)), atol=1e-4
    )
    np.testing.assert_allclose(np.tril(r, -1), 0, atol=1e-6)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_svd(shape, rng):
    a = rng.standard_normal(shape).astype(np.float32)
    u, s, vh = md.linalg.svd(md.asarray(a), full_matrices=False)
    u, s, vh = u.numpy(), s.numpy(), vh.numpy()
    k = min(shape[-2:])
    assert u.shape == (*shape[:-1], k) and s.shape == (*shape[:-2], k)
    assert vh.shape == (*shape[:-2], k, shape[-1])
    assert np.all(np.diff(s, axis=-1) <= 0), "singular values descend"
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, rtol=1e-4, atol=1e-4)


def test_full_matrices_and_complete_mode(bk, rng):
    a = rng.standard_normal((5, 3)).astype(np.float32)
    x = md.asarray(a)
    if bk.name == "mxnet":  # MXNet's kernels give only the reduced factors
        with pytest.raises(md.UnsupportedOperationError, match="reduced"):
            md.linalg.svd(x)
        with pytest.raises(md.UnsupportedOperationError, match="reduced"):
            md.linalg.qr(x, mode="complete")
        return
    u, s, vh = md.linalg.svd(x)
    assert u.shape == (5, 5) and vh.shape == (3, 3)
    np.testing.assert_allclose((u.numpy()[:, :3] * s.numpy()) @ vh.numpy(), a, atol=1e-4)
    q, r = md.linalg.qr(x, mode="complete")
    assert q.shape == (5, 5) and r.shape == (5, 3)
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=1e-4)


def _grads(f, *arrays):
    params = [nn.Parameter(md.asarray(np.asarray(a, dtype=np.float32))) for a in arrays]
    with md.autograd.record():
        out = f(*params)
    out.backward()
    grads = [p.grad for p in params]
    assert all(g is not None for g in grads), "backward() left a gradient unset"
    return [g.numpy() for g in grads if g is not None]


def _finite_differences(f, *inputs, eps=1e-6):
    """Central differences of the scalar f, evaluated in float64 by NumPy."""
    arrays = [np.asarray(a, dtype=np.float64) for a in inputs]
    out = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus, minus = [v.copy() for v in arrays], [v.copy() for v in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (f(*plus) - f(*minus)) / (2 * eps)
        out.append(g)
    return out


def _sym_md(x):
    return (x + x.mT) / 2 + md.eye(x.shape[-1])


def _sym_np(x):
    return (x + x.T) / 2 + np.eye(x.shape[-1])


def _grad_cases(rng):
    spd, wide, vec = _inputs(rng)
    s0, v0 = spd[0] / 4, vec[:, :2].copy()
    lin = md.linalg
    w = rng.standard_normal((4, 4))
    return {
        "det": (lambda x: lin.det(x), np.linalg.det, (s0,)),
        "inv": (
            lambda x: md.sum(lin.inv(x) * md.asarray(w, dtype=md.float32)),
            lambda x: np.sum(np.linalg.inv(x) * w),
            (s0,),
        ),
        "solve": (
            lambda a, b: md.sum(lin.solve(a, b)),
            lambda a, b: np.sum(np.linalg.solve(a, b)),
            (s0, v0),
        ),
        # functions of symmetric matrices: differentiated through a symmetric parametrisation
        "cholesky": (
            lambda x: md.sum(lin.cholesky(_sym_md(x))),
            lambda x: np.sum(np.linalg.cholesky(_sym_np(x))),
            (s0,),
        ),
        "eigvalsh": (
            lambda x: md.sum(lin.eigvalsh(_sym_md(x)) * md.arange(4, dtype=md.float32)),
            lambda x: np.sum(np.linalg.eigvalsh(_sym_np(x)) * np.arange(4)),
            (s0,),
        ),
        "svdvals": (
            lambda x: md.sum(lin.svdvals(x) * md.arange(3, dtype=md.float32)),
            lambda x: np.sum(np.linalg.svd(x, compute_uv=False) * np.arange(3)),
            (wide,),
        ),
        "vector_norm": (
            lambda x: lin.vector_norm(x, ord=3),
            lambda x: np.sum(np.abs(x) ** 3) ** (1 / 3),
            (wide,),
        ),
    }


@pytest.mark.requires("autograd")
@pytest.mark.parametrize("name", list(_grad_cases(np.random.default_rng(0))))
def test_gradients_match_finite_differences(name, rng):
    f, np_f, arrays = _grad_cases(rng)[name]
    got = _grads(f, *arrays)
    want = _finite_differences(np_f, *arrays)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=FD_RTOL, atol=FD_ATOL)


def test_errors_are_clear():
    x = md.ones((2, 3))
    with pytest.raises(ValueError, match=r"square matrices for linalg\.inv"):
        md.linalg.inv(x)
    with pytest.raises(ValueError, match=r"stack of matrices for linalg\.det"):
        md.linalg.det(md.ones(3))
    with pytest.raises(ValueError, match="size 3 along axis"):
        md.linalg.cross(md.ones((2, 4)), md.ones((2, 4)))
    with pytest.raises(ValueError, match="ord"):
        md.linalg.matrix_norm(md.ones((3, 3)), ord=3)
    with pytest.raises(ValueError, match="mode"):
        md.linalg.qr(x, mode="r")
    with pytest.raises(TypeError, match="integer power"):
        md.linalg.matrix_power(md.ones((3, 3)), NOT_AN_INT)
    with pytest.raises(ValueError, match="rows to match"):
        md.linalg.solve(md.ones((3, 3)), md.ones(4))
