"""The optimisers' batched update and zero_grad: ``add_scaled_many_`` (one multi-tensor kernel
per device, dtype and step size where the framework has one) gives the per-tensor
``add_scaled_``'s numbers; ``step()`` over many parameters, groups and dtypes follows the rule;
``zero_grad`` over many parameters keeps PyTorch's accumulate-until-zeroed semantics."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn, registry

BK = registry.current()
#: more tensors than MXNet's multi-tensor kernel takes in one call (60)
MANY = 130
needs_autograd = pytest.mark.skipif(
    "autograd" not in BK.capabilities, reason=f"{BK.name} adapter lacks capability 'autograd'"
)


def _arrays(rng, dtype, empty=True):
    shapes = [(int(rng.integers(1, 5)), int(rng.integers(1, 7))) for _ in range(MANY)]
    shapes[5] = (70, 70)  # larger than what MXNet batches (4,096 elements)
    if empty:
        shapes[3] = (0, 4)  # an empty parameter is updated as a no-op
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _dtypes():
    out = ["float32", "float64"]
    if "float16" in BK.capabilities:
        out.append("float16")
    return out


@pytest.mark.parametrize("dtype", _dtypes())
def test_many_updates_equal_one_by_one(dtype):
    rng = np.random.default_rng(0)
    xs = _arrays(rng, dtype)
    ys = [rng.standard_normal(x.shape).astype(dtype) for x in xs]
    alpha = -0.0625 - float(rng.random())
    one = [md.asarray(x.copy()) for x in xs]
    many = [md.asarray(x.copy()) for x in xs]
    deltas = [md.asarray(y) for y in ys]
    for t, d in zip(one, deltas, strict=True):
        t._native = BK.add_scaled_(t._native, d._native, alpha)
    outs = BK.add_scaled_many_([t._native for t in many], [d._native for d in deltas], alpha)
    assert len(outs) == MANY
    for t, out in zip(many, outs, strict=True):
        t._native = out
    for a, b, x in zip(one, many, xs, strict=True):
        assert b.shape == x.shape
        np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert not np.array_equal(many[0].numpy(), xs[0])  # the update happened


def _sgd_reference(values, grads, lrs, momentum, wd, steps):
    """PyTorch's SGD rule in float64 NumPy."""
    ws = [v.astype(np.float64) for v in values]
    bufs = [None] * len(ws)
    for _ in range(steps):
        for i, (w, g) in enumerate(zip(ws, grads, strict=True)):
            d = g.astype(np.float64) + wd * w
            if momentum:
                bufs[i] = d if bufs[i] is None else momentum * bufs[i] + d
                d = bufs[i]
            ws[i] = w - lrs[i] * d
    return ws


@pytest.mark.parametrize(("momentum", "wd"), [(0.0, 0.0), (0.9, 0.0), (0.9, 1e-2)])
def test_sgd_over_many_parameters_groups_and_dtypes(momentum, wd):
    rng = np.random.default_rng(1)
    values = _arrays(rng, "float32")
    values[1::7] = [v.astype(np.float64) for v in values[1::7]]  # a second dtype
    grads = [rng.standard_normal(v.shape).astype(v.dtype) for v in values]
    params = [nn.Parameter(md.asarray(v.copy())) for v in values]
    half = MANY // 2
    opt = md.optim.SGD(
        [{"params": params[:half]}, {"params": params[half:], "lr": 0.05}],
        lr=0.1,
        momentum=momentum,
        weight_decay=wd,
    )
    for _ in range(3):
        for p, g in zip(params, grads, strict=True):
            p.grad = md.asarray(g)
        opt.step()
    lrs = [0.1] * half + [0.05] * (MANY - half)
    want = _sgd_reference(values, grads, lrs, momentum, wd, steps=3)
    for p, w, v in zip(params, want, values, strict=True):
        assert p.numpy().dtype == v.dtype
        np.testing.assert_allclose(p.numpy(), w, rtol=2e-6, atol=2e-6)


@needs_autograd
def test_zero_grad_over_many_parameters_restarts_accumulation():
    rng = np.random.default_rng(2)
    params = [nn.Parameter(md.asarray(v)) for v in _arrays(rng, "float32", empty=False)]
    scales = [float(i + 1) for i in range(MANY)]

    def backward():
        with md.autograd.record():
            loss = sum(
                ((p * s).sum() for p, s in zip(params, scales, strict=True)), md.asarray(0.0)
            )
        loss.backward()

    opt = md.optim.SGD(params, lr=0.1)
    backward()
    backward()
    for p, s in zip(params, scales, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), np.full(p.shape, 2 * s, np.float32))
    opt.zero_grad()
    assert all(p.grad is None for p in params)
    backward()
    for p, s in zip(params, scales, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), np.full(p.shape, s, np.float32))
    opt.zero_grad(set_to_none=False)
    for p in params:
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape, np.float32))
    backward()
    opt.zero_grad()
    opt.zero_grad()
    backward()
    for p, s in zip(params, scales, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), np.full(p.shape, s, np.float32))
