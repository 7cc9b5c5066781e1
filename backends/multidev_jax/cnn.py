"""JAX lowerings of the convolution, pooling, normalisation and padding ops (arguments already
checked and made explicit by ``multidev.nn.functional_cnn``), on XLA's own kernels:
``jax.lax.conv_general_dilated`` and ``jax.lax.reduce_window``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

#: the lowerings, found by op name by the adapter's op_table
__all__ = ["avg_pool2d", "batch_norm", "conv2d", "conv_transpose2d", "max_pool2d", "pad"]

_NCHW = ("NCHW", "OIHW", "NCHW")


def _bias(y, b):
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def conv2d(x, w, b, stride, pads, dilation, groups):
    y = lax.conv_general_dilated(
        x,
        w,
        window_strides=tuple(stride),
        padding=[tuple(p) for p in pads],
        rhs_dilation=tuple(dilation),
        dimension_numbers=_NCHW,
        feature_group_count=groups,
    )
    return _bias(y, b).astype(x.dtype)


def conv_transpose2d(x, w, b, stride, padding, output_padding, dilation, groups):
    """The transposed convolution as the convolution of the input dilated by ``stride`` with
    the kernel flipped and its in/out channels swapped per group (w: (in, out/groups, kH, kW))."""
    cin, cout_g, kh, kw = w.shape
    wg = w.reshape(groups, cin // groups, cout_g, kh, kw).transpose(0, 2, 1, 3, 4)
    wt = jnp.flip(wg.reshape(groups * cout_g, cin // groups, kh, kw), axis=(2, 3))
    pads = [
        (d * (k - 1) - p, d * (k - 1) - p + op)
        for k, p, op, d in zip((kh, kw), padding, output_padding, dilation, strict=True)
    ]
    y = lax.conv_general_dilated(
        x,
        wt,
        window_strides=(1, 1),
        padding=pads,
        lhs_dilation=tuple(stride),
        rhs_dilation=tuple(dilation),
        dimension_numbers=_NCHW,
        feature_group_count=groups,
    )
    return _bias(y, b).astype(x.dtype)


def _lowest(dtype):
    dtype = np.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.inexact):
        return -jnp.inf
    return jnp.iinfo(dtype).min


def max_pool2d(x, kernel, stride, pads):
    return lax.reduce_window(
        x,
        np.array(_lowest(x.dtype), x.dtype),
        lax.max,
        (1, 1, *kernel),
        (1, 1, *stride),
        ((0, 0), (0, 0), *(tuple(p) for p in pads)),
    )


def avg_pool2d(x, kernel, stride, pads):
    total = lax.reduce_window(
        x,
        np.array(0, x.dtype),
        lax.add,
        (1, 1, *kernel),
        (1, 1, *stride),
        ((0, 0), (0, 0), *(tuple(p) for p in pads)),
    )
    return (total / (kernel[0] * kernel[1])).astype(x.dtype)


def batch_norm(x, mean, var, w, b, eps):
    """Normalised per channel by the running statistics, or by the batch's where ``mean`` is
    None (training; the biased variance, as PyTorch normalises)."""
    axes = (0, *range(2, x.ndim))
    if mean is None:
        mean = jnp.mean(x, axis=axes)
        var = jnp.var(x, axis=axes)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) * lax.rsqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y.astype(x.dtype)


_MODES = {"reflect": "reflect", "replicate": "edge"}


def pad(x, pads, mode, value):
    if mode == "constant":
        return jnp.pad(x, pads, constant_values=jnp.array(value, x.dtype))
    return jnp.pad(x, pads, mode=_MODES[mode])


del jax
