"""MXNet lowerings of the convolution, pooling, normalisation and padding ops (arguments
already checked and made explicit by ``multidev.nn.functional_cnn``)."""

from __future__ import annotations

from mxnet import np as mnp
from mxnet import npx

#: the lowerings, found by op name by the adapter's op_table
__all__ = ["avg_pool2d", "batch_norm", "conv2d", "conv_transpose2d", "max_pool2d", "pad"]


def _filled(x, pads, fill):
    """x padded with ``fill`` (MXNet 1.9's ``np.pad`` pads zeros whatever constant_values is)."""
    if fill == 0:
        return mnp.pad(x, pads, mode="constant")
    for axis, (lo, hi) in enumerate(pads):
        parts = []
        for n in (lo, hi):
            shape = list(x.shape)
            shape[axis] = n
            parts.append(mnp.full(tuple(shape), fill, dtype=x.dtype, ctx=x.ctx))
        if lo or hi:
            x = mnp.concatenate([parts[0], x, parts[1]], axis=axis)
    return x


def _symmetric(x, pads, fill):
    """x with pads applied beforehand when they are not symmetric, and the padding left."""
    if all(lo == hi for lo, hi in pads):
        return x, tuple(lo for lo, _ in pads)
    full = ((0, 0), (0, 0), *pads)
    return _filled(x, full, fill), (0,) * len(pads)


def conv2d(x, w, b, stride, pads, dilation, groups):
    x, padding = _symmetric(x, pads, 0.0)
    return npx.convolution(
        x,
        w,
        b,
        kernel=tuple(w.shape[2:]),
        stride=stride,
        dilate=dilation,
        pad=padding,
        num_filter=w.shape[0],
        num_group=groups,
        no_bias=b is None,
        layout="NCHW",
    )


def conv_transpose2d(x, w, b, stride, padding, output_padding, dilation, groups):
    return npx.deconvolution(
        x,
        w,
        b,
        kernel=tuple(w.shape[2:]),
        stride=stride,
        dilate=dilation,
        pad=padding,
        adj=output_padding,
        num_filter=w.shape[1] * groups,
        num_group=groups,
        no_bias=b is None,
        layout="NCHW",
    )


def _pool(kind, fill):
    def pool(x, kernel, stride, pads):
        x, padding = _symmetric(x, pads, fill)
        return npx.pooling(
            x,
            kernel=kernel,
            stride=stride,
            pad=padding,
            pool_type=kind,
            pooling_convention="valid",
            count_include_pad=True,
            layout="NCHW",
        )

    return pool


max_pool2d = _pool("max", float("-inf"))
avg_pool2d = _pool("avg", 0.0)


def batch_norm(x, mean, var, w, b, eps):
    c = x.shape[1]
    if mean is None:
        # npx.batch_norm takes the batch's statistics only inside a training-mode recording;
        # written out, the same forward and gradients hold in every mode
        mean = mnp.mean(x, axis=(0, 2, 3), keepdims=True)
        centred = x - mean
        y = centred / mnp.sqrt(mnp.mean(centred * centred, axis=(0, 2, 3), keepdims=True) + eps)
        if w is not None:
            y = y * w.reshape(1, c, 1, 1)
        return y if b is None else y + b.reshape(1, c, 1, 1)
    gamma = mnp.ones((c,), dtype=x.dtype, ctx=x.ctx) if w is None else w
    beta = mnp.zeros((c,), dtype=x.dtype, ctx=x.ctx) if b is None else b
    return npx.batch_norm(
        x, gamma, beta, mean, var, eps=eps, fix_gamma=False, use_global_stats=True, axis=1
    )


_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def pad(x, pads, mode, value):
    if mode == "constant":
        return _filled(x, pads, value)
    return mnp.pad(x, pads, mode=_MODES[mode])
