"""avg_pool2d divides each window by PyTorch's divisor on the active backend: kh * kw where
every window lies in the padded input, fewer cells for the partial windows of ``ceil_mode``
and, without ``count_include_pad``, for windows over the padding."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev.nn import functional as F


def _reference(x, k, s, p, ceil_mode, count_include_pad):
    """PyTorch's avg_pool2d (square kernel, stride and padding) written with loops."""
    n, c, h, w = x.shape

    def size(length):
        span = length + 2 * p - k
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= length + p:
            out -= 1
        return out

    oh, ow = size(h), size(w)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - p, j * s - p
            h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
            area = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            if not count_include_pad:
                area = (h1 - h0) * (w1 - w0)
            y[:, :, i, j] = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3)) / area
    return y


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize(("k", "s", "p"), [(2, 2, 0), (3, 2, 1), (3, 3, 0), (2, 1, 1)])
def test_avg_pool2d_divisors(k, s, p, ceil_mode, count_include_pad):
    x = np.random.default_rng(4).standard_normal((2, 3, 7, 8)).astype(np.float32)
    got = F.avg_pool2d(md.asarray(x), k, s, p, ceil_mode, count_include_pad)
    want = _reference(x.astype(np.float64), k, s, p, ceil_mode, count_include_pad)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
