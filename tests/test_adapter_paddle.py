"""What only makes sense for the PaddlePaddle adapter: places, native dtypes, storage sharing,
Paddle parameters, the results Paddle's own kernels get wrong or lack (checked against the NumPy
reference backend), and the GPU paths (run where a CUDA GPU is present)."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

paddle = pytest.importorskip("paddle")

from conftest import run_python  # noqa: E402

import multidev as md  # noqa: E402
from multidev import registry  # noqa: E402
from multidev.nn import functional as F  # noqa: E402
from multidev.testing import sample_values  # noqa: E402

BK = registry.load("paddle")
NO_GPU = BK.num_gpus() == 0
CUDA_BUILD = paddle.is_compiled_with_cuda()

PADDLE_DTYPES = {
    md.bool: paddle.bool,
    md.uint8: paddle.uint8,
    md.int8: paddle.int8,
    md.int16: paddle.int16,
    md.int32: paddle.int32,
    md.int64: paddle.int64,
    md.float16: paddle.float16,
    md.bfloat16: paddle.bfloat16,
    md.float32: paddle.float32,
    md.float64: paddle.float64,
}
NAN, INF = float("nan"), float("inf")


@pytest.fixture(autouse=True)
def _paddle_backend():
    with md.use_backend("paddle"):
        yield


def _run(code: str, timeout: float = 300, **env: str) -> str:
    """The output of ``code`` run in a fresh interpreter."""
    return run_python(code, timeout=timeout, **env).stdout


def _on_both(fn, *arrays):
    """``fn`` on md tensors of the paddle backend and of the NumPy reference backend."""
    got = fn(*[md.asarray(a) for a in arrays])
    with md.use_backend("numpy"):
        want = fn(*[md.asarray(a) for a in arrays])
    return got, want


def _assert_same(got, want, tol: float = 0.0) -> None:
    assert got.backend == "paddle"
    assert got.dtype is want.dtype, (got.dtype, want.dtype)
    assert BK.dtype_of(got.native) is got.dtype  # the native dtype is what multidev reports
    assert got.shape == want.shape, (got.shape, want.shape)
    g, w = np.asarray(got.numpy()), np.asarray(want.numpy())
    if got.dtype.kind == "f":
        np.testing.assert_allclose(
            g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol, equal_nan=True
        )
    else:
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------- selection ("Done when")


def test_new_tensors_carry_the_paddle_place_of_their_device():
    X = md.ones((2, 3), device=md.try_gpu())
    assert str(X.native.place) == ("Place(cpu)" if NO_GPU else "Place(gpu:0)")


def test_using_the_backend_prints_nothing():
    out = run_python(
        "import multidev as md; print((md.ones(2) + 1).tolist())", MULTIDEV_BACKEND="paddle"
    )
    assert out.stdout.strip() == "[2.0, 2.0]"
    assert "ccache" not in out.stderr and "Warning" not in out.stderr
    if not CUDA_BUILD:  # a CUDA build logs its GPU's properties when it first uses it
        assert out.stderr == ""


def test_to_same_device_is_identity_and_copy_is_new_storage():
    X = md.ones((2, 3), device=md.try_gpu())
    assert X.device is md.try_gpu()
    assert X.to(X.device) is X
    Y = X.to(X.device, copy=True)
    assert Y is not X
    assert Y.native.data_ptr() != X.native.data_ptr()
    np.testing.assert_array_equal(Y.numpy(), X.numpy())


def test_manual_seed_gives_numpy_backend_values_and_seeds_paddle():
    with md.use_backend("numpy"):
        md.manual_seed(0)
        want = md.rand(3).numpy()
    md.manual_seed(0)
    got = md.rand(3)
    assert got.backend == "paddle" and isinstance(got.native, paddle.Tensor)
    assert got.numpy().tobytes() == want.tobytes()
    md.manual_seed(7)
    a = paddle.rand([4]).numpy()
    paddle.seed(7)
    np.testing.assert_array_equal(a, paddle.rand([4]).numpy())


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


def test_places_are_parsed_and_produced():
    assert md.Device.parse(paddle.CPUPlace()) is md.cpu()
    assert md.Device.parse(md.ones(2).native.place) is md.cpu()
    assert BK.parse_native_device("Place(cpu)") is md.cpu()
    assert BK.parse_native_device("Place(gpu:1)") is md.gpu(1)
    assert BK.parse_native_device("Place(gpu_pinned)") is md.cpu()
    assert BK.parse_native_device("Place(xpu:0)") is None
    assert BK.parse_native_device(object()) is None
    assert md.cpu().native == paddle.CPUPlace()
    assert md.ones(2).native.place == paddle.CPUPlace()
    with pytest.raises(ValueError, match="Expected a device like"):
        md.Device.parse(object())
    if CUDA_BUILD:
        assert md.Device.parse(paddle.CUDAPlace(0)) is md.gpu(0)


def test_cpu_only_build_has_no_gpu_device():
    if not NO_GPU:
        pytest.skip("this machine has a GPU")
    assert md.devices() == [md.cpu()]
    assert md.default_device() is md.cpu()
    with pytest.raises(md.DeviceError, match="gpu:0"):
        md.ones(2, device="gpu:0")
    with pytest.raises(md.DeviceError, match="gpu:0"):
        BK.native_device(md.gpu(0))


def test_default_device_is_what_paddle_reports():
    assert md.default_device() is md.Device.parse(paddle.get_device())


# ---------------------------------------------------------------- dtypes and host transfer


@pytest.mark.parametrize("dt", list(PADDLE_DTYPES), ids=lambda d: d.name)
def test_native_dtype_and_bit_exact_round_trip(dt):
    src = sample_values(dt, np.random.default_rng(3))
    x = md.asarray(src)
    assert x.native.dtype == PADDLE_DTYPES[dt]
    assert BK.native_dtype(dt) == PADDLE_DTYPES[dt]
    assert BK.dtype_of(x.native) is dt and x.dtype is dt
    back = x.numpy()
    assert back.dtype == dt.numpy
    assert back.tobytes() == src.tobytes()
    assert md.zeros((2,), dtype=dt).native.dtype == PADDLE_DTYPES[dt]
    assert md.asarray(x.native).dtype is dt


def test_bfloat16_nan_payload_survives_both_ways():
    bits = np.array([0x7FC1, 0xFF80, 0x8000, 0x0001], dtype=np.uint16)
    src = bits.view(md.bfloat16.numpy)
    x = md.asarray(src)
    assert x.native.dtype == paddle.bfloat16
    assert x.native.view(paddle.int16).numpy().view(np.uint16).tolist() == bits.tolist()
    assert x.numpy().view(np.uint16).tolist() == bits.tolist()


@pytest.mark.parametrize("np_dtype", [np.complex64, np.uint16])
def test_unsupported_paddle_dtype_is_a_clear_type_error(np_dtype):
    t = paddle.utils.dlpack.from_dlpack(np.zeros(2, np_dtype))
    with pytest.raises(TypeError, match=r"(?s)Expected.*Received: .*paddle.*astype\('float32'\)"):
        md.asarray(t)


def test_from_numpy_is_zero_copy_on_cpu():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = md.asarray(a)
    assert x.native.data_ptr() == a.ctypes.data
    a[0, 0] = 42.0
    assert x.native[0, 0].item() == 42.0
    x[1, 1] = -1.0
    assert a[1, 1] == -1.0
    assert np.shares_memory(x.numpy(), a)


def test_from_numpy_bfloat16_is_zero_copy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4).astype(md.bfloat16.numpy)
    x = md.asarray(a)
    assert x.native.dtype == paddle.bfloat16
    assert x.native.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("kind", ["read_only", "negative_strides", "transposed", "big_endian"])
def test_from_numpy_copies_what_paddle_must_not_alias(kind):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    if kind == "read_only":
        src = a.copy()
        src.flags.writeable = False
    elif kind == "negative_strides":
        src = a[::-1, ::-2]
    elif kind == "transposed":
        src = a.T
    else:
        src = a.astype(">f4")
    before = np.array(src)
    x = md.asarray(src)
    assert x.dtype is md.float32 and x.shape == src.shape
    np.testing.assert_array_equal(x.numpy(), before)
    x[...] = -1.0  # the tensor is writable and its own
    np.testing.assert_array_equal(src, before)
    np.testing.assert_array_equal(a, np.arange(6, dtype=np.float32).reshape(2, 3))


def test_round_trips_through_numpy_memory_do_not_deadlock():
    # Paddle's DLPack deleter lock is not reentrant: importing memory that is itself a DLPack
    # export of a DLPack-imported tensor would hang when freed, so such arrays are copied.
    _run(
        """
        import gc
        import numpy as np, multidev as md
        for _ in range(20):
            x = md.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
            z = x.to_backend("numpy").to_backend("paddle")
            w = md.asarray(x.numpy()[1:])
            assert z.tolist() == x.tolist() and w.tolist() == x.tolist()[1:]
            del x, z, w
            gc.collect()
        print("ok")
        """,
        timeout=120,
        MULTIDEV_BACKEND="paddle",
    )


def test_native_tensor_keeps_its_storage_through_asarray():
    t = paddle.arange(6, dtype="float32").reshape([2, 3])
    x = md.asarray(t)
    assert x.native is t
    assert x.device is md.cpu() and x.dtype is md.float32
    x[0, 1] = 10.0
    assert t[0, 1].item() == 10.0
    x += 1
    assert x.native.data_ptr() == t.data_ptr()
    assert t[0, 1].item() == 11.0


def test_to_numpy_shares_cpu_memory_and_reads_parameters():
    x = md.arange(4, dtype=md.float32)
    arr = x.numpy()
    arr[0] = 5.0
    assert x.native[0].item() == 5.0
    var = BK.make_variable(x.native)
    np.testing.assert_array_equal(BK.to_numpy(var), [5.0, 1.0, 2.0, 3.0])


def test_dlpack_from_numpy_shares_memory():
    assert "dlpack" in BK.capabilities
    a = np.arange(4.0)
    t = BK.from_dlpack(a)
    a[1] = 9.0
    assert t[1].item() == 9.0 and BK.device_of(t) is md.cpu()


def test_full_is_created_natively_with_exact_values():
    x = md.full((2, 3), 2**62 + 1, dtype=md.int64)
    assert x.native.place == paddle.CPUPlace()
    assert x.numpy().tolist() == [[2**62 + 1] * 3] * 2
    assert md.full((), np.float32(2.5)).item() == 2.5
    assert md.full((0, 3), 1.0).shape == (0, 3)
    assert md.full((2,), NAN, dtype=md.bfloat16).numpy().dtype == md.bfloat16.numpy


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
        (a > 20, 0.0),
    ]:
        x[key] = value
        a[key] = value
        np.testing.assert_array_equal(x.numpy(), a)
    assert x.native.data_ptr() == ptr


def test_getitem_keys_match_numpy():
    a = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    x = md.asarray(a)
    for key in [
        (slice(None, None, -1),),
        (Ellipsis, slice(3, 0, -2)),
        (0, slice(None, None, -1), -1),
        (None, -1, Ellipsis),
        (slice(1, 1, -1),),
        (1, 2, 3),
        (),
    ]:
        np.testing.assert_array_equal(x[key].numpy(), a[key])
    for idx in (
        paddle.to_tensor(np.array([1, 0, 1], np.uint8)),  # positions, as in NumPy (not a mask)
        paddle.to_tensor(np.array([1, -1], np.int16)),
        paddle.to_tensor(np.array([True, False, True])),
    ):
        np.testing.assert_array_equal(md.asarray(a[0])[idx].numpy(), a[0][idx.numpy()])


def test_make_variable_is_a_trainable_parameter_with_its_own_storage():
    from paddle.base.framework import EagerParamBase

    src = md.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    var = BK.make_variable(src.native)
    assert isinstance(var, EagerParamBase) and isinstance(var, BK.tensor_types)
    assert not var.stop_gradient and var.trainable and var.is_leaf
    assert var.place == paddle.CPUPlace()
    assert var.data_ptr() != src.native.data_ptr()
    assert BK.variable_tensor(var) is var
    out = BK.setitem(var, (0, 0), 42.0)  # a leaf that requires grad: written under no_grad
    assert out is var and not var.stop_gradient
    assert BK.variable_tensor(var)[0, 0].item() == 42.0
    assert src.native[0, 0].item() == 0.0
    data = BK.detach(var)  # what p.data wraps: the same storage, outside recording
    BK.setitem(data, (1, slice(None)), 7.0)
    np.testing.assert_array_equal(var.numpy()[1], [7.0, 7.0, 7.0])
    (var * 2).sum().backward()
    np.testing.assert_array_equal(var.grad.numpy(), np.full((2, 3), 2.0, np.float32))
    ints = BK.make_variable(paddle.arange(3))
    assert isinstance(ints, EagerParamBase) and ints.stop_gradient


def test_parameter_data_writes_reach_the_paddle_parameter():
    p = md.nn.Parameter(md.zeros((2, 3)))
    p.data[0, 0] = 42.0
    p.data[:] += 1
    np.testing.assert_array_equal(p.native.numpy(), [[43.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    assert not p.native.stop_gradient


# ---------------------------------------------------------------- Paddle quirks the adapter fixes

QUIRKS = {
    "floor_divide_negative_int": (operator.floordiv, [-7, 7, -7, 7], [2, -2, -2, 2]),
    "remainder_negative_int": (operator.mod, [-7, 7, -7, 7], [2, -2, -2, 2]),
    "remainder_negative_float": (
        operator.mod,
        np.array([5.5, -5.5, 5.5, -5.5], np.float32),
        np.array([2.0, 2.0, -2.0, -2.0], np.float32),
    ),
    "floor_divide_0d_by_scalar": (lambda x: x // 2, np.array(7, np.int64)),
    "sum_over_no_axis": (lambda x: md.sum(x, axis=()), np.ones((2, 3), np.float32)),
    "max_over_no_axis": (lambda x: md.max(x, axis=()), np.ones((2, 3), np.float32)),
    "argmax_first_nan": (
        lambda x: md.argmax(x, axis=1),
        np.array([[1, NAN, 5, NAN], [INF, 2, NAN, 1], [1, 3, 3, 0]], np.float32),
    ),
    "argmin_first_nan": (md.argmin, np.array([1, -INF, NAN, -5], np.float32)),
    "argmax_inf_and_minus_inf": (md.argmax, np.array([1, -INF, INF, 5], np.float32)),
    "relu_keeps_nan": (F.relu, np.array([NAN, -INF, INF, -1, 2], np.float32)),
    "log_softmax_below_minus_64": (
        lambda x: F.log_softmax(x, -1),
        np.array([[10, 0, -100], [1000, 0, -1000]], np.float32),
    ),
    "clip_float64_beyond_float32": (lambda x: md.clip(x, min=0), np.array([1e300, -1e300, INF])),
    "clip_keeps_infinities": (lambda x: md.clip(x, max=1), np.array([-INF, 3.0], np.float32)),
    "clip_int_keeps_dtype": (lambda x: md.clip(x, -1.5, 2.5), np.array([-3, -1, 1, 3], np.int64)),
    "clip_int32_no_bound": (lambda x: md.clip(x, min=0), np.array([2**31 - 1, -5], np.int32)),
    "clip_min_above_max": (lambda x: md.clip(x, 3, 1), np.array([0, 2, 5, NAN], np.float32)),
    "maximum_with_scalar": (lambda x: md.maximum(x, 0), np.array([NAN, -1, 1], np.float32)),
    "uint8_add_wraps": (
        operator.add,
        np.array([200, 100], np.uint8),
        np.array([100, 200], np.uint8),
    ),
    "int8_mul_wraps": (operator.mul, np.array([100, -100], np.int8), np.array([3, 3], np.int8)),
    "int8_abs_of_min": (md.abs, np.array([-128, 5], np.int8)),
    "uint8_matmul": (operator.matmul, np.full((2, 40), 7, np.uint8), np.full((40, 2), 9, np.uint8)),
    "bool_matmul": (
        operator.matmul,
        np.array([[True, False], [False, False]]),
        np.ones((2, 1), bool),
    ),
    "float16_arithmetic": (
        lambda x, y: (x * y + x) / y,
        np.array([1.5, -2.25, 3.0], np.float16),
        np.array([0.5, 4.0, -1.0], np.float16),
    ),
    "bfloat16_exp": (md.exp, np.array([0.5, 1, 2], np.float32).astype(md.bfloat16.numpy)),
    "float16_mean": (md.mean, np.full(100, 0.3, np.float16)),
}


@pytest.mark.parametrize("name", list(QUIRKS))
def test_paddle_quirk_matches_numpy(name):
    fn, *arrays = QUIRKS[name]
    arrays = [np.asarray(a) for a in arrays]
    got, want = _on_both(fn, *arrays)
    tol = {md.float16: 2e-3, md.bfloat16: 1e-2}.get(want.dtype, 1e-6)
    _assert_same(got, want, tol)


def test_integer_division_by_zero_is_a_zero_division_error():
    with pytest.raises(ZeroDivisionError, match="Expected non-zero divisors"):
        md.asarray([3, 4]) // md.asarray([1, 0])
    with pytest.raises(ZeroDivisionError):
        7 % md.asarray([0, 1], dtype=md.int8)


def test_bool_arithmetic_pytorch_refuses_is_a_type_error():
    b = md.asarray([True, False])
    with pytest.raises(TypeError, match="Invert a mask with ~x"):
        operator.neg(b)
    for op, name in [
        (operator.sub, "subtract"),
        (operator.floordiv, "floor_divide"),
        (operator.mod, "remainder"),
        (operator.pow, "pow"),
    ]:
        with pytest.raises(TypeError, match=rf"Expected.*{name}.*Received: bool"):
            op(b, b)


_BINARY = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "pow": operator.pow,
    "maximum": md.maximum,
    "minimum": md.minimum,
    "equal": operator.eq,
    "less": operator.lt,
    "greater_equal": operator.ge,
    "and": operator.and_,
    "or": operator.or_,
    "where": lambda x, y: md.where(x > y, x, y),
    "add_scalar": lambda x, y: x + 1,
    "rsub_scalar": lambda x, y: 3 - x,
    "rfloordiv_scalar": lambda x, y: 7 // y,
    "max_scalar": lambda x, y: md.maximum(x, 1),
}
_UNARY = {
    "negative": operator.neg,
    "abs": md.abs,
    "exp": md.exp,
    "log": lambda x: md.log(md.abs(x) + 1),
    "sqrt": lambda x: md.sqrt(md.abs(x)),
    "sin": md.sin,
    "tanh": md.tanh,
    "sigmoid": F.sigmoid,
    "relu": F.relu,
    "floor": md.floor,
    "invert": operator.invert,
    "sum": md.sum,
    "mean": md.mean,
    "prod": md.prod,
    "max": md.max,
    "min_keepdims": lambda x: md.min(x, axis=None, keepdims=True),
    "sum_axis0": lambda x: md.sum(x, axis=0, keepdims=True),
    "argmax": md.argmax,
    "argmin_axis": lambda x: md.argmin(x, axis=-1, keepdims=True),
    "reshape": lambda x: md.reshape(x, (-1,)),
    "permute": lambda x: md.permute_dims(x, tuple(range(x.ndim))[::-1]),
    "concat": lambda x: md.concat([x, x], axis=0),
    "stack": lambda x: md.stack([x, x], axis=-1),
    "clip": lambda x: md.clip(x, -1, 2),
    "softmax": lambda x: F.softmax(x, -1),
    "log_softmax": lambda x: F.log_softmax(x, 0),
    "copy": lambda x: x.to(x.device, copy=True),
    "getitem": lambda x: x[..., None, ::-1],
    "mask": lambda x: x[x == x],
    "astype_float32": lambda x: md.astype(x, md.float32),
    "astype_int8": lambda x: md.astype(x, md.int8),
}


def _operand(dt: md.DType, shape: tuple[int, ...], seed: int, nonzero: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dt is md.bool:
        return np.asarray(rng.random(shape) > 0.5) | nonzero
    if dt.kind in "iu":
        low = 1 if nonzero else (0 if dt.kind == "u" else -5)
        return np.asarray(rng.integers(low, 6, shape)).astype(dt.numpy)
    a = np.asarray(rng.standard_normal(shape) * 3)
    return (np.abs(a) + 0.5 if nonzero else a).astype(dt.numpy)


@pytest.mark.parametrize("dt", list(PADDLE_DTYPES), ids=lambda d: d.name)
def test_every_op_matches_numpy_for_every_dtype_and_odd_shape(dt):
    """0-d and zero-size tensors, and dtypes Paddle has no CPU kernel for, give NumPy's
    results (dtype, shape, values); what NumPy itself refuses Paddle must refuse with the same
    error type; bool arithmetic that PyTorch refuses is skipped (a TypeError, tested above)."""
    tol = {md.float16: 2e-3, md.bfloat16: 2e-2}.get(dt, 1e-5)
    refused = {"floor_divide", "remainder", "pow"} if dt is md.bool else set()
    failures = []
    for shape in [(), (0,), (2, 3), (0, 3)]:
        a, b = _operand(dt, shape, 1), _operand(dt, shape, 2, nonzero=True)
        cases = [(n, f, (a, b)) for n, f in _BINARY.items()]
        cases += [(n, f, (a,)) for n, f in _UNARY.items()]
        for name, fn, arrays in cases:
            if name in refused:
                continue
            try:
                with md.use_backend("numpy"), np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of nothing
                    want = fn(*[md.asarray(x) for x in arrays])
            except Exception as refusal:
                try:
                    fn(*[md.asarray(x) for x in arrays])
                except type(refusal):
                    continue  # both refuse alike
                except Exception as e:
                    failures.append(f"{name}{shape}: {type(e).__name__} where NumPy {refusal!r}")
                    continue
                failures.append(f"{name}{shape}: a result where NumPy refused: {refusal!r}")
                continue
            try:
                got = fn(*[md.asarray(x) for x in arrays])
                _assert_same(got, want, tol)
            except Exception as e:
                failures.append(f"{name}{shape}: {type(e).__name__}: {str(e)[:200]}")
    assert not failures, "\n".join(failures)


MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 2)),
    ((4, 2, 3), (3, 2)),
    ((1, 2, 3), (5, 1, 3, 4)),
    ((0, 3), (3, 2)),
    ((2, 0), (0, 3)),
]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
def test_matmul_shapes_follow_the_array_api(sa, sb):
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    got, want = _on_both(operator.matmul, a, b)
    _assert_same(got, want, 1e-5)


# ---------------------------------------------------------------- native reference and linear


def test_linear_op_uses_the_pytorch_weight_layout():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    t = [md.asarray(a).native for a in (x, w, b)]
    np.testing.assert_allclose(BK.ops.linear(*t).numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(BK.ops.linear(*t[:2], None).numpy(), x @ w.T, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
@pytest.mark.parametrize("dt", [md.float32, md.bfloat16, md.float16, md.int64, md.bool])
def test_gpu_placement_and_round_trip(dt):
    src = sample_values(dt, np.random.default_rng(4))
    x = md.asarray(src, device=md.gpu(0))
    assert x.device is md.gpu(0) and x.native.place == paddle.CUDAPlace(0)
    assert BK.device_of(x.native) is md.gpu(0)
    assert x.numpy().tobytes() == src.tobytes()
    y = md.full((2, 2), 1, dtype=dt, device=md.gpu(0))
    assert y.native.place == paddle.CUDAPlace(0) and y.dtype is dt


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
def test_gpu_copies_ops_and_variables_stay_on_their_place():
    assert md.devices()[:2] == [md.cpu(), md.gpu(0)]
    assert md.Device.parse(paddle.CUDAPlace(0)) is md.gpu(0)
    assert md.gpu(0).native == paddle.CUDAPlace(0)
    x = md.arange(6, dtype=md.float32).reshape(2, 3)
    g = x.to(md.gpu(0))
    assert g.device is md.gpu(0) and g.native.place == paddle.CUDAPlace(0)
    assert g.to(md.gpu(0)) is g
    g2 = g.to(md.gpu(0), copy=True)
    assert g2.native.data_ptr() != g.native.data_ptr()
    h = g.to(md.cpu())
    assert h.device is md.cpu() and h.native.place == paddle.CPUPlace()
    for out in (g + g, g @ g.T, md.sum(g, axis=1), F.relu(g), g[0], g > 1, md.argmax(g)):
        assert out.device is md.gpu(0) and out.native.place == paddle.CUDAPlace(0)
    np.testing.assert_allclose((g @ g.T).numpy(), x.numpy() @ x.numpy().T)
    with pytest.raises(md.DeviceMismatchError):
        g + x
    half = md.ones((4, 4), dtype=md.float16, device=md.gpu(0))
    assert ((half @ half) * 2).numpy().tolist() == [[8.0] * 4] * 4
    var = BK.make_variable(g.native)
    assert var.place == paddle.CUDAPlace(0) and not var.stop_gradient
    BK.setitem(var, (0, 0), 42.0)
    assert var[0, 0].item() == 42.0
    with md.gpu(0):
        assert md.zeros(2).device is md.gpu(0)
