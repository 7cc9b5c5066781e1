"""Each backend's tensors are one subclass of ``md.Tensor`` whose operators have the backend's
ops bound in. What a user sees stays the same: every tensor is an ``md.Tensor``; operators
promote dtypes and refuse mixed devices as before; tensors pickle, copy and hash as before;
and a tensor made as the plain ``md.Tensor`` (``md.Tensor(native, ...)``) mixes with them."""

from __future__ import annotations

import copy
import operator
import pickle

import numpy as np
import pytest

import multidev as md
from multidev import dtypes, nn

_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]
_CMPS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


def _plain(t: md.Tensor) -> md.Tensor:
    """The same values as a tensor of the plain ``md.Tensor`` class."""
    return md.Tensor(t.native, t._bk, t.device, t.dtype)


def _values(t: md.Tensor) -> np.ndarray:
    return np.asarray(t.numpy())


@pytest.fixture
def pair():
    a = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    b = np.array([0.5, 4.0, 3.0], dtype=np.float32)
    return a, b


@pytest.mark.parametrize("op", _OPS + _CMPS, ids=lambda f: f.__name__)
def test_operators_give_the_same_values_and_class_whatever_class_the_operands_have(op, pair):
    a, b = pair
    x, y = md.asarray(a), md.asarray(b)
    want = op(a, b)
    results = [op(x, y), op(_plain(x), y), op(x, _plain(y)), op(_plain(x), _plain(y))]
    for r in results:
        assert isinstance(r, md.Tensor)
        assert type(r) is type(x)  # one class per backend, whichever operand was plain
        assert r.dtype is dtypes.from_numpy_dtype(want.dtype)
        np.testing.assert_allclose(_values(r), want, rtol=1e-6)


def test_parameters_and_tensors_mix_in_both_orders(pair):
    a, b = pair
    p = nn.Parameter(md.asarray(a))
    x = md.asarray(b)
    for r, want in ((p * x, a * b), (x * p, b * a), (p - x, a - b), (x < p, b < a)):
        assert isinstance(r, md.Tensor) and not isinstance(r, nn.Parameter)
        np.testing.assert_allclose(_values(r), want, rtol=1e-6)


def test_dtype_promotion_and_true_division_are_kept():
    i = md.asarray(np.array([1, 2, 3], dtype=np.int32))
    f = md.asarray(np.array([0.5, 0.5, 0.5], dtype=np.float32))
    assert (i + i).dtype is md.int32
    assert (i / i).dtype is md.float32
    assert (i + f).dtype is md.float32 and (f + i).dtype is md.float32
    assert (i == i).dtype is md.bool
    np.testing.assert_array_equal(_values(i / i), [1.0, 1.0, 1.0])


def test_another_device_is_refused_with_the_usual_error():
    devices = md.devices()
    if len(devices) < 2:
        pytest.skip("needs two devices of this backend")
    x = md.ones(2, device=devices[0])
    y = md.ones(2, device=devices[1])
    with pytest.raises(md.DeviceMismatchError, match="one device"):
        x + y


def test_a_tensor_pickles_as_a_plain_tensor_does(pair):
    a, _ = pair
    x = md.asarray(a)
    y = x + x
    try:
        pickle.dumps(_plain(y))
    except TypeError:  # an adapter holding locks or native places does not pickle
        with pytest.raises(TypeError):
            pickle.dumps(y)
        return
    back = pickle.loads(pickle.dumps(y))
    assert isinstance(back, md.Tensor) and back.dtype is md.float32
    assert back.backend == y.backend
    np.testing.assert_array_equal(_values(back), a + a)


def test_a_tensor_copies_and_hashes_by_identity(pair):
    a, _ = pair
    x = md.asarray(a)
    y = x + x
    for c in (copy.copy(y), copy.deepcopy(y)):
        assert isinstance(c, md.Tensor) and c is not y
        np.testing.assert_array_equal(_values(c), a + a)
    assert {y: 1}[y] == 1 and hash(y) != hash(x)


def test_in_place_operators_keep_the_object(pair):
    a, b = pair
    x = md.asarray(a.copy())
    before = x
    x += md.asarray(b)
    x *= md.asarray(b)
    assert x is before
    np.testing.assert_allclose(_values(x), (a + b) * b, rtol=1e-6)
