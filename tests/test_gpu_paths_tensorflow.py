"""TensorFlow's GPU paths, checked without a GPU.

Soft placement: an adapter built while ``list_devices`` claims a ``/GPU:0`` that this machine
lacks behaves, for placement, like one on a GPU machine whose kernel for a dtype is missing:
with soft placement TensorFlow runs the op on the CPU instead. Every creation, copy and op must
then either raise or land on the GPU, never come back on the CPU under a tensor that says gpu:0.

The fused optimiser update: which dtype/device pairs TensorFlow has a kernel for, and that the
fallback computes what the fused kernel computes (run on the CPU). The GPU kernels themselves
are exercised by ``multidev.testing.test_placement`` on a GPU machine.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import multidev_tensorflow.backend as tf_backend  # noqa: E402

import multidev as md  # noqa: E402
from multidev import nn, registry  # noqa: E402
from multidev.dispatch import on  # noqa: E402

pytestmark = pytest.mark.skipif(
    registry.current().name != "tensorflow", reason="needs MULTIDEV_BACKEND=tensorflow"
)

GPU = md.gpu(0)


@pytest.fixture
def claimed_gpu(monkeypatch):
    """A TensorFlow adapter built while TensorFlow lists a GPU this machine does not have."""
    monkeypatch.setattr(tf_backend.Backend, "list_devices", lambda self: [md.cpu(), GPU])
    return tf_backend.Backend()


def _lands_on_the_gpu_or_raises(bk, make) -> None:
    try:
        x = make()
    except tf.errors.InvalidArgumentError as e:
        assert "GPU:0" in str(e)
        return
    assert bk.device_of(x) is GPU, f"a tensor said to be on gpu:0 lives on {x.device}"


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16, np.bool_])
def test_creation_and_copies_never_fall_back_to_the_cpu(claimed_gpu, dtype):
    bk = claimed_gpu
    arr = np.ones((1,), dtype=dtype)
    _lands_on_the_gpu_or_raises(bk, lambda: bk.from_numpy(arr, GPU))
    _lands_on_the_gpu_or_raises(bk, lambda: bk.from_numpy(np.ones((2, 3), dtype), GPU))
    _lands_on_the_gpu_or_raises(bk, lambda: bk.full((2,), 1, md.float32, GPU))
    _lands_on_the_gpu_or_raises(bk, lambda: bk.to_device(tf.constant(arr), GPU))


def test_ops_on_the_gpu_never_fall_back_to_the_cpu(claimed_gpu):
    bk = claimed_gpu
    x = tf.constant([1.0, 2.0])
    _lands_on_the_gpu_or_raises(bk, lambda: on(bk, GPU, bk.ops.add, x, x))
    _lands_on_the_gpu_or_raises(bk, lambda: on(bk, GPU, bk.ops.exp, x))


def test_the_cpu_keeps_soft_placement_and_it_comes_back_after_a_gpu_scope(claimed_gpu):
    bk = claimed_gpu
    before = tf.config.get_soft_device_placement()
    with bk.scope(GPU):
        assert tf.config.get_soft_device_placement() is False
        with bk.scope(GPU):
            pass
        assert tf.config.get_soft_device_placement() is False
        with bk.scope(md.cpu()):
            assert tf.config.get_soft_device_placement() is False  # still inside the GPU scope
    assert tf.config.get_soft_device_placement() is before
    x = on(bk, md.cpu(), bk.ops.add, tf.constant([1.0]), tf.constant([2.0]))
    assert bk.device_of(x) is md.cpu()


@pytest.mark.parametrize(
    ("dtype", "device", "fused"),
    [
        (tf.float32, "/job:localhost/replica:0/task:0/device:GPU:0", True),
        (tf.float16, "/job:localhost/replica:0/task:0/device:GPU:1", True),
        (tf.float64, "/GPU:0", True),
        (tf.bfloat16, "/job:localhost/replica:0/task:0/device:GPU:0", False),
        (tf.bfloat16, "/job:localhost/replica:0/task:0/device:CPU:0", True),
        (tf.bfloat16, "/job:localhost/replica:0/task:0/device:CPU:1", True),
    ],
)
def test_fused_update_only_where_tensorflow_has_the_kernel(dtype, device, fused):
    assert tf_backend.has_fused_apply(dtype, device) is fused


@pytest.mark.parametrize("dt", [md.bfloat16, md.float16, md.float32], ids=str)
def test_fallback_update_matches_the_fused_kernel(monkeypatch, dt):
    def step(fused: bool) -> tuple[np.ndarray, np.ndarray]:
        monkeypatch.setattr(tf_backend, "has_fused_apply", lambda dtype, device: fused)
        md.manual_seed(0)
        w = nn.Parameter(md.rand(3, 5, dtype=dt))
        before = w.numpy().astype(np.float64)
        X = md.rand(4, 5, dtype=dt)
        opt = md.optim.SGD([w], lr=0.3)
        with md.autograd.record():
            loss = md.sum(md.matmul(X, w.T))
        loss.backward()
        opt.step()
        assert w.dtype is dt and isinstance(w.native, tf.Variable)
        return before, w.numpy().astype(np.float64)

    before, fused = step(True)
    _, fallback = step(False)
    assert not np.array_equal(fused, before)
    np.testing.assert_array_equal(fallback, fused)
