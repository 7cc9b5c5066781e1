"""Section "ops": every Array-API function against the NumPy reference backend and against the
same computation written in the framework's own code."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev.nn import functional as F
from multidev.testing import REFERENCE_KEYS

RTOL, ATOL = 1e-5, 1e-6
#: per float dtype: (rtol, atol) far below a 0.1% error and above the frameworks' rounding
TOLERANCES = {"float32": (RTOL, ATOL), "float64": (1e-12, 1e-14)}


def _inputs(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    p = rng.uniform(0.1, 4.0, (3, 4)).astype(np.float32)
    m = rng.standard_normal((4, 5)).astype(np.float32)
    batch = rng.standard_normal((2, 3, 4)).astype(np.float32)
    return a, b, p, m, batch


# name -> (multidev call on md tensors, native-reference call on numpy arrays, inputs selector)
def _cases(rng):
    a, b, p, m, batch = _inputs(rng)
    cond = a > 0
    v = rng.standard_normal(4).astype(np.float32)
    return {
        "add": (md.add, lambda o: o["add"], (a, b)),
        "subtract": (md.subtract, lambda o: o["subtract"], (a, b)),
        "multiply": (md.multiply, lambda o: o["multiply"], (a, b)),
        "divide": (md.divide, lambda o: o["divide"], (a, p)),
        "maximum": (md.maximum, lambda o: o["maximum"], (a, b)),
        "matmul": (md.matmul, lambda o: o["matmul"], (a, m)),
        "matmul_batched": (md.matmul, lambda o: o["matmul"], (batch, m)),
        "matmul_vector": (md.matmul, lambda o: o["matmul"], (a, v)),
        "exp": (md.exp, lambda o: o["exp"], (a,)),
        "log": (md.log, lambda o: o["log"], (p,)),
        "log1p": (md.log1p, lambda o: o["log1p"], (p,)),
        "sqrt": (md.sqrt, lambda o: o["sqrt"], (p,)),
        "abs": (md.abs, lambda o: o["abs"], (a,)),
        "tanh": (md.tanh, lambda o: o["tanh"], (a,)),
        "sigmoid": (F.sigmoid, lambda o: o["sigmoid"], (a,)),
        "relu": (F.relu, lambda o: o["relu"], (a,)),
        "softmax": (lambda x: F.softmax(x, 1), lambda o: lambda x: o["softmax"](x, 1), (a,)),
        "softmax_axis0": (lambda x: F.softmax(x, 0), lambda o: lambda x: o["softmax"](x, 0), (a,)),
        "log_softmax": (
            lambda x: F.log_softmax(x, -1),
            lambda o: lambda x: o["log_softmax"](x, 1),
            (a,),
        ),
        "sum_all": (md.sum, lambda o: lambda x: o["sum"](x, None, False), (a,)),
        "sum_axis": (
            lambda x: md.sum(x, axis=1, keepdims=True),
            lambda o: lambda x: o["sum"](x, (1,), True),
            (a,),
        ),
        "sum_axes": (
            lambda x: md.sum(x, axis=(0, 2)),
            lambda o: lambda x: o["sum"](x, (0, 2), False),
            (batch,),
        ),
        "mean": (
            lambda x: md.mean(x, axis=0),
            lambda o: lambda x: o["mean"](x, (0,), False),
            (a,),
        ),
        "max": (
            lambda x: md.max(x, axis=-1, keepdims=True),
            lambda o: lambda x: o["max"](x, (1,), True),
            (a,),
        ),
        "argmax": (lambda x: md.argmax(x, axis=1), lambda o: lambda x: o["argmax"](x, 1), (a,)),
        "argmax_flat": (md.argmax, lambda o: lambda x: o["argmax"](x, None), (a,)),
        "reshape": (
            lambda x: md.reshape(x, (2, -1)),
            lambda o: lambda x: o["reshape"](x, (2, 6)),
            (a,),
        ),
        "permute_dims": (
            lambda x: md.permute_dims(x, (2, 0, 1)),
            lambda o: lambda x: o["permute_dims"](x, (2, 0, 1)),
            (batch,),
        ),
        "concat": (
            lambda x, y: md.concat([x, y], axis=1),
            lambda o: lambda x, y: o["concat"]([x, y], 1),
            (a, b),
        ),
        "stack": (
            lambda x, y: md.stack([x, y], axis=0),
            lambda o: lambda x, y: o["stack"]([x, y], 0),
            (a, b),
        ),
        "where": (md.where, lambda o: o["where"], (cond, a, b)),
        "clip": (
            lambda x: md.clip(x, -0.5, 0.5),
            lambda o: lambda x: o["clip"](x, -0.5, 0.5),
            (a,),
        ),
    }


CASES = list(_cases(np.random.default_rng(0)))


def _run_md(fn, arrays):
    return fn(*[md.asarray(x) for x in arrays])


@pytest.mark.parametrize("name", CASES)
def test_matches_numpy_reference_backend(name, rng):
    fn, _, arrays = _cases(rng)[name]
    got = _run_md(fn, arrays)
    with md.use_backend("numpy"):
        want = _run_md(fn, arrays)
    assert got.dtype is want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert got.device is md.default_device()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", CASES)
def test_matches_framework_code(name, rng, native_ops):
    fn, native, arrays = _cases(rng)[name]
    got = _run_md(fn, arrays)
    want = np.asarray(native(native_ops)(*arrays))
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=RTOL, atol=ATOL)


def test_reference_module_covers_every_case(bk, native_ops):
    keys = set(REFERENCE_KEYS)
    if "autograd" not in bk.capabilities:  # entries that need modules and gradients
        keys -= {"native_parameters", "native_sgd_step", "rnn_layer", "attention"}
    missing = sorted(keys - set(native_ops))
    assert not missing, f"native reference lacks {missing}"


def test_native_linear_matches_reference(rng, native_ops):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    np.testing.assert_allclose(native_ops["linear"](x, w, b), x @ w.T + b, rtol=RTOL, atol=1e-5)
    np.testing.assert_allclose(native_ops["linear"](x, w, None), x @ w.T, rtol=RTOL, atol=1e-5)
    np.testing.assert_array_equal(native_ops["max"](x, (0, 1), True), x.max(keepdims=True))
    assert native_ops["argmax"](x, None) == np.argmax(x)


def _every_float_op(rng, dt):
    """name -> (multidev call, inputs of NumPy dtype ``dt``): every op of the adapter's table
    that gives floating-point values, on values away from zero and from rounding edges."""
    a = rng.uniform(0.2, 2.0, (3, 4)) * np.where(rng.random((3, 4)) > 0.5, 1, -1)
    b = rng.uniform(0.2, 2.0, (3, 4)) * np.where(rng.random((3, 4)) > 0.5, 1, -1)
    p = rng.uniform(0.5, 2.0, (3, 4))
    m = rng.uniform(0.2, 2.0, (4, 5))
    w = rng.uniform(0.2, 2.0, (5, 4))
    bias = rng.uniform(0.2, 2.0, 5)
    a, b, p, m, w, bias = (x.astype(dt) for x in (a, b, p, m, w, bias))
    return {
        "add": (md.add, (a, b)),
        "subtract": (md.subtract, (a, b)),
        "multiply": (md.multiply, (a, b)),
        "divide": (md.divide, (a, p)),
        "floor_divide": (lambda x, y: (x * 7) // y, (a, p)),
        "remainder": (lambda x, y: (x * 7) % y, (a, p)),
        "pow": (md.pow, (p, b)),
        "matmul": (md.matmul, (a, m)),
        "maximum": (md.maximum, (a, b)),
        "minimum": (md.minimum, (a, b)),
        "negative": (md.negative, (a,)),
        "abs": (md.abs, (a,)),
        "exp": (md.exp, (a,)),
        "log": (md.log, (p,)),
        "sqrt": (md.sqrt, (p,)),
        "sin": (md.sin, (a,)),
        "cos": (md.cos, (a,)),
        "tanh": (md.tanh, (a,)),
        "sigmoid": (F.sigmoid, (a,)),
        "relu": (F.relu, (a,)),
        "floor": (lambda x: md.floor(x * 7), (a,)),
        "sum": (lambda x: md.sum(x, axis=1), (a,)),
        "mean": (lambda x: md.mean(x, axis=0), (a,)),
        "max": (lambda x: md.max(x, axis=1), (a,)),
        "min": (lambda x: md.min(x, axis=0), (a,)),
        "prod": (lambda x: md.prod(x, axis=1), (a,)),
        "reshape": (lambda x: md.reshape(x, (4, 3)), (a,)),
        "permute_dims": (lambda x: md.permute_dims(x, (1, 0)), (a,)),
        "concat": (lambda x, y: md.concat([x, y], axis=0), (a, b)),
        "stack": (lambda x, y: md.stack([x, y], axis=1), (a, b)),
        "where": (lambda x, y: md.where(x > 0, x, y), (a, b)),
        "clip": (lambda x: md.clip(x, -1.0, 1.0), (a,)),
        "softmax": (lambda x: F.softmax(x, 1), (a,)),
        "log_softmax": (lambda x: F.log_softmax(x, 0), (a,)),
        "getitem": (lambda x: x[1:, ::2], (a,)),
        "astype": (lambda x: md.astype(x * 1000, md.int64).astype(x.dtype), (a,)),
        "copy": (lambda x: md.asarray(x, copy=True), (a,)),
        "linear": (F.linear, (a, w, bias)),
    }


FLOAT_OPS = list(_every_float_op(np.random.default_rng(0), np.float32))


@pytest.mark.parametrize("dtype", list(TOLERANCES))
@pytest.mark.parametrize("name", FLOAT_OPS)
def test_every_float_op_is_exact_to_rounding_in_float32_and_float64(bk, name, dtype, rng):
    """Each op agrees with the reference backend within a few units of rounding: an op whose
    values are 0.1% off fails here in both float32 and float64."""
    if dtype not in ("float32", *bk.capabilities):
        pytest.skip(f"{bk.name} adapter lacks capability '{dtype}'")
    dt = getattr(md, dtype)
    fn, arrays = _every_float_op(rng, dt.numpy)[name]
    got = _run_md(fn, arrays)
    with md.use_backend("numpy"):
        want = _run_md(fn, arrays)
    assert got.dtype is want.dtype is dt, (got.dtype, want.dtype)
    assert got.shape == want.shape
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol)


def test_shape_functions():
    x = md.arange(24).reshape(2, 3, 4)
    assert md.transpose(x, 0, 2).shape == (4, 3, 2) and x.T.shape == (4, 3, 2)
    assert md.expand_dims(x, 1).shape == (2, 1, 3, 4)
    assert md.squeeze(md.expand_dims(x, 1), 1).shape == (2, 3, 4)
    assert md.flatten(x, 1).shape == (2, 12)
    with pytest.raises(ValueError, match="Expected a shape with 24 elements"):
        md.reshape(x, (5, 5))


def test_integer_reductions_and_division():
    i = md.asarray([[1, -2], [3, 4]], dtype=md.int32)
    assert md.sum(i).dtype is md.int64 and md.sum(i).item() == 6
    assert md.sum(i > 0).item() == 3
    assert md.mean(i).dtype is md.float32 and md.mean(i).item() == 1.5
    assert md.argmax(i).dtype is md.int64 and md.argmax(i).item() == 3
    neg = md.asarray([-7, 7, -7, 7])
    den = md.asarray([2, -2, -2, 2])
    assert (neg // den).tolist() == [-4, -4, 3, 3]
    assert (neg % den).tolist() == [1, -1, -1, 1]


def test_float_functions_on_integers_give_float32():
    i = md.arange(3)
    for fn in (md.exp, md.sqrt, md.sin, md.cos, md.tanh, F.sigmoid):
        assert fn(i).dtype is md.float32


def test_errors_are_clear():
    with pytest.raises(ValueError, match="axis"):
        md.sum(md.ones((2, 2)), axis=3)
    with pytest.raises(TypeError, match="bool condition"):
        md.where(md.ones(2), md.ones(2), md.zeros(2))
