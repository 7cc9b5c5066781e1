"""Paddle lowerings of the convolution, pooling, normalisation and padding ops (arguments
already checked and made explicit by ``multidev.nn.functional_cnn``)."""

from __future__ import annotations

import math

import paddle
import paddle.nn.functional as F

from multidev.contract import channel_fold

#: the lowerings, found by op name by the adapter's op_table
__all__ = [
    *("adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "conv2d", "conv_transpose2d"),
    *("group_norm", "max_pool2d", "pad"),
    "batch_norm_train",
]

_FORMATS = {1: "NCL", 2: "NCHW", 3: "NCDHW"}


def _flat(pads) -> list[int]:
    """(top, bottom), (left, right) as Paddle's [top, bottom, left, right]."""
    return [v for p in pads for v in p]


def _pool_padded(x, pads, fill):
    """x with pads applied beforehand when they are not symmetric, and the padding left."""
    if all(lo == hi for lo, hi in pads):
        return x, [lo for lo, _ in pads]
    return F.pad(x, [0, 0, 0, 0, *_flat(pads)], value=fill), 0


def conv2d(x, w, b, stride, pads, dilation, groups):
    return F.conv2d(x, w, b, list(stride), _flat(pads), list(dilation), groups)


def conv_transpose2d(x, w, b, stride, padding, output_padding, dilation, groups):
    return F.conv2d_transpose(
        x,
        w,
        b,
        list(stride),
        list(padding),
        list(output_padding),
        dilation=list(dilation),
        groups=groups,
    )


def max_pool2d(x, kernel, stride, pads):
    x, padding = _pool_padded(x, pads, -math.inf)
    return F.max_pool2d(x, list(kernel), list(stride), padding)


def avg_pool2d(x, kernel, stride, pads):
    x, padding = _pool_padded(x, pads, 0.0)
    return F.avg_pool2d(x, list(kernel), list(stride), padding, exclusive=False)


def batch_norm(x, mean, var, w, b, eps):
    training = mean is None
    if training:  # Paddle updates the running statistics it is given: give it scratch ones
        c = x.shape[1]
        mean, var = paddle.zeros([c], x.dtype), paddle.ones([c], x.dtype)
    return F.batch_norm(x, mean, var, w, b, training=training, epsilon=eps)


def batch_norm_train(x, w, b, eps, mean, var, momentum):
    # Paddle's kernel writes its batch mean and biased variance to the statistics it is given
    # with momentum 0 (its rule is running * momentum + batch * (1 - momentum))
    c = x.shape[1]
    batch_mean, batch_var = paddle.zeros([c], x.dtype), paddle.zeros([c], x.dtype)
    y = F.batch_norm(x, batch_mean, batch_var, w, b, training=True, momentum=0.0, epsilon=eps)
    n = math.prod(x.shape) // c
    new_mean = None if mean is None else mean * (1 - momentum) + batch_mean * momentum
    new_var = None if var is None else var * (1 - momentum) + batch_var * (momentum * n / (n - 1))
    return y, new_mean, new_var


def group_norm(x, groups, w, b, eps):
    if w is None:  # Paddle's gradient of the input is wrong without a weight (Paddle 3.3)
        w = paddle.ones([x.shape[1]], x.dtype)
    return F.group_norm(x, groups, eps, w, b)


def pad(x, pads, mode, value):
    if mode == "constant":
        return F.pad(x, [v for p in pads for v in p], value=value)
    fold = channel_fold(x.shape, pads)
    if fold is None:
        return x.clone()
    first, lead, folded = fold
    spatial = [v for p in reversed(pads[first:]) for v in p]
    y = F.pad(x.reshape(folded), spatial, mode, data_format=_FORMATS[x.ndim - first])
    return y.reshape([*lead, *y.shape[1:]])


def adaptive_avg_pool2d(x, size):
    return F.adaptive_avg_pool2d(x, list(size))
