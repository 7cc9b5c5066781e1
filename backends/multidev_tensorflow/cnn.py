"""TensorFlow lowerings of the convolution, pooling, normalisation and padding ops (arguments
already checked and made explicit by ``multidev.nn.functional_cnn``).

The API is NCHW. TensorFlow's CPU kernels for convolution and pooling take NHWC only
(``Conv2D``/``MaxPool`` raise UnimplementedError/InvalidArgumentError for NCHW on CPU), so
on CPU the input is transposed to NHWC and the result back; on a GPU the NCHW kernels run
directly.

Inside ``md.jit``'s trace (``graph_nchw``) the lowerings stay NCHW on the CPU too, and the
compiled function runs with Grappler's CPU layout conversion (``jit.py``), which rewrites the
graph to NHWC once: a transpose in at the first convolution and out where the activations
leave the convolutional part, instead of a pair around every convolution, pooling and their
gradients (LeNet's step had 19 transposes; Keras and a native ``tf.function`` have none).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import tensorflow as tf

#: the lowerings, found by op name by the adapter's op_table
__all__ = [
    *("avg_pool2d", "batch_norm", "batch_norm_train", "conv2d", "conv_transpose2d"),
    *("max_pool2d", "pad"),
]

_TO_NHWC, _TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)


_local = threading.local()


@contextmanager
def graph_nchw() -> Iterator[None]:
    """While ``md.jit`` traces a function whose graph runs with Grappler's NCHW-to-NHWC
    conversion on the CPU: NCHW lowerings there too (eager code never runs inside)."""
    before = getattr(_local, "nchw", False)
    _local.nchw = True
    try:
        yield
    finally:
        _local.nchw = before


def _nchw_native(x) -> bool:
    """Whether NCHW kernels take ``x``: on a GPU, and in a graph that Grappler converts."""
    return "GPU" in x.device or (getattr(_local, "nchw", False) and not tf.executing_eagerly())


def _spatial(pads):
    return [[0, 0], [0, 0], *[list(p) for p in pads]]


def _named_padding(sizes, kernel, stride, pads) -> str | None:
    """``"VALID"`` or ``"SAME"`` where it pads as ``pads`` (per spatial dimension, (lo, hi))
    on inputs of spatial ``sizes``, else None.

    The oneDNN kernels that TensorFlow's CPU build runs the gradients of a convolution with
    take the named paddings only: with explicit ``pads`` (even zeros) the gradients fall back
    to TensorFlow's own kernels, several times slower (LeNet's second convolution, filter
    gradient under the profiler: 32 ms against 2 ms); other pads go through ``tf.pad``."""
    if not any(lo or hi for lo, hi in pads):
        return "VALID"
    for size, k, s, (lo, hi) in zip(sizes, kernel, stride, pads, strict=True):
        if size is None:
            return None
        total = max((-(-size // s) - 1) * s + k - size, 0)
        if (lo, hi) != (total // 2, total - total // 2):
            return None
    return "SAME"


def _conv_nhwc(xh, wk, stride, pads, dilation, groups):
    if groups > 1:
        # the CPU kernels lack the gradients of grouped convolutions: one per group
        return tf.concat(
            [
                _conv_nhwc(xg, wg, stride, pads, dilation, 1)
                for xg, wg in zip(
                    tf.split(xh, groups, axis=3), tf.split(wk, groups, axis=3), strict=True
                )
            ],
            axis=3,
        )
    padding = [[0, 0], *[list(p) for p in pads], [0, 0]]
    if dilation == (1, 1):
        named = _named_padding(xh.shape[1:3], wk.shape[:2], stride, pads)
        if named is None:
            xh, named = tf.pad(xh, padding), "VALID"
        return tf.nn.conv2d(xh, wk, (1, *stride, 1), named, "NHWC")
    # the CPU kernels lack the gradient of a dilated convolution: run it as an undilated one
    # on the dilation's phases (space_to_batch), padding each dimension to a multiple of it;
    # a stride then keeps every stride-th output
    xh = tf.pad(xh, padding)
    extra = [[0, -size % d] for size, d in zip(xh.shape[1:3], dilation, strict=True)]
    y = tf.space_to_batch(xh, dilation, extra)
    y = tf.nn.conv2d(y, wk, 1, "VALID")
    y = tf.batch_to_space(y, dilation, extra)
    return y if stride == (1, 1) else y[:, :: stride[0], :: stride[1], :]


def conv2d(x, w, b, stride, pads, dilation, groups):
    wk = tf.transpose(w, (2, 3, 1, 0))  # (kH, kW, C_in / groups, C_out)
    if "GPU" in x.device:
        y = tf.nn.conv2d(x, wk, (1, 1, *stride), _spatial(pads), "NCHW", (1, 1, *dilation))
        return y if b is None else tf.nn.bias_add(y, b, "NCHW")
    if groups == 1 and dilation == (1, 1) and _nchw_native(x):
        # converted to NHWC by Grappler (kernels and gradients of the NHWC path below)
        named = _named_padding(x.shape[2:4], wk.shape[:2], stride, pads)
        if named is None:
            x, named = tf.pad(x, _spatial(pads)), "VALID"
        y = tf.nn.conv2d(x, wk, (1, 1, *stride), named, "NCHW")
        return y if b is None else tf.nn.bias_add(y, b, "NCHW")
    y = _conv_nhwc(tf.transpose(x, _TO_NHWC), wk, stride, pads, dilation, groups)
    if b is not None:
        y = tf.nn.bias_add(y, b)
    return tf.transpose(y, _TO_NCHW)


def _upsampled(x, stride):
    """x (N, C, H, W) with stride - 1 zeros between neighbouring elements."""
    n, c, h, w = x.shape
    sh, sw = stride
    if sh == sw == 1:
        return x
    y = tf.reshape(x, (n, c, h, 1, w, 1))
    y = tf.pad(y, [[0, 0], [0, 0], [0, 0], [0, sh - 1], [0, 0], [0, sw - 1]])
    y = tf.reshape(y, (n, c, h * sh, w * sw))
    return y[:, :, : (h - 1) * sh + 1, : (w - 1) * sw + 1]


def conv_transpose2d(x, w, b, stride, padding, output_padding, dilation, groups):
    n, cin, h, wd = x.shape
    kh, kw = w.shape[2:]
    if groups == 1 and dilation == (1, 1) and "GPU" not in x.device:
        cout = w.shape[1]
        full = [
            (size - 1) * s + k + op
            for size, s, k, op in zip((h, wd), stride, (kh, kw), output_padding, strict=True)
        ]
        y = tf.nn.conv2d_transpose(
            tf.transpose(x, _TO_NHWC),
            tf.transpose(w, (2, 3, 1, 0)),  # (kH, kW, C_out, C_in)
            (n, *full, cout),
            (1, *stride, 1),
            "VALID",
        )
        (ph, pw) = padding
        y = y[:, ph : full[0] - ph, pw : full[1] - pw, :]
        if b is not None:
            y = tf.nn.bias_add(y, b)
        return tf.transpose(y, _TO_NCHW)
    # the general case (groups, dilation; CPU has no dilated Conv2DBackpropInput): a stride-1
    # convolution of the zero-upsampled input with the flipped, transposed kernel
    cout_g = w.shape[1]
    wf = tf.reshape(w, (groups, cin // groups, cout_g, kh, kw))
    wf = tf.transpose(wf[:, :, :, ::-1, ::-1], (0, 2, 1, 3, 4))
    wf = tf.reshape(wf, (groups * cout_g, cin // groups, kh, kw))
    pads = tuple(
        (d * (k - 1) - p, d * (k - 1) - p + op)
        for d, k, p, op in zip(dilation, (kh, kw), padding, output_padding, strict=True)
    )
    xu = _upsampled(x, stride)
    crop = [max(0, -lo) for lo, _ in pads]
    pads = tuple((max(0, lo), max(0, hi)) for lo, hi in pads)
    y = conv2d(xu, wf, b, (1, 1), pads, dilation, groups)
    if any(crop):
        oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
        ow = (wd - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
        y = y[:, :, crop[0] : crop[0] + oh, crop[1] : crop[1] + ow]
    return y


def _pool(fn, fill):
    def pool(x, kernel, stride, pads):
        if any(lo or hi for lo, hi in pads):
            x = tf.pad(x, _spatial(pads), constant_values=fill(x.dtype))
        if _nchw_native(x):
            return fn(x, kernel, stride, "VALID", "NCHW")
        return tf.transpose(fn(tf.transpose(x, _TO_NHWC), kernel, stride, "VALID"), _TO_NCHW)

    return pool


max_pool2d = _pool(tf.nn.max_pool2d, lambda dt: dt.min)
avg_pool2d = _pool(tf.nn.avg_pool2d, lambda dt: 0)


def _channels(t, ndim):
    return None if t is None else tf.reshape(t, (1, -1) + (1,) * (ndim - 2))


def batch_norm(x, mean, var, w, b, eps):
    if mean is None:
        mean, var = tf.nn.moments(x, [0, 2, 3], keepdims=True)
    else:
        mean, var = _channels(mean, 4), _channels(var, 4)
    return tf.nn.batch_normalization(x, mean, var, _channels(b, 4), _channels(w, 4), eps)


def _fused_batch_norm_train(x, w, b, eps, mean, var, momentum):
    """``batch_norm_train`` as one FusedBatchNormV3 (the kernel Keras's BatchNormalization
    runs), NCHW: its batch variance is already the unbiased one the running variance takes."""
    y, batch_mean, batch_var = tf.compat.v1.nn.fused_batch_norm(
        x, w, b, epsilon=eps, data_format="NCHW", is_training=True
    )
    new_mean = None if mean is None else mean * (1 - momentum) + batch_mean * momentum
    new_var = None if var is None else var * (1 - momentum) + batch_var * momentum
    return y, new_mean, new_var


def batch_norm_train(x, w, b, eps, mean, var, momentum):
    if (
        _nchw_native(x)
        and "GPU" not in x.device
        and x.dtype == tf.float32
        and w is not None
        and b is not None
    ):
        return _fused_batch_norm_train(x, w, b, eps, mean, var, momentum)
    # the batch's moments serve the normalisation and the running statistics (as Keras's
    # BatchNormalization): no second pass over x for the latter
    batch_mean, batch_var = tf.nn.moments(x, [0, 2, 3], keepdims=True)
    y = tf.nn.batch_normalization(x, batch_mean, batch_var, _channels(b, 4), _channels(w, 4), eps)
    n = x.shape.num_elements() // x.shape[1]
    new_mean = (
        None if mean is None else mean * (1 - momentum) + tf.reshape(batch_mean, [-1]) * momentum
    )
    new_var = (
        None
        if var is None
        else var * (1 - momentum) + tf.reshape(batch_var, [-1]) * (momentum * n / (n - 1))
    )
    return y, new_mean, new_var


def _replicate(x, pads):
    for axis, (lo, hi) in enumerate(pads):
        if lo or hi:
            size = x.shape[axis]
            first = tf.gather(x, tf.zeros((lo,), tf.int32), axis=axis)
            last = tf.gather(x, tf.fill((hi,), size - 1), axis=axis)
            x = tf.concat([first, x, last], axis)
    return x


def pad(x, pads, mode, value):
    if mode == "replicate":
        return _replicate(x, pads)
    if mode == "reflect":
        return tf.pad(x, [list(p) for p in pads], "REFLECT")
    return tf.pad(x, [list(p) for p in pads], constant_values=value)
