"""What ``contract.AdapterBase`` does for an adapter that only names its framework's creation
functions (``native_full``, ``native_empty``)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

import multidev as md
from multidev.contract import AdapterBase
from multidev.device import Device

CPU = Device("cpu", 0)


class _Recording(AdapterBase):
    name = "recording"
    dtypes: ClassVar = {md.float32: "f32", md.int64: "i64"}
    native_full = staticmethod(lambda shape, value, dt, dev: ("full", shape, value, dt, dev))
    native_empty = staticmethod(lambda shape, dt, dev: ("empty", shape, dt, dev))

    def make_native_device(self, dev):
        return "host"

    def from_numpy(self, arr, dev):
        return ("host", arr)


def test_a_scalar_fill_goes_to_the_framework_with_its_own_dtype_and_device():
    bk = _Recording()
    assert bk.full((2,), 1.5, md.float32, CPU) == ("full", (2,), 1.5, "f32", "host")
    # a NumPy scalar arrives as a Python number, which every framework's full takes
    out = bk.full((2,), np.int64(3), md.int64, CPU)
    assert out == ("full", (2,), 3, "i64", "host") and type(out[2]) is int
    assert bk.empty((1, 2), md.int64, CPU) == ("empty", (1, 2), "i64", "host")


def test_another_fill_value_goes_through_a_host_array():
    kind, arr = _Recording().full((2,), [1, 2], md.int64, CPU)
    assert kind == "host"
    np.testing.assert_array_equal(arr, [1, 2])


def test_without_native_functions_creation_goes_through_the_host():
    class Plain(_Recording):
        native_full = None
        native_empty = None

    kind, arr = Plain().empty((3,), md.float32, CPU)
    assert kind == "host" and arr.dtype == np.float32
    np.testing.assert_array_equal(arr, np.zeros(3))
