"""Pooling and normalisation in MXNet's own code (``npx.pooling``, Gluon ``BatchNorm`` and
``GroupNorm``), for the conformance sections "conv" and "norm": (x, ...) native arrays in,
native arrays out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mxnet as mx
from mxnet import autograd, gluon, npx
from mxnet import np as mnp

__all__ = ["OPS"]


def _pool(kind):
    def run(x, k, s, p):
        return npx.pooling(
            x, kernel=k, stride=s, pad=p, pool_type=kind, pooling_convention="valid",
            count_include_pad=True, layout="NCHW",
        )  # fmt: skip

    return run


def _adaptive_avg_pool2d(x, size):
    """The mean over each of PyTorch's adaptive windows (floor(i*H/out) to ceil((i+1)*H/out))."""
    (h, w), (oh, ow) = x.shape[2:], size
    rows = [
        mnp.stack(
            [
                x[
                    :, :, i * h // oh : -(-(i + 1) * h // oh), j * w // ow : -(-(j + 1) * w // ow)
                ].mean(axis=(2, 3))
                for j in range(ow)
            ],
            axis=-1,
        )
        for i in range(oh)
    ]
    return mnp.stack(rows, axis=-2)


def _layer(layer, params):
    layer.initialize()
    for p, v in zip(layer.collect_params().values(), params, strict=False):
        p.set_data(v)
    return layer


def _batch_norm_train(x, w, b, eps):
    bn = _layer(gluon.nn.BatchNorm(epsilon=eps, in_channels=x.shape[1]), (w, b))
    with autograd.train_mode():
        return bn(x)


def _group_norm(x, groups, w, b, eps):
    """MXNet's GroupNorm kernel (a legacy operator: nd arrays) normalises; its affine
    parameters are per group in MXNet 1.x (PyTorch's are per channel), so they are left at
    one and zero and the per-channel scale and shift follow it."""
    ones, zeros = mx.nd.ones((groups,)), mx.nd.zeros((groups,))
    y = mx.nd.GroupNorm(x.as_nd_ndarray(), ones, zeros, num_groups=groups, eps=eps)
    return y.as_np_ndarray() * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)


OPS: dict[str, Callable[..., Any]] = {
    "max_pool2d": _pool("max"),
    "avg_pool2d": _pool("avg"),
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "batch_norm_train": _batch_norm_train,
    "group_norm": _group_norm,
}
