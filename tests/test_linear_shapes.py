"""``nn.functional.linear`` against NumPy for few rows and many outputs as well as the
reverse: the TensorFlow adapter computes ``(w @ x.T).T`` for the first (its CPU matmul with a
large transposed operand is slow) and ``x @ w.T`` for the second; values and gradients must
not depend on which."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn, registry

needs_autograd = pytest.mark.skipif(
    "autograd" not in registry.current().capabilities, reason="needs autograd"
)


@pytest.mark.parametrize(("rows", "ins", "outs"), [(2, 5, 12), (12, 5, 2), (3, 4, 6), (6, 4, 6)])
def test_linear_matches_numpy(rows, ins, outs):
    rng = np.random.default_rng(rows * 100 + outs)
    x = rng.standard_normal((rows, ins)).astype(np.float32)
    w = rng.standard_normal((outs, ins)).astype(np.float32)
    b = rng.standard_normal(outs).astype(np.float32)
    got = nn.functional.linear(md.asarray(x), md.asarray(w), md.asarray(b))
    assert got.shape == (rows, outs)
    np.testing.assert_allclose(got.numpy(), x @ w.T + b, rtol=1e-5, atol=1e-5)


@needs_autograd
@pytest.mark.parametrize(("rows", "ins", "outs"), [(2, 5, 12), (12, 5, 2)])
def test_linear_gradients_match_numpy(rows, ins, outs):
    rng = np.random.default_rng(rows + outs)
    x = rng.standard_normal((rows, ins)).astype(np.float32)
    g = rng.standard_normal((rows, outs)).astype(np.float32)
    layer = nn.Linear(ins, outs)
    with md.autograd.record():
        loss = (layer(md.asarray(x)) * md.asarray(g)).sum()
    loss.backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), g.T @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.bias.grad.numpy(), g.sum(0), rtol=1e-5, atol=1e-5)
