"""Section "tensor": the Tensor wrapper, creation, dtypes, operators, indexing, seeding."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import multidev as md
from multidev import dtypes
from multidev.testing import sample_values

#: dtypes whose support an adapter declares through a capability; the others it must have
#: or refuse with a TypeError that names the dtype
_CAPABILITY_DTYPES = ("float16", "bfloat16", "float64")


def _lacks(bk, dt) -> str | None:
    """Why the adapter cannot create ``dt`` (its own TypeError, naming the dtype), else None.
    A dtype behind a declared capability must be created; any other error is a failure."""
    if dt.name in _CAPABILITY_DTYPES and dt.name not in bk.capabilities:
        return f"{bk.name} adapter lacks capability '{dt.name}'"
    try:
        md.zeros(1, dtype=dt)
    except TypeError as e:
        if dt.name in _CAPABILITY_DTYPES or dt.name not in str(e):
            raise
        return f"{bk.name} has no {dt.name}: {e}"
    return None


def _supported(bk) -> list:
    return [dt for dt in dtypes.ALL if _lacks(bk, dt) is None]


def test_properties():
    x = md.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.shape == (2, 3) and all(type(s) is int for s in x.shape)
    assert x.ndim == 2 and x.size == 6 and len(x) == 2
    assert x.dtype is md.float32 and x.device is md.default_device()
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert x[1, 2].item() == 6.0 and type(x[1, 2].item()) is float
    assert isinstance(x.numpy(), np.ndarray)
    r = repr(x)
    assert "float32" in r and str(x.device) in r and md.get_backend() in r and "6." in r


def test_item_needs_one_element():
    with pytest.raises(ValueError, match="exactly one element"):
        md.ones(3).item()


def test_native_is_zero_copy_and_wraps_back(bk):
    x = md.ones((2, 2))
    n = x.native
    assert isinstance(n, bk.tensor_types)
    y = md.asarray(n)
    assert y.native is n and y.device is x.device and y.dtype is x.dtype


@pytest.mark.parametrize(
    "value, dtype",
    [([1.5, 2.0], md.float32), ([1, 2], md.int64), ([True, False], md.bool), (3.0, md.float32)],
)
def test_python_data_dtypes(value, dtype):
    x = md.asarray(value)
    assert x.dtype is dtype
    np.testing.assert_array_equal(x.numpy(), np.asarray(value, dtype=dtype.numpy))


@pytest.mark.parametrize("dt", dtypes.ALL, ids=lambda d: d.name)
def test_every_dtype_round_trips_bit_exact(bk, rng, dt):
    """Every dtype the adapter has keeps its bits; one it lacks is a reported skip naming the
    adapter's own error, never silently left out."""
    reason = _lacks(bk, dt)
    if reason:
        pytest.skip(reason)
    src = sample_values(dt, rng)
    x = md.asarray(src)
    assert x.dtype is dt
    back = x.numpy()
    assert back.dtype == dt.numpy
    assert back.tobytes() == np.ascontiguousarray(src).tobytes(), dt


def test_non_contiguous_input_keeps_logical_values(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    for view in (a.T, a[:, ::2], a[::-1]):
        np.testing.assert_array_equal(md.asarray(view).numpy(), view)


def test_creation_functions():
    assert md.zeros((2, 3)).tolist() == [[0.0] * 3] * 2
    assert md.ones(2, dtype=md.int32).dtype is md.int32
    f = md.full((2,), 7)
    assert f.dtype is md.int64 and f.tolist() == [7, 7]
    assert md.full((1,), 2.5).dtype is md.float32
    assert md.arange(5).tolist() == [0, 1, 2, 3, 4] and md.arange(5).dtype is md.int64
    np.testing.assert_allclose(md.arange(0.0, 1.0, 0.25).numpy(), [0, 0.25, 0.5, 0.75])
    np.testing.assert_array_equal(md.eye(3).numpy(), np.eye(3, dtype=np.float32))
    x = md.rand(2, 3)
    assert md.zeros_like(x).shape == (2, 3) and md.ones_like(x, dtype=md.int64).dtype is md.int64
    assert md.rand((2, 3)).shape == (2, 3) and md.randn(4).shape == (4,)
    assert md.zeros((0, 3)).shape == (0, 3) and md.ones(()).shape == ()


def test_rand_is_uniform_and_randn_normal():
    md.manual_seed(3)
    u = md.rand(20000).numpy()
    n = md.randn(20000).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03


def test_manual_seed_gives_reference_values():
    md.manual_seed(0)
    got = (md.rand(3).numpy(), md.randn(2, 2).numpy())
    with md.use_backend("numpy"):
        md.manual_seed(0)
        ref = (md.rand(3).numpy(), md.randn(2, 2).numpy())
    for g, r in zip(got, ref, strict=True):
        assert g.dtype == np.float32 and g.tobytes() == r.tobytes()


OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]
CMP = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("op", OPS + CMP + [operator.floordiv, operator.mod])
def test_operators_match_reference(op, rng):
    a = rng.uniform(0.5, 3, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 3, (3, 4)).astype(np.float32)
    if op in (operator.floordiv, operator.mod):
        a, b = a * np.sign(rng.standard_normal((3, 4))).astype(np.float32), b
    x, y = md.asarray(a), md.asarray(b)
    with md.use_backend("numpy"):
        ref = op(md.asarray(a), md.asarray(b))
        ref_s = op(md.asarray(a), 2.0)
        ref_r = op(2.0, md.asarray(a))
    for got, want in ((op(x, y), ref), (op(x, 2.0), ref_s), (op(2.0, x), ref_r)):
        assert got.dtype is want.dtype and got.device is x.device
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_unary_operators():
    x = md.asarray([-1.5, 0.0, 2.0])
    assert (-x).tolist() == [1.5, -0.0, -2.0]
    assert abs(x).tolist() == [1.5, 0.0, 2.0] and md.abs(x).tolist() == [1.5, 0.0, 2.0]
    m = md.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert (m @ m).tolist() == [[7.0, 10.0], [15.0, 22.0]]
    b = md.asarray([True, False])
    assert (~b).tolist() == [False, True] and (b & ~b).tolist() == [False, False]
    assert (b | ~b).tolist() == [True, True]


@pytest.mark.parametrize(
    "left, right, expected",
    [
        (md.float32, md.bool, md.float32),
        (md.int64, md.float32, md.float32),
        (md.int32, md.int64, md.int64),
        (md.uint8, md.int8, md.int16),
        (md.bool, md.int32, md.int32),
    ],
)
def test_promotion_like_pytorch(bk, left, right, expected):
    missing = {left, right, expected} - set(_supported(bk))
    if missing:
        pytest.skip(f"{bk.name} lacks {', '.join(sorted(d.name for d in missing))}")
    x = md.ones(3, dtype=left)
    y = md.ones(3, dtype=right)
    assert (x + y).dtype is expected and (y * x).dtype is expected
    assert (x + y).tolist() == [2, 2, 2]


def test_scalar_promotion():
    i = md.arange(3)
    assert (i + 1).dtype is md.int64 and (i * 1.5).dtype is md.float32
    assert (i / 2).dtype is md.float32 and (i / 2).tolist() == [0.0, 0.5, 1.0]
    assert (md.ones(2, dtype=md.bool) + 1).dtype is md.int64
    h = md.ones(2, dtype=md.int32)
    assert (h + 2).dtype is md.int32


def test_d2l_mask_idiom(rng):
    w = md.asarray(rng.uniform(-10, 10, (4, 4)).astype(np.float32))
    ref = w.numpy() * (np.abs(w.numpy()) >= 5)
    same = w
    w *= md.abs(w) >= 5
    assert w is same and w.dtype is md.float32
    np.testing.assert_array_equal(w.numpy(), ref)


def test_in_place_operators_keep_the_object():
    x = md.ones((2, 2))
    alias = x
    x += 1
    x *= md.full((2, 2), 3.0)
    x -= 1
    x /= 5
    assert x is alias
    np.testing.assert_allclose(x.numpy(), np.ones((2, 2)))


def test_getitem_matches_numpy(rng):
    a = rng.standard_normal((4, 5, 3)).astype(np.float32)
    x = md.asarray(a)
    keys = [
        1,
        -1,
        slice(1, 3),
        (slice(None), 2),
        (Ellipsis, 0),
        (None, 1),
        (slice(None, None, 2), -2),
    ]
    for k in keys:
        np.testing.assert_array_equal(x[k].numpy(), a[k])
    np.testing.assert_array_equal(x[md.asarray([0, 2])].numpy(), a[[0, 2]])
    mask = a[:, 0, 0] > 0
    np.testing.assert_array_equal(x[md.asarray(mask)].numpy(), a[mask])


def test_setitem_in_place(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x = md.asarray(a.copy())
    alias = x
    x[0, 0] = 42
    x[1] = md.full((4,), 7.0)
    x[:, -1] = 0.5
    x[2, 1:3] = md.asarray([1.0, 2.0])
    a[0, 0] = 42
    a[1] = 7
    a[:, -1] = 0.5
    a[2, 1:3] = [1, 2]
    assert x is alias
    np.testing.assert_array_equal(x.numpy(), a)
    x[...] = 0
    assert x.numpy().sum() == 0


def test_results_stay_on_input_device():
    dev = md.devices()[-1]
    x = md.ones((2, 2), device=dev)
    for y in (x + 1, x @ x, md.sum(x), md.exp(x), x[0], md.reshape(x, (4,)), x > 0):
        assert y.device is dev


def test_zero_dim_and_zero_size():
    s = md.asarray(2.0)
    assert s.shape == () and (s * 3).item() == 6.0
    e = md.zeros((0, 4))
    assert (e + 1).shape == (0, 4) and md.sum(e).item() == 0.0
    with pytest.raises(TypeError):
        len(s)


def test_dtype_names_round_trip():
    for dt in dtypes.ALL:
        assert dtypes.as_dtype(dt.name) is dt and dtypes.from_numpy_dtype(dt.numpy) is dt
