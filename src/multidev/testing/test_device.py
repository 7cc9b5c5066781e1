"""Section "device": one Device value, every spelling, placement and scopes on the active backend."""

from __future__ import annotations

import contextvars

import numpy as np
import pytest

import multidev as md

SPELLINGS = {
    "cpu": md.cpu(),
    "cpu:0": md.cpu(),
    "/CPU:0": md.cpu(),
    "cpu(0)": md.cpu(),
    "/job:localhost/replica:0/task:0/device:CPU:0": md.cpu(),
    "/job:localhost/replica:0/task:0/device:CPU:1": md.cpu(1),
    "gpu": md.gpu(0),
    "gpu:1": md.gpu(1),
    "cuda": md.gpu(0),
    "cuda:1": md.gpu(1),
    "/GPU:1": md.gpu(1),
    "/device:GPU:1": md.gpu(1),
    "gpu(1)": md.gpu(1),
    "GPU:2": md.gpu(2),
}


@pytest.mark.parametrize("text", list(SPELLINGS))
def test_parse_spellings(text):
    assert md.Device.parse(text) is SPELLINGS[text]


@pytest.mark.parametrize("bad", ["tpu", "gpu:", "gpu:-1", "cuda:x", "", "gpu(1", "/CPU:0/extra"])
def test_malformed_string(bad):
    with pytest.raises(ValueError) as e:
        md.Device.parse(bad)
    assert str(e.value) == f"Expected a device like 'cpu' or 'gpu:0'. Received: {bad!r}"


def test_value_semantics():
    d = md.Device("gpu", 1)
    assert d == md.gpu(1) and d is md.gpu(1) and hash(d) == hash(md.gpu(1))
    assert str(md.cpu()) == "cpu" and str(md.gpu(1)) == "gpu:1" and str(md.cpu(1)) == "cpu:1"
    assert md.cpu() != md.gpu(0) and {md.cpu(), md.Device.parse("cpu:0")} == {md.cpu()}
    with pytest.raises(AttributeError):
        d.index = 2


def test_native_objects_round_trip(bk):
    for dev in md.devices():
        assert md.Device.parse(dev.native) is dev


def test_gpu_helpers_follow_num_gpus():
    n = md.num_gpus()
    assert md.try_gpu() == (md.gpu(0) if n else md.cpu())
    assert md.try_gpu(10) == (md.gpu(10) if n > 10 else md.cpu())
    assert md.try_all_gpus() == ([md.gpu(i) for i in range(n)] if n else [md.cpu()])
    devs = md.devices()
    assert devs[0] is md.cpu()
    assert [d for d in devs if d.type == "gpu"] == [md.gpu(i) for i in range(n)]


def test_absent_device_names_present_ones():
    missing = md.gpu(md.num_gpus())
    with pytest.raises(md.DeviceError) as e:
        md.ones(2, device=missing)
    assert str(missing) in str(e.value)
    for d in md.devices():
        assert str(d) in str(e.value)


def test_default_device_is_a_device():
    assert md.default_device() in md.devices()


def test_tensor_lands_on_try_gpu():
    X = md.ones((2, 3), device=md.try_gpu())
    assert X.device is md.try_gpu()


def test_scope_sets_default_placement():
    before = md.default_device()
    dev = md.devices()[-1]
    with dev:
        assert md.default_device() is dev
        assert md.ones(2).device is dev
        assert md.rand(2).device is dev
        assert md.asarray([1.0]).device is dev
    assert md.default_device() is before


def test_scope_nests_and_restores_on_exception():
    outer = md.default_device()
    with md.cpu():
        with pytest.raises(KeyError), md.cpu():
            raise KeyError
        assert md.default_device() is md.cpu()
    assert md.default_device() is outer


def test_scope_is_context_local():
    with md.cpu():
        ctx = contextvars.Context()
        assert ctx.run(md.default_device) is md.default_device()
    fresh = contextvars.Context().run(md.default_device)
    assert fresh is md.default_device()


def test_to_same_device_is_identity():
    X = md.ones((2, 3))
    assert X.to(X.device) is X
    assert X.to(str(X.device)) is X
    assert X.to_device(X.device) is X
    Y = X.to(X.device, copy=True)
    assert Y is not X
    np.testing.assert_array_equal(Y.numpy(), X.numpy())
    Y[0, 0] = 5
    assert X.numpy()[0, 0] == 1


@pytest.mark.requires("multi_device")
def test_second_device_is_real(bk):
    with md.cpu(1):
        x = md.ones((2, 2))
    assert x.device is md.cpu(1)
    assert bk.device_of(x.native) is md.cpu(1)
    y = x + x
    assert y.device is md.cpu(1) and bk.device_of(y.native) is md.cpu(1)
    z = x.to(md.cpu())
    assert z is not x and z.device is md.cpu() and bk.device_of(z.native) is md.cpu()
    np.testing.assert_array_equal(z.numpy(), x.numpy())


@pytest.mark.requires("multi_device")
def test_mixed_devices_raise():
    a = md.ones(2, device=md.cpu(0))
    b = md.ones(2, device=md.cpu(1))
    for op in (lambda: a + b, lambda: b * a, lambda: md.maximum(a, b), lambda: md.concat([a, b])):
        with pytest.raises(md.DeviceMismatchError) as e:
            op()
        assert "cpu" in str(e.value) and "cpu:1" in str(e.value)
