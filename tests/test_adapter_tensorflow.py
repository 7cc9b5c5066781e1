"""What only makes sense for the TensorFlow adapter: logical CPU devices, native device
objects and dtypes, zero-copy creation, immutable tensors written through replacement,
tf.Variable parameters, and the GPU paths (run where a GPU is present)."""

from __future__ import annotations

import json

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from conftest import run_python  # noqa: E402

import multidev as md  # noqa: E402
from multidev import registry  # noqa: E402
from multidev.testing import sample_values  # noqa: E402

BK = registry.load("tensorflow")
NO_GPU = BK.num_gpus() == 0
MULTI_CPU = md.cpu(1) in BK.device_set()
needs_cpu1 = pytest.mark.skipif(
    not MULTI_CPU, reason="TensorFlow was initialised before multidev: no logical CPU:1"
)

TF_DTYPES = {
    md.bool: tf.bool,
    md.uint8: tf.uint8,
    md.int8: tf.int8,
    md.int16: tf.int16,
    md.int32: tf.int32,
    md.int64: tf.int64,
    md.float16: tf.float16,
    md.bfloat16: tf.bfloat16,
    md.float32: tf.float32,
    md.float64: tf.float64,
}


@pytest.fixture(autouse=True)
def _tensorflow_backend():
    with md.use_backend("tensorflow"):
        yield


def _run(code: str, **env: str) -> str:
    """The last line ``code`` prints, run in a fresh interpreter (TF's runtime starts clean)."""
    return run_python(code, **env).stdout.strip().splitlines()[-1]


def _aligned(shape, dtype) -> np.ndarray:
    """A writable array whose buffer is aligned as TensorFlow's kernels require."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    buf = np.empty(n + 64, np.uint8)
    off = (-buf.ctypes.data) % 64
    return buf[off : off + n].view(dtype).reshape(shape)


def _misaligned(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    buf = np.empty(n + 128, np.uint8)
    off = (-buf.ctypes.data) % 64 + 16
    return buf[off : off + n].view(dtype).reshape(shape)


# ---------------------------------------------------------------- selection ("Done when")


def test_fresh_runtime_has_two_cpu_devices_and_names_native_devices():
    out = _run(
        """
        import json
        import multidev as md
        X = md.ones((2, 3), device=md.try_gpu())
        print(json.dumps({
            "gpus": md.num_gpus(),
            "x_native_device": X.native.device,
            "devices": [str(d) for d in md.devices()],
        }))
        """,
        MULTIDEV_BACKEND="tensorflow",
    )
    r = json.loads(out)
    assert r["devices"][:2] == ["cpu", "cpu:1"]
    want = "/device:CPU:0" if r["gpus"] == 0 else "/device:GPU:0"
    assert r["x_native_device"].endswith(want)


def test_cpu_device_count_comes_from_the_environment_and_hides_no_gpu_setting():
    out = _run(
        """
        import json, multidev as md
        from multidev import registry
        print(json.dumps({"devices": [str(d) for d in md.devices()], "gpus": md.num_gpus(),
                          "caps": sorted(registry.current().capabilities)}))
        """,
        MULTIDEV_BACKEND="tensorflow",
        MULTIDEV_TF_CPU_DEVICES="3",
        CUDA_VISIBLE_DEVICES="",
    )
    r = json.loads(out)
    assert r["devices"] == ["cpu", "cpu:1", "cpu:2"]
    assert r["gpus"] == 0
    assert "multi_device" in r["caps"]


def test_runtime_initialised_by_the_user_is_left_as_it_is():
    out = _run(
        """
        import json
        import tensorflow as tf
        tf.constant(1.0)  # initialises TensorFlow's devices
        import multidev as md
        from multidev import registry
        md.set_backend("tensorflow")
        print(json.dumps({"devices": [str(d) for d in md.devices() if d.type == "cpu"],
                          "logical": len(tf.config.list_logical_devices("CPU")),
                          "caps": sorted(registry.current().capabilities)}))
        """
    )
    r = json.loads(out)
    assert r["devices"] == ["cpu"] and r["logical"] == 1
    assert "multi_device" not in r["caps"]


def test_invalid_cpu_device_count_is_a_clear_error():
    out = _run(
        """
        import multidev as md
        try:
            md.set_backend("tensorflow")
        except ValueError as e:
            print(e)
        """,
        MULTIDEV_TF_CPU_DEVICES="two",
    )
    assert "Expected MULTIDEV_TF_CPU_DEVICES to be a positive integer" in out and "'two'" in out


def test_to_same_device_is_identity_and_copy_owns_its_buffer():
    a = _aligned((2, 3), np.float32)
    a[...] = 1.0
    X = md.asarray(a, device=md.cpu())
    assert X.to(X.device) is X
    Y = X.to(X.device, copy=True)
    assert Y is not X and Y.native is not X.native
    a[0, 0] = 5.0  # X shares a's memory; the copy does not
    assert X.numpy()[0, 0] == 5.0
    np.testing.assert_array_equal(Y.numpy(), np.ones((2, 3), np.float32))


def test_manual_seed_gives_numpy_backend_values_and_seeds_tensorflow():
    with md.use_backend("numpy"):
        md.manual_seed(0)
        want = md.rand(3).numpy()
    md.manual_seed(0)
    got = md.rand(3)
    assert isinstance(got.native, tf.Tensor)
    assert got.numpy().tobytes() == want.tobytes()
    md.manual_seed(7)
    first = tf.random.uniform([4]).numpy()
    tf.random.set_seed(7)
    np.testing.assert_array_equal(first, tf.random.uniform([4]).numpy())


def test_bool_mask_multiplies_in_place():
    md.manual_seed(1)
    w = md.randn(3, 3)
    before = w.numpy().copy()
    w *= md.abs(w) >= 0.5
    assert w.dtype is md.float32 and w.device is md.default_device()
    assert w.native.dtype == tf.float32
    np.testing.assert_array_equal(w.numpy(), before * (np.abs(before) >= 0.5))


# ---------------------------------------------------------------- logical CPU devices


@needs_cpu1
def test_tensor_made_inside_a_device_scope_lives_there():
    with md.cpu(1):
        x = md.ones((2, 2))
        r = md.rand(2, 2)
        a = md.asarray(np.arange(4.0))
    for t in (x, r, a):
        assert t.device is md.cpu(1)
        assert t.native.device.endswith("/device:CPU:1")
    moved = x.to(md.cpu())
    assert moved.device is md.cpu() and moved.native.device.endswith("/device:CPU:0")
    back = moved.to("/CPU:1")
    assert back.native.device.endswith("/device:CPU:1")


@needs_cpu1
def test_ops_on_cpu1_keep_their_results_on_cpu1():
    x = md.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device=md.cpu(1))
    idx = md.asarray([1, 0], device=md.cpu(1))
    results = [
        x + x,
        x * 2,
        -x,
        x @ x.T,
        md.exp(x),
        md.sum(x, axis=0),
        md.argmax(x, axis=1),
        x.astype(md.int32),
        x[0],
        x[idx],
        x[x > 2],
        md.nn.functional.softmax(x),
        md.concat([x, x]),
        md.where(x > 1, x, 0.0),
        x == 3,
    ]
    for r in results:
        assert r.device is md.cpu(1)
        assert r.native.device.endswith("/device:CPU:1"), r
    y = x.to(md.cpu(1), copy=True)
    y[0, 0] = 100.0
    y[y > 4] = 0.0
    assert y.native.device.endswith("/device:CPU:1")
    assert y.numpy()[0, 0] == 0.0 and x.numpy()[0, 0] == 0.0


@needs_cpu1
def test_mixing_devices_raises_device_mismatch():
    a = md.ones(3)
    b = md.ones(3, device=md.cpu(1))
    with pytest.raises(md.DeviceMismatchError, match=r"cpu:1"):
        a + b
    with pytest.raises(md.DeviceMismatchError):
        md.stack([a, b])


# ---------------------------------------------------------------- devices


def test_native_device_objects_are_parsed_and_produced():
    parse = md.Device.parse
    assert parse(tf.config.LogicalDevice(name="/device:CPU:1", device_type="CPU")) is md.cpu(1)
    assert parse(tf.config.PhysicalDevice(name="/physical_device:GPU:2", device_type="GPU")) is (
        md.gpu(2)
    )
    assert parse(tf.config.list_physical_devices("CPU")[0]) is md.cpu()
    assert parse(tf.config.list_logical_devices("CPU")[0]) is md.cpu()
    assert parse(tf.DeviceSpec(device_type="GPU", device_index=1)) is md.gpu(1)
    assert parse(tf.DeviceSpec.from_string("/job:localhost/device:CPU:0")) is md.cpu()
    assert parse("/job:localhost/replica:0/task:0/device:CPU:1") is md.cpu(1)
    assert md.cpu().native == "/CPU:0"
    assert BK.native_device(md.gpu(1)) == "/GPU:1"
    with pytest.raises(ValueError, match="Expected a device like"):
        parse(tf.DeviceSpec(device_type="TPU", device_index=0))
    with tf.device(md.cpu().native):
        t = tf.ones(2)
    assert BK.device_of(t) is md.cpu()


def test_default_placement_is_the_only_unscoped_device():
    assert BK.default_device() is (md.cpu() if NO_GPU else md.gpu(0))
    assert BK.default_device() not in BK.scoped_devices
    assert BK.scoped_devices == BK.device_set() - {BK.default_device()}
    assert BK.devices()[0] is md.cpu()


def test_cpu_only_machine_has_no_gpu_device():
    if not NO_GPU:
        pytest.skip("this machine has a GPU")
    assert all(d.type == "cpu" for d in md.devices())
    with pytest.raises(md.DeviceError, match="gpu:0"):
        md.ones(2, device="/GPU:0")


# ---------------------------------------------------------------- dtypes and host transfer


@pytest.mark.parametrize("dt", list(TF_DTYPES), ids=lambda d: d.name)
def test_native_dtype_and_bit_exact_round_trip(dt):
    src = sample_values(dt, np.random.default_rng(3))
    x = md.asarray(src)
    assert x.native.dtype == TF_DTYPES[dt]
    assert BK.native_dtype(dt) == TF_DTYPES[dt]
    assert BK.dtype_of(x.native) is dt and x.dtype is dt
    back = x.numpy()
    assert back.dtype == dt.numpy
    assert back.tobytes() == src.tobytes()
    assert md.zeros((2,), dtype=dt).native.dtype == TF_DTYPES[dt]
    scalar = md.asarray(src[0, 1])
    assert scalar.shape == () and scalar.numpy().dtype == dt.numpy
    assert scalar.numpy().tobytes() == src[0, 1].tobytes()


def test_bfloat16_nan_payload_survives_both_ways():
    bits = np.array([0x7FC1, 0xFF80, 0x8000, 0x0001], dtype=np.uint16)
    x = md.asarray(bits.view(md.bfloat16.numpy))
    assert tf.bitcast(x.native, tf.uint16).numpy().tolist() == bits.tolist()
    assert x.numpy().view(np.uint16).tolist() == bits.tolist()


@pytest.mark.parametrize("tdt", [tf.qint8, tf.string])
def test_unsupported_tensorflow_dtype_is_a_clear_type_error(tdt):
    t = tf.constant(["a", "b"]) if tdt == tf.string else tf.cast(tf.zeros(2), tdt)
    with pytest.raises(
        TypeError, match=rf"(?s)Expected.*Received: dtype {tdt.name} on the tensorflow.*tf.cast"
    ):
        md.asarray(t)


def test_from_numpy_is_zero_copy_on_cpu_for_aligned_writable_arrays():
    a = _aligned((3, 4), np.float32)
    a[...] = np.arange(12).reshape(3, 4)
    x = md.asarray(a, device=md.cpu())
    assert isinstance(x.native, tf.Tensor)
    a[0, 0] = 42.0
    assert float(x.native[0, 0]) == 42.0
    view = x.numpy()
    assert np.shares_memory(view, a) and not view.flags.writeable


@pytest.mark.parametrize("kind", ["misaligned", "read_only", "strided", "bfloat16", "cpu1"])
def test_from_numpy_copies_what_tensorflow_cannot_alias(kind):
    a = (_misaligned if kind == "misaligned" else _aligned)((4, 6), np.float32)
    a[...] = np.arange(24).reshape(4, 6)
    src, device = a, None
    if kind == "read_only":
        a.flags.writeable = False
    elif kind == "strided":
        src = a[::-1, ::2]
    elif kind == "bfloat16":
        src = a.astype(md.bfloat16.numpy)
    elif kind == "cpu1":
        if not MULTI_CPU:
            pytest.skip("no logical CPU:1")
        device = md.cpu(1)
    x = md.asarray(src, device=device)
    expected = np.array(src)
    y = x * 2 + 1  # runs TensorFlow kernels on the new buffer
    np.testing.assert_array_equal(y.numpy(), expected * 2 + 1)
    if a.flags.writeable:
        a[...] = -7
        np.testing.assert_array_equal(x.numpy(), expected)


def test_native_tensor_keeps_its_identity_through_asarray():
    with tf.device("/CPU:0"):
        t = tf.reshape(tf.range(6, dtype=tf.float32), (2, 3))
        v = tf.Variable(t)
    x = md.asarray(t)
    assert x.native is t
    assert x.device is md.cpu() and x.dtype is md.float32
    xv = md.asarray(v)
    assert xv.native is v
    xv[0, 1] = 10.0
    xv += 1
    assert xv.native is v
    np.testing.assert_array_equal(v.numpy(), [[1, 11, 3], [4, 5, 6]])


def test_dlpack_shares_memory_and_guards_alignment():
    assert "dlpack" in BK.capabilities
    a = _aligned((4,), np.float64)
    a[...] = 0.0
    t = BK.from_dlpack(a)
    a[1] = 9.0
    assert float(t[1]) == 9.0 and BK.device_of(t) is md.cpu()
    m = _misaligned((4,), np.float64)
    m[...] = 1.0
    u = BK.from_dlpack(m)
    assert float(tf.reduce_sum(u + u)) == 8.0


# ---------------------------------------------------------------- indexing and in-place writes

_X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
KEYS = [
    0,
    -1,
    (1, slice(None), -2),
    (Ellipsis, slice(None, None, -2)),
    (None, 0, slice(1, 3), Ellipsis),
    (),
    np.array([1, 0, 1]),
    (slice(None), np.array([2, -1])),
    (np.array([[0, 1], [1, 0]]),),
    (np.array([0, 1]), np.array([1, 2])),
    (np.array([0, 1]), slice(None), np.array([1, 2])),
    (0, slice(None), np.array([0, 1])),
    (slice(None), np.array([[1], [2]]), np.array([0, 3])),
    (_X[:, 0, 0, 0] > 30,),
    (_X[:, :, 0, 0] > 20,),
    (Ellipsis, _X[0, 0, 0] > 2),
    (_X > 50,),
    (_X[:, :, :, 0] > 30, np.array([0])),
    (np.array([], dtype=np.int64),),
    (np.array([0, 1], np.uint8),),
    (True,),
]


def _native_key(key):
    keys = key if isinstance(key, tuple) else (key,)
    out = tuple(tf.constant(k) if isinstance(k, np.ndarray) else k for k in keys)
    return out if isinstance(key, tuple) else out[0]


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_getitem_matches_numpy(key):
    got = BK.to_numpy(BK.ops.getitem(tf.constant(_X), _native_key(key)))
    want = _X[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
@pytest.mark.parametrize("kind", ["tensor", "variable"])
def test_setitem_matches_numpy_on_tensors_and_variables(key, kind):
    want = _X.copy()
    part = want[key]
    value = np.float32(-1) if part.size == 0 else -np.arange(part.shape[-1], dtype=np.float32)
    want[key] = value
    x = tf.constant(_X) if kind == "tensor" else tf.Variable(_X)
    before = tf.identity(x)
    out = BK.setitem(x, _native_key(key), tf.constant(value))
    np.testing.assert_array_equal(BK.to_numpy(out), want)
    if kind == "variable":
        assert out is x  # assigned in place
    else:
        np.testing.assert_array_equal(x.numpy(), before.numpy())  # tensors stay immutable


def test_out_of_range_index_is_an_index_error():
    x = md.asarray(np.zeros((2, 3)))
    with pytest.raises(IndexError, match=r"Expected indices within shape \(2, 3\)"):
        x[5]
    with pytest.raises(IndexError):
        x[md.asarray([0, 7])]


def test_setitem_on_a_tensor_replaces_its_native_and_leaves_sharers_alone():
    x = md.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    alias = md.asarray(x.native)
    x[0, 1] = 42.0
    x[:, -1] = md.asarray([7.0, 8.0])
    x[x > 40] += 1
    assert isinstance(x.native, tf.Tensor)
    np.testing.assert_array_equal(x.numpy(), [[0, 43, 7], [3, 4, 8]])
    np.testing.assert_array_equal(alias.numpy(), [[0, 1, 2], [3, 4, 5]])
    with pytest.raises(md.ShapeError, match=r"broadcasts to the shape \(2,\)"):
        x[:, 0] = md.asarray([1.0, 2.0, 3.0])


def test_make_variable_is_a_trainable_variable_with_its_own_storage():
    a = _aligned((2, 3), np.float32)
    a[...] = np.arange(6).reshape(2, 3)
    src = md.asarray(a, device=md.cpu())
    var = BK.make_variable(src.native)
    assert isinstance(var, tf.Variable) and var.trainable
    assert BK.device_of(var) is md.cpu()
    assert BK.variable_tensor(var) is var
    a[0, 0] = -5.0  # the source aliases a; the variable does not
    assert float(var[0, 0]) == 0.0
    out = BK.setitem(var, (0, 0), 42.0)
    assert out is var
    assert float(BK.variable_tensor(var)[0, 0]) == 42.0
    BK.setitem(var, tf.constant([False, True]), 1.0)
    np.testing.assert_array_equal(var.numpy(), [[42, 1, 2], [1, 1, 1]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(BK.variable_tensor(var) * 2.0)
    np.testing.assert_array_equal(tape.gradient(loss, var).numpy(), np.full((2, 3), 2.0))


@needs_cpu1
def test_make_variable_stays_on_its_tensors_device():
    src = md.ones((2,), device=md.cpu(1))
    var = BK.make_variable(src.native)
    assert var.device.endswith("/device:CPU:1")
    assert BK.device_of(BK.variable_tensor(var)) is md.cpu(1)


# ---------------------------------------------------------------- semantics TensorFlow lacks


def test_integer_and_bool_matmul_are_exact():
    rng = np.random.default_rng(5)
    for dt in (np.bool_, np.uint8, np.int8, np.int16, np.int64):
        a = rng.integers(0, 3, (2, 3, 4)).astype(dt)
        b = rng.integers(0, 3, (4, 5)).astype(dt)
        np.testing.assert_array_equal((md.asarray(a) @ md.asarray(b)).numpy(), a @ b)
        np.testing.assert_array_equal((md.asarray(a[0, 0]) @ md.asarray(b)).numpy(), a[0, 0] @ b)
        np.testing.assert_array_equal(
            (md.asarray(a[0, 0]) @ md.asarray(a[1, 1])).numpy(), a[0, 0] @ a[1, 1]
        )


def test_floor_semantics_and_integer_division_by_zero():
    a = np.array([-7, -1, 0, 5, 7], np.int32)
    b = np.array([2, -3, 4, -2, 3], np.int32)
    x, y = md.asarray(a, device=md.cpu()), md.asarray(b, device=md.cpu())
    np.testing.assert_array_equal((x // y).numpy(), a // b)
    np.testing.assert_array_equal((x % y).numpy(), a % b)
    f = np.array([-7.5, 7.5, -0.5], np.float32)
    np.testing.assert_array_equal((md.asarray(f) % -2.0).numpy(), f % np.float32(-2.0))
    with pytest.raises(ZeroDivisionError, match="Expected a divisor without zeros"):
        x // md.zeros(5, dtype=md.int32, device=md.cpu())
    with pytest.raises(ValueError, match="Expected non-negative exponents"):
        x ** md.asarray([1, -1, 2, 0, 1], dtype=md.int32, device=md.cpu())
    np.testing.assert_array_equal((x ** md.asarray(b % 3, device=md.cpu())).numpy(), a ** (b % 3))


def test_bool_and_uint8_arithmetic_follow_numpy():
    m = np.array([True, False, True])
    n = np.array([True, True, False])
    bm, bn = md.asarray(m), md.asarray(n)
    np.testing.assert_array_equal((bm + bn).numpy(), m + n)
    np.testing.assert_array_equal((bm * bn).numpy(), m * n)
    np.testing.assert_array_equal(md.maximum(bm, bn).numpy(), np.maximum(m, n))
    np.testing.assert_array_equal((bm < bn).numpy(), m < n)
    with pytest.raises(TypeError, match="Invert a mask with ~x"):
        _ = -bm
    u = np.array([0, 1, 200], np.uint8)
    np.testing.assert_array_equal((-md.asarray(u)).numpy(), -u)
    np.testing.assert_array_equal(abs(md.asarray(u)).numpy(), u)


def test_argmax_picks_the_first_nan_like_numpy():
    a = np.array([[1.0, np.nan, 3.0], [np.nan, 5.0, np.nan]], np.float32)
    x = md.asarray(a)
    assert md.argmax(x).item() == np.argmax(a)
    np.testing.assert_array_equal(md.argmax(x, axis=1).numpy(), np.argmax(a, axis=1))
    np.testing.assert_array_equal(md.argmin(x, axis=0).numpy(), np.argmin(a, axis=0))
    assert md.argmax(x, axis=1).dtype is md.int64


@pytest.mark.parametrize("outs", [16, 1024])  # a (1024, 1024) weight: the (w @ x.T).T path
def test_linear_and_its_gradients_match_numpy_on_both_matmul_orders(outs):
    rng = np.random.default_rng(6)
    x, w, b = (rng.standard_normal(s) for s in ((4, 1024), (outs, 1024), (outs,)))
    lin = md.nn.Linear(1024, outs, dtype=md.float64)
    lin.load_state_dict({"weight": w, "bias": b})
    with md.autograd.record():
        y = lin(md.asarray(x))
        loss = (y * y).sum()
    loss.backward()
    expected = x @ w.T + b
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(lin.weight.grad.numpy(), 2 * expected.T @ x, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(
        lin.bias.grad.numpy(), 2 * expected.sum(axis=0), rtol=1e-10, atol=1e-10
    )


# ---------------------------------------------------------------- native reference


# ---------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
@pytest.mark.parametrize("dt", [md.float32, md.bfloat16, md.int32, md.int64, md.bool])
def test_gpu_placement_and_round_trip(dt):
    src = sample_values(dt, np.random.default_rng(4))
    x = md.asarray(src, device=md.gpu(0))
    assert x.device is md.gpu(0) and x.native.device.endswith("/device:GPU:0")
    assert x.numpy().tobytes() == src.tobytes()
    y = md.full((2, 2), 1, dtype=dt, device="/GPU:0")
    assert y.native.device.endswith("/device:GPU:0")
    z = y.to(md.cpu())
    assert z.native.device.endswith("/device:CPU:0") and z.device is md.cpu()


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
def test_gpu_is_the_default_and_cpu_ops_stay_on_the_cpu():
    assert md.default_device() is md.gpu(0) and md.try_gpu() is md.gpu(0)
    assert md.cpu() in BK.scoped_devices
    g = md.ones((4, 4))
    assert g.device is md.gpu(0) and (g @ g).native.device.endswith("/device:GPU:0")
    c = md.ones((4, 4), device=md.cpu())
    for r in (c @ c, c + 1, md.sum(c), c[c > 0], md.nn.functional.softmax(c)):
        assert r.device is md.cpu() and r.native.device.endswith("/device:CPU:0")
    with pytest.raises(md.DeviceMismatchError):
        g + c
    c[0, 0] = 3.0
    assert c.native.device.endswith("/device:CPU:0")
    var = BK.make_variable(g.native)
    assert var.device.endswith("/device:GPU:0")
    BK.setitem(var, (0, 0), 5.0)
    assert float(var[0, 0]) == 5.0


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
def test_gpu_memory_growth_is_on():
    for gpu in tf.config.list_physical_devices("GPU"):
        assert tf.config.experimental.get_memory_growth(gpu)
