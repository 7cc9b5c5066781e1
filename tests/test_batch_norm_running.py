"""Training-mode batch normalisation on the active backend: output, gradients and running
statistics equal PyTorch's definition (NumPy here), whether the adapter's fused kernel gives
the batch statistics (``batch_norm_train``) or the core computes them."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.nn import functional as F

HAS_AUTOGRAD = md.asarray(0.0).backend in md.autograd.autograd_backends()


def _reference(x, mean, var, w, b, momentum, eps=1e-5):
    """y, new running mean, new running var by PyTorch's rule (unbiased running variance)."""
    axes = (0, *range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mu, sigma2 = x.mean(axis=axes), x.var(axis=axes)
    y = (x - mu.reshape(shape)) / np.sqrt(sigma2.reshape(shape) + eps)
    y = y * w.reshape(shape) + b.reshape(shape)
    n = x.size // x.shape[1]
    return (
        y,
        (1 - momentum) * mean + momentum * mu,
        (1 - momentum) * var + momentum * sigma2 * n / (n - 1),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("momentum", [0.1, 0.7])
def test_functional_training_updates_running_statistics(dtype, momentum):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 4, 5, 3)) * 3 + 2).astype(dtype)
    w, b = rng.standard_normal(4).astype(dtype), rng.standard_normal(4).astype(dtype)
    mean, var = rng.standard_normal(4).astype(dtype), rng.uniform(0.5, 2, 4).astype(dtype)
    rm, rv = md.asarray(mean.copy()), md.asarray(var.copy())
    y = F.batch_norm(md.asarray(x), rm, rv, md.asarray(w), md.asarray(b), True, momentum)
    want_y, want_mean, want_var = _reference(x, mean, var, w, b, momentum)
    tol = 2e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(y.numpy(), want_y, rtol=tol, atol=tol)
    np.testing.assert_allclose(rm.numpy(), want_mean, rtol=tol, atol=tol)
    np.testing.assert_allclose(rv.numpy(), want_var, rtol=tol, atol=tol)
    assert rm.dtype == md.asarray(mean).dtype and rv.shape == (4,)


def test_only_one_running_statistic_is_updated():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 3, 4, 4)).astype(np.float32)
    ones, zeros = np.ones(3, np.float32), np.zeros(3, np.float32)
    rv = md.asarray(ones.copy())
    F.batch_norm(md.asarray(x), None, rv, training=True, momentum=0.5)
    np.testing.assert_allclose(rv.numpy(), _reference(x, zeros, ones, ones, zeros, 0.5)[2], 2e-5)


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 7), (4, 3, 5, 5)])
def test_layer_steps_and_state_dict_views_follow(shape):
    rng = np.random.default_rng(9)
    layer = nn.BatchNorm2d(3) if len(shape) == 4 else nn.BatchNorm1d(3)
    state = layer.state_dict()
    mean, var = np.zeros(3), np.ones(3)
    one = np.ones(3)
    for _ in range(3):
        x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
        y = layer(md.asarray(x))
        want_y, mean, var = _reference(x, mean, var, one, 0 * one, 0.1)
        np.testing.assert_allclose(y.numpy(), want_y, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(layer.running_mean.numpy(), mean, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(layer.running_var.numpy(), var, rtol=2e-5, atol=1e-6)
    assert int(layer.num_batches_tracked.item()) == 3
    np.testing.assert_array_equal(
        md.asarray(layer.state_dict()["running_var"]).numpy(), layer.running_var.numpy()
    )
    assert set(state) == set(layer.state_dict())


@pytest.mark.skipif(not HAS_AUTOGRAD, reason="the backend has no autograd")
def test_gradients_through_the_training_kernel():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 3, 3, 3))
    g = rng.standard_normal((4, 3, 3, 3))
    layer = nn.BatchNorm2d(3).double()
    X = nn.Parameter(md.asarray(x))
    with md.autograd.record():
        loss = (layer(X) * md.asarray(g)).sum()
    loss.backward()
    # d/dx of sum(g * (x - mu) / s) with batch statistics, weight 1
    n = x.size // 3
    mu, s = (
        x.mean(axis=(0, 2, 3), keepdims=True),
        np.sqrt(x.var(axis=(0, 2, 3), keepdims=True) + 1e-5),
    )
    xh = (x - mu) / s
    gm, gxm = g.mean(axis=(0, 2, 3), keepdims=True), (g * xh).sum(axis=(0, 2, 3), keepdims=True)
    want = (g - gm - xh * gxm / n) / s
    np.testing.assert_allclose(X.grad.numpy(), want, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(layer.weight.grad.numpy(), gxm.ravel(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(layer.bias.grad.numpy(), g.sum(axis=(0, 2, 3)), rtol=1e-8)
