"""Paddle's GPU creation and copy paths, checked without a GPU: the adapter is given two GPUs
whose places are stand-ins, and the ``paddle`` module it calls records the place every creation
and copy asks for (building the tensor on the CPU instead).

What this proves: every call the adapter makes names the GPU's place, and none goes through
``paddle.to_tensor``'s one-element shortcut, which in Paddle 3.3.1 builds float32/float64/int32/
int64/complex arrays of one element with ``paddle.full`` *without* the place (on gpu:0, see
``_to_tensor_non_static`` in ``paddle/tensor/creation.py``). What it cannot prove: that CUDA
puts the memory there; ``multidev.testing.test_placement`` checks that on a GPU machine.
"""

from __future__ import annotations

import numpy as np
import pytest

paddle = pytest.importorskip("paddle")

import multidev_paddle.backend as paddle_backend  # noqa: E402

import multidev as md  # noqa: E402
from multidev import nn, registry  # noqa: E402

pytestmark = pytest.mark.skipif(
    registry.current().name != "paddle", reason="needs MULTIDEV_BACKEND=paddle"
)

#: the dtypes for which paddle.to_tensor drops the place of a one-element array
_SHORTCUT_DTYPES = frozenset(
    np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.complex64, np.complex128)
)


class _Place:
    """Stands in for ``paddle.CUDAPlace(index)`` (a CPU build cannot make one)."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"CUDAPlace({self.index})"


PLACES = {md.cpu(): paddle.CPUPlace(), md.gpu(0): _Place(0), md.gpu(1): _Place(1)}


class _RecordingPaddle:
    """The ``paddle`` module as the adapter sees it: creation calls record the place they
    would put the tensor on, then build it on the CPU."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def __getattr__(self, name: str):
        return getattr(paddle, name)

    def Tensor(self, value, place=None, **kw):
        self.calls.append(("paddle.Tensor", place))
        return paddle.Tensor(value=value, place=paddle.CPUPlace(), **kw)

    def to_tensor(self, data, dtype=None, place=None, **kw):
        arr = np.asarray(data)
        one_element = arr.size == 1 and (dtype or arr.dtype) in _SHORTCUT_DTYPES
        self.calls.append(("paddle.to_tensor", None if one_element else place))
        return paddle.to_tensor(data, dtype=dtype, place=paddle.CPUPlace(), **kw)

    def full(self, shape, fill_value, dtype=None, name=None, *, device=None, **kw):
        self.calls.append(("paddle.full", device))
        return paddle.full(shape, fill_value, dtype=dtype, device=paddle.CPUPlace(), **kw)


@pytest.fixture
def recorded(monkeypatch):
    """Two GPUs for the adapter, and the list of (call, place) it makes for them."""
    bk = registry.current()
    fake = _RecordingPaddle()
    monkeypatch.setattr(paddle_backend, "paddle", fake)
    monkeypatch.setattr(bk, "_num_gpus", 2)
    monkeypatch.setattr(bk, "_devices", None)
    monkeypatch.setattr(bk, "_device_set", None)
    monkeypatch.setattr(bk, "native_device", lambda dev: PLACES[dev])

    def cuda(self, device_id=None, blocking=True):
        fake.calls.append(("Tensor.cuda", PLACES[md.gpu(device_id)]))
        return self.clone()

    monkeypatch.setattr(paddle.Tensor, "cuda", cuda)
    return fake.calls


def _check(calls, place):
    assert calls, "expected the adapter to call Paddle"
    wrong = [(name, got) for name, got in calls if got is not place]
    assert not wrong, f"calls that do not put the tensor on {place}: {wrong}"
    calls.clear()


ONE_ELEMENT = [
    lambda dev: md.asarray([1.0], device=dev),
    lambda dev: md.asarray(np.array([2.0]), device=dev),
    lambda dev: md.asarray([3], device=dev),
    lambda dev: md.asarray(np.array([4], dtype=np.int32), device=dev),
    lambda dev: md.asarray([1.0], dtype=md.bfloat16, device=dev),
    lambda dev: md.asarray(7.0, device=dev),
    lambda dev: md.rand(1, device=dev),
    lambda dev: md.randn(1, dtype=md.float64, device=dev),
    lambda dev: md.zeros(1, device=dev),
    lambda dev: md.full((1,), 2, device=dev),
    lambda dev: md.arange(1, device=dev),
    lambda dev: md.eye(1, device=dev),
]


@pytest.mark.parametrize("make", ONE_ELEMENT, ids=range(len(ONE_ELEMENT)))
def test_one_element_creation_names_the_gpu_place(recorded, make):
    x = make(md.gpu(1))
    assert x.device is md.gpu(1)
    _check(recorded, PLACES[md.gpu(1)])


def test_larger_creation_and_copies_name_the_gpu_place(recorded):
    md.rand(2, 3, device=md.gpu(1))
    md.asarray(np.arange(6, dtype=np.int64).reshape(2, 3), device=md.gpu(1))
    _check(recorded, PLACES[md.gpu(1)])
    sources = [md.ones(4), md.ones(1), md.ones(1, dtype=md.int32)]
    recorded.clear()
    for x in sources:
        assert x.to(md.gpu(1)).device is md.gpu(1)
    _check(recorded, PLACES[md.gpu(1)])


def test_model_moved_and_loaded_onto_gpu1_names_its_place(recorded, tmp_path):
    net = nn.Linear(3, 1)
    md.save(net.state_dict(), tmp_path / "net")
    recorded.clear()
    net.to(md.gpu(1))
    _check(recorded, PLACES[md.gpu(1)])
    state = md.load(tmp_path / "net")
    recorded.clear()
    net.load_state_dict(state)
    assert net.bias.device is md.gpu(1)
    _check(recorded, PLACES[md.gpu(1)])
    state = md.load(tmp_path / "net", device=md.gpu(1))
    assert state["bias"].device is md.gpu(1)
    _check(recorded, PLACES[md.gpu(1)])
