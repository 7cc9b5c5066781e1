"""Section "complex": complex64 and complex128 (the "complex" capability) — promotion per the
Array API, creation, arithmetic, ``real``/``imag``/``conj``/``abs``, checkpoints — against
NumPy itself, the NumPy reference backend and the framework's own code; and the typed error
of a backend without the capability."""

from __future__ import annotations

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
