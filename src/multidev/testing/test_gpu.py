"""Section "gpu": the same checks on a CUDA GPU. Skipped, with the reason, when
``num_gpus() == 0``; run them on a machine with a GPU."""

# p.grad (a Tensor or None) is read right after backward(): a None fails the test there
# mypy: disable-error-code="union-attr"

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn

pytestmark = pytest.mark.gpu


def test_try_gpu_finds_it():
    assert md.num_gpus() >= 1
    assert md.try_gpu() is md.gpu(0) and md.try_all_gpus()[0] is md.gpu(0)
    assert md.gpu(0) in md.devices()
    assert md.Device.parse(md.gpu(0).native) is md.gpu(0)


def test_tensors_live_and_compute_on_the_gpu(bk):
    x = md.ones((2, 3), device=md.gpu(0))
    assert x.device is md.gpu(0) and bk.device_of(x.native) is md.gpu(0)
    y = (x @ x.T) + 1
    assert y.device is md.gpu(0) and bk.device_of(y.native) is md.gpu(0)
    np.testing.assert_array_equal(y.numpy(), np.full((2, 2), 4.0, dtype=np.float32))
    with md.gpu(0):
        assert md.rand(2).device is md.gpu(0)


def test_copies_between_cpu_and_gpu():
    # explicitly on the CPU: TensorFlow, Paddle and JAX place new tensors on the GPU by default
    x = md.arange(6, dtype=md.float32, device=md.cpu())
    g = x.to(md.gpu(0))
    assert g is not x and g.device is md.gpu(0) and g.to(md.gpu(0)) is g
    back = g.to(md.cpu())
    np.testing.assert_array_equal(back.numpy(), x.numpy())


def test_cpu_and_gpu_tensors_do_not_mix():
    with pytest.raises(md.DeviceMismatchError):
        md.ones(2, device=md.cpu()) + md.ones(2, device=md.gpu(0))


def test_model_and_checkpoint_on_the_gpu(tmp_path):
    md.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to(md.gpu(0))
    assert all(p.device is md.gpu(0) for p in net.parameters())
    X = md.rand(3, 4, device=md.gpu(0))
    md.save(net.state_dict(), tmp_path / "net")
    sd = md.load(tmp_path / "net", device=md.gpu(0))
    assert all(t.device is md.gpu(0) for t in sd.values())
    clone = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to(md.gpu(0))
    clone.load_state_dict(sd)
    np.testing.assert_allclose(clone(X).numpy(), net(X).numpy(), rtol=1e-6)


@pytest.mark.requires("autograd")
def test_training_step_on_the_gpu():
    md.manual_seed(0)
    net = nn.Linear(4, 1).to(md.gpu(0))
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    X = md.rand(8, 4, device=md.gpu(0))
    y = md.rand(8, 1, device=md.gpu(0))
    before = net.weight.numpy().copy()
    with md.autograd.record():
        loss = nn.functional.mse_loss(net(X), y)
    loss.backward()
    assert net.weight.grad.device is md.gpu(0)
    opt.step()
    assert net.weight.device is md.gpu(0)
    assert not np.array_equal(net.weight.numpy(), before)
