"""Array API behaviours the data-apis array-api-tests suite found missing, checked on the
backend named by MULTIDEV_BACKEND against NumPy's results: vecdot conjugates x1, tensor
tolerances of pinv/matrix_rank, reductions and norms of empty stacks, norms of 0-d tensors,
real result dtypes of complex norms, and the standard signatures of the creation functions."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import multidev as md
from multidev import registry

RNG = np.random.default_rng(11)


def _np(t: md.Tensor) -> np.ndarray:
    return np.asarray(t.numpy())


def _bk():
    return registry.current()


def _needs_complex() -> None:
    if "complex" not in _bk().capabilities:
        pytest.skip(f"{_bk().name} has no complex dtypes")


def _complex(shape: tuple[int, ...]) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


@pytest.mark.parametrize("vecdot", [md.vecdot, md.linalg.vecdot], ids=["md", "linalg"])
def test_vecdot_conjugates_complex_x1(vecdot):
    _needs_complex()
    a, b = _complex((3, 4)), _complex((3, 4))
    out = vecdot(md.asarray(a), md.asarray(b))
    assert out.dtype is md.complex64
    np.testing.assert_allclose(_np(out), np.sum(np.conj(a) * b, axis=-1), rtol=1e-5)


def test_pinv_and_matrix_rank_take_a_tensor_rtol_per_matrix():
    # two rank-2 3x3 matrices whose smaller singular value is 0.1 times the largest: an rtol
    # of 0.05 keeps it, 0.5 drops it; one tolerance per matrix of the stack
    u, _ = np.linalg.qr(RNG.standard_normal((2, 3, 3)))
    v, _ = np.linalg.qr(RNG.standard_normal((2, 3, 3)))
    x = (u * np.array([1.0, 0.1, 0.0])) @ v
    rtol = np.array([0.05, 0.5])
    xt, rt = md.asarray(x.astype(np.float32)), md.asarray(rtol.astype(np.float32))
    assert _np(md.linalg.matrix_rank(xt, rtol=rt)).tolist() == [2, 1]
    got = md.linalg.pinv(xt, rtol=rt)
    assert got.dtype is md.float32 and got.shape == (2, 3, 3)
    want = np.stack([np.linalg.pinv(x[i], rcond=rtol[i]) for i in range(2)])
    np.testing.assert_allclose(_np(got), want, rtol=1e-3, atol=1e-3)
    # a 0-d tensor rtol applies to every matrix, like the number
    one = md.linalg.pinv(xt, rtol=md.asarray(np.float32(0.5)))
    np.testing.assert_allclose(_np(one), _np(md.linalg.pinv(xt, rtol=0.5)), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("ord", [1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"])
def test_matrix_norm_and_rank_of_an_empty_stack(ord):
    x = md.zeros((0, 3, 4))
    assert md.linalg.matrix_norm(x, ord=ord).shape == (0,)
    assert md.linalg.matrix_norm(x, ord=ord, keepdims=True).shape == (0, 1, 1)
    rank = md.linalg.matrix_rank(x)
    assert rank.shape == (0,) and rank.dtype is md.int64


@pytest.mark.parametrize("reduce", [md.max, md.min, md.argmax, md.argmin])
def test_max_min_of_an_empty_tensor_need_only_a_non_empty_reduced_axis(reduce):
    x = md.zeros((0, 3))
    assert reduce(x, axis=1).shape == (0,)
    with pytest.raises(ValueError, match=r"non-empty reduced axes.*Received: shape \(0, 3\)"):
        reduce(x, axis=0)
    with pytest.raises(ValueError, match=r"non-empty"):
        reduce(x)


@pytest.mark.parametrize("ord", [2, 1, 0, -1, 3.5, np.inf, -np.inf])
def test_vector_norm_of_a_0d_tensor(ord):
    for v in (-2.5, 0.0):
        out = md.linalg.vector_norm(md.asarray(np.float32(v)), ord=ord)
        assert out.shape == () and out.dtype is md.float32
        want = np.linalg.norm(np.array([v], dtype=np.float32), ord=ord)
        assert float(out) == pytest.approx(float(want))


def test_norms_and_slogdet_of_complex_input_are_real():
    _needs_complex()
    x = _complex((3, 3))
    for ord in (2, 1, 3.0, 0, np.inf, -1):
        out = md.linalg.vector_norm(md.asarray(x), ord=ord, axis=-1)
        assert out.dtype is md.float32, ord
        np.testing.assert_allclose(_np(out), np.linalg.norm(x, ord=ord, axis=-1), rtol=1e-4)
    fro = md.linalg.matrix_norm(md.asarray(x))
    assert fro.dtype is md.float32
    sign, logabs = md.linalg.slogdet(md.asarray(x))
    assert sign.dtype is md.complex64 and logabs.dtype is md.float32
    np.testing.assert_allclose(float(logabs), np.linalg.slogdet(x)[1], rtol=1e-4)


@pytest.mark.parametrize("make", [md.ones, md.zeros, md.empty])
def test_creation_takes_the_standard_and_the_pytorch_shapes(make):
    params = list(inspect.signature(make).parameters.values())
    assert params[0].name == "shape"
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    for args, kwargs in [
        (((2, 3),), {}),
        ((2, 3), {}),
        ((), {"shape": (2, 3)}),
        (((2, 3),), {"dtype": md.int32, "device": "cpu"}),
    ]:
        out = make(*args, **kwargs)
        assert out.shape == (2, 3)
        assert out.dtype is kwargs.get("dtype", md.float32)
    assert make(4).shape == (4,)
    if make is not md.empty:
        assert make(size=(1, 2)).shape == (1, 2)
        np.testing.assert_array_equal(_np(make(2, 2)), np.full((2, 2), make is md.ones))


def test_full_takes_the_standard_signature():
    out = md.full((2, 3), 7, dtype=md.int32, device="cpu")
    assert out.shape == (2, 3) and out.dtype is md.int32
    assert _np(out).tolist() == np.full((2, 3), 7).tolist()


def test_max_dimensions_is_the_frameworks_limit():
    ndim = md.__array_namespace_info__().capabilities()["max dimensions"]
    limits = _bk().array_limits
    assert ndim == min(limits.ndim, limits.broadcast_ndim)
    md.zeros((1,) * ndim)  # the limit itself is a shape the framework holds
    if _bk().name == "paddle":
        assert ndim == 9
    if _bk().name == "mxnet":  # its kernels broadcast over five dimensions that do not merge
        assert ndim == 5


@pytest.mark.parametrize("offset", [4, 9, -3, -8, 3, -2, 0])
def test_diagonal_and_trace_past_the_last_diagonal(offset):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    d = md.linalg.diagonal(md.asarray(a), offset=offset)
    want = np.diagonal(a, offset, -2, -1)
    assert d.shape == want.shape and d.dtype is md.float32
    np.testing.assert_array_equal(_np(d), want)
    np.testing.assert_array_equal(_np(md.linalg.trace(md.asarray(a), offset=offset)), want.sum(-1))


def test_integer_indexing_of_tensors_with_8_or_more_axes():
    if _bk().name == "paddle":
        pytest.skip("Paddle's indexing kernels take tensors of at most 6 dimensions")
    shape = (2, 3, 2, 2, 2, 2, 2, 2, 3)
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x = md.asarray(a)
    for key in [(1, 2, 0, 1, 1, 0, 1, 1, 2), (1, 2, 0, 1, 1, 0, 1, 1), (-1, -2, 0, 1, 1, 0, 1, -1)]:
        np.testing.assert_array_equal(_np(x[key]), a[key])
    rows = [np.array([0, 1]), np.array([1, 2])] + [np.array([1, 0])] * 6
    got = x[tuple(md.asarray(r) for r in rows)]
    np.testing.assert_array_equal(_np(got), a[tuple(rows)])
    # eight index arrays after a slice: the indexed axes are not the leading ones
    rows = [np.array([0, 2])] + [np.array([1, 0])] * 6 + [np.array([2, 1])]
    got = x[(slice(None), *(md.asarray(r) for r in rows))]
    np.testing.assert_array_equal(_np(got), a[(slice(None), *rows)])


def test_svdvals_keeps_every_batch_axis():
    a = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    got = md.linalg.svdvals(md.asarray(a))
    assert got.shape == (2, 3, 4)
    np.testing.assert_allclose(_np(got), np.linalg.svd(a, compute_uv=False), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["cholesky", "solve", "svdvals"])
def test_complex_linalg_works_or_says_the_kernel_is_missing(name):
    _needs_complex()
    a = _complex((3, 3))
    spd = a @ a.conj().T + 3 * np.eye(3, dtype=np.complex64)
    args = (spd, np.ones((3, 2), np.complex64)) if name == "solve" else (spd,)
    want = {
        "cholesky": lambda m: np.linalg.cholesky(m),
        "solve": np.linalg.solve,
        "svdvals": lambda m: np.linalg.svd(m, compute_uv=False),
    }[name](*args)
    fn = getattr(md.linalg, name)
    # Paddle registers these kernels for float32/float64 only (its complex singular values
    # come from its SVD)
    if _bk().name == "paddle" and name != "svdvals":
        with pytest.raises(md.UnsupportedOperationError, match=f"linalg.{name}.*complex64"):
            fn(*(md.asarray(v) for v in args))
        return
    np.testing.assert_allclose(_np(fn(*(md.asarray(v) for v in args))), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dt", ["uint8", "int8", "int16", "int32"])
def test_small_integer_sort_nonzero_and_cross(dt):
    if dt == "int16" and md.int16 not in _bk().dtypes:
        pytest.skip(f"{_bk().name} has no int16")
    a = np.array([[3, 0, 1], [7, 2, 0]], dtype=dt)
    b = np.array([[1, 5, 2], [0, 3, 4]], dtype=dt)
    x, y = md.asarray(a), md.asarray(b)
    np.testing.assert_array_equal(_np(md.argsort(x, stable=True)), np.argsort(a, kind="stable"))
    got = md.sort(x)
    assert got.dtype is x.dtype
    np.testing.assert_array_equal(_np(got), np.sort(a))
    for g, w in zip(md.nonzero(x), np.nonzero(a), strict=True):
        np.testing.assert_array_equal(_np(g), w)
    got = md.linalg.cross(x, y)
    assert got.dtype is x.dtype
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(_np(got), np.cross(a, b))


@pytest.mark.parametrize("dt", [md.bool, md.float32, md.int32])
def test_repeat_of_an_empty_axis_with_zero_counts(dt):
    x = md.zeros((0, 2), dtype=dt)
    reps = md.asarray(np.zeros((0,), dtype=np.int64))
    out = md.repeat(x, reps, axis=0)
    assert out.shape == (0, 2) and out.dtype is dt
    assert md.repeat(md.zeros((0,), dtype=dt), reps).shape == (0,)


@pytest.mark.parametrize("dt", [md.uint8, md.bool, md.float32])
def test_setitem_of_a_0d_tensor(dt):
    x = md.asarray(np.array(1, dtype=dt.numpy))
    x[...] = 0
    assert x.dtype is dt and not bool(x)
    x[()] = 1
    assert bool(x)
    x[md.asarray(False)] = 0  # a 0-d mask that selects nothing
    assert bool(x)
    x[md.asarray(True)] = 0
    assert not bool(x)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64"])
def test_shifts_by_the_bit_width_or_more(dt):
    info = np.iinfo(dt)
    signed = [1, -1, 3, info.max, info.min, 0, 5, -7]
    x = np.array(signed if info.min < 0 else [1, 3, 255, 0, 128, 7, 2, 200], dtype=dt)
    for y in [0, 1, 3, info.bits - 2, info.bits - 1, info.bits, info.bits + 1, 2 * info.bits + 3]:
        s = np.full(x.shape, y, dtype=dt)
        clipped = np.minimum(s, info.bits - 1)
        want_left = np.where(s >= info.bits, 0, np.left_shift(x, clipped)).astype(dt)
        fill = np.where(x < 0, -1, 0).astype(dt)  # the sign fill for shifts past the width
        want_right = np.where(s >= info.bits, fill, np.right_shift(x, clipped)).astype(dt)
        got = md.bitwise_left_shift(md.asarray(x), md.asarray(s))
        np.testing.assert_array_equal(_np(got), want_left, err_msg=f"{dt} << {y}")
        got = md.bitwise_right_shift(md.asarray(x), md.asarray(s))
        np.testing.assert_array_equal(_np(got), want_right, err_msg=f"{dt} >> {y}")


def test_diagonal_and_trace_of_bool_matrices():
    a = np.array([[True, False, True], [True, True, False]])
    for offset in (0, 1, -1):
        got = md.linalg.diagonal(md.asarray(a), offset=offset)
        assert got.dtype is md.bool
        np.testing.assert_array_equal(_np(got), np.diagonal(a, offset))
    assert int(md.linalg.trace(md.asarray(a))) == int(np.trace(a))


def test_pinv_of_complex_matrices():
    _needs_complex()
    a = _complex((2, 4, 3))
    got = md.linalg.pinv(md.asarray(a))
    assert got.dtype is md.complex64 and got.shape == (2, 3, 4)
    np.testing.assert_allclose(_np(got), np.linalg.pinv(a), rtol=1e-3, atol=1e-4)


def test_all_and_any_of_complex_count_the_imaginary_part():
    _needs_complex()
    x = md.asarray(np.array([1j, 2 + 0j, 0j], dtype=np.complex64))
    assert bool(md.all(x[:2])) and not bool(md.all(x))
    assert bool(md.any(x[2:] + 1j)) and not bool(md.any(x[2:]))
    assert bool(md.all(md.asarray(np.complex64(1j))))
