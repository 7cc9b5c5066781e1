"""NumPy forward references of the convolution, pooling, normalisation and padding ops: the
expected values of the conformance suite, written from the definitions (windows by
``sliding_window_view``, sums by ``einsum``)."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

#: the lowerings, found by op name by the adapter's op_table
__all__ = ["avg_pool2d", "batch_norm", "conv2d", "conv_transpose2d", "max_pool2d", "pad"]


def _padded(x, pads, fill=0.0):
    return np.pad(x, ((0, 0), (0, 0), *pads), constant_values=fill)


def _windows(x, kernel, stride, dilation=(1, 1)):
    """(N, C, OH, OW, kH, kW) windows of x (N, C, H, W)."""
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))
    win = sliding_window_view(x, span, axis=(2, 3))
    return win[:, :, :: stride[0], :: stride[1], :: dilation[0], :: dilation[1]]


def conv2d(x, w, b, stride, pads, dilation, groups):
    win = _windows(_padded(x, pads), w.shape[2:], stride, dilation)
    n, c, oh, ow, kh, kw = win.shape
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    wg = w.reshape(groups, w.shape[0] // groups, *w.shape[1:])
    y = np.einsum("ngchwij,gocij->ngohw", win, wg).reshape(n, w.shape[0], oh, ow)
    return (y if b is None else y + b.reshape(1, -1, 1, 1)).astype(x.dtype)


def conv_transpose2d(x, w, b, stride, padding, output_padding, dilation, groups):
    n, cin, h, wd = x.shape
    kh, kw = w.shape[2:]
    cout_g = w.shape[1]
    full_h = (h - 1) * stride[0] + dilation[0] * (kh - 1) + 1 + output_padding[0]
    full_w = (wd - 1) * stride[1] + dilation[1] * (kw - 1) + 1 + output_padding[1]
    y = np.zeros((n, groups, cout_g, full_h, full_w), dtype=np.float64)
    xg = x.reshape(n, groups, cin // groups, h, wd)
    wg = w.reshape(groups, cin // groups, cout_g, kh, kw)
    for i in range(kh):  # one scatter-add per kernel position
        for j in range(kw):
            contrib = np.einsum("ngchw,gco->ngohw", xg, wg[:, :, :, i, j])
            r, c = i * dilation[0], j * dilation[1]
            y[
                :,
                :,
                :,
                r : r + (h - 1) * stride[0] + 1 : stride[0],
                c : c + (wd - 1) * stride[1] + 1 : stride[1],
            ] += contrib
    ph, pw = padding
    y = y.reshape(n, groups * cout_g, full_h, full_w)[:, :, ph : full_h - ph, pw : full_w - pw]
    return (y if b is None else y + b.reshape(1, -1, 1, 1)).astype(x.dtype)


def max_pool2d(x, kernel, stride, pads):
    return _windows(_padded(x, pads, -np.inf), kernel, stride).max(axis=(4, 5))


def avg_pool2d(x, kernel, stride, pads):
    return _windows(_padded(x, pads), kernel, stride).mean(axis=(4, 5)).astype(x.dtype)


def batch_norm(x, mean, var, w, b, eps):
    c = x.shape[1]
    if mean is None:
        mean = x.mean(axis=(0, 2, 3))
        var = x.var(axis=(0, 2, 3))
    y = (x - mean.reshape(1, c, 1, 1)) / np.sqrt(var.reshape(1, c, 1, 1) + eps)
    if w is not None:
        y = y * w.reshape(1, c, 1, 1)
    if b is not None:
        y = y + b.reshape(1, c, 1, 1)
    return y.astype(x.dtype)


_MODES = {"reflect": "reflect", "replicate": "edge"}


def pad(x, pads, mode, value):
    if mode == "constant":
        return np.pad(x, pads, constant_values=value)
    return np.pad(x, pads, mode=_MODES[mode])
