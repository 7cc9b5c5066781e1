"""Section "norm": ``batch_norm`` (training and evaluation, running statistics),
``group_norm`` and the BatchNorm layers' buffers against their NumPy definitions."""

from __future__ import annotations

import numpy as np

import multidev as md
from multidev import nn
from multidev.nn import functional as F


def test_batch_norm_training_and_running_statistics(rng):
    x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    rm, rv = md.zeros((3,)), md.ones((3,))
    got = F.batch_norm(md.asarray(x), rm, rv, training=True, momentum=0.1)
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    want = (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm.numpy(), 0.1 * mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        rv.numpy(), 0.9 + 0.1 * x.var(axis=(0, 2, 3), ddof=1), rtol=1e-5, atol=1e-7
    )


def test_batch_norm_evaluation_uses_running_statistics(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    m, v = np.array([0.5, -1.0, 2.0], np.float32), np.array([1.5, 0.5, 2.0], np.float32)
    got = F.batch_norm(md.asarray(x), md.asarray(m), md.asarray(v))
    want = (x - m.reshape(1, 3, 1)) / np.sqrt(v.reshape(1, 3, 1) + 1e-5)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_group_norm(rng):
    x = rng.standard_normal((2, 6, 4, 3)).astype(np.float32)
    got = F.group_norm(md.asarray(x), 3).numpy()
    g = x.reshape(2, 3, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(
        x.shape
    )
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_batchnorm_layer_buffers_update_in_training_only(rng):
    bn = nn.BatchNorm2d(3)
    x = md.asarray(rng.standard_normal((4, 3, 2, 2)).astype(np.float32))
    bn.eval()
    bn(x)
    assert bn.num_batches_tracked is not None
    assert bn.num_batches_tracked.item() == 0
    bn.train()
    bn(x)
    assert bn.num_batches_tracked.item() == 1
    assert list(bn.state_dict()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked",
    ]  # fmt: skip


def test_batch_norm_training_matches_the_framework(rng, native_ops):
    x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    w, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    got = F.batch_norm(
        md.asarray(x), None, None, md.asarray(w), md.asarray(b), training=True, eps=1e-3
    )
    want = native_ops["batch_norm_train"](x, w, b, 1e-3)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


def test_group_norm_matches_the_framework(rng, native_ops):
    x = rng.standard_normal((2, 6, 4, 3)).astype(np.float32)
    w, b = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    got = F.group_norm(md.asarray(x), 3, md.asarray(w), md.asarray(b), eps=1e-4)
    want = native_ops["group_norm"](x, 3, w, b, 1e-4)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
