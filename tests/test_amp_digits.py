"""A small CNN on scikit-learn's bundled digits, trained under ``md.autocast(bfloat16)`` and in
float32 from the same initial weights: the test accuracies agree within one point."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
import multidev.nn.functional as F
from multidev import nn

BACKEND = md.get_backend()
if "autograd" not in md.registry.current().capabilities:
    pytest.skip(f"{BACKEND} has no autograd to train with", allow_module_level=True)
if BACKEND == "paddle" and md.registry.current().default_device().type == "cpu":
    pytest.skip("Paddle's CPU build has no bfloat16 conv2d kernel", allow_module_level=True)
if BACKEND == "mxnet":
    pytest.skip(
        "MXNet has no bfloat16 dtype (its CPU build has no bfloat16 kernels for multidev to use)",
        allow_module_level=True,
    )


datasets = pytest.importorskip("sklearn.datasets")


def _data():
    digits = datasets.load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    x, y = x[order], y[order]
    return (x[:1400], y[:1400]), (x[1400:], y[1400:])


def _accuracy(autocast: bool) -> float:
    md.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 4 * 4, 10),
    )
    opt = md.optim.Adam(model.parameters(), lr=1e-2)
    (xtr, ytr), (xte, yte) = _data()
    rng = np.random.default_rng(1)
    for _ in range(4):
        for idx in np.array_split(rng.permutation(len(ytr)), len(ytr) // 100):
            x, y = md.asarray(xtr[idx]), md.asarray(ytr[idx])
            with md.autograd.record(), md.autocast(dtype=md.bfloat16, enabled=autocast):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
    with md.no_grad(), md.autocast(dtype=md.bfloat16, enabled=autocast):
        logits = model(md.asarray(xte))
    for p in model.parameters():
        assert p.dtype == md.float32  # master weights
    pred = np.asarray(md.argmax(logits, axis=1).numpy())
    return float((pred == yte).mean())


def test_bf16_autocast_accuracy_within_one_point_of_float32():
    f32 = _accuracy(autocast=False)
    bf16 = _accuracy(autocast=True)
    assert f32 > 0.9, f32  # the float32 model learned the task
    assert abs(bf16 - f32) <= 0.01, (bf16, f32)
