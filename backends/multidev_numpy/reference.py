"""Expected values for the conformance suite written directly in NumPy (not through multidev's
op table): the NumPy backend's own reference, the same entries as every adapter's (those not
written here are NumPy's functions of the names the suite uses). The ``grad_*`` entries are the gradients worked out by hand; the
native-module entries and the recurrent and attention ones (which return gradients) exist only
where a framework has modules and autograd (not NumPy)."""

from __future__ import annotations

import math

import numpy as np

from multidev.testing import reference as ref

__all__ = ["OPS"]


def _grad_softmax(x: np.ndarray, axis: int, gy: np.ndarray) -> np.ndarray:
    s = ref.numpy_softmax(x, axis)
    return s * (gy - (gy * s).sum(axis=axis, keepdims=True))


def _grad_cross_entropy(z: np.ndarray, labels) -> np.ndarray:
    """d mean_i(-log_softmax(z)[i, labels[i]]) / dz."""
    onehot = np.zeros_like(z)
    onehot[np.arange(z.shape[0]), np.asarray(labels, dtype=np.int64)] = 1
    return (ref.numpy_softmax(z, 1) - onehot) / z.shape[0]


def _conv2d(x, w, b, stride, padding, dilation, groups) -> np.ndarray:
    """Cross-correlation of NCHW ``x`` with OIHW ``w`` as a sum over kernel taps of strided
    slices of the zero-padded input (stride, padding, dilation: pairs)."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg : (g + 1) * cg]
        ws = w[g * og : (g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                           j * dw : j * dw + sw * (ow - 1) + 1 : sw]  # fmt: skip
                out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


def _standardize(x: np.ndarray, axes, eps) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) over ``axes``: the norms before scale and shift."""
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


def _per_channel(y: np.ndarray, w, b) -> np.ndarray:
    return y * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x, approximate) -> np.ndarray:
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        y = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    else:
        y = 0.5 * x64 * (1 + _erf(x64 / math.sqrt(2)))
    return y.astype(x.dtype)


def _pool(reduce, fill):
    def pool(x: np.ndarray, k, s, p) -> np.ndarray:
        xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=fill)
        windows = np.lib.stride_tricks.sliding_window_view(xp, k, axis=(2, 3))
        return reduce(windows[:, :, :: s[0], :: s[1]], axis=(4, 5))

    return pool


OPS = ref.native_table(
    np.asarray,
    np.asarray,
    {
        "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
        "relu": lambda a: np.maximum(a, 0),
        "softmax": ref.numpy_softmax,
        "log_softmax": ref.numpy_log_softmax,
        "linear": ref.numpy_linear,
        "conv2d": _conv2d,
        "max_pool2d": _pool(np.max, -np.inf),
        "avg_pool2d": _pool(np.mean, 0.0),
        "adaptive_avg_pool2d": ref.numpy_adaptive_avg_pool2d,
        "batch_norm_train": lambda x, w, b, eps: _per_channel(
            _standardize(x, (0, 2, 3), eps), w, b
        ),
        "group_norm": lambda x, groups, w, b, eps: _per_channel(
            _standardize(x.reshape(x.shape[0], groups, -1), -1, eps).reshape(x.shape), w, b
        ),
        "layer_norm": lambda x, w, b, eps: _standardize(x, -1, eps) * w + b,
        "gelu": _gelu,
        "embedding": lambda idx, w: w[idx],
        # d sum(linear(x, w, b) * gy) / d(x, w, b) for a 2-d x
        "grad_linear": lambda x, w, b, gy: (gy @ w, gy.T @ x, gy.sum(axis=0)),
        "grad_relu": lambda x, gy: gy * (x > 0),
        "grad_softmax": _grad_softmax,
        "grad_mse_loss": lambda a, b: 2 * (a - b) / a.size,
        "grad_cross_entropy": _grad_cross_entropy,
    },
    np,
)
