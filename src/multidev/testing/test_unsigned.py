"""Section "unsigned": the Array API's uint16, uint32 and uint64 on the backends that hold them
(NumPy, JAX and TensorFlow natively, PyTorch's shell dtypes through exact lowerings) —
values at the top of each range, casts, wrap-around arithmetic, ordering of uint64 values
of 2**63 and more, reductions, promotion, checkpoints — against NumPy; and the typed error
of a backend that does not hold them (Paddle, MXNet)."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md

UNSIGNED = ["uint16", "uint32", "uint64"]
#: what a backend without the dtype names instead
ALTERNATIVE = {"uint16": "md.int32", "uint32": "md.int64", "uint64": "md.int64"}


def _holds(bk, name: str) -> bool:
    try:
        bk.native_dtype(getattr(md, name))
    except TypeError:
        return False
    return True


@pytest.fixture(params=UNSIGNED)
def dt(request, bk):
    name = request.param
    if not _holds(bk, name):
        pytest.skip(f"the {bk.name} backend does not hold {name}")
    return getattr(md, name)


def _values(dt, rng, n=12):
    """Values over the whole range, the top ones included (2**64 - 1, 2**63, ...)."""
    info = np.iinfo(dt.numpy)
    top = np.array([info.max, info.max - 1, info.max // 2 + 1, info.max // 2, 0, 1, 7], dt.numpy)
    rest = rng.integers(0, info.max, n - len(top), dtype=dt.numpy, endpoint=True)
    return np.concatenate([top, rest])


def _same(t, expected):
    """``t`` holds NumPy's ``expected``, dtype included."""
    assert t.dtype.name == np.asarray(expected).dtype.name, (t.dtype, np.asarray(expected).dtype)
    np.testing.assert_array_equal(t.numpy(), expected)


def test_creation_round_trips_the_top_of_the_range(dt):
    top = 2 ** (8 * dt.itemsize) - 1
    x = md.asarray([top, top - 1, 2 ** (8 * dt.itemsize - 1), 0], dtype=dt)
    assert x.dtype is dt
    host = x.numpy()
    assert host.dtype == dt.numpy
    assert [int(v) for v in host] == [top, top - 1, 2 ** (8 * dt.itemsize - 1), 0]
    assert int(md.full((2,), top, dtype=dt)[1]) == top
    assert md.asarray(np.array([top], dt.numpy)).dtype is dt
    assert md.zeros((2,), dtype=dt).dtype is dt


def test_astype_both_ways(dt, rng):
    host = _values(dt, rng)
    x = md.asarray(host)
    for other in (md.int64, md.int32, md.uint8, md.float64, md.bool):
        _same(md.astype(x, other), host.astype(other.numpy))
    signed = np.array([-1, -2, 70000, 2**40 + 3, 5], np.int64)
    _same(md.astype(md.asarray(signed), dt), signed.astype(dt.numpy))


@pytest.mark.parametrize(
    "op",
    ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum", "minimum", "pow"],
)
def test_arithmetic_wraps_as_in_numpy(dt, op, rng):
    a = _values(dt, rng)
    b = np.maximum(_values(dt, np.random.default_rng(7))[::-1], 1).astype(dt.numpy)
    if op == "pow":
        b = (b % 70).astype(dt.numpy)
    with np.errstate(over="ignore"):
        expected = getattr(np, op)(a, b)
    _same(getattr(md, op)(md.asarray(a), md.asarray(b)), expected)
    symbol = {"add": "+", "subtract": "-", "multiply": "*", "floor_divide": "//"}
    if op in symbol:
        _same(eval(f"x {symbol[op]} y", {"x": md.asarray(a), "y": md.asarray(b)}), expected)


def test_huge_divisors_and_exponents(dt):
    top = np.iinfo(dt.numpy).max
    a = np.array([top, top - 1, top // 2, 3, 0], dt.numpy)
    b = np.array([top - 1, top, top // 2 + 1, top, 5], dt.numpy)
    for op in ("floor_divide", "remainder"):
        _same(getattr(md, op)(md.asarray(a), md.asarray(b)), getattr(np, op)(a, b))
    e = np.array([top, top - 1, 2, 0, 1], dt.numpy)
    with np.errstate(over="ignore"):
        expected = np.power(np.array([3, 2, top, 5, 0], dt.numpy), e)
    _same(md.asarray(np.array([3, 2, top, 5, 0], dt.numpy)) ** md.asarray(e), expected)


def test_scalars_and_negation_wrap(dt):
    top = np.iinfo(dt.numpy).max
    x = md.asarray(np.array([0, 1, top], dt.numpy))
    host = x.numpy()
    with np.errstate(over="ignore"):
        _same(-x, -host)
        _same(x + 1, host + dt.numpy.type(1))
        _same(x - 2, host - dt.numpy.type(2))
    _same(md.abs(x), host)


def test_order_and_reductions(dt, rng):
    host = _values(dt, rng)
    x = md.asarray(host)
    other = md.asarray(host[::-1].copy())
    for name in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal"):
        _same(getattr(md, name)(x, other), getattr(np, name)(host, host[::-1]))
    _same(x < other, host < host[::-1])
    _same(md.max(x), host.max())
    _same(md.min(x), host.min())
    assert int(md.argmax(x)) == int(np.argmax(host))
    assert int(md.argmin(x)) == int(np.argmin(host))
    _same(md.sort(x), np.sort(host))
    _same(md.sort(x, descending=True), np.sort(host)[::-1])
    _same(md.argsort(x, stable=True), np.argsort(host, kind="stable"))
    _same(md.clip(x, 5, int(host[2])), np.clip(host, 5, host[2]))
    _same(md.where(x > other, x, other), np.where(host > host[::-1], host, host[::-1]))


def test_sums_accumulate_in_uint64(dt, rng):
    host = _values(dt, rng)
    with np.errstate(over="ignore"):
        expected = host.astype(np.uint64).sum(dtype=np.uint64)
        _same(md.sum(md.asarray(host)), expected)
        _same(md.cumulative_sum(md.asarray(host)), np.cumsum(host, dtype=np.uint64))
        _same(md.prod(md.asarray(host[4:8])), np.prod(host[4:8], dtype=np.uint64))


def test_matmul_wraps(dt, rng):
    a = _values(dt, rng).reshape(3, 4)
    b = _values(dt, np.random.default_rng(3)).reshape(4, 3)
    with np.errstate(over="ignore"):
        _same(md.asarray(a) @ md.asarray(b), a @ b)


def test_bitwise_and_shifts(dt, rng):
    a = _values(dt, rng)
    s = (np.arange(a.size) % (8 * dt.itemsize)).astype(dt.numpy)
    x, y = md.asarray(a), md.asarray(s)
    _same(md.bitwise_and(x, y), a & s)
    _same(md.bitwise_xor(x, y), a ^ s)
    _same(md.bitwise_invert(x), ~a)
    _same(md.bitwise_left_shift(x, y), a << s)
    _same(md.bitwise_right_shift(x, y), a >> s)


def test_moving_selecting_and_writing_values(dt, rng):
    """Ops that move values without computing on them, and searches, at the top of the range
    (PyTorch's shell dtypes lack gather, index_select, tril, masked_fill, searchsorted)."""
    a = _values(dt, rng).reshape(3, 4)
    x = md.asarray(a)
    idx = np.array([[3, 0], [1, 1], [2, 0]])
    _same(md.take(x, md.asarray([2, 0]), axis=1), np.take(a, [2, 0], axis=1))
    _same(md.take_along_axis(x, md.asarray(idx), axis=1), np.take_along_axis(a, idx, 1))
    _same(md.tril(x), np.tril(a))
    _same(md.triu(x, k=1), np.triu(a, k=1))
    np.testing.assert_array_equal(md.nonzero(x)[1].numpy(), np.nonzero(a)[1])
    flat = np.sort(a.ravel())
    np.testing.assert_array_equal(
        md.searchsorted(md.asarray(flat), x).numpy(), np.searchsorted(flat, a)
    )
    values, index, inverse, counts = np.unique(
        np.concatenate([a.ravel(), a[0]]),
        return_index=True,
        return_inverse=True,
        return_counts=True,
    )
    got = md.unique_all(md.asarray(np.concatenate([a.ravel(), a[0]])))
    _same(got.values, values)
    np.testing.assert_array_equal(got.indices.numpy(), index)
    np.testing.assert_array_equal(got.inverse_indices.numpy(), inverse)
    np.testing.assert_array_equal(got.counts.numpy(), counts)
    top = int(np.iinfo(dt.numpy).max)
    x[x > top // 2] = top - 1
    x[0, 1] = top
    want = a.copy()
    want[want > top // 2] = top - 1
    want[0, 1] = top
    _same(x, want)


def test_promotion_with_signed_integers(dt):
    expected = {
        md.uint16: {md.int8: md.int32, md.int16: md.int32, md.int32: md.int32},
        md.uint32: {md.int8: md.int64, md.int32: md.int64, md.int64: md.int64},
    }
    for signed, result in expected.get(dt, {}).items():
        assert md.result_type(dt, signed) is result
        assert (md.ones(2, dtype=dt) + md.ones(2, dtype=signed)).dtype is result
    assert md.result_type(dt, md.uint8) is dt and md.result_type(md.uint64, dt) is md.uint64
    assert (md.ones(2, dtype=dt) + md.ones(2, dtype=md.float32)).dtype is md.float32
    if dt is md.uint64:
        for signed in (md.int8, md.int16, md.int32, md.int64):
            with pytest.raises(TypeError, match=f"{signed.name} and uint64|uint64 and "):
                md.result_type(dt, signed)
            with pytest.raises(TypeError, match="Cast one of them"):
                md.ones(2, dtype=dt) + md.ones(2, dtype=signed)


def test_queries(dt):
    info = md.iinfo(dt)
    assert (info.bits, info.min, info.max) == (8 * dt.itemsize, 0, 2 ** (8 * dt.itemsize) - 1)
    assert md.isdtype(dt, "unsigned integer") and md.isdtype(dt, "integral")
    assert not md.isdtype(dt, "signed integer")
    assert dt.name in md.__array_namespace_info__().dtypes(kind="unsigned integer")


def test_checkpoint_round_trip(dt, rng, tmp_path):
    host = _values(dt, rng)
    md.save({"u": md.asarray(host)}, tmp_path / "u.safetensors")
    back = md.load(tmp_path / "u.safetensors")["u"]
    assert back.dtype is dt
    np.testing.assert_array_equal(back.numpy(), host)


def test_info_lists_exactly_the_held_unsigned_dtypes(bk):
    held = {"uint8"} | {name for name in UNSIGNED if _holds(bk, name)}
    assert set(md.__array_namespace_info__().dtypes(kind="unsigned integer")) == held


@pytest.mark.parametrize("name", UNSIGNED)
def test_backend_without_the_dtype_says_so(bk, name, tmp_path):
    if _holds(bk, name):
        pytest.skip(f"the {bk.name} backend holds {name}")
    dt = getattr(md, name)
    with pytest.raises(TypeError, match=f"{name}.*{ALTERNATIVE[name]}"):
        md.zeros(2, dtype=dt)
    with pytest.raises(TypeError, match=name):
        md.asarray(np.ones(2, dt.numpy))
    with pytest.raises(TypeError, match=f"{name}.*{ALTERNATIVE[name]}"):
        md.astype(md.ones(2), dt)
    with md.use_backend("numpy"):
        md.save({"u": md.ones(2, dtype=dt)}, tmp_path / "u.safetensors")
    with pytest.raises(md.CheckpointError, match=name):
        md.load(tmp_path / "u.safetensors")
