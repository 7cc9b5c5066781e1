"""Section "complex": complex64 and complex128 (the "complex" capability) — promotion per the
Array API, creation, arithmetic, ``real``/``imag``/``conj``/``abs``, checkpoints — against
NumPy itself, the NumPy reference backend and the framework's own code; and the typed error
of a backend without the capability."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import multidev as md

TOLERANCES = {"complex64": (1e-5, 1e-6), "complex128": (1e-12, 1e-14)}
COMPLEX = pytest.mark.requires("complex")


def _complex(rng, dt, shape=(3, 4)):
    parts = rng.standard_normal((2, *shape))
    return (parts[0] + 1j * parts[1]).astype(dt.numpy)


# name -> (multidev call on md tensors, the same in NumPy, number of complex inputs)
CASES = {
    "add": (md.add, np.add, 2),
    "subtract": (md.subtract, np.subtract, 2),
    "multiply": (md.multiply, np.multiply, 2),
    "divide": (md.divide, np.divide, 2),
    "negative": (md.negative, np.negative, 1),
    "exp": (md.exp, np.exp, 1),
    "sqrt": (md.sqrt, np.sqrt, 1),
    "abs": (md.abs, np.abs, 1),
    "real": (md.real, np.real, 1),
    "imag": (md.imag, np.imag, 1),
    "conj": (md.conj, np.conj, 1),
    "equal": (lambda a, b: a == b, np.equal, 2),
    "matmul": (lambda a, b: a @ md.matrix_transpose(b), lambda a, b: a @ b.T, 2),
    "sum": (lambda a: md.sum(a, axis=1), lambda a: np.sum(a, axis=1), 1),
    "scalar_multiply": (lambda a: a * (2 - 1j), lambda a: a * np.complex64(2 - 1j), 1),
}
#: the reference-table keys of the framework's own code, where the case has one
NATIVE_KEYS = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "exp",
    "sqrt",
    "abs",
    "real",
    "imag",
    "conj",
]


def _inputs(rng, dt, n):
    return [_complex(rng, dt) for _ in range(n)]


@COMPLEX
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("name", CASES)
def test_matches_numpy(name, dt, rng):
    fn, np_fn, n = CASES[name]
    arrays = _inputs(rng, getattr(md, dt), n)
    got = fn(*[md.asarray(a) for a in arrays])
    want = np.asarray(np_fn(*arrays))
    assert got.dtype is md.asarray(want).dtype, (got.dtype, want.dtype)
    assert got.device is md.default_device()
    rtol, atol = TOLERANCES[dt]
    np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol)


@COMPLEX
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("name", CASES)
def test_matches_numpy_reference_backend(name, dt, rng):
    fn, _, n = CASES[name]
    arrays = _inputs(rng, getattr(md, dt), n)
    got = fn(*[md.asarray(a) for a in arrays])
    with md.use_backend("numpy"):
        want = fn(*[md.asarray(a) for a in arrays])
    assert got.dtype is want.dtype
    rtol, atol = TOLERANCES[dt]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol)


@COMPLEX
@pytest.mark.parametrize("name", NATIVE_KEYS)
def test_matches_native(name, native_ops, rng):
    fn, _, n = CASES[name]
    arrays = _inputs(rng, md.complex64, n)
    got = fn(*[md.asarray(a) for a in arrays])
    want = native_ops[name](*arrays)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


@COMPLEX
def test_promotion_follows_the_standard():
    c64, c128 = md.ones(2, dtype=md.complex64), md.ones(2, dtype=md.complex128)
    f32, f64 = md.ones(2), md.ones(2, dtype=md.float64)
    assert (c64 + f32).dtype is md.complex64
    assert (c64 + f64).dtype is md.complex128
    assert (c128 + f32).dtype is md.complex128
    assert (c64 + c128).dtype is md.complex128
    assert (f32 * 1j).dtype is md.complex64 and (f64 * 1j).dtype is md.complex128
    assert (md.arange(3) + 1j).dtype is md.complex64
    assert (c64 / 2).dtype is md.complex64
    assert md.result_type(md.complex64, md.float64) is md.complex128
    assert md.can_cast(md.float32, md.complex64) and not md.can_cast(md.complex64, md.float64)


@COMPLEX
def test_creation_and_queries():
    x = md.asarray([1 + 2j, -3j])
    assert x.dtype is md.complex64
    np.testing.assert_array_equal(x.numpy(), np.array([1 + 2j, -3j], np.complex64))
    assert md.full((2,), 1 - 1j).dtype is md.complex64
    z = md.zeros((2, 3), dtype=md.complex128)
    assert z.dtype is md.complex128 and not z.numpy().any()
    assert md.astype(md.arange(3), md.complex64).dtype is md.complex64
    assert complex(md.asarray(2 - 1j)) == 2 - 1j
    assert md.isdtype(md.complex64, "complex floating") and md.isdtype(md.complex128, "numeric")
    assert not md.isdtype(md.complex64, "real floating")
    assert md.finfo(md.complex64).eps == float(np.finfo(np.float32).eps)
    assert md.finfo(md.complex128).dtype is md.float64
    info = md.__array_namespace_info__()
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert info.default_dtypes()["complex floating"] is md.complex64


@COMPLEX
def test_parts_of_real_input():
    x = md.asarray([1.5, -2.0])
    np.testing.assert_array_equal(md.real(x).numpy(), [1.5, -2.0])
    np.testing.assert_array_equal(md.imag(x).numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(md.conj(x).numpy(), [1.5, -2.0])
    assert md.real(md.ones(2, dtype=md.complex128)).dtype is md.float64


@COMPLEX
def test_checkpoint_round_trip(tmp_path, rng):
    host = _complex(rng, md.complex64)
    md.save({"z": md.asarray(host), "w": md.ones(2)}, tmp_path / "c.safetensors")
    back = md.load(tmp_path / "c.safetensors")
    assert back["z"].dtype is md.complex64
    np.testing.assert_array_equal(back["z"].numpy(), host)


@COMPLEX
def test_complex128_checkpoint_is_a_typed_error(tmp_path):
    with pytest.raises(TypeError, match=r"complex128.*md\.real"):
        md.save({"z": md.ones(2, dtype=md.complex128)}, tmp_path / "c.safetensors")
    assert not (tmp_path / "c.safetensors").exists()


def test_backend_without_the_capability_says_so(bk):
    if "complex" in bk.capabilities:
        pytest.skip(f"{bk.name} has the 'complex' capability")
    with pytest.raises(TypeError, match="'complex' capability"):
        md.zeros(2, dtype=md.complex64)
    with pytest.raises(TypeError, match="'complex' capability"):
        md.asarray(np.ones(2, np.complex128))
    assert "complex64" not in md.__array_namespace_info__().dtypes()


@COMPLEX
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_unique_of_complex_values_as_numpy(rng, dt):
    """NumPy's order (real part, then imaginary part), with repeats in both parts: the frameworks
    without a complex sort kernel (PyTorch, TensorFlow, Paddle) included."""
    a = (rng.integers(0, 3, (4, 5)) + 1j * rng.integers(-1, 2, (4, 5))).astype(dt)
    values, index, inverse, counts = np.unique(
        a, return_index=True, return_inverse=True, return_counts=True
    )
    got = md.unique_all(md.asarray(a))
    assert got.values.dtype is getattr(md, dt)
    np.testing.assert_array_equal(got.values.numpy(), values)
    np.testing.assert_array_equal(got.indices.numpy(), index)
    np.testing.assert_array_equal(got.inverse_indices.numpy(), inverse.reshape(a.shape))
    np.testing.assert_array_equal(got.counts.numpy(), counts)
    np.testing.assert_array_equal(md.unique_values(md.asarray(a)).numpy(), values)
    np.testing.assert_array_equal(md.unique_counts(md.asarray(a)).counts.numpy(), counts)


@COMPLEX
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_singular_values_rank_and_norms_of_complex_matrices(rng, dt):
    a = _complex(rng, getattr(md, dt), (2, 4, 3))
    a[1, :, 2] = a[1, :, 0] * (1 - 2j)  # a rank-deficient matrix in the stack
    rtol, atol = (1e-4, 1e-5) if dt == "complex64" else (1e-10, 1e-12)
    x = md.asarray(a)
    np.testing.assert_allclose(
        md.linalg.svdvals(x).numpy(), np.linalg.svd(a, compute_uv=False), rtol=rtol, atol=atol
    )
    np.testing.assert_array_equal(md.linalg.matrix_rank(x).numpy(), [3, 2])
    for ord in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf):
        want = np.linalg.norm(a, ord=ord, axis=(-2, -1))
        got = md.linalg.matrix_norm(x, ord=ord)
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol, err_msg=str(ord))


@COMPLEX
def test_take_along_axis_of_complex(rng):
    a = _complex(rng, md.complex64, (3, 4))
    idx = np.array([[3, 0], [1, 1], [2, 0]])
    got = md.take_along_axis(md.asarray(a), md.asarray(idx), axis=1)
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, idx, 1))


@COMPLEX
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "pow"])
def test_a_python_complex_keeps_a_0d_tensor_0d(op):
    """Paddle's ``/`` and ``**`` with a Python complex gave shape (1,)."""
    fn = getattr(operator, op)
    z, c = np.complex64(2.0), np.complex64(1 + 1j)
    for dt in (md.float32, md.complex64):
        x = md.asarray(2.0, dtype=dt)
        for got, want in [(fn(x, 1 + 1j), fn(z, c)), (fn(1 + 1j, x), fn(c, z))]:
            assert got.shape == () and got.dtype is md.complex64
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
