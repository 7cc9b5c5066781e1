"""Convolution, pooling, normalisation and padding as functions on md Tensors (NCHW).

Every rule (argument checking, ``"same"`` padding, ``ceil_mode``, running statistics) is
written here once; the adapters' op tables receive explicit, already-checked arguments:

- ``conv2d(x, w, b, stride, pads, dilation, groups)`` with ``pads`` ((top, bottom), (left,
  right)); ``conv1d`` runs through it with a unit height.
- ``conv_transpose2d(x, w, b, stride, padding, output_padding, dilation, groups)``.
- ``max_pool2d(x, kernel, stride, pads)`` (padding counts as -inf) and
  ``avg_pool2d(x, kernel, stride, pads)`` (padding counts as zeros in a divisor of
  kh * kw; other divisors are corrected here).
- ``batch_norm(x, mean, var, weight, bias, eps)`` on a 4-D input: ``mean``/``var`` None
  normalises with the batch's own statistics (training), else with the given ones.
- optional ``batch_norm_train(x, weight, bias, eps, running_mean, running_var, momentum)``
  on a 4-D input: normalises with the batch's statistics and returns ``(y, new_mean,
  new_var)``, the running statistics (natives in x's dtype, or None) updated by PyTorch's
  rule ``(1 - momentum) * running + momentum * batch`` (unbiased variance) from the batch
  statistics the fused kernel computed; an adapter may update the given natives in place and
  return them. Without it the running statistics come from separate reductions here.
- optional ``group_norm(x, groups, weight, bias, eps)`` and ``adaptive_avg_pool2d(x, size)``
  (else composed here from the adapter's other ops).
- ``pad(x, pads, mode, value)`` with one (before, after) pair per dimension.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import amp as _amp
from .. import dtypes as _dt
from .. import ops
from ..array_api import take
from ..autograd import no_grad
from ..creation import zeros_like
from ..dispatch import as_tensor as _tensor
from ..dispatch import call as _call
from ..dispatch import cast as _cast
from ..dispatch import check_same as _check_same
from ..dispatch import from_host as _from_host
from ..dispatch import new_tensor as _new_tensor
from ..tensors import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "conv1d",
    "conv2d",
    "conv_transpose2d",
    "fold",
    "group_norm",
    "instance_norm",
    "max_pool1d",
    "max_pool2d",
    "pad",
    "unfold",
]


def _ints(value: Any, n: int, name: str, minimum: int = 1) -> tuple[int, ...]:
    """``value`` (an int or a sequence of ``n`` ints) as an ``n``-tuple, each >= ``minimum``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        out = (int(value),) * n
    elif (
        isinstance(value, Sequence)
        and len(value) == n
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
    ):
        out = tuple(int(v) for v in value)
    else:
        raise TypeError(f"Expected an int or {n} ints for {name}. Received: {value!r}")
    if any(v < minimum for v in out):
        raise ValueError(f"Expected {name} >= {minimum}. Received: {value!r}")
    return out


def _operands(x: Any, *others: Tensor | None) -> tuple[Tensor, list[Any], _dt.DType]:
    """``x`` as a Tensor, and the natives of ``x`` and ``others`` in one floating dtype."""
    ref = next((t for t in others if t is not None), None)
    x = _tensor(x, ref)
    dt = x._dtype
    for t in others:
        if t is not None:
            _check_same(x, t)
            dt = _dt.result_type(dt, t._dtype)
    if dt.kind != "f":
        dt = _dt.float32
    natives = [
        None if t is None else (t._native if t._dtype is dt else _cast(t, dt)._native)
        for t in (x, *others)
    ]
    return x, natives, dt


def _out(x: Tensor, native: Any, dt: _dt.DType) -> Tensor:
    return _new_tensor(native, x._bk, x._dev, dt)


def _check_ndim(x: Tensor, ndim: int, what: str, fn: str) -> None:
    if x.ndim != ndim:
        raise ValueError(
            f"Expected a {ndim}-D input {what} for {fn}. Received: shape {x.shape}. "
            + ("Add a batch dimension with x[None]." if x.ndim == ndim - 1 else "")
        )


def _conv_pads(
    padding: Any, kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]
) -> tuple[tuple[int, int], ...]:
    if isinstance(padding, str):
        if padding == "valid":
            return tuple((0, 0) for _ in kernel)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(
                    f"Expected stride 1 with padding='same'. Received: stride {stride}. "
                    "Pass an explicit padding for strided convolutions."
                )
            total = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
            return tuple((t // 2, t - t // 2) for t in total)
        raise ValueError(f"Expected padding 'same', 'valid' or ints. Received: {padding!r}")
    p = _ints(padding, len(kernel), "padding", minimum=0)
    return tuple((v, v) for v in p)


def conv2d(
    input: Any,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-D cross-correlation of an (N, C_in, H, W) input with a weight of shape
    (C_out, C_in / groups, kH, kW), as ``torch.nn.functional.conv2d``.

    ``padding`` is an int, a pair, ``"valid"`` or ``"same"`` (stride 1; odd total padding puts
    the extra row/column at the bottom/right, as PyTorch). Raises ValueError for inconsistent
    shapes.
    """
    if _amp.ACTIVE:
        input, weight, bias = _amp.cast("conv2d", input, weight, bias)
    x, (a, w, b), dt = _operands(input, weight, bias)
    _check_ndim(x, 4, "(N, C_in, H, W)", "conv2d")
    if weight.ndim != 4:
        raise ValueError(
            f"Expected a 4-D weight (C_out, C_in / groups, kH, kW). Received: shape {weight.shape}"
        )
    stride_, dilation_ = _ints(stride, 2, "stride"), _ints(dilation, 2, "dilation")
    kernel = weight.shape[2:]
    pads = _conv_pads(padding, kernel, stride_, dilation_)
    _check_groups(x.shape[1], weight.shape, groups, bias, "conv2d")
    for size, (lo, hi), k, d, name in zip(x.shape[2:], pads, kernel, dilation_, "HW", strict=True):
        if size + lo + hi < d * (k - 1) + 1:
            raise ValueError(
                f"Expected the padded input ({name} = {size + lo + hi}) to be at least the "
                f"dilated kernel size ({d * (k - 1) + 1}). Received: input of shape {x.shape}"
            )
    return _out(x, _call(x, "conv2d", a, w, b, stride_, pads, dilation_, groups), dt)


def _check_groups(
    channels: int, wshape: tuple[int, ...], groups: int, bias: Tensor | None, fn: str
) -> None:
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"Expected a positive int for groups. Received: {groups!r}")
    if channels != wshape[1] * groups:
        raise ValueError(
            f"Expected an input with C_in = weight.shape[1] * groups = {wshape[1]} * {groups} "
            f"channels for {fn}. Received: {channels} channels. Check the layer's in_channels."
        )
    if wshape[0] % groups:
        raise ValueError(
            f"Expected out_channels divisible by groups. Received: {wshape[0]} and {groups}"
        )
    if bias is not None and bias.shape != (wshape[0],):
        raise ValueError(f"Expected a bias of shape ({wshape[0]},). Received: shape {bias.shape}")


def conv1d(
    input: Any,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """1-D cross-correlation of an (N, C_in, L) input with a weight (C_out, C_in / groups, k),
    as ``torch.nn.functional.conv1d``; runs as a 2-D convolution of unit height."""
    if _amp.ACTIVE:
        input, weight, bias = _amp.cast("conv1d", input, weight, bias)
    x = _tensor(input, weight)
    _check_ndim(x, 3, "(N, C_in, L)", "conv1d")
    if weight.ndim != 3:
        raise ValueError(
            f"Expected a 3-D weight (C_out, C_in / groups, k). Received: shape {weight.shape}"
        )
    (s,), (d,) = _ints(stride, 1, "stride"), _ints(dilation, 1, "dilation")
    p = padding if isinstance(padding, str) else (0, _ints(padding, 1, "padding", 0)[0])
    n, c, length = x.shape
    y = conv2d(
        x.reshape(n, c, 1, length),
        weight.reshape(*weight.shape[:2], 1, weight.shape[2]),
        bias,
        (1, s),
        p,
        (1, d),
        groups,
    )
    return y.reshape(y.shape[0], y.shape[1], y.shape[3])


def conv_transpose2d(
    input: Any,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """Transposed 2-D convolution (the gradient of ``conv2d`` with respect to its input) with a
    weight of shape (C_in, C_out / groups, kH, kW), as ``torch.nn.functional.conv_transpose2d``.
    """
    if _amp.ACTIVE:
        input, weight, bias = _amp.cast("conv_transpose2d", input, weight, bias)
    x, (a, w, b), dt = _operands(input, weight, bias)
    _check_ndim(x, 4, "(N, C_in, H, W)", "conv_transpose2d")
    if weight.ndim != 4:
        raise ValueError(
            f"Expected a 4-D weight (C_in, C_out / groups, kH, kW). Received: shape {weight.shape}"
        )
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"Expected a positive int for groups. Received: {groups!r}")
    if x.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise ValueError(
            f"Expected an input with C_in = weight.shape[0] = {weight.shape[0]} channels "
            f"(divisible by groups={groups}). Received: {x.shape[1]} channels"
        )
    cout = weight.shape[1] * groups
    if bias is not None and bias.shape != (cout,):
        raise ValueError(f"Expected a bias of shape ({cout},). Received: shape {bias.shape}")
    stride_, dilation_ = _ints(stride, 2, "stride"), _ints(dilation, 2, "dilation")
    padding_ = _ints(padding, 2, "padding", 0)
    out_pad = _ints(output_padding, 2, "output_padding", 0)
    for op, s, d in zip(out_pad, stride_, dilation_, strict=True):
        if op >= max(s, d):
            raise ValueError(
                f"Expected output_padding smaller than stride or dilation. Received: "
                f"output_padding={out_pad}, stride={stride_}, dilation={dilation_}"
            )
    for size, p, op, k, s, d in zip(
        x.shape[2:], padding_, out_pad, weight.shape[2:], stride_, dilation_, strict=True
    ):
        if (size - 1) * s - 2 * p + d * (k - 1) + op + 1 <= 0:
            raise ValueError(
                f"Expected a positive output size for conv_transpose2d. Received: input of shape "
                f"{x.shape} with padding {padding_}"
            )
    native = _call(x, "conv_transpose2d", a, w, b, stride_, padding_, out_pad, dilation_, groups)
    return _out(x, native, dt)


# ---------------------------------------------------------------- pooling


def _pool_pads(
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    ceil_mode: bool,
    fn: str,
) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """Explicit (before, after) pads, the extra ``after`` part realising ``ceil_mode``, and
    the output size, by PyTorch's rules."""
    pads, sizes = [], []
    for size, k, s, p in zip(shape, kernel, stride, padding, strict=True):
        if p > k // 2:
            raise ValueError(
                f"Expected padding at most half the kernel size for {fn}. Received: padding "
                f"{padding} with kernel_size {kernel}"
            )
        span = size + 2 * p - k
        if span < 0:
            raise ValueError(
                f"Expected an input at least as large as the kernel for {fn}. Received: input "
                f"of spatial shape {shape} with kernel_size {kernel} and padding {padding}"
            )
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1
        sizes.append(out)
        pads.append((p, p + max(0, (out - 1) * s + k - (size + 2 * p))))
    return tuple(pads), tuple(sizes)


def _pool_args(x: Tensor, kernel_size: Any, stride: Any, padding: Any, fn: str):
    _check_ndim(x, 4, "(N, C, H, W)", fn)
    kernel = _ints(kernel_size, 2, "kernel_size")
    stride_ = (
        kernel if stride is None or stride == () or stride == [] else _ints(stride, 2, "stride")
    )
    return kernel, stride_, _ints(padding, 2, "padding", 0)


def max_pool2d(
    input: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Maximum over kH x kW windows of an (N, C, H, W) input (``stride`` defaults to the
    kernel size; ``dilation`` spaces the window's taps), as
    ``torch.nn.functional.max_pool2d``. With ``return_indices`` it returns (output, indices):
    int64 positions of each maximum in its input plane (row * W + column), the first in
    window order among equal ones."""
    x = _tensor(input)
    dilation_ = _ints(dilation, 2, "dilation")
    kernel, stride_, padding_ = _pool_args(x, kernel_size, stride, padding, "max_pool2d")
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation_, strict=True))
    pads, sizes = _pool_pads(x.shape[2:], span, stride_, padding_, ceil_mode, "max_pool2d")
    if dilation_ == (1, 1) and not return_indices:
        return _out(x, _call(x, "max_pool2d", x._native, kernel, stride_, pads), x._dtype)
    return _max_pool_taps(x, kernel, stride_, pads, dilation_, sizes, return_indices)


def _max_pool_taps(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: tuple[tuple[int, int], ...],
    dilation: tuple[int, ...],
    sizes: tuple[int, ...],
    return_indices: bool,
) -> Any:
    """Dilated max pooling, and the argmax positions, from the framework's slicing, stacking
    and reduction kernels: the kh * kw strided views of the (-inf) padded input, one per
    tap of the window, stacked on a last axis and reduced over it."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, sizes
    fill = -np.inf if x._dtype.kind == "f" else int(np.iinfo(x._dtype.numpy).min)
    xp = _out(x, _call(x, "pad", x._native, ((0, 0), (0, 0), *pads), "constant", fill), x._dtype)
    taps = [
        xp[:, :, i * dh : i * dh + (ho - 1) * sh + 1 : sh, j * dw : j * dw + (wo - 1) * sw + 1 : sw]
        for i in range(kh)
        for j in range(kw)
    ]
    stacked = ops.stack(taps, axis=-1)
    out = ops.max(stacked, axis=-1)
    if not return_indices:
        return out
    with no_grad():
        tap = ops.argmax(stacked, axis=-1)
        (top, _), (left, _) = pads
        width = x.shape[3]
        rows = np.arange(ho, dtype=np.int64)[:, None] * sh - top
        cols = np.arange(wo, dtype=np.int64)[None, :] * sw - left
        base = _from_host(x._bk, rows * width + cols, _dt.int64, x._dev)
        indices = base + (tap // kw) * (dh * width) + (tap % kw) * dw
    return out, indices


def _window_counts(
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    pads: tuple[tuple[int, int], ...],
    counted: tuple[tuple[int, int], ...],
    sizes: tuple[int, ...],
) -> np.ndarray:
    """How many cells of each window lie in the region ``counted`` extends the input by."""
    per_dim = []
    for size, k, s, (lo, _), (clo, chi), out in zip(
        shape, kernel, stride, pads, counted, sizes, strict=True
    ):
        start = np.arange(out) * s - lo
        end = start + k
        per_dim.append(np.minimum(end, size + chi) - np.maximum(start, -clo))
    return np.outer(per_dim[0], per_dim[1]).astype(np.float64)


def avg_pool2d(
    input: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over kH x kW windows of an (N, C, H, W) input, as
    ``torch.nn.functional.avg_pool2d`` (same divisor rules for padding and ``ceil_mode``)."""
    x = _tensor(input)
    if x._dtype.kind != "f":
        x = _cast(x, _dt.float32)
    kernel, stride_, padding_ = _pool_args(x, kernel_size, stride, padding, "avg_pool2d")
    shape = x.shape[2:]
    pads, sizes = _pool_pads(shape, kernel, stride_, padding_, ceil_mode, "avg_pool2d")
    y = _out(x, _call(x, "avg_pool2d", x._native, kernel, stride_, pads), x._dtype)
    area = kernel[0] * kernel[1]
    if divisor_override is not None:
        if not isinstance(divisor_override, int) or divisor_override <= 0:
            raise ValueError(
                f"Expected a positive int for divisor_override. Received: {divisor_override!r}"
            )
        return y * (area / divisor_override)
    if all(lo == hi for lo, hi in pads) and (count_include_pad or not any(padding_)):
        return y  # every window holds kh * kw counted cells: the kernel's divisor is right
    counted = tuple((p, p) for p in padding_) if count_include_pad else ((0, 0), (0, 0))
    counts = _window_counts(shape, kernel, stride_, pads, counted, sizes)
    if np.all(counts == area):
        return y
    scale = (area / counts).astype(x._dtype.numpy).reshape(1, 1, *sizes)
    return y * _from_host(x._bk, scale, x._dtype, x._dev)


def _adaptive_size(h: int, w: int, output_size: Any) -> tuple[int, ...]:
    """An adaptive pooling's (oH, oW): one int for both, or a pair where None keeps a size."""
    if isinstance(output_size, Sequence) and len(output_size) == 2:
        output_size = (
            h if output_size[0] is None else output_size[0],
            w if output_size[1] is None else output_size[1],
        )
    return _ints(output_size, 2, "output_size")


def adaptive_avg_pool2d(input: Any, output_size: Any) -> Tensor:
    """Mean over the windows that split an (N, C, H, W) input into ``output_size`` cells, as
    ``torch.nn.functional.adaptive_avg_pool2d`` (``None`` in ``output_size`` keeps a size)."""
    x = _tensor(input)
    _check_ndim(x, 4, "(N, C, H, W)", "adaptive_avg_pool2d")
    if x._dtype.kind != "f":
        x = _cast(x, _dt.float32)
    h, w = x.shape[2:]
    oh, ow = _adaptive_size(h, w, output_size)
    if h % oh == 0 and w % ow == 0:
        k = (h // oh, w // ow)
        return _out(x, _call(x, "avg_pool2d", x._native, k, k, ((0, 0), (0, 0))), x._dtype)
    if getattr(x._bk.ops, "adaptive_avg_pool2d", None) is not None:
        return _out(x, _call(x, "adaptive_avg_pool2d", x._native, (oh, ow)), x._dtype)
    from .. import ops

    rows = []
    for i in range(oh):
        h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        cells = []
        for j in range(ow):
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            cells.append(x[:, :, h0:h1, w0:w1].mean(axis=(2, 3)))
        rows.append(ops.stack(cells, axis=-1))
    return ops.stack(rows, axis=-2)


def _window_max(x: Tensor, axis: int, n_out: int) -> Tensor:
    """The maximum over each of ``n_out`` adaptive windows along ``axis`` (window j: [floor(j *
    n / n_out), ceil((j + 1) * n / n_out))): one gather of every window's positions, padded
    with the window's last position, and one max."""
    n = x.shape[axis]
    j = np.arange(n_out)
    start, end = (j * n) // n_out, -((-(j + 1) * n) // n_out)
    width = int((end - start).max())
    index = np.minimum(start[:, None] + np.arange(width), end[:, None] - 1).reshape(-1)
    picked = take(x, _from_host(x._bk, index, _dt.int64, x._dev), axis=axis)
    shape = (*x.shape[:axis], n_out, width, *x.shape[axis + 1 :])
    return ops.max(ops.reshape(picked, shape), axis=axis + 1)


def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Tensor:
    """Maximum over the windows that split an (N, C, H, W) or (C, H, W) input into
    ``output_size`` cells, as ``torch.nn.functional.adaptive_max_pool2d`` (``None`` in
    ``output_size`` keeps a size); ``max_pool2d`` where the cells tile the input evenly."""
    if return_indices:
        raise NotImplementedError(
            "adaptive_max_pool2d(return_indices=True) is not provided. Use max_pool2d with "
            "return_indices where the output size divides the input's."
        )
    x = _tensor(input)
    if x.ndim not in (3, 4):
        raise ValueError(
            f"Expected a 3-D (C, H, W) or 4-D (N, C, H, W) input for adaptive_max_pool2d. "
            f"Received: shape {x.shape}"
        )
    h, w = x.shape[-2:]
    oh, ow = _adaptive_size(h, w, output_size)
    if x.ndim == 4 and h % oh == 0 and w % ow == 0:
        return max_pool2d(x, (h // oh, w // ow))
    return _window_max(_window_max(x, x.ndim - 2, oh), x.ndim - 1, ow)


# ---------------------------------------------------------------- 1-D pooling


def _rows(input: Any, fn: str) -> tuple[Tensor, bool]:
    """An (N, C, L) or unbatched (C, L) input as (N, C, 1, L), and whether it was unbatched."""
    x = _tensor(input)
    if x.ndim not in (2, 3):
        raise ValueError(
            f"Expected a 2-D (C, L) or 3-D (N, C, L) input for {fn}. Received: shape {x.shape}"
        )
    unbatched = x.ndim == 2
    return (x[None] if unbatched else x)[:, :, None, :], unbatched


def _back(y: Tensor, unbatched: bool) -> Tensor:
    y = ops.squeeze(y, axis=2)
    return ops.squeeze(y, axis=0) if unbatched else y


def _one(value: Any, name: str, minimum: int = 1) -> int:
    return _ints(value, 1, name, minimum)[0]


def max_pool1d(
    input: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """``max_pool2d`` along the last axis of an (N, C, L) or (C, L) input, as
    ``torch.nn.functional.max_pool1d`` (indices count along L)."""
    x, unbatched = _rows(input, "max_pool1d")
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None or stride == () or stride == [] else _one(stride, "stride")
    out = max_pool2d(
        x,
        (1, k),
        (1, s),
        (0, _one(padding, "padding", 0)),
        (1, _one(dilation, "dilation")),
        ceil_mode,
        return_indices,
    )
    if return_indices:
        return _back(out[0], unbatched), _back(out[1], unbatched)
    return _back(out, unbatched)


def avg_pool1d(
    input: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """``avg_pool2d`` along the last axis of an (N, C, L) or (C, L) input, as
    ``torch.nn.functional.avg_pool1d``."""
    x, unbatched = _rows(input, "avg_pool1d")
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None or stride == () or stride == [] else _one(stride, "stride")
    p = _one(padding, "padding", 0)
    return _back(avg_pool2d(x, (1, k), (1, s), (0, p), ceil_mode, count_include_pad), unbatched)


def adaptive_max_pool1d(input: Any, output_size: Any, return_indices: bool = False) -> Tensor:
    """``adaptive_max_pool2d`` along the last axis of an (N, C, L) or (C, L) input."""
    x, unbatched = _rows(input, "adaptive_max_pool1d")
    out = adaptive_max_pool2d(x, (1, _one(output_size, "output_size")), return_indices)
    return _back(out, unbatched)


def adaptive_avg_pool1d(input: Any, output_size: Any) -> Tensor:
    """``adaptive_avg_pool2d`` along the last axis of an (N, C, L) or (C, L) input."""
    x, unbatched = _rows(input, "adaptive_avg_pool1d")
    return _back(adaptive_avg_pool2d(x, (1, _one(output_size, "output_size"))), unbatched)


# ---------------------------------------------------------------- im2col


def _patches_args(kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> tuple:
    return (
        _ints(kernel_size, 2, "kernel_size"),
        _ints(dilation, 2, "dilation"),
        _ints(padding, 2, "padding", 0),
        _ints(stride, 2, "stride"),
    )


def _blocks(size: tuple[int, ...], k: tuple, d: tuple, p: tuple, s: tuple, fn: str) -> tuple:
    """The number of sliding positions along each of the two spatial axes."""
    out = tuple(
        (n + 2 * pp - dd * (kk - 1) - 1) // ss + 1
        for n, kk, dd, pp, ss in zip(size, k, d, p, s, strict=True)
    )
    if any(o < 1 for o in out):
        raise ValueError(
            f"Expected a kernel (with its dilation) that fits the padded input for {fn}. "
            f"Received: kernel_size={k}, dilation={d}, padding={p} for spatial size {size}"
        )
    return out


def unfold(
    input: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> Tensor:
    """The sliding kH x kW blocks of an (N, C, H, W) or (C, H, W) input as columns, (N, C * kH *
    kW, L) with L blocks, as ``torch.nn.functional.unfold``: one strided slice per kernel
    position, stacked."""
    x = _tensor(input)
    if x.ndim not in (3, 4):
        raise ValueError(f"Expected a 3-D or 4-D input for unfold. Received: shape {x.shape}")
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    k, d, p, s = _patches_args(kernel_size, dilation, padding, stride)
    oh, ow = _blocks(x.shape[2:], k, d, p, s, "unfold")
    if any(p):
        x = pad(x, (p[1], p[1], p[0], p[0]))
    taps = [
        x[
            :,
            :,
            i * d[0] : i * d[0] + s[0] * (oh - 1) + 1 : s[0],
            j * d[1] : j * d[1] + s[1] * (ow - 1) + 1 : s[1],
        ]
        for i in range(k[0])
        for j in range(k[1])
    ]
    n, c = x.shape[:2]
    cols = ops.reshape(ops.stack(taps, axis=2), (n, c * k[0] * k[1], oh * ow))
    return cols[0] if unbatched else cols


def _spread(b: Tensor, axis: int, step: int) -> Tensor:
    """``b`` with ``step - 1`` zeros after each element along ``axis`` (none after the last)."""
    if step == 1:
        return b
    n = b.shape[axis]
    spread = ops.stack([b] + [zeros_like(b)] * (step - 1), axis=axis + 1)
    shape = (*b.shape[:axis], n * step, *b.shape[axis + 1 :])
    index = (slice(None),) * axis + (slice(0, step * (n - 1) + 1),)
    return ops.reshape(spread, shape)[index]


def fold(
    input: Any,
    output_size: Any,
    kernel_size: Any,
    dilation: Any = 1,
    padding: Any = 0,
    stride: Any = 1,
) -> Tensor:
    """Columns (N, C * kH * kW, L) or (C * kH * kW, L) summed back into an (N, C, H, W) image
    of ``output_size``, overlapping blocks added, as ``torch.nn.functional.fold`` (the adjoint
    of ``unfold``): each kernel position's blocks spread to their stride and padded into
    place."""
    x = _tensor(input)
    if x.ndim not in (2, 3):
        raise ValueError(f"Expected a 2-D or 3-D input for fold. Received: shape {x.shape}")
    unbatched = x.ndim == 2
    if unbatched:
        x = x[None]
    size = _ints(output_size, 2, "output_size")
    k, d, p, s = _patches_args(kernel_size, dilation, padding, stride)
    oh, ow = _blocks(size, k, d, p, s, "fold")
    n, rows, blocks = x.shape
    if rows % (k[0] * k[1]) or blocks != oh * ow:
        raise ValueError(
            f"Expected an input of shape (N, C * {k[0] * k[1]}, {oh * ow}) for fold with "
            f"kernel_size={k} into output_size={size}. Received: shape {x.shape}"
        )
    c = rows // (k[0] * k[1])
    cols = ops.reshape(x, (n, c, k[0] * k[1], oh, ow))
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    total = None
    for i in range(k[0]):
        for j in range(k[1]):
            b = _spread(_spread(cols[:, :, i * k[1] + j], 2, s[0]), 3, s[1])
            top, left = i * d[0], j * d[1]
            placed = pad(b, (left, wp - left - b.shape[3], top, hp - top - b.shape[2]))
            total = placed if total is None else total + placed
    assert total is not None
    out = total[:, :, p[0] : p[0] + size[0], p[1] : p[1] + size[1]]
    return out[0] if unbatched else out


# ---------------------------------------------------------------- normalisation


def _channel_shape(x: Tensor, fn: str) -> tuple[int, ...]:
    """(N, C, H, W) that ``x`` of shape (N, C), (N, C, L) or (N, C, H, W) reshapes to."""
    if x.ndim == 2:
        return (*x.shape, 1, 1)
    if x.ndim == 3:
        return (*x.shape, 1)
    if x.ndim == 4:
        return x.shape
    raise ValueError(
        f"Expected an input of shape (N, C), (N, C, L) or (N, C, H, W) for {fn}. "
        f"Received: shape {x.shape}"
    )


def _update_running(
    xs: Tensor, running_mean: Tensor | None, running_var: Tensor | None, m: float, count: int
) -> None:
    """Running statistics updated from the batch ``xs`` (N, C, H, W) by separate reductions,
    where the adapter has no fused ``batch_norm_train``."""
    if running_mean is None and running_var is None:
        return
    with no_grad():
        mean = xs.mean(axis=(0, 2, 3))
        if running_mean is not None:
            running_mean[...] = running_mean * (1 - m) + mean * m
        if running_var is not None:
            centred = xs - mean.reshape(1, xs.shape[1], 1, 1)
            var = (centred * centred).sum(axis=(0, 2, 3)) / (count - 1)
            running_var[...] = running_var * (1 - m) + var * m


def batch_norm(
    input: Any,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float | None = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dimension 1) of an (N, C, ...) input, as
    ``torch.nn.functional.batch_norm``.

    In training, normalises with the batch's mean and biased variance and, where
    ``running_mean``/``running_var`` are given, updates them in place with
    ``(1 - momentum) * running + momentum * batch`` (unbiased variance); ``momentum`` None
    means a cumulative average is wanted: pass the factor explicitly then. Otherwise uses the
    running statistics.
    """
    if _amp.ACTIVE:
        input, weight, bias = _amp.cast("batch_norm", input, weight, bias)
    x, (a, w, b), dt = _operands(input, weight, bias)
    shape4 = _channel_shape(x, "batch_norm")
    c = shape4[1]
    for name, t in (
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ):
        if t is not None and t.shape != (c,):
            raise ValueError(
                f"Expected {name} of shape ({c},) for an input with {c} channels. "
                f"Received: shape {t.shape}"
            )
    x4 = a if x.shape == shape4 else _call(x, "reshape", a, shape4)
    if training:  # (evaluation reads no size: a traced free batch dimension stays free)
        count = shape4[0] * shape4[2] * shape4[3]
        if count <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training. Received: input of "
                f"shape {x.shape}. Use a larger batch or call eval()."
            )
        m = 0.1 if momentum is None else float(momentum)
        buffers = (running_mean, running_var)
        if getattr(x._bk.ops, "batch_norm_train", None) is not None and all(
            t is None or t._dtype is dt for t in buffers
        ):
            rm, rv = (None if t is None else t._native for t in buffers)
            y, *news = _call(x, "batch_norm_train", x4, w, b, float(eps), rm, rv, m)
            with no_grad():
                for t, new in zip(buffers, news, strict=True):
                    if t is not None and new is not t._native:
                        t[...] = _out(t, new, dt)
        else:
            y = _call(x, "batch_norm", x4, None, None, w, b, float(eps))
            _update_running(_out(x, x4, dt), running_mean, running_var, m, count)
    else:
        if running_mean is None or running_var is None:
            raise ValueError(
                "Expected running_mean and running_var when training is False. Received: None. "
                "Pass training=True to normalise with the batch's statistics."
            )
        rm = running_mean._native if running_mean._dtype is dt else _cast(running_mean, dt)._native
        rv = running_var._native if running_var._dtype is dt else _cast(running_var, dt)._native
        y = _call(x, "batch_norm", x4, rm, rv, w, b, float(eps))
    if x.shape != shape4:
        y = _call(x, "reshape", y, x.shape)
    return _out(x, y, dt)


def group_norm(
    input: Any,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each group of ``C / num_groups`` channels of an (N, C, ...) input over the
    group's channels and positions, then scale and shift per channel, as
    ``torch.nn.functional.group_norm``."""
    if _amp.ACTIVE:
        input, weight, bias = _amp.cast("group_norm", input, weight, bias)
    x, (a, w, b), dt = _operands(input, weight, bias)
    if x.ndim < 2:
        raise ValueError(f"Expected an input of shape (N, C, ...). Received: shape {x.shape}")
    n, c = x.shape[:2]
    if not isinstance(num_groups, int) or num_groups < 1 or c % num_groups:
        raise ValueError(f"Expected num_groups dividing the {c} channels. Received: {num_groups!r}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != (c,):
            raise ValueError(f"Expected {name} of shape ({c},). Received: shape {t.shape}")
    if getattr(x._bk.ops, "group_norm", None) is not None:
        return _out(x, _call(x, "group_norm", a, num_groups, w, b, float(eps)), dt)
    xs = _out(x, a, dt).reshape(n, num_groups, -1)
    mean = xs.mean(axis=2, keepdims=True)
    centred = xs - mean
    var = (centred * centred).mean(axis=2, keepdims=True)
    from .. import ops

    y = (centred / ops.sqrt(var + eps)).reshape(x.shape)
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * _out(x, w, dt).reshape(bshape)
    if b is not None:
        y = y + _out(x, b, dt).reshape(bshape)
    return y


def instance_norm(
    input: Any,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel of each sample of an (N, C, ...) input over its positions (one
    group per channel: ``group_norm``), then scale and shift per channel, as
    ``torch.nn.functional.instance_norm``. With ``use_input_stats`` the running statistics
    given move toward the samples' mean and unbiased variance, averaged over the batch;
    without it, the running statistics normalise."""
    x = _tensor(input)
    if x.ndim < 3:
        raise ValueError(
            f"Expected an input of shape (N, C, ...) with positions for instance_norm. Received: "
            f"shape {x.shape}"
        )
    n, c = x.shape[:2]
    if x._dtype.kind != "f":
        x = _cast(x, _dt.float32)
    if use_input_stats:
        y = group_norm(x, c, weight, bias, eps)
        if running_mean is not None or running_var is not None:
            with no_grad():
                flat = x.reshape(n, c, -1)
                mean = flat.mean(axis=2)
                if running_mean is not None:
                    running_mean[...] = running_mean * (1 - momentum) + mean.mean(axis=0) * momentum
                if running_var is not None:
                    centred = flat - mean.reshape(n, c, 1)
                    var = (centred * centred).sum(axis=2) / max(flat.shape[2] - 1, 1)
                    running_var[...] = running_var * (1 - momentum) + var.mean(axis=0) * momentum
        return y
    if running_mean is None or running_var is None:
        raise ValueError(
            "Expected running_mean and running_var for instance_norm with "
            "use_input_stats=False. Received: None."
        )
    shape = (1, c) + (1,) * (x.ndim - 2)
    y = (x - running_mean.reshape(shape)) / ops.sqrt(running_var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


# ---------------------------------------------------------------- padding


def _circular(x: Tensor, pairs: list[tuple[int, int]]) -> Tensor:
    """``x`` padded by wrapping around, as PyTorch's ``mode="circular"``: the last ``lo``
    entries of a dimension before it, its first ``hi`` after it (slices and a concatenation,
    the framework's own kernels)."""
    for axis, (lo, hi) in enumerate(pairs):
        size = x.shape[axis]
        if lo > size or hi > size:
            raise ValueError(
                f"Expected circular padding at most the padded dimension's size. Received: "
                f"pads {pairs[axis]} for dimension {axis} of size {size} (shape {x.shape})"
            )
        if lo or hi:
            lead = (slice(None),) * axis
            last, first = (*lead, slice(size - lo, None)), (*lead, slice(0, hi))
            parts = ([x[last]] if lo else []) + [x] + ([x[first]] if hi else [])
            x = ops.concat(parts, axis=axis)
    return x


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(
    input: Any, pad: Sequence[int], mode: str = "constant", value: float | None = None
) -> Tensor:
    """Pad the last ``len(pad) // 2`` dimensions, as ``torch.nn.functional.pad``: ``pad`` is
    (last_before, last_after, second_last_before, ...); ``mode`` is ``"constant"`` (with
    ``value``, default 0), ``"reflect"``, ``"replicate"`` or ``"circular"`` (wraps around:
    each pad at most the dimension's size). Negative pads are not supported."""
    x = _tensor(input)
    if mode not in _PAD_MODES:
        raise ValueError(f"Expected mode in {_PAD_MODES}. Received: {mode!r}")
    if (
        not isinstance(pad, Sequence)
        or len(pad) % 2
        or len(pad) // 2 > x.ndim
        or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in pad)
    ):
        raise ValueError(
            f"Expected an even number (at most {2 * x.ndim}) of non-negative ints for pad. "
            f"Received: {pad!r}"
        )
    pairs = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode != "constant":
        n = len(pad) // 2
        if not 1 <= n <= 3 or x.ndim not in (n + 1, n + 2):
            raise ValueError(
                f"Expected padding of the last 1 to 3 dimensions of an input with 1 or 2 more "
                f"(batch, channels) for mode {mode!r}, as PyTorch: 2 pads for a 2-D or 3-D "
                f"input, 4 for 3-D or 4-D, 6 for 4-D or 5-D. Received: pad {tuple(pad)} for "
                f"shape {x.shape}"
            )
        if mode == "reflect":
            for size, (lo, hi) in zip(x.shape, pairs, strict=True):
                if lo >= size or hi >= size:
                    raise ValueError(
                        f"Expected reflect padding smaller than the padded dimension. Received: "
                        f"pad {tuple(pad)} for shape {x.shape}"
                    )
        if mode == "circular":
            return _circular(x, pairs)
    fill = 0.0 if value is None else value
    return _out(x, _call(x, "pad", x._native, tuple(pairs), mode, fill), x._dtype)
