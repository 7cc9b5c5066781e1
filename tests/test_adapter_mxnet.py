"""The MXNet adapter: contexts, native arrays and dtypes, host copies, variables, and the places
where MXNet's own kernels differ from NumPy and the adapter makes up for it."""

from __future__ import annotations

import subprocess
import threading

import numpy as np
import pytest

mx = pytest.importorskip("mxnet")

from conftest import run_python  # noqa: E402

import multidev as md  # noqa: E402
from multidev import registry  # noqa: E402
from multidev.nn import functional as F  # noqa: E402
from multidev.nn.parameter import Parameter  # noqa: E402
from multidev.testing import sample_values  # noqa: E402

mnp = mx.np


@pytest.fixture(autouse=True)
def mxnet_backend():
    with md.use_backend("mxnet"):
        yield


@pytest.fixture
def bk():
    return registry.load("mxnet")


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    return run_python(code, check=False, timeout=120, **env)


MX_DTYPES = [md.bool, md.uint8, md.int8, md.int32, md.int64, md.float16, md.float32, md.float64]


# ---------------------------------------------------------------- selection and devices


def test_cpu_contexts_are_devices(bk):
    n = md.num_gpus()
    assert md.devices() == [md.cpu(0), md.cpu(1)] + [md.gpu(i) for i in range(n)]
    assert md.cpu(1).native == mx.cpu(1) and md.cpu().native == mx.cpu(0)
    assert isinstance(md.cpu(1).native, mx.Context)
    assert "multi_device" in bk.capabilities and "gpu" in bk.capabilities


def test_native_contexts_parse(bk):
    assert md.Device.parse(mx.cpu(1)) is md.cpu(1)
    assert md.Device.parse(mx.cpu()) is md.cpu()
    assert md.Device.parse(mx.gpu(2)) is md.gpu(2)
    assert md.Device.parse(mx.Context("cpu_pinned", 0)) is md.cpu()
    assert bk.parse_native_device("cpu") is None
    with pytest.raises(ValueError, match="Expected a device like"):
        md.Device.parse(object())


def test_cpu_device_count_comes_from_the_environment():
    r = _run(
        "import multidev as md\nprint(md.devices()[:3], md.cpu(2).native)",
        MULTIDEV_BACKEND="mxnet",
        MULTIDEV_MXNET_CPU_DEVICES="3",
    )
    assert r.returncode == 0, r.stderr
    assert "Device('cpu', 2)]" in r.stdout and "cpu(2)" in r.stdout
    bad = _run(
        "import multidev as md\nmd.ones(1)",
        MULTIDEV_BACKEND="mxnet",
        MULTIDEV_MXNET_CPU_DEVICES="zero",
    )
    assert bad.returncode != 0
    assert "Expected MULTIDEV_MXNET_CPU_DEVICES to be a positive integer" in bad.stderr
    assert "Received: 'zero'" in bad.stderr


def test_visible_gpu_count_follows_cuda_visible_devices():
    from multidev_mxnet.backend import visible_gpu_count

    assert visible_gpu_count(4, None) == 4
    assert visible_gpu_count(4, "") == 0
    assert visible_gpu_count(4, "2,0") == 2
    assert visible_gpu_count(4, "1,7,2") == 1  # CUDA stops at the first invalid entry
    assert visible_gpu_count(4, "1,1") == 0  # CUDA hides every GPU when one is named twice
    assert visible_gpu_count(4, "0,GPU-aaa") == 1  # a list of indices stops at a UUID
    assert visible_gpu_count(2, "GPU-8d6f1c2e,GPU-12ab") == 2
    assert visible_gpu_count(0, "0") == 0
    assert visible_gpu_count(4, "-1") == 0


@pytest.mark.skipif("md.num_gpus() > 0", reason="checks the fallback on a machine without GPU")
def test_gpu_helpers_fall_back_to_cpu():
    assert md.get_backend() == "mxnet"
    assert md.try_gpu() is md.cpu() and md.try_gpu(10) is md.cpu()
    assert md.try_all_gpus() == [md.cpu()]
    X = md.ones((2, 3), device=md.try_gpu())
    assert X.device is md.cpu() and X.native.ctx == mx.cpu()
    with pytest.raises(md.DeviceError, match="cpu:1"):
        md.ones(2, device=md.gpu(0))


def test_to_same_device_is_identity_and_copy_is_new():
    X = md.ones((2, 3))
    assert X.to(X.device) is X
    Y = X.to(X.device, copy=True)
    assert Y is not X and Y.native is not X.native
    np.testing.assert_array_equal(Y.numpy(), X.numpy())


def test_second_cpu_context_end_to_end(bk):
    with md.cpu(1):
        x = md.ones((2, 2))
        r = md.rand(2)
    assert x.device is md.cpu(1) and x.native.ctx == mx.cpu(1) and r.native.ctx == mx.cpu(1)
    i = md.asarray([[-7, 7], [5, -5]], device=md.cpu(1))
    results = [
        x + x,
        x @ x,
        md.sum(x),
        md.exp(x),
        x[0],
        x > 0,
        i // 2,
        i % -3,
        i @ i,
        md.where(x > 1, x, md.zeros_like(x)),
        F.softmax(x, 1),
        F.log_softmax(x, 1),
        md.sum(md.zeros((0, 2), device=md.cpu(1)), axis=0),
        x[md.asarray([1, 0], device=md.cpu(1))],
        md.argmax(x, axis=1, keepdims=True),
    ]
    for y in results:
        assert y.device is md.cpu(1) and y.native.ctx == mx.cpu(1)
    z = x.to(md.cpu())
    assert z.device is md.cpu() and z.native.ctx == mx.cpu(0) and x.native.ctx == mx.cpu(1)
    with pytest.raises(md.DeviceMismatchError, match="cpu:1"):
        md.ones((2, 2)) + x


def test_scope_and_default_device_follow_mxnet_contexts(bk):
    with bk.scope(md.cpu(1)):
        assert mx.context.current_context() == mx.cpu(1)
        assert bk.default_device() is md.cpu(1)
        assert md.ones(2).device is md.cpu(1)
    assert bk.default_device() is md.cpu()
    with bk.scope(md.cpu(1)), bk.scope(md.cpu(1)):
        pass
    assert mx.context.current_context() == mx.cpu(0)
    assert bk.scoped_devices == frozenset()


# ---------------------------------------------------------------- tensors and dtypes


def test_native_is_an_mxnet_numpy_array_and_wraps_back_without_copy():
    x = md.asarray([[1.0, 2.0], [3.0, 4.0]])
    n = x.native
    assert type(n) is mnp.ndarray and n.dtype == np.float32
    y = md.asarray(n)
    assert y.native is n and y.device is md.cpu() and y.dtype is md.float32
    y[0, 0] = 9.0
    assert n[0, 0].item() == 9.0
    alias = x
    x[...] = md.full((2, 2), 5.0)
    x += 1
    assert x is alias and x.native is n
    np.testing.assert_array_equal(n.asnumpy(), np.full((2, 2), 6.0, np.float32))


def test_native_dtypes(bk):
    for dt in MX_DTYPES:
        assert bk.native_dtype(dt) == dt.numpy
        assert md.zeros(2, dtype=dt).native.dtype == dt.numpy
        assert bk.dtype_of(mnp.zeros(2, dtype=dt.numpy)) is dt
    assert {"float16", "float64"} <= bk.capabilities and "bfloat16" not in bk.capabilities


@pytest.mark.parametrize("dt", [md.int16, md.bfloat16], ids=["int16", "bfloat16"])
def test_unsupported_dtypes_raise_type_error(dt):
    instead = "md.int32" if dt is md.int16 else "md.float32"
    for make in (
        lambda: md.zeros(2, dtype=dt),
        lambda: md.asarray(np.ones(2, dtype=dt.numpy)),
        lambda: md.ones(2).astype(dt),
    ):
        with pytest.raises(TypeError) as e:
            make()
        msg = str(e.value)
        assert dt.name in msg and "mxnet" in msg and instead in msg


@pytest.mark.parametrize("dev", [md.cpu(0), md.cpu(1)], ids=str)
def test_every_dtype_round_trips_bit_exact(dev):
    rng = np.random.default_rng(7)
    for dt in MX_DTYPES:
        src = sample_values(dt, rng)
        x = md.asarray(src.copy(), device=dev)
        assert x.dtype is dt and x.native.dtype == dt.numpy and x.native.ctx == dev.native
        back = x.numpy()
        assert back.dtype == dt.numpy and back.tobytes() == src.tobytes(), dt
        zero_d = md.asarray(src[0, 0].copy(), device=dev)
        assert zero_d.shape == () and zero_d.numpy().tobytes() == src[0, 0].tobytes()


def test_from_numpy_copies_and_leaves_the_source_alone():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = md.asarray(a)
    assert a.flags.writeable
    x[0, 0] = 42.0
    assert x.numpy()[0, 0] == 42.0 and a[0, 0] == 0.0
    a[0, 1] = 7.0
    assert x.numpy()[0, 1] == 1.0


@pytest.mark.parametrize(
    "case", ["transposed", "reversed", "read-only", "int8", "big-endian", "cpu:1"]
)
def test_from_numpy_copies_every_layout(case):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    dev = md.cpu(1) if case == "cpu:1" else md.cpu()
    arr = {
        "transposed": base.T,
        "reversed": base[::-1],
        "read-only": base.copy(),
        "int8": base.astype(np.int8),
        "big-endian": base.astype(">f4"),
        "cpu:1": base.copy(),
    }[case]
    if case == "read-only":
        arr.flags.writeable = False
    expected = np.array(arr, dtype=arr.dtype.newbyteorder("="))
    x = md.asarray(arr, device=dev)
    np.testing.assert_array_equal(x.numpy(), expected)
    x[...] = 0
    np.testing.assert_array_equal(arr, expected)
    assert arr.flags.writeable == (case != "read-only")


def test_full_keeps_every_digit_of_large_integers():
    big = 2**62 + 1
    assert md.full((2,), big, dtype=md.int64).tolist() == [big, big]
    x = md.zeros(2, dtype=md.int64)
    x[0] = big
    assert x.tolist() == [big, 0]


def test_manual_seed_matches_numpy_backend():
    md.manual_seed(0)
    got = md.rand(3).numpy()
    with md.use_backend("numpy"):
        md.manual_seed(0)
        ref = md.rand(3).numpy()
    assert got.tobytes() == ref.tobytes()


def test_d2l_mask_idiom_in_place():
    md.manual_seed(1)
    w = md.randn(3, 3)
    ref = w.numpy() * (np.abs(w.numpy()) >= 0.5)
    native, same = w.native, w
    w *= md.abs(w) >= 0.5
    assert w is same and w.native is native and w.dtype is md.float32
    np.testing.assert_array_equal(w.numpy(), ref)


def test_numpy_semantics_hold_in_worker_threads():
    out = {}

    def work():
        s = md.asarray(2.0)
        out["scalar"] = (s * 3).item()
        out["empty"] = md.sum(md.zeros((0, 3)), axis=0).tolist()

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert out == {"scalar": 6.0, "empty": [0.0, 0.0, 0.0]}


# ---------------------------------------------------------------- variables


def test_make_variable_is_a_trainable_gluon_parameter(bk):
    with md.cpu(1):
        x = md.asarray([[1.0, 2.0], [3.0, 4.0]])
    var = bk.make_variable(x.native)
    assert isinstance(var, mx.gluon.Parameter)
    assert var.grad_req == "add" and var.list_ctx() == [mx.cpu(1)]
    data = bk.variable_tensor(var)
    assert type(data) is mnp.ndarray and data is var.data(mx.cpu(1))
    bk.setitem(data, (0, 0), 42.0)
    assert var.data(mx.cpu(1))[0, 0].item() == 42.0
    assert x.numpy()[0, 0] == 1.0  # the variable holds its own copy
    with mx.autograd.record():
        loss = (bk.variable_tensor(var) * 3).sum()
    loss.backward()
    np.testing.assert_array_equal(var.grad(mx.cpu(1)).asnumpy(), np.full((2, 2), 3.0))
    assert bk.make_variable(md.arange(3).native).grad_req == "null"
    empty = bk.make_variable(md.zeros((3, 0)).native)
    assert bk.variable_tensor(empty).shape == (3, 0) and empty.grad_req == "add"


def test_parameter_data_writes_reach_the_gluon_parameter():
    p = Parameter(md.zeros((2, 3)))
    assert isinstance(p.native, mx.gluon.Parameter)
    p.data[0, 0] = 42
    p.data[1] = md.full((3,), 7.0)
    assert p.native.data().asnumpy().tolist() == [[42.0, 0.0, 0.0], [7.0, 7.0, 7.0]]


@pytest.mark.parametrize("values", [[1, 2, 3], [True, False, True]], ids=["int64", "bool"])
def test_integer_and_bool_parameters_hold_no_gradient(values):
    # gluon Parameters with grad_req 'null' beside a float one in a recorded computation
    p, w = Parameter(md.asarray(values)), Parameter(md.asarray([1.0, 2.0, 3.0]))
    assert p.native.grad_req == "null"
    with md.autograd.record():
        loss = (w * md.astype(p, md.float32)).sum()
    loss.backward()
    assert p.grad is None and w.grad is not None
    with pytest.raises(TypeError, match="grad_req='null'"):
        p.grad = md.ones(3, dtype=p.dtype)
    p.grad = None
    w.grad = None
    assert p.grad is None and w.grad is None


# ---------------------------------------------------------------- where MXNet differs from NumPy


def test_integer_floor_division_and_remainder_are_exact():
    a = np.array([-7, 7, -7, 7, 5, -5, 0, 2**62 + 3, -(2**62) - 5], dtype=np.int64)
    b = np.array([2, -2, -2, 2, 0, 0, 3, 7, 7], dtype=np.int64)
    x, y = md.asarray(a.copy()), md.asarray(b.copy())
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal((x // y).numpy(), a // b)
        np.testing.assert_array_equal((x % y).numpy(), a % b)
    m = np.iinfo(np.int32).min
    i32 = md.asarray(np.array([m, -7], dtype=np.int32))
    assert (i32 // -1).tolist() == [m, 7] and (i32 % -1).tolist() == [0, 0]
    assert (md.asarray(np.array([250, 7], np.uint8)) // 7).tolist() == [35, 1]


def test_float_floor_division_and_remainder_match_numpy():
    a = np.array([-7.0, 7.0, -7.0, 7.0, 5.0, -5.0, 1.0, -3.5, 0.5], dtype=np.float32)
    b = np.array([2.0, -2.0, -2.0, 2.0, 0.0, 0.0, 0.1, 1.5, -0.25], dtype=np.float32)
    x, y = md.asarray(a.copy()), md.asarray(b.copy())
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal((x // y).numpy(), a // b)
        np.testing.assert_array_equal((x % y).numpy(), a % b)
    np.testing.assert_array_equal((2.0 // x).numpy(), np.float32(2.0) // a)


@pytest.mark.parametrize("dt", [md.int8, md.int32, md.int64, md.uint8, md.bool, md.float16])
@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (4, 2)), ((4,), (4,)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)), ((3, 0), (0, 2))],
)
def test_matmul_for_dtypes_mxnet_kernels_lack(dt, shapes):
    rng = np.random.default_rng(3)
    a, b = (sample_values(dt, rng, s) for s in shapes)
    if dt.kind == "f":
        a, b = np.nan_to_num(a, posinf=1.0), np.nan_to_num(b, posinf=1.0)
    got = md.asarray(a.copy()) @ md.asarray(b.copy())
    want = (
        (a.astype(np.float32) @ b.astype(np.float32)).astype(dt.numpy) if dt.kind == "f" else a @ b
    )
    assert got.dtype is dt and got.shape == want.shape
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64), rtol=1e-3)


def test_reductions_of_zero_size_arrays():
    e = md.zeros((0, 3))
    assert md.sum(e, axis=0).tolist() == [0.0] * 3 and md.sum(e, axis=1).shape == (0,)
    assert md.prod(e, axis=0).tolist() == [1.0] * 3
    assert np.isnan(md.mean(e, axis=0).numpy()).all() and np.isnan(md.mean(e).item())
    with pytest.raises(ValueError, match="0-d tensor takes axis=None"):
        md.sum(md.asarray(2.5), axis=0)  # the Array API: a 0-d tensor has no axis 0


def test_bool_tensors_where_mxnet_kernels_lack_bool(bk):
    b = md.asarray([[True, False, True], [False, False, True]])
    n = b.numpy()
    np.testing.assert_array_equal(md.permute_dims(b, (1, 0)).numpy(), n.T)
    np.testing.assert_array_equal(md.maximum(b, ~b).numpy(), n | ~n)
    np.testing.assert_array_equal(md.minimum(b, ~b).numpy(), n & ~n)
    assert md.argmax(b, axis=1).tolist() == [0, 2] and md.abs(b).dtype is md.bool
    assert (b & True).dtype is md.bool and (b | False).tolist() == n.tolist()
    assert (b @ b.T).dtype is md.bool
    with pytest.raises(TypeError, match="bool"):
        _ = -b
    b[::-1, 1] = md.asarray([True, True])
    n[::-1, 1] = True
    np.testing.assert_array_equal(b.numpy(), n)


def test_indexing_edge_cases():
    s = md.asarray(3.5)
    assert s[...].shape == () and s[None].shape == (1,) and s[None, ..., None].shape == (1, 1)
    s[...] = 4.5
    s[md.asarray(False)] = 0.0
    assert s.item() == 4.5
    s[md.asarray(True)] = 1.5
    assert s.item() == 1.5
    e = md.zeros((0, 3))
    assert e[md.asarray(np.zeros(0, dtype=bool))].shape == (0, 3)
    e[md.asarray(np.zeros(0, dtype=np.int64))] = 1.0
    x = md.arange(6, dtype=md.float32)
    x[md.asarray([-1, 0])] = 9.0
    assert x.tolist() == [9.0, 1.0, 2.0, 3.0, 4.0, 9.0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[md.asarray([6])] = 1.0
    with pytest.raises(IndexError, match="out of bounds"):
        x[md.asarray([-7])] = 1.0
    assert x.tolist() == [9.0, 1.0, 2.0, 3.0, 4.0, 9.0]


def test_log_softmax_is_accurate():
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((16, 10)) * 5).astype(np.float32)
    d = a.astype(np.float64)
    s = d - d.max(axis=1, keepdims=True)
    want = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(F.log_softmax(md.asarray(a), 1).numpy(), want, rtol=2e-6, atol=2e-6)


def test_native_reference_ops():
    from multidev_mxnet.reference import OPS

    from multidev.testing import REFERENCE_KEYS

    assert set(REFERENCE_KEYS) <= set(OPS)
    # the complex keys are taken by name where the namespace has them: mx.np.real exists (for
    # real input) although MXNet has no complex dtypes
    assert set(OPS) - set(REFERENCE_KEYS) <= {"real", "imag", "conj"}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.ones((4, 3), dtype=np.float32)
    np.testing.assert_allclose(OPS["linear"](x, w, None), x @ w.T)
    assert OPS["where"](x > 2, x, -x).tolist() == [[-0.0, -1.0, -2.0], [3.0, 4.0, 5.0]]


# ---------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_gpu_tensors_stay_on_their_gpu(bk):
    if md.num_gpus() == 0:
        pytest.skip("no GPU: num_gpus() == 0")
    g = md.gpu(0)
    assert g.native == mx.gpu(0) and md.Device.parse(mx.gpu(0)) is g
    x = md.ones((4, 4), device=g)
    assert x.native.ctx == mx.gpu(0) and bk.device_of(x.native) is g
    h = x.astype(md.float16)
    for y in (
        x + 1,
        x @ x,
        h @ h,
        md.sum(x),
        x // 3,
        F.softmax(h, 1),
        x[md.asarray([0], device=g)],
    ):
        assert y.device is g and y.native.ctx == mx.gpu(0)
    np.testing.assert_array_equal((h @ h).numpy(), np.full((4, 4), 4.0, np.float16))
    back = x.to(md.cpu())
    assert back.native.ctx == mx.cpu(0) and back.numpy().sum() == 16.0
    var = bk.make_variable(x.native)
    assert var.list_ctx() == [mx.gpu(0)] and bk.variable_tensor(var).ctx == mx.gpu(0)
    with pytest.raises(md.DeviceMismatchError):
        x + md.ones((4, 4))


# ---------------------------------------------------------------- recording as in PyTorch


def _mlp():
    md.manual_seed(0)
    return md.nn.Sequential(md.nn.Linear(4, 8), md.nn.ReLU(), md.nn.Linear(8, 2))


def test_backward_without_record_leaves_gluons_own_writes_working():
    """Each multidev op records itself, so MXNet's switch is off between them: after a
    multidev forward and backward() without record(), Gluon's own parameter writes
    (``gluon.Trainer.step``, ``Parameter.set_data``) work, as they did with record()."""
    net = _mlp()
    x = md.asarray(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    loss = md.sum(net(x) ** 2)
    assert not mx.autograd.is_recording()  # no switch left on between the ops
    loss.backward()
    w = net[0].weight
    grad = w.grad.numpy().copy()
    before = w.numpy().copy()
    trainer = mx.gluon.Trainer([p.native for p in net.parameters()], "sgd", {"learning_rate": 0.5})
    trainer.step(1)
    np.testing.assert_allclose(w.numpy(), before - 0.5 * grad, rtol=1e-6, atol=1e-7)
    w.native.set_data(mnp.zeros(w.shape))
    np.testing.assert_array_equal(w.numpy(), 0.0)


def test_a_native_record_block_around_multidev_ops_still_records():
    """Inside MXNet's own ``autograd.record()`` the ops leave its switch on: native code
    after a multidev op is recorded too, and MXNet's backward reaches the parameters."""
    net = _mlp()
    x = md.asarray(np.ones((3, 4), np.float32))
    with mx.autograd.record():
        out = net(x).native
        assert mx.autograd.is_recording()
        loss = (out * out).sum()  # native ops on the multidev result
    loss.backward()
    assert net[0].weight.grad is not None
    np.testing.assert_array_less(0.0, np.abs(net[2].weight.grad.numpy()).sum())


def test_no_grad_and_set_grad_enabled_stop_the_ops_recording():
    net = _mlp()
    x = md.asarray(np.ones((3, 4), np.float32))
    with md.no_grad():
        loss = md.sum(net(x))
    with pytest.raises(md.AutogradError, match="no recorded computation"):
        loss.backward()
    md.set_grad_enabled(False)
    try:
        loss = md.sum(net(x))
    finally:
        md.set_grad_enabled(True)
    with pytest.raises(md.AutogradError, match="no recorded computation"):
        loss.backward()
    md.sum(net(x)).backward()  # enabled again
    assert net[0].weight.grad is not None
