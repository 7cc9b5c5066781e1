"""Section "torch_fluency": the PyTorch spellings (DESIGN §10) with PyTorch's meaning.

Each result is compared with the NumPy reference backend (values, dtype, shape) and, where
the adapter's reference module has the computation, with the framework's own code; each is
checked to be an ``md.Tensor`` of the active backend on the expected device.
"""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.testing import native_reference

autograd = pytest.mark.requires("autograd")
RTOL, ATOL = 1e-6, 1e-6


@pytest.fixture
def native(bk):
    """The framework's own reference ops, or None on the NumPy backend (the reference itself)."""
    return native_reference(bk)


def _same_as_reference(fn, *arrays: np.ndarray) -> md.Tensor:
    """``fn`` on md tensors of the active backend, checked against the NumPy backend."""
    got = fn(*[md.asarray(a) for a in arrays])
    with md.use_backend("numpy"):
        want = fn(*[md.asarray(a) for a in arrays])
    _check(got, want.numpy(), want.dtype)
    return got


def _check(t, want, dtype, device=None) -> None:
    assert isinstance(t, md.Tensor), type(t)
    assert t.backend == md.get_backend()
    assert t.device is (md.default_device() if device is None else device)
    assert t.dtype is dtype, (t.dtype, dtype)
    want = np.asarray(want)
    assert t.shape == want.shape, (t.shape, want.shape)
    np.testing.assert_allclose(t.numpy(), want, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------- creation


@pytest.mark.parametrize("name", ["zeros", "ones", "rand", "randn"])
def test_shape_as_varargs_tuple_list_or_size(name):
    fn = getattr(md, name)
    for t in (fn(2, 3), fn((2, 3)), fn([2, 3]), fn(size=(2, 3))):
        assert isinstance(t, md.Tensor) and t.backend == md.get_backend()
        assert t.shape == (2, 3) and t.dtype is md.float32 and t.device is md.default_device()
    assert fn(4).shape == (4,)
    with pytest.raises(TypeError, match="size="):
        fn(2, 3, size=(2, 3))


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_seeded_random_values_are_the_references(name):
    md.manual_seed(7)
    got = getattr(md, name)(size=(3, 4))
    with md.use_backend("numpy"):
        md.manual_seed(7)
        want = getattr(md, name)(3, 4)
    _check(got, want.numpy(), md.float32)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    "make",
    [
        lambda: md.zeros(2, 3, requires_grad=True),
        lambda: md.ones((2, 3), requires_grad=True),
        lambda: md.full((2, 3), 0.5, requires_grad=True),
        lambda: md.rand(2, 3, requires_grad=True),
        lambda: md.randn(size=(2, 3), requires_grad=True),
        lambda: md.tensor([[1.0, 2, 3], [4, 5, 6]], requires_grad=True),
        lambda: md.arange(6, dtype=md.float32, requires_grad=True),
        lambda: md.eye(2, 3, requires_grad=True),
        lambda: md.zeros_like(md.ones(2), requires_grad=True),
    ],
)
def test_requires_grad_on_creation_gives_a_parameter(make):
    x = make()
    assert isinstance(x, nn.Parameter) and x.requires_grad is True
    assert x.dtype is md.float32 and x.device is md.default_device() and x.grad is None


def test_requires_grad_defaults_to_false():
    for x in (md.zeros(2), md.rand(2), md.tensor([1.0]), md.arange(3)):
        assert isinstance(x, md.Tensor) and not isinstance(x, nn.Parameter)
        assert x.requires_grad is False
    assert nn.Parameter(md.ones(2), requires_grad=False).requires_grad is False


def test_requires_grad_needs_floating_point():
    with pytest.raises(TypeError, match="floating-point"):
        md.tensor([1, 2], requires_grad=True)
    with pytest.raises(TypeError, match="floating-point"):
        md.randint(3, (2,), requires_grad=True)


@autograd
def test_requires_grad_tensor_gets_its_gradient():
    x = md.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert isinstance(x, md.nn.Parameter)
    with md.autograd.record():
        y = (x * x).sum()
    y.backward()
    _check(x.grad, [2.0, 4.0, 6.0], md.float32)


def test_tensor_copies_and_infers_dtypes_as_pytorch():
    src = np.arange(4, dtype=np.float32)
    t = md.tensor(src)
    src[0] = 100
    _check(t, [0.0, 1.0, 2.0, 3.0], md.float32)
    _check(md.tensor([1, 2, 3]), [1, 2, 3], md.int64)
    _check(md.tensor([1.5, 2]), [1.5, 2.0], md.float32)
    _check(md.tensor([True, False]), [True, False], md.bool)
    _check(md.tensor(3.0), np.float32(3.0), md.float32)
    _check(md.tensor([1, 2], dtype=md.float64), [1.0, 2.0], md.float64)
    c = md.tensor(t)
    assert c is not t
    c[0] = 7.0
    assert t[0].item() == 0.0


def test_tensor_is_the_function_and_the_module_stays_importable():
    import importlib

    assert callable(md.tensor) and callable(md.device)
    assert importlib.import_module("multidev.tensors").Tensor is md.Tensor
    assert importlib.import_module("multidev.device").Device is md.Device


def test_float_tensor():
    t = md.FloatTensor([1, 2, 3])
    _check(t, [1.0, 2.0, 3.0], md.float32)
    assert md.FloatTensor(2, 3).shape == (2, 3)
    assert isinstance(t, md.FloatTensor) and not isinstance(md.tensor([1]), md.FloatTensor)
    with pytest.raises(TypeError, match="FloatTensor"):
        md.FloatTensor([1], [2])


def test_randint_forms_range_and_seeded_values():
    md.manual_seed(3)
    a = md.randint(10, (50,))
    b = md.randint(5, 10, (50,))
    c = md.randint(10, size=(2, 3), dtype=md.int32)
    with md.use_backend("numpy"):
        md.manual_seed(3)
        ref = [md.randint(10, (50,)), md.randint(5, 10, (50,)), md.randint(10, size=(2, 3))]
    _check(a, ref[0].numpy(), md.int64)
    _check(b, ref[1].numpy(), md.int64)
    _check(c, ref[2].numpy().astype(np.int32), md.int32)
    assert a.numpy().min() >= 0 and a.numpy().max() < 10 and len(set(a.tolist())) > 1
    assert b.numpy().min() >= 5 and b.numpy().max() < 10
    with pytest.raises(ValueError, match="low < high"):
        md.randint(3, 3, (2,))
    with pytest.raises(TypeError, match="size"):
        md.randint(3)


def test_randperm_is_a_seeded_permutation():
    md.manual_seed(11)
    p = md.randperm(20)
    with md.use_backend("numpy"):
        md.manual_seed(11)
        want = md.randperm(20).numpy()
    _check(p, want, md.int64)
    assert sorted(p.tolist()) == list(range(20))
    assert md.randperm(0).shape == (0,)
    with pytest.raises(ValueError, match="non-negative"):
        md.randperm(-1)


# ---------------------------------------------------------------- devices


def test_device_names_a_device_without_placing_anything():
    assert md.device("cuda:1") is md.gpu(1) and isinstance(md.device("cuda:1"), md.Device)
    assert md.device("cuda") is md.gpu(0) and md.device("cuda", 1) is md.gpu(1)
    assert md.device("cpu") is md.cpu()
    assert md.Device("cuda:1") is md.gpu(1) and md.Device("cuda", 1) is md.gpu(1)
    with pytest.raises(ValueError, match="Expected a device like"):
        md.device("tpu:0")
    with pytest.raises(ValueError, match="Expected a device like"):
        md.Device("cuda:1", 2)


def test_cuda_queries_count_the_backends_gpus():
    assert md.cuda.device_count() == md.num_gpus()
    assert md.cuda.is_available() is (md.num_gpus() > 0)


def test_cuda_to_a_missing_gpu_raises_device_error():
    x = md.ones(2)
    missing = md.num_gpus()
    with pytest.raises(md.DeviceError, match=f"gpu:{missing}"):
        x.cuda(missing)
    if missing == 0:
        with pytest.raises(md.DeviceError):
            x.cuda()


@pytest.mark.gpu
def test_cuda_and_cpu_move_and_keep_identity():
    x = md.tensor([1.0, 2.0])
    y = x.cuda()
    _check(y, [1.0, 2.0], md.float32, device=md.gpu(0))
    assert y.cuda(0) is y and y.cuda("cuda:0") is y
    back = y.cpu()
    _check(back, [1.0, 2.0], md.float32, device=md.cpu())


def test_cpu_of_a_cpu_tensor_is_itself():
    x = md.ones(2, device="cpu")
    assert x.cpu() is x
    with pytest.raises(ValueError, match="GPU"):
        x.cuda("cpu")


# ---------------------------------------------------------------- functions


def test_mm_matches_reference_and_framework(rng, native):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    got = _same_as_reference(md.mm, a, b)
    if native is not None:
        np.testing.assert_allclose(got.numpy(), native["matmul"](a, b), rtol=1e-5, atol=1e-5)


def test_mm_needs_matrices():
    with pytest.raises(ValueError, match="2-D"):
        md.mm(md.ones((2, 3, 4)), md.ones((4, 2)))


def test_cat_matches_reference_and_framework(rng, native):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2, 2)).astype(np.float32)
    got = _same_as_reference(lambda x, y: md.cat((x, y), dim=1), a, b)
    if native is not None:
        np.testing.assert_allclose(got.numpy(), native["concat"]([a, b], 1))
    _same_as_reference(lambda x, y: md.cat([x, y], axis=1), a, b)
    _same_as_reference(lambda x: md.cat([x, x]), a)


@pytest.mark.parametrize(
    "a, b, kw",
    [
        ([1.0, 2.0], [1.0, 2.0 + 1e-7], {}),
        ([1.0, 2.0], [1.0, 2.1], {}),
        ([1.0, 2.0], [1.0, 2.1], {"atol": 0.2}),
        ([1.0, np.inf], [1.0, np.inf], {}),
        ([1.0, np.inf], [1.0, -np.inf], {}),
        ([1.0, np.nan], [1.0, np.nan], {}),
        ([1.0, np.nan], [1.0, np.nan], {"equal_nan": True}),
        ([[1.0, 2.0], [1.0, 2.0]], [1.0, 2.0], {}),
        ([1, 2], [1, 3], {}),
    ],
)
def test_allclose_agrees_with_numpy(a, b, kw):
    got = md.allclose(md.tensor(a), md.tensor(b), **kw)
    assert type(got) is bool
    assert got is bool(np.allclose(a, b, **kw))


# ---------------------------------------------------------------- Tensor methods


def test_transpose_methods(rng, native):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    got = _same_as_reference(lambda x: x.t(), a)
    if native is not None:
        np.testing.assert_array_equal(got.numpy(), native["permute_dims"](a, (1, 0)))
    _same_as_reference(lambda x: x.T, a)
    v = md.tensor([1.0, 2.0])
    assert v.t() is v
    with pytest.raises(ValueError, match="at most 2"):
        md.ones((2, 3, 4)).t()


@pytest.mark.parametrize("shape", [(2, -1), ((2, 6),), (-1,), (3, 2, 2)])
def test_view_and_reshape(rng, native, shape):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    got = _same_as_reference(lambda x: x.view(*shape), a)
    if native is not None:
        np.testing.assert_array_equal(got.numpy(), native["reshape"](a, got.shape))
    _same_as_reference(lambda x: x.reshape(*shape), a)


@pytest.mark.parametrize(
    "call, np_axis, keep",
    [
        (lambda x: x.sum(dim=1), 1, False),
        (lambda x: x.sum(dim=0, keepdim=True), 0, True),
        (lambda x: x.sum(1, True), 1, True),
        (lambda x: x.sum(axis=1, keepdims=True), 1, True),
        (lambda x: x.sum(), None, False),
        (lambda x: x.sum(dim=(0, 1)), (0, 1), False),
    ],
)
def test_sum_with_dim_or_axis(rng, native, call, np_axis, keep):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    got = _same_as_reference(call, a)
    axes = None if np_axis is None else (np_axis if isinstance(np_axis, tuple) else (np_axis,))
    if native is not None:
        np.testing.assert_allclose(got.numpy(), native["sum"](a, axes, keep), rtol=1e-5)


def test_other_reductions_take_dim():
    x = md.tensor([[1.0, 5.0], [3.0, 2.0]])
    _check(x.mean(dim=0), [2.0, 3.5], md.float32)
    _check(x.prod(dim=1, keepdim=True), [[5.0], [6.0]], md.float32)
    _check(x.argmax(dim=1), [1, 0], md.int64)
    _check(x.argmin(dim=0), [0, 1], md.int64)
    with pytest.raises(TypeError, match="dim or axis"):
        x.sum(dim=0, axis=0)


def test_detach_clone_and_data():
    p = nn.Parameter(md.tensor([1.0, 2.0]))
    for t in (p.detach(), p.data, md.tensor([1.0, 2.0]).detach()):
        _check(t, [1.0, 2.0], md.float32)
        assert t.requires_grad is False
    x = md.tensor([1.0, 2.0])
    c = x.clone()
    assert c is not x
    c[0] = 9.0
    _check(x, [1.0, 2.0], md.float32)
    _check(c, [9.0, 2.0], md.float32)


def test_state_dict_values_have_data():
    lin = nn.Linear(3, 2)
    sd = lin.state_dict()
    _check(sd["weight"].data, lin.weight.numpy(), md.float32)
    _check(sd["bias"].data, lin.bias.numpy(), md.float32)


def test_dtype_methods():
    i = md.tensor([1, 2])
    _check(i.float(), [1.0, 2.0], md.float32)
    _check(md.tensor([1.5, 2.5]).long(), [1, 2], md.int64)
    _check(i.int(), [1, 2], md.int32)
    f = md.tensor([1.0])
    assert f.float() is f


def test_size_is_the_array_api_attribute():
    x = md.ones(2, 3)
    assert x.size == 6 and type(x.size) is int and x.numel() == 6
    with pytest.raises(TypeError, match="not callable"):
        x.size()  # type: ignore[operator]  # calling the int attribute is the error tested
