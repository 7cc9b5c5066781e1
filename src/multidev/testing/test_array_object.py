"""Section "array_object": the array object's attributes and methods that the Array API
2023.12 specifies (``array_object.py`` of the standard), the operators' integer (bitwise)
meaning, their reflected and in-place forms against NumPy, the Python scalar conversions,
and ``empty`` / ``empty_like``.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import multidev as md

#: every attribute and method of the standard's array object (2023.12)
SPEC = (
    *("dtype", "device", "mT", "ndim", "shape", "size", "T"),
    *("__abs__", "__add__", "__and__", "__array_namespace__", "__bool__", "__complex__"),
    *("__dlpack__", "__dlpack_device__", "__eq__", "__float__", "__floordiv__", "__ge__"),
    *("__getitem__", "__gt__", "__index__", "__int__", "__invert__", "__le__", "__lshift__"),
    *("__lt__", "__matmul__", "__mod__", "__mul__", "__ne__", "__neg__", "__or__", "__pos__"),
    *("__pow__", "__rshift__", "__setitem__", "__sub__", "__truediv__", "__xor__"),
    "to_device",
)
_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul")
_BITWISE = ("and", "or", "xor", "lshift", "rshift")


@pytest.mark.parametrize("name", SPEC)
def test_spec_member_exists(name):
    assert hasattr(md.ones((2, 2)), name)


@pytest.mark.parametrize("name", _BINARY + _BITWISE)
def test_reflected_and_in_place_forms_exist(name):
    assert hasattr(md.Tensor, f"__r{name}__") and hasattr(md.Tensor, f"__i{name}__")


@pytest.mark.parametrize("name", _BITWISE)
def test_bitwise_operators_on_integers(name):
    a = np.array([5, 3, 12, 7], dtype=np.int32)
    b = np.array([3, 1, 2, 0], dtype=np.int32)
    op = getattr(operator, f"{name}_" if name in ("and", "or") else name)
    got = op(md.asarray(a), md.asarray(b))
    assert got.dtype is md.int32
    np.testing.assert_array_equal(got.numpy(), op(a, b))
    np.testing.assert_array_equal(op(md.asarray(a), 2).numpy(), op(a, 2))
    np.testing.assert_array_equal(op(9, md.asarray(b)).numpy(), op(9, b))  # reflected
    x = md.asarray(a.copy())  # asarray may share a's memory: in-place ops would write it
    y = getattr(operator, f"i{name}")(x, md.asarray(b))
    assert y is x and x.dtype is md.int32
    np.testing.assert_array_equal(x.numpy(), op(a, b))


def test_invert_and_logical_bool():
    a = np.array([5, -3, 0], dtype=np.int64)
    np.testing.assert_array_equal((~md.asarray(a)).numpy(), ~a)
    t = md.asarray([True, False, True])
    np.testing.assert_array_equal((~t).numpy(), [False, True, False])
    np.testing.assert_array_equal((t & False).numpy(), [False, False, False])
    np.testing.assert_array_equal((t ^ True).numpy(), [False, True, False])
    with pytest.raises(TypeError, match="integer or bool"):
        md.ones(2) & md.ones(2)


def test_in_place_matmul():
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    b = np.array([[1.0, 2.0], [0.5, -1.0]], dtype=np.float32)
    x = md.asarray(a.copy())
    y = x
    y @= md.asarray(b)
    assert y is x
    np.testing.assert_allclose(x.numpy(), a @ b)


def test_scalar_conversions():
    assert complex(md.asarray(2.5)) == 2.5 + 0j
    assert float(md.asarray(2.5)) == 2.5 and int(md.asarray(7)) == 7
    assert bool(md.asarray(1)) is True and operator.index(md.asarray(3)) == 3
    assert [10, 20, 30, 40][md.asarray(2) :] == [30, 40]  # 0-d integer tensors as indices
    x = md.arange(10)
    np.testing.assert_array_equal(x[: md.sum(md.asarray([1, 2]))].numpy(), np.arange(3))


def test_empty():
    x = md.empty((2, 3), dtype=md.int32)
    assert x.shape == (2, 3) and x.dtype is md.int32 and x.device is md.default_device()
    assert md.empty((4,)).dtype is md.float32
    like = md.empty_like(md.ones((3, 1)))
    assert like.shape == (3, 1) and like.dtype is md.float32 and like.device is md.default_device()
    assert md.empty_like(x, dtype=md.float32).dtype is md.float32
    x[...] = 4  # writable like any tensor
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 4))
