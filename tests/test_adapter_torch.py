"""What only makes sense for the PyTorch adapter: native devices, dtypes, storage sharing,
Parameters, and the GPU paths (run where a CUDA GPU is present)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import run_python  # noqa: E402

import multidev as md  # noqa: E402
from multidev import registry  # noqa: E402
from multidev.testing import sample_values  # noqa: E402

BK = registry.load("torch")
NO_GPU = BK.num_gpus() == 0

TORCH_DTYPES = {
    md.bool: torch.bool,
    md.uint8: torch.uint8,
    md.int8: torch.int8,
    md.int16: torch.int16,
    md.int32: torch.int32,
    md.int64: torch.int64,
    md.float16: torch.float16,
    md.bfloat16: torch.bfloat16,
    md.float32: torch.float32,
    md.float64: torch.float64,
}


@pytest.fixture(autouse=True)
def _torch_backend():
    with md.use_backend("torch"):
        yield


def _run(code: str, **env: str) -> str:
    """The output of ``code`` run in a fresh interpreter."""
    return run_python(code, **env).stdout


# ---------------------------------------------------------------- selection ("Done when")


def test_to_same_device_is_identity_and_copy_is_new_storage():
    X = md.ones((2, 3), device=md.try_gpu())
    assert X.to(X.device) is X
    Y = X.to(X.device, copy=True)
    assert Y is not X
    assert Y.native.data_ptr() != X.native.data_ptr()
    np.testing.assert_array_equal(Y.numpy(), X.numpy())


def test_manual_seed_gives_numpy_backend_values_and_seeds_torch():
    with md.use_backend("numpy"):
        md.manual_seed(0)
        want = md.rand(3).numpy()
    md.manual_seed(0)
    got = md.rand(3)
    assert got.backend == "torch" and isinstance(got.native, torch.Tensor)
    assert got.numpy().tobytes() == want.tobytes()
    md.manual_seed(7)
    a = torch.rand(4)
    torch.manual_seed(7)
    assert torch.equal(a, torch.rand(4))


def test_bool_mask_multiplies_in_place():
    md.manual_seed(1)
    w = md.randn(3, 3)
    before = w.numpy().copy()
    native, ptr = w.native, w.native.data_ptr()
    w *= md.abs(w) >= 0.5
    assert w.dtype is md.float32
    assert w.native is native and native.data_ptr() == ptr
    np.testing.assert_array_equal(w.numpy(), before * (np.abs(before) >= 0.5))


# ---------------------------------------------------------------- devices


def test_native_device_objects_are_parsed_and_produced():
    assert md.Device.parse(torch.device("cpu")) is md.cpu()
    assert md.Device.parse(torch.device("cpu", 0)) is md.cpu()
    assert md.Device.parse(torch.device("cuda", 1)) is md.gpu(1)
    if not torch.cuda.is_initialized():
        assert md.Device.parse(torch.device("cuda")) is md.gpu(0)
    assert md.cpu().native == torch.device("cpu")
    assert BK.native_device(md.gpu(1)) == torch.device("cuda", 1)
    assert md.ones(2).native.device == torch.device("cpu")
    with pytest.raises(ValueError, match="Expected a device like"):
        md.Device.parse(torch.device("meta"))


def test_tensor_on_an_unsupported_device_is_a_clear_error():
    with pytest.raises(md.DeviceError, match=r"Received: a tensor on meta"):
        md.asarray(torch.empty(2, device="meta"))


def test_cpu_only_build_has_no_gpu_device():
    if not NO_GPU:
        pytest.skip("this machine has a GPU")
    assert md.devices() == [md.cpu()]
    with pytest.raises(md.DeviceError, match="gpu:0"):
        md.ones(2, device="cuda:0")


def test_torch_default_device_is_honoured_when_it_is_ours():
    with torch.device("cpu"):
        assert md.default_device() is md.cpu()
    with torch.device("meta"):  # not a multidev device: creation stays on the CPU
        assert md.default_device() is md.cpu()
        x = md.zeros((2, 2))
    assert x.device is md.cpu() and x.native.device == torch.device("cpu")


def test_counting_gpus_leaves_cuda_uninitialised():
    out = _run(
        """
        import multidev as md, torch
        md.num_gpus(); md.devices(); md.try_gpu()
        print(torch.cuda.is_initialized())
        """,
        MULTIDEV_BACKEND="torch",
    )
    assert out.strip() == "False"


# ---------------------------------------------------------------- dtypes and host transfer


@pytest.mark.parametrize("dt", list(TORCH_DTYPES), ids=lambda d: d.name)
def test_native_dtype_and_bit_exact_round_trip(dt):
    src = sample_values(dt, np.random.default_rng(3))
    x = md.asarray(src)
    assert x.native.dtype is TORCH_DTYPES[dt]
    assert BK.native_dtype(dt) is TORCH_DTYPES[dt]
    assert BK.dtype_of(x.native) is dt and x.dtype is dt
    back = x.numpy()
    assert back.dtype == dt.numpy
    assert back.tobytes() == src.tobytes()
    assert md.zeros((2,), dtype=dt).native.dtype is TORCH_DTYPES[dt]


def test_bfloat16_nan_payload_survives_both_ways():
    bits = np.array([0x7FC1, 0xFF80, 0x8000, 0x0001], dtype=np.uint16)
    src = bits.view(md.bfloat16.numpy)
    x = md.asarray(src)
    assert x.native.view(torch.int16).numpy().view(np.uint16).tolist() == bits.tolist()
    assert x.numpy().view(np.uint16).tolist() == bits.tolist()


@pytest.mark.parametrize("tdt", [torch.complex32, torch.float8_e5m2, torch.float8_e4m3fn])
def test_unsupported_torch_dtype_is_a_clear_type_error(tdt):
    t = torch.zeros(2).to(tdt)
    with pytest.raises(
        TypeError, match=rf"(?s)Expected.*Received: dtype {tdt} on the torch.*to\(torch.float32\)"
    ):
        md.asarray(t)


def test_from_numpy_is_zero_copy_on_cpu():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = md.asarray(a)
    assert x.native.data_ptr() == a.ctypes.data
    a[0, 0] = 42.0
    assert x.native[0, 0].item() == 42.0
    view = a[:, ::2]  # positive strides: still shared
    y = md.asarray(view)
    assert y.native.data_ptr() == view.ctypes.data
    assert y.native.stride() == (4, 2)
    np.testing.assert_array_equal(y.numpy(), view)
    assert np.shares_memory(x.numpy(), a)


def test_from_numpy_bfloat16_is_zero_copy_even_when_strided():
    a = np.arange(12, dtype=np.float32).reshape(3, 4).astype(md.bfloat16.numpy)
    view = a.T
    x = md.asarray(view)
    assert x.native.dtype is torch.bfloat16
    assert x.native.data_ptr() == view.ctypes.data
    np.testing.assert_array_equal(x.numpy(), view)


@pytest.mark.parametrize("kind", ["read_only", "negative_strides", "big_endian"])
def test_from_numpy_copies_what_torch_cannot_alias(kind):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    if kind == "read_only":
        src = a.copy()
        src.flags.writeable = False
    elif kind == "negative_strides":
        src = a[::-1, ::-2]
    else:
        src = a.astype(">f4")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns when it aliases a read-only array
        x = md.asarray(src)
    assert x.dtype is md.float32
    np.testing.assert_array_equal(x.numpy(), src)
    x[...] = -1.0  # the tensor is writable and its own
    np.testing.assert_array_equal(
        np.asarray(src), a if kind != "negative_strides" else a[::-1, ::-2]
    )


def test_native_tensor_keeps_its_storage_through_asarray():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x = md.asarray(t)
    assert x.native is t
    assert x.device is md.cpu() and x.dtype is md.float32
    x[0, 1] = 10.0
    assert t[0, 1].item() == 10.0
    x += 1
    assert x.native.data_ptr() == t.data_ptr()
    assert t[0, 1].item() == 11.0


def test_dlpack_from_numpy_shares_memory():
    assert "dlpack" in BK.capabilities
    a = np.arange(4.0)
    t = BK.from_dlpack(a)
    a[1] = 9.0
    assert t[1].item() == 9.0 and BK.device_of(t) is md.cpu()


# ---------------------------------------------------------------- in-place writes and variables


def test_setitem_writes_in_place_and_matches_numpy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = md.asarray(a.copy())
    ptr = x.native.data_ptr()
    for key, value in [
        ((0, slice(1, None)), 5.0),
        ((Ellipsis, slice(None, None, -2)), np.arange(6, dtype=np.float32).reshape(2, 3, 1)),
        ((-1, slice(None, None, -1), None), 7.0),
        ((slice(None), np.array([2, 0])), -3.0),
    ]:
        x[key] = value
        a[key] = value
        np.testing.assert_array_equal(x.numpy(), a)
    assert x.native.data_ptr() == ptr


def test_getitem_negative_steps_and_integer_keys_match_numpy():
    a = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    x = md.asarray(a)
    for key in [
        (slice(None, None, -1),),
        (Ellipsis, slice(3, 0, -2)),
        (0, slice(None, None, -1), -1),
        (None, -1, Ellipsis),
        (slice(1, 1, -1),),
    ]:
        np.testing.assert_array_equal(x[key].numpy(), a[key])
    idx = torch.tensor([1, 0, 1], dtype=torch.uint8)  # integer indices, as in NumPy (not a mask)
    np.testing.assert_array_equal(md.asarray(a[0])[idx].numpy(), a[0][[1, 0, 1]])


def test_make_variable_is_a_trainable_parameter_with_its_own_storage():
    src = md.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    var = BK.make_variable(src.native)
    assert isinstance(var, torch.nn.Parameter) and var.requires_grad and var.is_leaf
    assert var.data_ptr() != src.native.data_ptr()
    assert BK.variable_tensor(var) is var
    out = BK.setitem(var, (0, 0), 42.0)  # a leaf that requires grad: written under no_grad
    assert out is var
    assert BK.variable_tensor(var)[0, 0].item() == 42.0
    assert src.native[0, 0].item() == 0.0
    (BK.variable_tensor(var) * 2).sum().backward()
    np.testing.assert_array_equal(var.grad.numpy(), np.full((2, 3), 2.0, np.float32))
    ints = BK.make_variable(torch.arange(3))
    assert isinstance(ints, torch.nn.Parameter) and not ints.requires_grad


def test_setitem_inside_a_graph_is_recorded_by_autograd():
    leaf = torch.ones(3, requires_grad=True)
    y = leaf * 2
    BK.setitem(y, 0, 0.0)
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [0.0, 2.0, 2.0])


def test_integer_and_bool_matmul_are_exact():
    rng = np.random.default_rng(5)
    for dt in (np.bool_, np.int8, np.int64):
        a = rng.integers(0, 3, (2, 3, 4)).astype(dt)
        b = rng.integers(0, 3, (4, 5)).astype(dt)
        np.testing.assert_array_equal((md.asarray(a) @ md.asarray(b)).numpy(), a @ b)
        np.testing.assert_array_equal((md.asarray(a[0, 0]) @ md.asarray(b)).numpy(), a[0, 0] @ b)


# ---------------------------------------------------------------- native reference


# ---------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
@pytest.mark.parametrize("dt", [md.float32, md.bfloat16, md.int64, md.bool], ids=lambda d: d.name)
def test_gpu_placement_and_round_trip(dt):
    src = sample_values(dt, np.random.default_rng(4))
    x = md.asarray(src, device=md.gpu(0))
    assert x.device is md.gpu(0) and x.native.device == torch.device("cuda", 0)
    assert x.numpy().tobytes() == src.tobytes()
    y = md.full((2, 2), 1, dtype=dt, device="cuda:0")
    assert y.native.device == torch.device("cuda", 0)
    back = x.to(md.cpu())
    assert back.native.device == torch.device("cpu") and back.numpy().tobytes() == src.tobytes()


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
def test_gpu_devices_and_mismatch():
    n = md.num_gpus()
    assert md.devices() == [md.cpu()] + [md.gpu(i) for i in range(n)]
    assert md.try_gpu() is md.gpu(0)
    assert md.gpu(0).native == torch.device("cuda", 0)
    g = md.ones((2, 3), device=md.gpu(0))
    c = md.ones((2, 3))
    with pytest.raises(md.DeviceMismatchError, match="gpu:0"):
        g + c
    with torch.device("cuda"):
        assert md.default_device() is md.gpu(torch.cuda.current_device())


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
def test_gpu_ops_match_numpy():
    rng = np.random.default_rng(6)
    for dt in (np.bool_, np.int32, np.int64, np.float32):
        a = rng.integers(-2, 3, (2, 3, 4)).astype(dt)
        b = rng.integers(-2, 3, (4, 5)).astype(dt)
        got = md.asarray(a, device="gpu:0") @ md.asarray(b, device="gpu:0")
        assert got.device is md.gpu(0)
        np.testing.assert_array_equal(got.numpy(), a @ b)
    x = md.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device="gpu:0")
    x[::-1, 0] = md.asarray(np.array([1.0, 2.0, 3.0], np.float32), device="gpu:0")
    want = np.arange(12, dtype=np.float32).reshape(3, 4)
    want[::-1, 0] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(x.numpy(), want)
    np.testing.assert_array_equal(md.sum(x, axis=1).numpy(), want.sum(axis=1))
    var = BK.make_variable(x.native)
    assert var.device == torch.device("cuda", 0) and var.requires_grad
    BK.setitem(var, (0, 0), 5.0)
    assert var[0, 0].item() == 5.0


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
def test_gpu_fork_after_counting_and_memory_on_demand():
    out = _run(
        """
        import os, multidev as md, torch
        assert md.num_gpus() > 0 and md.devices()
        pid = os.fork()
        if pid == 0:
            ok = torch.ones(2, device="cuda:0").sum().item() == 2.0
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        x = md.ones((256, 256), device=md.gpu(0))
        y = (x @ x).sum().item()
        print(os.waitstatus_to_exitcode(status), y, torch.cuda.memory_reserved(0) < 2**30)
        """,
        MULTIDEV_BACKEND="torch",
    )
    assert out.split() == ["0", str(256.0**3), "True"]
