"""MXNet lowerings of the convolution, pooling, normalisation and padding ops (arguments
already checked and made explicit by ``multidev.nn.functional_cnn``), and of the activation
that CNNs put between them."""

from __future__ import annotations

from mxnet import autograd, npx
from mxnet import nd as _nd
from mxnet import np as mnp

from multidev.tracing import tracing

from .jit import trace_input

#: the lowerings, found by op name by the adapter's op_table
__all__ = [
    *("avg_pool2d", "batch_norm", "batch_norm_train", "conv2d", "conv_transpose2d"),
    *("max_pool2d", "pad", "sigmoid"),
]


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


def sigmoid(x):
    """MXNet's ``Activation`` kernel (oneDNN's on the CPU, which keeps the layout of the
    convolutions and poolings around it): forward and backward of a (64, 6, 28, 28) float32
    array about 3x faster than ``npx.sigmoid`` (2.2 against 6.6 ms, one thread)."""
    return npx.activation(x, act_type="sigmoid")


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
    gamma = mnp.ones((c,), dtype=x.dtype, ctx=x.ctx) if w is None else w
    beta = mnp.zeros((c,), dtype=x.dtype, ctx=x.ctx) if b is None else b
    if mean is None:
        # the fused kernel normalises with the batch's statistics in training mode only (and
        # then updates the moving statistics it is given in place): train_mode() (which
        # leaves recording as it is) and throwaway moving statistics, since the core keeps
        # the running ones
        with autograd.train_mode():
            return npx.batch_norm(
                x, gamma, beta, mnp.zeros((c,), dtype=x.dtype, ctx=x.ctx),
                mnp.ones((c,), dtype=x.dtype, ctx=x.ctx), eps=eps, fix_gamma=False,
                use_global_stats=False, axis=1,
            )  # fmt: skip
    return npx.batch_norm(
        x, gamma, beta, mean, var, eps=eps, fix_gamma=False, use_global_stats=True, axis=1
    )


#: moving statistics handed to the fused kernel in training mode, by (channels, dtype,
#: context): it normalises with the batch's statistics and leaves these unread
_UNUSED_MOVING: dict = {}


def _blocked(a):
    """``a`` with no gradient flowing back through it (MXNet's ``BlockGrad``)."""
    return _nd.BlockGrad(a.as_nd_ndarray()).as_np_ndarray()


def batch_norm_train(x, w, b, eps, mean, var, momentum):
    c = x.shape[1]
    gamma = mnp.ones((c,), dtype=x.dtype, ctx=x.ctx) if w is None else w
    beta = mnp.zeros((c,), dtype=x.dtype, ctx=x.ctx) if b is None else b
    key = (c, x.dtype, x.ctx)
    if key not in _UNUSED_MOVING:
        _UNUSED_MOVING[key] = mnp.zeros((c,), dtype=x.dtype, ctx=x.ctx)
    unused = trace_input(_UNUSED_MOVING[key])
    with autograd.train_mode():
        y, batch_mean, inv_std = npx.batch_norm(
            x, gamma, beta, unused, unused, eps=eps, fix_gamma=False, use_global_stats=False,
            axis=1, output_mean_var=True,
        )  # fmt: skip
    # the kernel gives the batch mean and 1 / sqrt(biased variance + eps); the running
    # statistics are updated in place from them
    n = x.size // c
    if tracing():
        # a graph cannot replay an in-place update: the new statistics are new values of
        # the graph (no gradient flows into them), which the caller writes into the buffers
        # (jit.traced_write)
        batch_mean, inv_std = (_blocked(a) for a in (batch_mean, inv_std))
        if mean is not None:
            mean = mean * (1 - momentum) + batch_mean * momentum
        if var is not None:
            var = var * (1 - momentum) + (1 / mnp.square(inv_std) - eps) * (momentum * n / (n - 1))
        return y, mean, var
    with autograd.pause():
        if mean is not None:
            mean *= 1 - momentum
            mean += batch_mean * momentum
        if var is not None:
            var *= 1 - momentum
            var += (1 / mnp.square(inv_std) - eps) * (momentum * n / (n - 1))
    return y, mean, var


_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def pad(x, pads, mode, value):
    if mode == "constant":
        return _filled(x, pads, value)
    return mnp.pad(x, pads, mode=_MODES[mode])
