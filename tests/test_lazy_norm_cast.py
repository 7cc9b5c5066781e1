"""A lazy BatchNorm cast or moved before its first call keeps that cast once materialised
(PyTorch's lazy modules do: their uninitialised buffers follow ``to()``), on the active
backend."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn


def _batch(dtype):
    rng = np.random.default_rng(3)
    return md.asarray(rng.standard_normal((4, 3, 5, 5)).astype(dtype))


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("cast", ["double", "to", "parent"])
def test_cast_before_first_call_reaches_parameters_and_running_stats(affine, cast):
    bn = nn.LazyBatchNorm2d(affine=affine)
    if cast == "double":
        bn.double()
    elif cast == "to":
        bn.to(md.float64)
    else:  # cast through a containing block
        nn.Sequential(nn.Identity(), bn).to(dtype=md.float64)
    X = _batch(np.float64)
    y = bn(X)
    state = bn.state_dict()
    floating = {k: v.dtype for k, v in state.items() if k != "num_batches_tracked"}
    assert floating and set(floating.values()) == {md.float64}, floating
    assert state["num_batches_tracked"].dtype == md.int64
    assert y.dtype == md.float64
    x = X.numpy()
    want = 0.1 * x.mean(axis=(0, 2, 3))  # (1 - momentum) * 0 + momentum * batch mean
    np.testing.assert_allclose(bn.running_mean.numpy(), want, rtol=1e-12, atol=1e-15)


def test_without_a_cast_the_constructor_dtype_stays():
    bn = nn.LazyBatchNorm2d(affine=False)
    bn(_batch(np.float32))
    assert bn.running_mean.dtype == md.float32 and bn.running_var.dtype == md.float32
    bn64 = nn.LazyBatchNorm2d(dtype=md.float64)
    bn64(_batch(np.float64))
    assert bn64.running_var.dtype == md.float64 and bn64.weight.dtype == md.float64


def test_a_cast_after_materialising_still_casts_the_buffers():
    bn = nn.LazyBatchNorm2d()
    bn(_batch(np.float32))
    bn.double()
    assert bn.running_mean.dtype == md.float64 and bn.weight.dtype == md.float64
