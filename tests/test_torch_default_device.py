"""The torch adapter's ``default_device`` follows ``torch.set_default_device`` and
``with torch.device(...)`` (its fast path, taken when no torch function mode is active, must
not hide either of them)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import multidev as md  # noqa: E402
from multidev import registry  # noqa: E402

pytestmark = pytest.mark.skipif(
    registry.current().name != "torch", reason="needs MULTIDEV_BACKEND=torch"
)
NO_GPU = torch.cuda.device_count() == 0


def test_without_a_device_mode_new_tensors_go_to_the_cpu():
    assert torch._C._len_torch_function_stack() == 0
    assert md.default_device() is md.cpu()
    assert md.asarray([1.0, 2.0]).native.device == torch.device("cpu")


def test_a_device_that_is_not_ours_leaves_creation_on_the_cpu():
    torch.set_default_device("meta")
    try:
        assert md.default_device() is md.cpu()
        assert md.zeros(2).native.device == torch.device("cpu")
    finally:
        torch.set_default_device(None)
    assert md.default_device() is md.cpu()


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU, reason="no GPU: num_gpus() == 0")
def test_set_default_device_to_a_gpu_is_honoured():
    torch.set_default_device("cuda")
    try:
        assert md.default_device() is md.gpu(torch.cuda.current_device())
        assert md.asarray([1.0]).device is md.gpu(torch.cuda.current_device())
    finally:
        torch.set_default_device(None)
    assert md.default_device() is md.cpu()
