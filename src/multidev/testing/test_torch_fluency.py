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


# ---------------------------------------------------------------- more PyTorch names

_A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.5 - 3.0
_IDX = np.array(
    [[[2, 0, 1, 3], [1, 1, 0, 2], [3, 2, 1, 0]], [[0, 3, 2, 1], [2, 2, 3, 3], [1, 0, 0, 1]]]
)


def _np_chunks(a, sizes, axis):
    return np.split(a, np.cumsum(sizes)[:-1], axis=axis)


_SAME_AS_NUMPY = {
    "dim": (lambda x: md.asarray(np.float32(x.dim())), lambda a: np.float32(a.ndim)),
    "permute varargs": (lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    "permute tuple": (lambda x: md.permute(x, (1, 2, 0)), lambda a: a.transpose(1, 2, 0)),
    "transpose(a, b)": (lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    "swapaxes": (lambda x: md.swapaxes(x, 1, 2), lambda a: np.swapaxes(a, 1, 2)),
    "unsqueeze": (lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    "unsqueeze(-1)": (lambda x: md.unsqueeze(x, -1), lambda a: a[..., None]),
    "squeeze": (lambda x: x.unsqueeze(0).squeeze(), lambda a: a),
    "squeeze(dim) of length > 1 is a no-op": (lambda x: x.squeeze(1), lambda a: a),
    "flatten": (lambda x: x.flatten(1), lambda a: a.reshape(2, 12)),
    "contiguous": (lambda x: x.contiguous(), lambda a: a),
    "expand": (lambda x: x[:, :1].expand(2, 5, 4), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    "expand -1": (lambda x: x.expand(3, -1, -1, 4), lambda a: np.broadcast_to(a, (3, 2, 3, 4))),
    "repeat (tile)": (lambda x: x.repeat(1, 2, 3), lambda a: np.tile(a, (1, 2, 3))),
    "repeat_interleave": (
        lambda x: md.repeat_interleave(x, 2, dim=1),
        lambda a: np.repeat(a, 2, axis=1),
    ),
    "masked_fill": (lambda x: x.masked_fill(x > 1, -7.0), lambda a: np.where(a > 1, -7.0, a)),
    "masked_fill broadcast": (
        lambda x: md.masked_fill(x, md.asarray(np.array([True, False, True, False])), 0.0),
        lambda a: np.where(np.array([True, False, True, False]), 0.0, a),
    ),
    "index_select": (
        lambda x: x.index_select(2, md.asarray(np.array([3, 0]))),
        lambda a: a[:, :, [3, 0]],
    ),
    "gather": (
        lambda x: x.gather(2, md.asarray(_IDX)),
        lambda a: np.take_along_axis(a, _IDX, axis=2),
    ),
    "scatter": (
        lambda x: md.zeros(2, 3, 4).scatter(2, md.asarray(np.argsort(_IDX, axis=2)), x),
        lambda a: _scattered(a),
    ),
    "topk values": (lambda x: x.topk(2, dim=1)[0], lambda a: -np.sort(-a, axis=1)[:, :2]),
    "topk smallest": (
        lambda x: md.topk(x, 3, largest=False)[0],
        lambda a: np.sort(a, axis=-1)[..., :3],
    ),
    "chunk": (lambda x: x.chunk(2, 2)[1], lambda a: a[..., 2:]),
    "chunk uneven": (lambda x: md.chunk(x, 2, 1)[1], lambda a: a[:, 2:]),
    "split size": (lambda x: x.split(3, 2)[1], lambda a: a[..., 3:]),
    "split sections": (lambda x: md.split(x, [1, 2], 1)[1], lambda a: _np_chunks(a, [1, 2], 1)[1]),
    "tril": (lambda x: x.tril(), lambda a: np.tril(a)),
    "triu(1)": (lambda x: x.triu(1), lambda a: np.triu(a, 1)),
    "std unbiased": (lambda x: x.std(1), lambda a: a.std(1, ddof=1)),
    "var biased": (
        lambda x: x.var(2, unbiased=False, keepdim=True),
        lambda a: a.var(2, keepdims=True),
    ),
    "std all": (lambda x: x.std(), lambda a: np.float32(a.std(ddof=1))),
    "norm": (lambda x: x.norm(), lambda a: np.float32(np.linalg.norm(a.ravel()))),
    "norm p=1 dim": (lambda x: md.norm(x, 1, 2), lambda a: np.abs(a).sum(2)),
    "cumsum": (lambda x: x.cumsum(1), lambda a: np.cumsum(a, 1)),
    "clamp": (lambda x: x.clamp(-1, 2), lambda a: np.clip(a, -1, 2)),
    "clamp min": (lambda x: md.clamp(x, min=0.5), lambda a: np.maximum(a, 0.5)),
    "max(dim) values": (lambda x: x.max(1)[0], lambda a: a.max(1)),
    "min(dim) indices": (lambda x: x.min(2, keepdim=True)[1], lambda a: a.argmin(2)[..., None]),
    "max(input, other)": (
        lambda x: md.max(1 - md.abs(x), md.zeros_like(x)),
        lambda a: np.maximum(1 - np.abs(a), 0),
    ),
    "min(other) method": (lambda x: x.min(x[0]), lambda a: np.minimum(a, a[0])),
    "bmm": (lambda x: md.bmm(x, x.transpose(1, 2)), lambda a: a @ np.swapaxes(a, 1, 2)),
    "dot": (lambda x: md.dot(x[0, 1], x[1, 2]), lambda a: np.dot(a[0, 1], a[1, 2])),
    "dot method": (lambda x: x[1, 0].dot(x[0, 0]), lambda a: np.dot(a[1, 0], a[0, 0])),
    "mv": (lambda x: md.mv(x[0], x[1, 0]), lambda a: a[0] @ a[1, 0]),
    "mv method": (lambda x: x[1].T.mv(x[0, 2, :3]), lambda a: a[1].T @ a[0, 2, :3]),
    "stack positional dim": (lambda x: md.stack([x, x * 2], 1), lambda a: np.stack([a, a * 2], 1)),
    "cat positional dim": (lambda x: md.cat([x, x], 2), lambda a: np.concatenate([a, a], 2)),
    "flip positional dims": (lambda x: md.flip(x, (0, 2)), lambda a: np.flip(a, (0, 2))),
    "flip method": (lambda x: x.flip(1), lambda a: np.flip(a, 1)),
    "flip method, every axis": (lambda x: x.flip(), lambda a: np.flip(a)),
    "flip axis=": (lambda x: md.flip(x, axis=-1), lambda a: np.flip(a, -1)),
    "sigmoid": (lambda x: md.sigmoid(x), lambda a: 1 / (1 + np.exp(-a))),
    "relu method": (lambda x: x.relu(), lambda a: np.maximum(a, 0)),
    "softmax": (lambda x: md.softmax(x, 1), lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    "log_softmax method": (
        lambda x: x.log_softmax(-1),
        lambda a: a - np.log(np.exp(a).sum(-1, keepdims=True)),
    ),
    "sqrt/pow": (lambda x: (x * x).sqrt().pow(2), lambda a: np.abs(a) ** 2),
}


def _scattered(a):
    out = np.zeros((2, 3, 4), np.float32)
    np.put_along_axis(out, np.argsort(_IDX, axis=2), a, 2)
    return out


@pytest.mark.parametrize("name", sorted(_SAME_AS_NUMPY))
def test_torch_names_have_pytorchs_meaning(name, native):
    fn, want = _SAME_AS_NUMPY[name]
    got = fn(md.asarray(_A))
    w = np.asarray(want(_A.copy()))
    assert isinstance(got, md.Tensor) and got.backend == md.get_backend()
    assert got.shape == w.shape, (got.shape, w.shape)
    np.testing.assert_allclose(got.numpy(), w, rtol=1e-5, atol=1e-5)


def test_topk_indices_and_split_pieces():
    x = md.asarray(_A)
    _, i = x.topk(2)
    assert i.dtype is md.int64
    np.testing.assert_array_equal(i.numpy(), np.argsort(-_A, axis=-1, kind="stable")[..., :2])
    pieces = x.split(3, dim=-1)
    assert [p.shape for p in pieces] == [(2, 3, 3), (2, 3, 1)]
    with pytest.raises(ValueError, match="summing to 3"):
        md.split(x, [1, 1], 1)


def test_type_dtype_aliases_and_casts():
    x = md.asarray(_A)
    assert (md.long, md.int, md.float, md.double, md.half, md.short) == (
        md.int64,
        md.int32,
        md.float32,
        md.float64,
        md.float16,
        md.int16,
    )
    assert x.type(md.long).dtype is md.int64 and x.type(md.float) is x
    assert x.half().dtype is md.float16 and (x > 0).dtype is md.bool
    assert x.bool().dtype is md.bool
    np.testing.assert_array_equal(x.type(md.int).numpy(), _A.astype(np.int32))


def test_in_place_variants_write_into_the_tensor():
    x = md.asarray(_A.copy())
    assert x.add_(1.0) is x
    x.mul_(2.0).sub_(1.0, alpha=2.0).div_(2.0)
    np.testing.assert_allclose(x.numpy(), ((_A + 1) * 2 - 2) / 2, rtol=1e-6)
    x.clamp_(-1.0, 1.0)
    np.testing.assert_allclose(x.numpy(), np.clip(_A, -1, 1), rtol=1e-6)
    x.masked_fill_(x > 0, 5.0)
    np.testing.assert_allclose(x.numpy(), np.where(_A > 0, 5.0, np.clip(_A, -1, 1)))
    x.fill_(3.0)
    np.testing.assert_array_equal(x.numpy(), np.full_like(_A, 3.0))
    x.copy_(md.asarray(_A[0]))
    np.testing.assert_array_equal(x.numpy(), np.broadcast_to(_A[0], _A.shape))
    assert x.zero_() is x and not x.numpy().any()


def test_normal_and_multinomial_are_seeded_draws():
    md.manual_seed(3)
    a = md.normal(2.0, 0.5, (4, 5))
    md.manual_seed(3)
    b = md.normal(2.0, 0.5, size=(4, 5))
    assert a.shape == (4, 5) and a.dtype is md.float32
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert md.normal(md.zeros(3), 1.0).shape == (3,)
    p = md.asarray(np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]], np.float32))
    drawn = md.multinomial(p, 5, replacement=True)
    assert drawn.dtype is md.int64
    np.testing.assert_array_equal(drawn.numpy(), [[1] * 5, [2] * 5])
    perm = md.multinomial(md.ones(2, 4), 4).numpy()
    np.testing.assert_array_equal(np.sort(perm, axis=1), [[0, 1, 2, 3]] * 2)
    with pytest.raises(ValueError, match="replacement=True"):
        md.multinomial(p, 4)


def test_masked_softmax_gives_exact_zeros():
    # d2l's masked_softmax: masked logits set to -1e6, then softmax over the last axis
    x = md.asarray(np.random.default_rng(0).random((2, 2, 4)).astype(np.float32))
    mask = md.asarray(np.array([True, True, False, False]))
    for out in (
        md.softmax(md.where(mask, x, -1e6), -1),
        nn.functional.softmax(x.masked_fill(~mask, -1e6), dim=-1),
    ):
        got = out.numpy()
        assert (got[..., 2:] == 0.0).all(), got
        np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-6)


def test_lazy_batchnorm1d_and_utils_data():
    bn = nn.LazyBatchNorm1d()
    y = bn(md.randn(8, 5))
    assert type(bn) is nn.BatchNorm1d and bn.num_features == 5 and y.shape == (8, 5)
    assert tuple(bn.running_mean.shape) == (5,)
    from multidev.utils import data

    assert data.DataLoader is md.data.DataLoader and data.TensorDataset is md.data.TensorDataset


@autograd
def test_gradients_flow_through_the_composed_names():
    w = md.tensor(_A.copy(), requires_grad=True)
    with md.autograd.record():
        loss = (
            w.topk(2)[0].sum()
            + w.gather(2, md.asarray(_IDX)).sum()
            + w.masked_fill(w > 0, 0.0).sum()
            + w.permute(2, 0, 1).unsqueeze(0).expand(2, -1, -1, -1).sum()
            + md.scatter(md.zeros(2, 3, 4), 2, md.asarray(_IDX), w).sum()
        )
    loss.backward()
    top = np.zeros_like(_A)
    np.put_along_axis(top, np.argsort(-_A, axis=-1, kind="stable")[..., :2], 1.0, -1)
    gat = np.zeros_like(_A)
    np.add.at(gat, (np.arange(2)[:, None, None], np.arange(3)[None, :, None], _IDX), 1.0)
    want = top + gat + (_A <= 0) + 2.0
    # scatter with a repeated target position sums its sources (a gradient of 1 for each)
    want += 1.0
    assert isinstance(w, nn.Parameter) and w.grad is not None
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-6)


# ---------------------------------------------------------------- einsum

#: (equation, operand shapes): products, contractions, diagonals, ``...``, implicit output
_EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 2, 3, 4), (2, 2, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("i, i ->", [(5,), (5,)]),
]


@pytest.mark.parametrize(("equation", "shapes"), _EINSUM, ids=[e for e, _ in _EINSUM])
def test_einsum_matches_numpy_and_the_reference(rng, equation, shapes):
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = _same_as_reference(lambda *ts: md.einsum(equation, *ts), *arrays)
    want = np.einsum(equation.replace(" ", ""), *arrays)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("equation", "shapes"), _EINSUM, ids=[e for e, _ in _EINSUM])
def test_einsum_matches_torch(rng, equation, shapes):
    torch = pytest.importorskip("torch")
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = md.einsum(equation, [md.asarray(a) for a in arrays])  # PyTorch's list form too
    want = torch.einsum(equation, *[torch.from_numpy(a) for a in arrays]).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.requires("float64")
def test_einsum_promotes_its_operands_as_pytorch(rng):
    a = md.asarray(rng.standard_normal((2, 3)).astype(np.float32))
    b = md.asarray(rng.standard_normal((3,)))
    out = md.einsum("ij,j->i", a, b)
    assert out.dtype is md.float64
    np.testing.assert_allclose(out.numpy(), a.numpy().astype(np.float64) @ b.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    ("equation", "shapes", "match"),
    [
        ("ij,jk->ik", [(2, 3)], "one input term per operand"),
        ("ij,jk->ik", [(2, 3), (2, 3)], "of one size"),
        ("ijk->i", [(2, 3)], "one letter per dimension"),
        ("ij->kk", [(2, 3)], "output term"),
        ("i1->i", [(2, 3)], "letters"),
    ],
)
def test_einsum_refuses_an_equation_that_does_not_fit(equation, shapes, match):
    with pytest.raises(ValueError, match=match):
        md.einsum(equation, *[md.ones(s) for s in shapes])


def test_einsum_refuses_bool_operands_and_a_missing_equation():
    with pytest.raises(TypeError, match="bool"):
        md.einsum("i,i->", md.ones(3) > 0, md.ones(3) > 0)
    with pytest.raises(TypeError, match="equation"):
        md.einsum(md.ones(3), md.ones(3))  # type: ignore[arg-type]  # the error tested


@autograd
def test_einsum_gradients_are_the_products_transposed(rng):
    x0 = rng.standard_normal((2, 3)).astype(np.float32)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    c = rng.standard_normal((2, 4)).astype(np.float32)
    x = md.tensor(x0, requires_grad=True)
    w = md.tensor(w0, requires_grad=True)
    with md.autograd.record():
        loss = (md.einsum("ij,jk->ik", x, w) * md.asarray(c)).sum()
    loss.backward()
    assert isinstance(x, nn.Parameter) and isinstance(w, nn.Parameter)
    assert x.grad is not None and w.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), c @ w0.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), x0.T @ c, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ more activations and losses


def _softplus_np(z):
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


_RNG = np.random.default_rng(3)
_X = (_RNG.standard_normal((4, 5)) * 3).astype(np.float32)
_T = _RNG.standard_normal((4, 5)).astype(np.float32)
_Y = (_RNG.random((4, 5)) > 0.5).astype(np.float32)
_P = (1 / (1 + np.exp(-_X))).astype(np.float32)
_P[0, 0], _P[1, 1] = 0.0, 1.0  # PyTorch clamps each log at -100
_LP = (_X - np.log(np.exp(_X).sum(1, keepdims=True))).astype(np.float32)
_Q = np.exp(_T) / np.exp(_T).sum(1, keepdims=True)
_Q[0, 2] = 0.0  # 0 * log 0 counts 0
_Q = (_Q / _Q.sum(1, keepdims=True)).astype(np.float32)
_LAB = np.array([0, 3, 1, 4])
_W = np.arange(1, 6).astype(np.float32)
_S = np.where(_RNG.random((4, 5)) > 0.5, 1.0, -1.0).astype(np.float32)
_COS = (_X * _T).sum(1) / np.sqrt(((_X**2).sum(1) + 1e-12) * ((_T**2).sum(1) + 1e-12))
_PW = np.linspace(0.5, 2, 5).astype(np.float32)


def _bce_np(p, y):
    return -(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log(1 - p), -100))


def _kl_np(lp, q):
    return np.where(q > 0, q * (np.log(np.where(q > 0, q, 1)) - lp), 0)


#: name -> (multidev call on md tensors, PyTorch's definition in NumPy (float64))
_LOSSES_AND_ACTIVATIONS = {
    "silu": (lambda F: F.silu(md.asarray(_X)), lambda: _X / (1 + np.exp(-_X))),
    "elu": (lambda F: F.elu(md.asarray(_X), 0.7), lambda: np.where(_X > 0, _X, 0.7 * np.expm1(_X))),
    "leaky_relu": (
        lambda F: F.leaky_relu(md.asarray(_X), 0.1),
        lambda: np.where(_X > 0, _X, 0.1 * _X),
    ),
    "softplus": (
        lambda F: F.softplus(md.asarray(_X), 2.0, 5.0),
        lambda: np.where(2 * _X > 5, _X, _softplus_np(2.0 * _X) / 2),
    ),
    "logsigmoid": (lambda F: F.logsigmoid(md.asarray(_X)), lambda: -_softplus_np(-_X)),
    "hardtanh": (lambda F: F.hardtanh(md.asarray(_X), -0.5, 2.0), lambda: np.clip(_X, -0.5, 2)),
    "selu": (
        lambda F: F.selu(md.asarray(_X)),
        lambda: 1.0507009873554805 * np.where(_X > 0, _X, 1.6732632423543772 * np.expm1(_X)),
    ),
    "mish": (lambda F: F.mish(md.asarray(_X)), lambda: _X * np.tanh(_softplus_np(_X))),
    "relu6": (lambda F: F.relu6(md.asarray(_X), inplace=True), lambda: np.clip(_X, 0, 6)),
    "hardsigmoid": (
        lambda F: F.hardsigmoid(md.asarray(_X)),
        lambda: np.where(_X <= -3, 0, np.where(_X >= 3, 1, _X / 6 + 0.5)),
    ),
    "hardswish": (
        lambda F: F.hardswish(md.asarray(_X)),
        lambda: np.where(_X <= -3, 0, np.where(_X >= 3, _X, _X * (_X + 3) / 6)),
    ),
    "celu": (
        lambda F: F.celu(md.asarray(_X), 0.5),
        lambda: np.maximum(_X, 0) + np.minimum(0, 0.5 * np.expm1(_X / 0.5)),
    ),
    "softsign": (lambda F: F.softsign(md.asarray(_X)), lambda: _X / (1 + np.abs(_X))),
    "tanhshrink": (lambda F: F.tanhshrink(md.asarray(_X)), lambda: _X - np.tanh(_X)),
    "threshold": (
        lambda F: F.threshold(md.asarray(_X), 0.5, -7.0),
        lambda: np.where(_X > 0.5, _X, -7.0),
    ),
    "prelu per channel": (
        lambda F: F.prelu(md.asarray(_X), md.asarray(_W / 10)),
        lambda: np.where(_X > 0, _X, _X * _W / 10),
    ),
    "softmin": (
        lambda F: F.softmin(md.asarray(_X), 0),
        lambda: np.exp(-_X) / np.exp(-_X).sum(0, keepdims=True),
    ),
    "leaky_relu inplace": (
        lambda F: F.leaky_relu(md.asarray(_X), 0.2, True),
        lambda: np.where(_X > 0, _X, 0.2 * _X),
    ),
    "glu": (
        lambda F: F.glu(md.asarray(_X[:, :4]), 1),
        lambda: _X[:, :2] / (1 + np.exp(-_X[:, 2:4])),
    ),
    "normalize": (
        lambda F: F.normalize(md.asarray(_X)),
        lambda: _X / np.maximum(np.sqrt((_X.astype(np.float64) ** 2).sum(1, keepdims=True)), 1e-12),
    ),
    "normalize p=1 dim=0": (
        lambda F: F.normalize(md.asarray(_X), 1.0, 0),
        lambda: _X / np.abs(_X.astype(np.float64)).sum(0, keepdims=True),
    ),
    "cosine_similarity": (  # broadcast (1, 5) against (4, 5)
        lambda F: F.cosine_similarity(md.asarray(_X), md.asarray(_T[:1])),
        lambda: (_X * _T[:1]).sum(1) / np.linalg.norm(_X, axis=1) / np.linalg.norm(_T[:1], axis=1),
    ),
    "l1_loss": (
        lambda F: F.l1_loss(md.asarray(_X), md.asarray(_T)),
        lambda: np.abs(_X - _T).mean(),
    ),
    "smooth_l1_loss": (
        lambda F: F.smooth_l1_loss(md.asarray(_X), md.asarray(_T), reduction="none", beta=0.5),
        lambda: np.where(np.abs(_X - _T) < 0.5, (_X - _T) ** 2 / 1.0, np.abs(_X - _T) - 0.25),
    ),
    "huber_loss": (
        lambda F: F.huber_loss(md.asarray(_X), md.asarray(_T), reduction="sum", delta=0.7),
        lambda: np.where(
            np.abs(_X - _T) <= 0.7, 0.5 * (_X - _T) ** 2, 0.7 * (np.abs(_X - _T) - 0.35)
        ).sum(),
    ),
    "binary_cross_entropy": (
        lambda F: F.binary_cross_entropy(md.asarray(_P), md.asarray(_Y), md.asarray(_W)),
        lambda: (_bce_np(_P.astype(np.float64), _Y) * _W).mean(),
    ),
    "binary_cross_entropy_with_logits": (
        lambda F: F.binary_cross_entropy_with_logits(
            md.asarray(_X), md.asarray(_Y), md.asarray(_W), pos_weight=md.asarray(_PW)
        ),
        lambda: (
            _W * -(_PW * _Y * -_softplus_np(-_X) + (1 - _Y) * -_softplus_np(_X.astype(np.float64)))
        ).mean(),
    ),
    "nll_loss": (
        lambda F: F.nll_loss(md.asarray(_LP), md.asarray(_LAB), md.asarray(_W), ignore_index=3),
        lambda: (
            -(_W[_LAB] * _LP[np.arange(4), _LAB] * (_LAB != 3)).sum()
            / (_W[_LAB] * (_LAB != 3)).sum()
        ),
    ),
    "margin_ranking_loss": (
        lambda F: F.margin_ranking_loss(
            md.asarray(_X[:, 0]), md.asarray(_T[:, 0]), md.asarray(_S[:, 0]), margin=0.3
        ),
        lambda: np.maximum(0, -_S[:, 0] * (_X[:, 0] - _T[:, 0]) + 0.3).mean(),
    ),
    "hinge_embedding_loss": (
        lambda F: F.hinge_embedding_loss(md.asarray(_X), md.asarray(_S), 0.5, "sum"),
        lambda: np.where(_S == 1, _X, np.maximum(0, 0.5 - _X)).sum(),
    ),
    "soft_margin_loss": (
        lambda F: F.soft_margin_loss(md.asarray(_X), md.asarray(_S)),
        lambda: _softplus_np(-_S * _X).mean(),
    ),
    "cosine_embedding_loss": (
        lambda F: F.cosine_embedding_loss(
            md.asarray(_X), md.asarray(_T), md.asarray(_S[:, 0]), 0.1, "none"
        ),
        lambda: np.where(_S[:, 0] == 1, 1 - _COS, np.maximum(0, _COS - 0.1)),
    ),
    "triplet_margin_loss": (
        lambda F: F.triplet_margin_loss(md.asarray(_X), md.asarray(_T), md.asarray(_LP), 0.5),
        lambda: np.maximum(
            np.linalg.norm(_X - _T + 1e-6, axis=1) - np.linalg.norm(_X - _LP + 1e-6, axis=1) + 0.5,
            0,
        ).mean(),
    ),
    "gaussian_nll_loss": (
        lambda F: F.gaussian_nll_loss(md.asarray(_X), md.asarray(_T), md.asarray(_P + 0.1)),
        lambda: (0.5 * (np.log(_P + 0.1) + (_X - _T) ** 2 / (_P + 0.1))).mean(),
    ),
    "poisson_nll_loss": (
        lambda F: F.poisson_nll_loss(md.asarray(_X), md.asarray(_Y * 3)),
        lambda: (np.exp(_X) - _Y * 3 * _X).mean(),
    ),
    "multilabel_soft_margin_loss": (
        lambda F: F.multilabel_soft_margin_loss(md.asarray(_X), md.asarray(_Y), md.asarray(_W)),
        lambda: (_W * -(_Y * -_softplus_np(-_X) + (1 - _Y) * -_softplus_np(_X))).mean(1).mean(),
    ),
    "kl_div batchmean": (
        lambda F: F.kl_div(md.asarray(_LP), md.asarray(_Q), reduction="batchmean"),
        lambda: _kl_np(_LP, _Q).sum() / 4,
    ),
    "kl_div log_target": (
        lambda F: F.kl_div(
            md.asarray(_LP), md.asarray(np.log(_Q + 1e-9)), reduction="none", log_target=True
        ),
        lambda: np.exp(np.log(_Q + 1e-9)) * (np.log(_Q + 1e-9) - _LP),
    ),
}


@pytest.mark.parametrize("name", sorted(_LOSSES_AND_ACTIVATIONS))
def test_more_activations_and_losses_have_pytorchs_meaning(name):
    fn, want = _LOSSES_AND_ACTIVATIONS[name]
    with np.errstate(divide="ignore"):  # log(0) of a probability 0 or 1, clamped at -100
        got, expected = fn(nn.functional), want()
    assert isinstance(got, md.Tensor) and got.backend == md.get_backend()
    np.testing.assert_allclose(got.numpy(), expected, rtol=2e-5, atol=2e-5)


def test_loss_layers_keep_their_tensor_options_as_buffers():
    """As PyTorch's: ``weight`` (and ``pos_weight``) are buffers, so ``state_dict`` holds them
    and ``to()`` moves them with the model; a layer without them has an empty state."""
    w, pw = md.asarray(_W), md.asarray(_PW)
    layers = {
        "CrossEntropyLoss": nn.CrossEntropyLoss(w),
        "NLLLoss": nn.NLLLoss(w),
        "BCELoss": nn.BCELoss(w),
        "BCEWithLogitsLoss": nn.BCEWithLogitsLoss(w, pos_weight=pw),
    }
    for name, layer in layers.items():
        keys = ["weight", "pos_weight"] if name == "BCEWithLogitsLoss" else ["weight"]
        assert list(layer.state_dict()) == keys, name
        np.testing.assert_array_equal(layer.state_dict()["weight"].numpy(), _W)
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    assert list(nn.BCEWithLogitsLoss().state_dict()) == []
    last = md.devices()[-1]
    moved = nn.Sequential(nn.Linear(5, 5), nn.CrossEntropyLoss(w)).to(last)
    assert moved[1].weight.device == last
    x, y = md.asarray(_X, device=last), md.asarray(_LAB, device=last)
    np.testing.assert_allclose(
        moved[1](x, y).numpy(), nn.functional.cross_entropy(x, y, w.to(last)).numpy(), rtol=1e-6
    )


def test_pixel_shuffle_moves_channel_blocks_to_pixels_and_back():
    """PyTorch's layout: output[n, c, h * r + i, w * r + j] = input[n, c * r * r + i * r + j,
    h, w], with any leading dimensions; pixel_unshuffle inverts it; the layers agree."""
    x = np.arange(2 * 3 * 8 * 2 * 3, dtype=np.float32).reshape(2, 3, 8, 2, 3)
    got = nn.functional.pixel_shuffle(md.asarray(x), 2).numpy()
    want = np.empty((2, 3, 2, 4, 6), np.float32)
    for c, i, j in np.ndindex(2, 2, 2):
        want[:, :, c, i::2, j::2] = x[:, :, c * 4 + i * 2 + j]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(nn.PixelShuffle(2)(md.asarray(x)).numpy(), want)
    back = nn.PixelUnshuffle(2)(md.asarray(want))
    np.testing.assert_array_equal(back.numpy(), x)
    with pytest.raises(ValueError, match=r"channels divisible by upscale_factor\*\*2 = 9"):
        nn.functional.pixel_shuffle(md.asarray(x), 3)
    with pytest.raises(ValueError, match="positive integer upscale_factor"):
        nn.PixelShuffle(0)
    with pytest.raises(ValueError, match="even size along dim 1"):
        nn.functional.glu(md.asarray(_X), 1)


def test_cosine_similarity_layer_and_zero_vectors():
    """A zero vector has similarity 0 (its norm is clamped at eps), not NaN."""
    a = md.asarray(np.array([[0.0, 0.0], [1.0, 1.0]], np.float32))
    b = md.asarray(np.array([[1.0, 2.0], [2.0, 2.0]], np.float32))
    np.testing.assert_allclose(nn.CosineSimilarity()(a, b).numpy(), [0.0, 1.0], atol=1e-6)


@autograd
@pytest.mark.parametrize(
    "layer",
    [
        nn.SiLU(),
        nn.ELU(0.5),
        nn.LeakyReLU(0.2),
        nn.Softplus(),
        nn.LogSigmoid(),
        nn.Hardtanh(),
        nn.LogSoftmax(1),
        nn.SELU(),
        nn.Mish(),
        nn.GLU(0),
        nn.ReLU6(inplace=True),
        nn.Hardsigmoid(),
        nn.Hardswish(),
        nn.CELU(0.7),
        nn.Softsign(),
        nn.Tanhshrink(),
        nn.Threshold(0.3, -1.0),
        nn.PReLU(5, 0.1),
        nn.Softmin(1),
        nn.RMSNorm(5),
    ],
    ids=lambda m: type(m).__name__,
)
def test_activation_layers_differentiate(layer):
    """The layer forms, and their gradients against central finite differences (float32)."""
    x = md.asarray(_X[:2] * 0.5 + 0.05)  # away from kinks
    w = nn.Parameter(x)
    weights = md.asarray(_T[:1] if isinstance(layer, nn.GLU) else _T[:2])  # GLU halves dim 0
    with md.autograd.record():
        loss = md.sum(layer(w) * weights)
    loss.backward()
    eps = 1e-2

    def value(a):
        return float(md.sum(layer(md.asarray(a)) * weights).item())

    base = x.numpy().astype(np.float32)
    fd = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        plus, minus = base.copy(), base.copy()
        plus[idx] += eps
        minus[idx] -= eps
        fd[idx] = (value(plus) - value(minus)) / (2 * eps)
    assert w.grad is not None
    np.testing.assert_allclose(w.grad.numpy(), fd, rtol=2e-2, atol=2e-2)


def test_one_dimensional_pooling_is_pytorchs():
    """``max_pool1d`` (-inf padding), ``avg_pool1d`` (padding counted or not) and
    ``adaptive_avg_pool1d`` along L of (N, C, L) and unbatched (C, L) inputs, and their layers,
    against NumPy's windows."""
    x = _RNG.standard_normal((2, 3, 10)).astype(np.float32)
    F = nn.functional
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1)), constant_values=-np.inf)
    want = np.stack([padded[..., i : i + 3].max(-1) for i in range(0, 10, 2)], -1)
    np.testing.assert_array_equal(F.max_pool1d(md.asarray(x), 3, 2, 1).numpy(), want)
    np.testing.assert_array_equal(nn.MaxPool1d(3, 2, 1)(md.asarray(x[0])).numpy(), want[0])
    zero = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    mean = np.stack([zero[..., i : i + 4].mean(-1) for i in range(0, 9, 2)], -1)
    np.testing.assert_allclose(F.avg_pool1d(md.asarray(x), 4, 2, 1).numpy(), mean, rtol=1e-5)
    counts = np.array([3, 4, 4, 4, 3], np.float32)
    np.testing.assert_allclose(
        nn.AvgPool1d(4, 2, 1, count_include_pad=False)(md.asarray(x)).numpy(),
        mean * 4 / counts,
        rtol=1e-5,
    )
    windows = [(0, 3), (2, 5), (5, 8), (7, 10)]  # floor(i * 10 / 4), ceil((i + 1) * 10 / 4)
    cells = np.stack([x[..., a:b].mean(-1) for a, b in windows], -1)
    np.testing.assert_allclose(
        nn.AdaptiveAvgPool1d(4)(md.asarray(x)).numpy(), cells, rtol=1e-5, atol=1e-6
    )
    with pytest.raises(ValueError, match=r"2-D \(C, L\) or 3-D \(N, C, L\) input"):
        F.max_pool1d(md.asarray(x[None]), 2)


def test_unfold_is_sliding_blocks_and_fold_its_adjoint():
    """unfold: row c * kH * kW + i * kW + j, column r * oW + q holds the padded input at
    (c, r * s + i * d, q * s + j * d); fold sums columns back, so that <unfold(x), g> =
    <x, fold(g)>; as layers too."""
    x = _RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)
    k, d, p, st = (2, 3), (2, 1), (1, 0), (2, 1)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 0)))
    oh, ow = (9 - 2 - 1) // 2 + 1, (6 - 2 - 1) // 1 + 1
    want = np.empty((2, 3 * 6, oh * ow), np.float32)
    for c, i, j, r, q in np.ndindex(3, 2, 3, oh, ow):
        want[:, c * 6 + i * 3 + j, r * ow + q] = xp[:, c, r * 2 + i * 2, q + j]
    cols = nn.functional.unfold(md.asarray(x), k, d, p, st)
    np.testing.assert_array_equal(cols.numpy(), want)
    g = _RNG.standard_normal(want.shape).astype(np.float32)
    back = nn.Fold((7, 6), k, d, p, st)(md.asarray(g)).numpy()
    assert back.shape == x.shape
    np.testing.assert_allclose((want * g).sum(), (x * back).sum(), rtol=1e-4)
    np.testing.assert_array_equal(nn.Unfold(k, d, p, st)(md.asarray(x)).numpy(), want)
    with pytest.raises(ValueError, match=r"shape \(N, C \* 6, 16\)"):
        nn.functional.fold(md.asarray(g[:, :, :5]), (7, 6), k, d, p, st)


def test_adaptive_max_pooling_takes_each_windows_maximum():
    """adaptive_max_pool2d/1d: the maximum over [floor(i * n / out), ceil((i + 1) * n / out))
    along each axis, for sizes that do not divide the input's and ones that do."""
    x = _RNG.standard_normal((2, 3, 7, 9)).astype(np.float32)

    def windows(n, out):
        return [(i * n // out, -(-(i + 1) * n // out)) for i in range(out)]

    want = np.array(
        [[x[..., a:b, c:d].max((-2, -1)) for c, d in windows(9, 4)] for a, b in windows(7, 3)]
    ).transpose(2, 3, 0, 1)
    np.testing.assert_array_equal(nn.AdaptiveMaxPool2d((3, 4))(md.asarray(x)).numpy(), want)
    even = nn.functional.adaptive_max_pool2d(md.asarray(x[:, :, :6, :9]), (2, 3)).numpy()
    np.testing.assert_array_equal(even, x[:, :, :6, :9].reshape(2, 3, 2, 3, 3, 3).max((3, 5)))
    line = nn.AdaptiveMaxPool1d(4)(md.asarray(x[0, :, 0])).numpy()
    np.testing.assert_array_equal(
        line, np.stack([x[0, :, 0, a:b].max(-1) for a, b in windows(9, 4)], -1)
    )


def test_instance_norm_and_channel_dropout():
    """InstanceNorm2d normalises each (sample, channel) over its positions, its running
    statistics (with track_running_stats) move toward the batch's average instance mean and
    unbiased variance and normalise in eval(); Dropout2d zeros whole channels, scaling the
    others by 1 / (1 - p), and is the identity in eval()."""
    x = (_RNG.standard_normal((2, 3, 4, 5)) * 2 + 1).astype(np.float32)
    mean = x.mean((2, 3), keepdims=True)
    var = x.var((2, 3), keepdims=True)
    norm = nn.InstanceNorm2d(3, track_running_stats=True, momentum=0.5)
    np.testing.assert_allclose(
        norm(md.asarray(x)).numpy(), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(norm.running_mean.numpy(), 0.5 * mean.mean((0, 2, 3)), rtol=1e-5)
    unbiased = x.var((2, 3), ddof=1).mean(0)
    np.testing.assert_allclose(norm.running_var.numpy(), 0.5 + 0.5 * unbiased, rtol=1e-5)
    norm.eval()
    rm, rv = norm.running_mean.numpy(), norm.running_var.numpy()
    want = (x - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5)
    np.testing.assert_allclose(norm(md.asarray(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        nn.InstanceNorm1d(4)(md.asarray(x[0, 0])).numpy(),
        (x[0, 0] - x[0, 0].mean(1, keepdims=True)) / np.sqrt(x[0, 0].var(1, keepdims=True) + 1e-5),
        rtol=1e-4,
        atol=1e-5,
    )
    md.manual_seed(0)
    drop = nn.Dropout2d(0.5)
    y = drop(md.asarray(np.ones((8, 6, 3, 3), np.float32))).numpy()
    per_channel = y.reshape(8, 6, 9)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(2) == per_channel.max(2)).all()  # a channel is kept or dropped whole
    assert 0 < (per_channel[:, :, 0] == 0).sum() < 48
    drop.eval()
    np.testing.assert_array_equal(drop(md.asarray(x)).numpy(), x)
    with pytest.raises(ValueError, match=r"3-D \(C, ...\) or 4-D"):
        nn.functional.dropout2d(md.asarray(x[0, 0]))


def test_parameter_list_and_dict_register_their_parameters():
    """As PyTorch's: the owner's parameters and state_dict hold them (``ws.0``, ``d.a``), a
    plain tensor becomes a Parameter, indexing (negative too), len, iteration and update."""

    class Owner(nn.Block):
        def __init__(self) -> None:
            super().__init__()
            self.ws = nn.ParameterList([md.ones((2, 3)), nn.Parameter(md.zeros(3))])
            self.d = nn.ParameterDict({"a": md.ones(2)})

        def forward(self, x):
            return md.matmul(x, self.ws[0].T) + self.ws[1][:2] + self.d["a"]

    m = Owner()
    assert list(m.state_dict()) == ["ws.0", "ws.1", "d.a"]
    assert all(isinstance(p, nn.Parameter) for p in m.parameters())
    assert len(m.ws) == 2 and list(m.ws)[1] is m.ws[-1] and "a" in m.d
    m.ws.append(md.ones(1))
    m.d.update({"b": md.zeros(1)})
    assert len(list(m.parameters())) == 5
    with pytest.raises(IndexError, match=r"index in \[-3, 3\)"):
        m.ws[3]
    np.testing.assert_array_equal(m(md.ones((1, 3))).numpy(), [[4.0, 4.0]])


def test_padding_layers_unflatten_and_rms_norm():
    """The padding layers are np.pad's modes on the last dimensions; Unflatten splits one
    dimension; RMSNorm divides by the root mean square over the last axes, then scales."""
    x = _RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    lead = ((0, 0), (0, 0))
    for layer, want in [
        (nn.ZeroPad2d((1, 2, 0, 3)), np.pad(x, (*lead, (0, 3), (1, 2)))),
        (nn.ConstantPad1d(2, 3.5), np.pad(x, (*lead, (0, 0), (2, 2)), constant_values=3.5)),
        (nn.ReflectionPad2d(1), np.pad(x, (*lead, (1, 1), (1, 1)), mode="reflect")),
        (nn.ReplicationPad2d((2, 1, 0, 0)), np.pad(x, (*lead, (0, 0), (2, 1)), mode="edge")),
        (nn.CircularPad2d((1, 0, 0, 2)), np.pad(x, (*lead, (0, 2), (1, 0)), mode="wrap")),
    ]:
        np.testing.assert_array_equal(layer(md.asarray(x)).numpy(), want, err_msg=repr(layer))
    with pytest.raises(ValueError, match="an int or 4 ints"):
        nn.ZeroPad2d((1, 2))
    y = nn.Unflatten(1, (3, -1))(md.asarray(x.reshape(2, 12, 5)))
    assert y.shape == (2, 3, 4, 5)
    np.testing.assert_array_equal(y.numpy(), x)
    norm = nn.RMSNorm((4, 5), eps=1e-4)
    assert list(norm.state_dict()) == ["weight"]
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean((2, 3), keepdims=True) + 1e-4)
    np.testing.assert_allclose(norm(md.asarray(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    plain = nn.functional.rms_norm(md.asarray(x), 5)
    eps = np.finfo(np.float32).eps
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(3, keepdims=True) + eps)
    np.testing.assert_allclose(plain.numpy(), want, rtol=1e-5, atol=1e-6)


@autograd
def test_prelu_learns_its_slopes_and_refuses_a_mismatched_weight():
    """The slope is a parameter: its gradient is the sum of x over the negative elements of
    its channel; a weight that is neither one element nor one per channel is refused."""
    layer = nn.PReLU(5)
    assert list(layer.state_dict()) == ["weight"]
    np.testing.assert_allclose(layer.weight.numpy(), np.full(5, 0.25, np.float32))
    with md.autograd.record():
        loss = md.sum(layer(md.asarray(_X)))
    loss.backward()
    assert layer.weight.grad is not None
    np.testing.assert_allclose(
        layer.weight.grad.numpy(), np.where(_X > 0, 0, _X).sum(0), rtol=1e-5, atol=1e-5
    )
    with pytest.raises(ValueError, match="channel count"):
        nn.functional.prelu(md.asarray(_X), md.asarray(np.ones(3, np.float32)))


def test_inplace_flags_are_accepted_and_the_input_keeps_its_values():
    """``nn.ReLU(inplace=True)`` and the functions' ``inplace=True``, as PyTorch code writes
    them: the result is the activation, a new tensor; the input is unchanged."""
    x = md.asarray(_X)
    for fn in (
        nn.ReLU(inplace=True),
        nn.LeakyReLU(0.1, inplace=True),
        nn.ELU(inplace=True),
        nn.SiLU(inplace=True),
        nn.Hardtanh(-1, 1, True),
        lambda t: nn.functional.relu(t, inplace=True),
        lambda t: nn.functional.dropout(t, 0.5, True, True),
    ):
        y = fn(x)
        assert y is not x
        np.testing.assert_array_equal(x.numpy(), _X)
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU()) == "LeakyReLU(negative_slope=0.01)"


@autograd
def test_loss_layers_train_a_parameter():
    """Each loss layer gives the function's value, and its gradient moves a parameter so
    that the loss falls."""
    cases = [
        (nn.L1Loss(), _T),
        (nn.SmoothL1Loss(beta=0.5), _T),
        (nn.HuberLoss(delta=0.7), _T),
        (nn.BCEWithLogitsLoss(pos_weight=md.asarray(_PW)), _Y),
        (nn.KLDivLoss(reduction="batchmean"), _Q),
    ]
    for layer, target in cases:
        w = nn.Parameter(md.asarray(_X * 0.1))
        opt = md.optim.SGD([w], lr=0.1)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            with md.autograd.record():
                pred = md.nn.functional.log_softmax(w, 1) if isinstance(layer, nn.KLDivLoss) else w
                loss = layer(pred, md.asarray(target))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[2] < losses[0], (type(layer).__name__, losses)
    with np.errstate(divide="ignore"):  # log(0), clamped at -100
        bce = nn.BCELoss()(md.asarray(_P), md.asarray(_Y)).item()
        np.testing.assert_allclose(bce, _bce_np(_P.astype(np.float64), _Y).mean(), rtol=1e-5)
    # a sigmoid saturated to exactly 0 or 1: PyTorch's loss (100 each) and gradients (0)
    w = nn.Parameter(md.asarray(np.array([-120.0, 30.0, 0.3], np.float32)))
    with md.autograd.record():
        loss = nn.BCELoss()(md.nn.functional.sigmoid(w), md.asarray(np.array([0.0, 0.0, 1.0])))
    loss.backward()
    assert w.grad is not None
    p = 1 / (1 + np.exp(-0.3))
    np.testing.assert_allclose(loss.item(), (100 - np.log(p)) / 3, rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), [0.0, 0.0, (p - 1) / 3], rtol=1e-5, atol=1e-7)
    nll = nn.NLLLoss(md.asarray(_W))(md.asarray(_LP), md.asarray(_LAB)).item()
    want = -(_W[_LAB] * _LP[np.arange(4), _LAB]).sum() / _W[_LAB].sum()
    np.testing.assert_allclose(nll, want, rtol=1e-5)


def test_module_list_and_dict_register_their_blocks():
    """ModuleList and ModuleDict hold blocks whose parameters are the owner's (so the
    optimiser and state_dict see them), as in PyTorch; calling either is an error."""

    class Net(nn.Block):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 4), nn.Linear(4, 4)])
            self.layers.append(nn.Linear(4, 2))
            self.heads = nn.ModuleDict({"a": nn.Linear(2, 1)})
            self.heads["b"] = nn.Linear(2, 3)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.heads["a"](x), self.heads["b"](x)

    net = Net()
    a, b = net(md.ones((5, 3)))
    assert a.shape == (5, 1) and b.shape == (5, 3)
    keys = set(net.state_dict())
    assert {"layers.0.weight", "layers.2.bias", "heads.a.weight", "heads.b.bias"} <= keys
    assert len(list(net.parameters())) == 10
    assert len(net.layers) == 3 and "b" in net.heads and list(net.heads) == ["a", "b"]
    net.layers.insert(0, nn.Identity())
    assert isinstance(net.layers[0], nn.Identity) and len(net.layers) == 4
    tail = net.layers[2:]
    assert isinstance(tail, nn.ModuleList) and len(tail) == 2 and tail[1] is net.layers[3]
    with pytest.raises(NotImplementedError, match="ModuleList"):
        net.layers(md.ones((1, 3)))
