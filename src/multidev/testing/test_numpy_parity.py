"""Section "numpy_parity": every op that gives floating-point values, in float32 and float64,
against the same computation written in plain NumPy (not through multidev), on every backend.

The ops section compares each backend with multidev's NumPy reference backend; this one also
checks that reference: an adapter op whose values are 0.1% off, or NaN, fails here on the
backend it belongs to, the NumPy backend included.
"""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev.nn import functional as F
from multidev.testing import reference as ref

#: per float dtype: (rtol, atol), far below a 0.1% error and above the frameworks' rounding
TOLERANCES = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14)}


def _cases(rng: np.random.Generator, dtype: np.dtype) -> dict:
    """name -> (multidev call, the same in NumPy, inputs of NumPy dtype ``dt``), on values away
    from zero and from rounding edges."""
    a = rng.uniform(0.2, 2.0, (3, 4)) * np.where(rng.random((3, 4)) > 0.5, 1, -1)
    b = rng.uniform(0.2, 2.0, (3, 4)) * np.where(rng.random((3, 4)) > 0.5, 1, -1)
    p = rng.uniform(0.5, 2.0, (3, 4))
    m = rng.uniform(0.2, 2.0, (4, 5))
    w = rng.uniform(0.2, 2.0, (5, 4))
    bias = rng.uniform(0.2, 2.0, 5)
    dt = np.dtype(dtype).type
    a, b, p, m, w, bias = (x.astype(dt) for x in (a, b, p, m, w, bias))
    seven = dt(7)
    idx = np.array([[2, 0], [4, 4]])
    img = rng.uniform(-2.0, 2.0, (2, 3, 4, 6)).astype(dt)
    odd = rng.uniform(-2.0, 2.0, (2, 3, 5, 7)).astype(dt)
    return {
        "add": (md.add, np.add, (a, b)),
        "subtract": (md.subtract, np.subtract, (a, b)),
        "multiply": (md.multiply, np.multiply, (a, b)),
        "divide": (md.divide, np.divide, (a, p)),
        "floor_divide": (lambda x, y: (x * 7) // y, lambda x, y: (x * seven) // y, (a, p)),
        "remainder": (lambda x, y: (x * 7) % y, lambda x, y: np.mod(x * seven, y), (a, p)),
        "pow": (md.pow, np.power, (p, b)),
        "matmul": (md.matmul, np.matmul, (a, m)),
        "maximum": (md.maximum, np.maximum, (a, b)),
        "minimum": (md.minimum, np.minimum, (a, b)),
        "negative": (md.negative, np.negative, (a,)),
        "abs": (md.abs, np.abs, (a,)),
        "exp": (md.exp, np.exp, (a,)),
        "log": (md.log, np.log, (p,)),
        "sqrt": (md.sqrt, np.sqrt, (p,)),
        "sin": (md.sin, np.sin, (a,)),
        "cos": (md.cos, np.cos, (a,)),
        "tanh": (md.tanh, np.tanh, (a,)),
        "sigmoid": (F.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (a,)),
        "relu": (F.relu, lambda x: np.maximum(x, dt(0)), (a,)),
        "floor": (lambda x: md.floor(x * 7), lambda x: np.floor(x * seven), (a,)),
        "sum": (lambda x: md.sum(x, axis=1), lambda x: x.sum(axis=1), (a,)),
        "mean": (lambda x: md.mean(x, axis=0), lambda x: x.mean(axis=0), (a,)),
        "max": (lambda x: md.max(x, axis=1), lambda x: x.max(axis=1), (a,)),
        "min": (lambda x: md.min(x, axis=0), lambda x: x.min(axis=0), (a,)),
        "min_all": (md.min, np.min, (a,)),
        "prod": (lambda x: md.prod(x, axis=1), lambda x: x.prod(axis=1), (a,)),
        "clip": (lambda x: md.clip(x, -1.0, 1.0), lambda x: np.clip(x, -1, 1), (a,)),
        "softmax": (lambda x: F.softmax(x, 1), lambda x: ref.numpy_softmax(x, 1), (a,)),
        "log_softmax": (lambda x: F.log_softmax(x, 0), lambda x: ref.numpy_log_softmax(x, 0), (a,)),
        "linear": (F.linear, ref.numpy_linear, (a, w, bias)),
        "triu": (lambda x: md.triu(x, k=-1), lambda x: np.triu(x, -1), (a,)),
        "tril": (lambda x: md.tril(x, k=1), lambda x: np.tril(x, 1), (a,)),
        "pad": (
            lambda x: F.pad(x, (1, 2), value=0.5),
            lambda x: np.pad(x, ((0, 0), (1, 2)), constant_values=dt(0.5)),
            (a,),
        ),
        "pad_reflect": (
            lambda x: F.pad(x[None], (1, 1), mode="reflect")[0],
            lambda x: np.pad(x, ((0, 0), (1, 1)), mode="reflect"),
            (a,),
        ),
        "adaptive_avg_pool2d": (
            lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
            lambda x: x.reshape(2, 3, 2, 2, 3, 2).mean(axis=(3, 5)),
            (img,),
        ),
        "adaptive_avg_pool2d_uneven": (
            lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
            lambda x: ref.numpy_adaptive_avg_pool2d(x, (2, 3)),
            (odd,),
        ),
        "from_dlpack": (
            lambda x: md.from_dlpack(np.array(x.numpy())),  # writable: DLPack 0.8 lacks readonly
            lambda x: x,
            (a,),
        ),
        "embedding": (lambda x: F.embedding(md.asarray(idx), x), lambda x: x[idx], (w,)),
        "embedding_padding_idx": (
            lambda x: F.embedding(md.asarray(idx), x, padding_idx=4),
            lambda x: x[idx],
            (w,),
        ),
    }


NAMES = list(_cases(np.random.default_rng(0), np.dtype(np.float32)))


@pytest.mark.parametrize("dtype", list(TOLERANCES))
@pytest.mark.parametrize("name", NAMES)
def test_matches_plain_numpy_in_float32_and_float64(bk, name, dtype, rng):
    if dtype not in ("float32", *bk.capabilities):
        pytest.skip(f"{bk.name} adapter lacks capability '{dtype}'")
    dt = getattr(md, dtype)
    fn, np_fn, arrays = _cases(rng, dt.numpy)[name]
    got = fn(*[md.asarray(x) for x in arrays])
    want = np.asarray(np_fn(*arrays))
    assert got.dtype is dt, (got.dtype, dt)
    assert got.shape == want.shape
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol, equal_nan=False)
