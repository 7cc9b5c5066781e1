"""Section "edges": 0-d and zero-size tensors, where frameworks disagree with each other (PyTorch
and Paddle sum a 0-d tensor over axis 0, Paddle refuses too many indices with ValueError, NumPy
refuses a softmax over an empty axis). multidev gives the NumPy reference backend's answer on
every backend: the same values, or a refusal of the same type with a message that says what to do.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import multidev as md
from multidev.nn import functional as F


def _scalar(dt: str) -> np.ndarray:
    return np.asarray(1.5 if dt == "float32" else 3, dtype=dt)


def _array(dt: str, shape: tuple[int, ...]) -> np.ndarray:
    return (np.arange(int(np.prod(shape))) % 5 - 2).reshape(shape).astype(dt)


def _reduce(f: Callable[..., Any], axis: Any) -> Callable[[Any], Any]:
    return lambda x: f(x, axis=axis)


#: name -> (call on an md tensor, the tensor's shape)
CASES: dict[str, tuple[Callable[[Any], Any], tuple[int, ...]]] = {
    **{
        f"{name}_{ax}_of_0d": (_reduce(f, ax), ())
        for name, f in [("sum", md.sum), ("prod", md.prod), ("mean", md.mean), ("max", md.max)]
        for ax in (0, -1, (0,))
    },
    "sum_keepdims_axis0_of_0d": (lambda x: md.sum(x, axis=0, keepdims=True), ()),
    "sum_empty_axes_of_0d": (lambda x: md.sum(x, axis=()), ()),
    "sum_all_of_0d": (lambda x: md.sum(x), ()),
    "method_sum_dim0_of_0d": (lambda x: x.sum(dim=0), ()),
    "squeeze_axis0_of_0d": (lambda x: md.squeeze(x, axis=0), ()),
    "getitem_ellipsis_none_reversed_of_0d": (lambda x: x[..., None, ::-1], ()),
    "getitem_int_of_0d": (lambda x: x[0], ()),
    "getitem_slice_of_0d": (lambda x: x[:], ()),
    "getitem_list_of_0d": (lambda x: x[[0]], ()),
    "getitem_none_of_0d": (lambda x: x[None], ()),
    "getitem_ellipsis_of_0d": (lambda x: x[...], ()),
    "getitem_mask_of_0d": (lambda x: x[x == x], ()),
    "getitem_three_of_2d": (lambda x: x[0, 0, 0], (2, 3)),
    "getitem_ellipsis_three_of_2d": (lambda x: x[..., 0, 0, 0], (2, 3)),
    "getitem_slices_and_none_of_1d": (lambda x: x[None, 0, None, ::-1], (3,)),
    "getitem_none_padded_of_1d": (lambda x: x[None, ::-1, None], (3,)),
    "softmax_empty_axis": (lambda x: F.softmax(x, -1), (0,)),
    "softmax_empty_last_axis": (lambda x: F.softmax(x, -1), (2, 0)),
    "softmax_nonempty_axis_of_empty": (lambda x: F.softmax(x, -1), (0, 2)),
    "log_softmax_empty_axis": (lambda x: F.log_softmax(x, 0), (0,)),
    "softmax_of_0d": (lambda x: F.softmax(x, -1), ()),
    "softmax_axis_out_of_range": (lambda x: F.softmax(x, 2), (2, 3)),
}


def _setitem_too_many(x):
    x[0, 0] = 1
    return x


CASES["setitem_two_of_1d"] = (_setitem_too_many, (3,))


# Shapes that do not fit an op: md.ShapeError on every backend (the reference's answer),
# never the framework's own error (MXNetError, InvalidArgumentError, RuntimeError, ...).
def _iadd_unbroadcastable(x):
    x += x[:, :2]
    return x


def _iadd_outgrowing(x):
    x += md.stack([x, x])
    return x


def _setitem_wrong_shape(x):
    x[0] = x[0, :2]
    return x


CASES.update(
    {
        "add_unbroadcastable_of_2d": (lambda x: x + x[:, :2], (2, 3)),
        "multiply_unbroadcastable_batch_of_3d": (lambda x: x * x[:1, :, :2], (2, 2, 3)),
        "less_unbroadcastable_of_2d": (lambda x: x < x[:, :2], (2, 3)),
        "md_maximum_unbroadcastable_of_2d": (lambda x: md.maximum(x, x[0, :2]), (2, 3)),
        "where_unbroadcastable_of_2d": (lambda x: md.where(x > 0, x, x[:, :2]), (2, 3)),
        "matmul_of_2x3_2x3": (lambda x: x @ x, (2, 3)),
        "matmul_of_1d_mismatch": (lambda x: md.matmul(x, x[:2]), (3,)),
        "matmul_unbroadcastable_batch_of_3d": (
            lambda x: md.matmul(x, md.ones((3, 3, 2), dtype=x.dtype)),
            (2, 2, 3),
        ),
        "concat_mismatched_of_2d": (lambda x: md.concat([x, md.permute_dims(x, (1, 0))]), (2, 3)),
        "stack_mismatched_of_2d": (lambda x: md.stack([x, x[:, :2]]), (2, 3)),
        "reshape_wrong_size_of_2d": (lambda x: md.reshape(x, (4,)), (2, 3)),
        "iadd_unbroadcastable_of_2d": (_iadd_unbroadcastable, (2, 3)),
        "iadd_outgrowing_of_2d": (_iadd_outgrowing, (2, 3)),
        "setitem_wrong_shape_of_2d": (_setitem_wrong_shape, (2, 3)),
        "tril_of_1d": (lambda x: md.tril(x), (3,)),
        "unstack_of_0d": (lambda x: md.unstack(x), ()),
    }
)


def _run(fn, a: np.ndarray):
    """The result as a NumPy array, or the exception raised."""
    try:
        out = fn(md.asarray(a.copy()))
    except Exception as e:
        return e
    return out


PARAMS = [
    (n, dt) for n in CASES for dt in ("float32", "int64") if dt == "float32" or "softmax" not in n
]


@pytest.mark.parametrize("name, dt", PARAMS)
def test_matches_numpy_reference_backend(name, dt):
    fn, shape = CASES[name]
    a = _scalar(dt) if shape == () else _array(dt, shape)
    got = _run(fn, a)
    with md.use_backend("numpy"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = _run(fn, a)
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), f"Expected {type(want).__name__}. Received: {got!r}"
        assert "Expected" in str(got) and "Received" in str(got), str(got)
        return
    assert not isinstance(got, Exception), f"Expected {want!r}. Received: {got!r}"
    assert got.dtype is want.dtype
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_reduction_over_an_axis_of_a_0d_tensor_is_refused():
    x = md.asarray(np.float32(1.5))
    with pytest.raises(ValueError, match=r"axis=None"):
        md.sum(x, axis=0)
    assert float(md.sum(x, axis=None)) == 1.5


def test_too_many_indices_is_an_index_error():
    with pytest.raises(IndexError, match=r"Expected at most 0 indices.*Received: 1"):
        md.asarray(np.float32(1.5))[..., None, ::-1]
    with pytest.raises(IndexError, match=r"Expected at most 2 indices.*Received: 3"):
        md.zeros((2, 3))[:, ::-1, None, 0]


#: the frameworks' own texts (torch's, TensorFlow's) or multidev's where a kernel does not check
OUT_OF_RANGE = r"out of bounds|out of range|is not in \["


@pytest.mark.parametrize(
    "key", [(np.array([0, 2]),), (slice(None), np.array([3])), (np.array([-3]),)]
)
def test_an_index_array_entry_out_of_range_is_an_index_error_and_writes_nothing(key):
    """Never values from outside the tensor (Paddle's kernels read and write there) nor a
    clamped index (JAX's)."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = md.asarray(a)
    mk = tuple(md.asarray(k) if isinstance(k, np.ndarray) else k for k in key)
    with pytest.raises(IndexError, match=OUT_OF_RANGE):
        x[mk].numpy()  # read: MXNet's engine may report it there
    with pytest.raises(IndexError, match=OUT_OF_RANGE):
        x[mk] = 9.0
        x.numpy()
    np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize(
    "key",
    [
        (None, np.array([1, 0])),
        (np.array([1, 0]), None, np.array([2])),
        (Ellipsis, None, np.array([1, 0])),
        (slice(None), None, np.array([2, 0]), None),
        (None, np.array([True, False])),
        (None, np.array([1, 0]), np.array([[0], [2]])),
    ],
)
def test_new_axes_beside_index_arrays_index_as_numpy_does(key):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    mk = tuple(md.asarray(k) if isinstance(k, np.ndarray) else k for k in key)
    got, want = md.asarray(a)[mk].numpy(), a[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_softmax_over_an_empty_axis_is_empty_and_keeps_the_dtype():
    for shape, dim in [((0,), 0), ((3, 0), -1), ((0, 2), 0)]:
        for fn in (F.softmax, F.log_softmax):
            y = fn(md.zeros(shape, dtype=md.float64), dim)
            assert y.shape == shape and y.dtype is md.float64


def _alternating(ndim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes whose broadcast alternates between them in every dimension, so that no two
    neighbouring dimensions merge (TensorFlow's and MXNet's kernels broadcast at most five)."""
    return (
        tuple(2 if i % 2 == 0 else 1 for i in range(ndim)),
        tuple(1 if i % 2 == 0 else 3 for i in range(ndim)),
    )


#: elementwise ops that broadcast, each with NumPy's answer
BROADCASTING: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "add": (lambda x, y: x + y, lambda a, b: a + b),
    "rsub_of_scalar_and_sum": (lambda x, y: 2.0 - (x * y), lambda a, b: 2.0 - a * b),
    "less": (lambda x, y: x < y, lambda a, b: a < b),
    "maximum": (md.maximum, np.maximum),
    "where": (lambda x, y: md.where(x > 0, x, y), lambda a, b: np.where(a > 0, a, b)),
    "atan2": (md.atan2, np.arctan2),
    "broadcast_to": (
        lambda x, y: md.broadcast_to(x, np.broadcast_shapes(x.shape, y.shape)),
        lambda a, b: np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape)),
    ),
}


@pytest.mark.parametrize("op", BROADCASTING)
def test_broadcasting_up_to_max_dimensions_that_do_not_merge(op):
    """Every dimension count up to the reported "max dimensions" (at most 9), with the worst
    shapes for a kernel: the core steps in where the framework's own cannot."""
    fn, want = BROADCASTING[op]
    limit = md.__array_namespace_info__().capabilities()["max dimensions"]
    rng = np.random.default_rng(0)
    for ndim in range(2, min(limit, 9) + 1):
        s1, s2 = _alternating(ndim)
        a = rng.standard_normal(s1).astype(np.float32)
        b = rng.standard_normal(s2[1:]).astype(np.float32)
        got = fn(md.asarray(a), md.asarray(b)).numpy()
        np.testing.assert_allclose(got, want(a, b), rtol=1e-6, err_msg=f"{ndim} dimensions")


@pytest.mark.requires("autograd")
def test_gradients_through_broadcasts_over_many_dimensions():
    ndim = min(md.__array_namespace_info__().capabilities()["max dimensions"], 8)
    s1, s2 = _alternating(ndim)
    a = np.random.default_rng(1).standard_normal(s1).astype(np.float32)
    b = np.random.default_rng(2).standard_normal(s2).astype(np.float32)
    x, y = md.nn.Parameter(md.asarray(a)), md.nn.Parameter(md.asarray(b))
    with md.autograd.record():
        loss = md.sum(md.where(x > 0, x * y, y))
    loss.backward()
    full = np.broadcast_shapes(s1, s2)
    gx = np.where(a > 0, b, 0.0) * np.ones(full)
    gy = np.where(a > 0, a, 1.0) * np.ones(full)
    axes_x = tuple(i for i, n in enumerate(s1) if n == 1)
    axes_y = tuple(i for i, n in enumerate(s2) if n == 1)
    assert x.grad is not None and y.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), gx.sum(axes_x, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), gy.sum(axes_y, keepdims=True), rtol=1e-5)
