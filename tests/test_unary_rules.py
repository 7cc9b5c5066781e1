"""The core's rules for unary ops on bool and unsigned tensors, the same on every backend
(run with MULTIDEV_BACKEND set): ``-`` refuses bool with a TypeError, as NumPy does, and
``abs``/``relu`` give a copy of bool and unsigned input, whose values they already are."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import multidev as md
from multidev.nn import functional as F


def test_negating_a_bool_tensor_is_a_type_error_that_says_to_invert():
    with pytest.raises(TypeError, match=r"Expected a numeric tensor.*Received: a bool.*~x"):
        operator.neg(md.asarray([True, False]))


def test_negating_uint8_wraps_around():
    assert (-md.asarray([1, 250], dtype=md.uint8)).tolist() == [255, 6]


@pytest.mark.parametrize("op", [md.abs, F.relu], ids=["abs", "relu"])
@pytest.mark.parametrize(("dtype", "values"), [("bool", [True, False]), ("uint8", [0, 7, 255])])
def test_abs_and_relu_of_bool_and_unsigned_are_new_tensors_of_the_same_values(op, dtype, values):
    x = md.asarray(np.asarray(values, dtype=dtype))
    out = op(x)
    assert out.dtype is x.dtype
    assert out.tolist() == values
    x[0] = values[1]  # the result has its own storage
    assert out.tolist() == values
