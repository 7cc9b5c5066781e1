"""Section "placement": ``x.device`` is where ``x.native`` lives, after every creation, copy,
op of the op table and optimiser step, on every device the backend lists (TensorFlow's logical
CPUs, MXNet's ``cpu(i)`` and every GPU included). A framework that quietly runs a kernel on
another device (TensorFlow's soft placement, Paddle's one-element ``to_tensor``) fails here."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import dtypes as _dt
from multidev import nn, registry
from multidev.testing import sample_values
from multidev.testing.test_ops import _cases

DEVICES = registry.current().devices()
CASES = _cases(np.random.default_rng(0))


def _placed(bk, x: md.Tensor, dev: md.Device) -> None:
    native = bk.variable_tensor(x.native) if isinstance(x, nn.Parameter) else x.native
    assert x.device is dev
    assert bk.device_of(native) is dev, f"x.device is {dev}, x.native lives elsewhere"


def _dtypes(bk) -> list:
    return [dt for dt in _dt.ALL if dt in bk.dtypes]


@pytest.mark.parametrize("dev", DEVICES, ids=str)
def test_creation_lands_on_the_device(bk, dev):
    made = [
        md.asarray([1.0], device=dev),
        md.asarray(np.array([2.0]), device=dev),
        md.asarray([3], device=dev),
        md.asarray(4.0, device=dev),
        md.zeros((2, 3), device=dev),
        md.ones(1, device=dev),
        md.full((2,), 7, device=dev),
        md.arange(5, device=dev),
        md.arange(1, device=dev),
        md.eye(3, device=dev),
        md.rand(1, device=dev),
        md.rand(2, 3, device=dev),
        md.randn(4, device=dev),
    ]
    with dev:
        made += [md.ones(2), md.rand(1)]
    base = md.ones((2, 2), device=dev)
    made += [md.zeros_like(base), md.ones_like(base), md.full_like(base, 3.0)]
    for x in made:
        _placed(bk, x, dev)


@pytest.mark.parametrize("dev", DEVICES, ids=str)
def test_every_dtype_is_created_and_copied_onto_the_device(bk, dev, rng):
    for dt in _dtypes(bk):
        values = sample_values(dt, rng)
        for x in (
            md.asarray(values, device=dev),
            md.asarray(values[:1], device=dev),
            md.zeros(3, dtype=dt, device=dev),
            md.ones(1, dtype=dt, device=dev),
        ):
            _placed(bk, x, dev)
        for src in DEVICES:
            _placed(bk, md.asarray(values, device=src).to(dev), dev)
            _placed(bk, md.asarray(values[:1], device=src).to(dev, copy=True), dev)


@pytest.mark.parametrize("dev", DEVICES, ids=str)
@pytest.mark.parametrize("name", list(CASES))
def test_every_op_of_the_op_table_stays_on_the_device(bk, dev, name):
    fn, _, arrays = CASES[name]
    _placed(bk, fn(*[md.asarray(a, device=dev) for a in arrays]), dev)


@pytest.mark.parametrize("dev", DEVICES, ids=str)
def test_ops_on_every_dtype_stay_on_the_device(bk, dev, rng):
    for dt in _dtypes(bk):
        x = md.asarray(sample_values(dt, rng)[:4], device=dev)
        y = md.ones(x.shape, dtype=dt, device=dev)
        results = [x == y, md.maximum(x, y), md.sum(x), x.astype(md.float32), x[1:3]]
        if dt is not md.bool:
            results += [x + y, x * y, md.abs(x)]
        for r in results:
            _placed(bk, r, dev)


@pytest.mark.requires("autograd")
@pytest.mark.parametrize("dev", DEVICES, ids=str)
@pytest.mark.parametrize("dt", [md.float16, md.bfloat16, md.float32], ids=str)
def test_sgd_step_in_low_precision_stays_on_the_device(bk, dev, dt):
    """On a GPU this is TensorFlow's fused update, which lacks a bfloat16 kernel there."""
    if dt not in bk.dtypes:
        pytest.skip(f"{bk.name} has no {dt}")
    w0 = np.array([[0.5, -1.0, 2.0]], dtype=np.float32)
    x = np.array([[1.0, 2.0, -1.0], [0.5, 0.25, 4.0]], dtype=np.float32)
    w = nn.Parameter(md.asarray(w0, dtype=dt, device=dev))
    opt = md.optim.SGD([w], lr=0.125)
    with md.autograd.record():
        loss = md.sum(md.matmul(md.asarray(x, dtype=dt, device=dev), w.T))
    loss.backward()
    opt.step()
    _placed(bk, w, dev)
    assert w.dtype is dt
    # d(loss)/dw is the column sums of x; these values are exact in every float type here
    expected = w0 - 0.125 * x.sum(axis=0, keepdims=True)
    np.testing.assert_array_equal(w.numpy().astype(np.float32), expected)


@pytest.mark.gpu
def test_the_last_gpu_holds_one_element_tensors_and_low_precision_steps(bk):
    """gpu:1 on a two-GPU machine: where Paddle's ``to_tensor`` put one-element tensors on
    gpu:0, and TensorFlow's fused update has no bfloat16 kernel."""
    gpus = [d for d in DEVICES if d.type == "gpu"]
    assert gpus == [md.gpu(i) for i in range(md.num_gpus())]
    dev = gpus[-1]
    for x in (md.asarray([1.0], device=dev), md.rand(1, device=dev), nn.Linear(3, 1).to(dev).bias):
        _placed(bk, x, dev)
    for dt in (md.float16, md.bfloat16):
        if dt in bk.dtypes:
            test_sgd_step_in_low_precision_stays_on_the_device(bk, dev, dt)
