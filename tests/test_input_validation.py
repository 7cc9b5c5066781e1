"""Bad input to creation functions and to Device is rejected by multidev itself, with one typed
error on every backend, before the framework is called."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md

# 2**50 float32 values: 4 PiB, more than any machine's memory; (2**40, 2**40) and 2**64 also
# overflow the frameworks' own size arithmetic (int64)
ABSURD = [2**50, (2**40, 2**40), (2**64,), (0, 2**63, 2), (3, 2**62)]


@pytest.mark.parametrize(
    "make",
    [
        lambda s: md.zeros(s),
        lambda s: md.ones(s, dtype=md.int8),
        lambda s: md.full(s, 2.5),
        lambda s: md.rand(s),
        lambda s: md.randn(s, dtype=md.float64),
    ],
    ids=["zeros", "ones", "full", "rand", "randn"],
)
def test_shape_errors_are_typed_the_same_on_every_backend(make):
    with pytest.raises(TypeError, match=r"Expected a shape.*Received: '12'.*a str"):
        make("12")
    with pytest.raises(TypeError, match=r"Expected a shape.*a float"):
        make((2, 1.5))
    with pytest.raises(TypeError, match=r"Expected a shape.*a bool"):
        make((True, 2))
    with pytest.raises(ValueError, match=r"Expected non-negative sizes. Received: shape \(-1,\)"):
        make(-1)
    with pytest.raises(ValueError, match=r"non-negative sizes. Received: shape \(2, -3\)"):
        make((2, -3))
    for shape in ABSURD:
        with pytest.raises(MemoryError, match=r"Expected a tensor that fits in the memory of cpu"):
            make(shape)


def test_absurd_size_error_names_the_shape_and_the_bytes():
    with pytest.raises(MemoryError) as e:
        md.zeros(2**50)
    text = str(e.value)
    assert "(1125899906842624,)" in text and "4,503,599,627,370,496 bytes" in text
    assert "float32" in text and "smaller shape" in text


def test_other_creation_functions_check_sizes():
    with pytest.raises(MemoryError, match="1,152,921,504,606,846,976 elements"):
        md.eye(2**30)
    with pytest.raises(ValueError, match=r"non-negative sizes. Received: shape \(-2, -2\)"):
        md.eye(-2)
    with pytest.raises(MemoryError, match="4,611,686,018,427,387,904 elements"):
        md.arange(0, 2**62)
    with pytest.raises(ValueError, match="non-zero step"):
        md.arange(0, 5, 0)
    with pytest.raises(ValueError, match="finite start, stop and step"):
        md.arange(0.0, float("inf"))


def test_legal_shapes_still_work():
    assert md.zeros(3).shape == (3,)
    assert md.zeros(np.int64(2)).shape == (2,)
    assert md.zeros([2, np.int32(3)]).shape == (2, 3)
    assert md.zeros(np.array([2, 3])).shape == (2, 3)
    assert md.ones(()).shape == ()
    assert md.full((0, 4), 1.0).shape == (0, 4)
    assert md.rand(2, 3).shape == (2, 3) and md.randn((4,)).shape == (4,)
    assert md.eye(2, 3).shape == (2, 3)
    assert md.arange(5).shape == (5,) and md.arange(5, 0).shape == (0,)


def test_device_index_digits_are_ascii():
    for text in ("gpu:٣", "cuda:３", "gpu(٣)", "/GPU:٣", "cpu:٠"):
        with pytest.raises(ValueError, match="Expected a device like 'cpu' or 'gpu:0'"):
            md.Device.parse(text)
    assert md.Device.parse("gpu:3") is md.gpu(3)


@pytest.mark.parametrize("index", [5.0, True, False, "5", None, 1.5])
def test_device_index_must_be_an_int_even_when_cached(index):
    md.gpu(5), md.cpu(0), md.cpu(1)  # cache the equal devices first
    with pytest.raises(TypeError, match=r"Expected an int device index.*Received: Device"):
        md.Device("gpu", index)
    with pytest.raises(TypeError, match=r"Expected an int device index"):
        md.Device("cpu", index)


def test_device_type_must_be_a_string():
    with pytest.raises(TypeError, match="Expected a device type string"):
        md.Device(0, 0)


def test_device_accepts_integer_indices_of_any_int_type():
    assert md.Device("gpu", np.int64(2)) is md.gpu(2)
    with pytest.raises(ValueError, match="non-negative"):
        md.Device("gpu", -1)


@pytest.mark.gpu
def test_absurd_sizes_on_a_gpu():
    if md.num_gpus() == 0:
        pytest.skip("no GPU: num_gpus() == 0")
    for shape in ABSURD:
        with pytest.raises(MemoryError, match=r"fits in the memory of gpu:0"):
            md.zeros(shape, device=md.gpu(0))
    assert md.zeros((2, 3), device=md.gpu(0)).device is md.gpu(0)
