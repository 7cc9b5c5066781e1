"""MXNet lowering of the fused loss op (``multidev.nn.functional.cross_entropy``)."""

from __future__ import annotations

from typing import Any

from mxnet import np as mnp
from mxnet import npx
from mxnet._ctypes.ndarray import _imperative_invoke

from .updates import op_handle

__all__ = ["LOWERINGS"]

_REDUCE = {"mean": mnp.mean, "sum": mnp.sum, "none": lambda loss: loss}
#: MXNet's fused kernel: the sum over a batch of ``logsumexp(x) - x[label]`` (float labels);
#: its handle is looked up at the first call
_SOFTMAX_CE: list[int] = []
#: logits dtypes the fused kernel takes as they are, with labels of the same dtype
_FUSED = frozenset(("float32", "float64"))


def _cross_entropy(x, labels, reduction):
    """The labels first go through ``take(classes, labels, mode="raise")`` (the class indices
    from ``arange_like(x)``: recorded by a hybridized graph too), which gives them back
    unchanged or fails, since MXNet's kernels clip or ignore an out-of-range label silently:
    MXNet's engine raises that error where the loss is read. No host copy.

    A batch of float32 or float64 logits reduced to its mean or sum is MXNet's fused
    ``softmax_cross_entropy`` kernel (it sums ``logsumexp(x) - x[label]`` over the batch,
    stable and exact to rounding, and its backward is ``softmax - one-hot``), fed the checked
    labels in the logits' dtype, then scaled. Otherwise (per-sample losses, one sample, an
    empty batch, other dtypes) it is ``logsumexp(x) - pick(x, labels)`` per sample, with ``x``
    shifted by its row maximum, then the reduction. (MXNet's own ``log_softmax`` kernel loses
    about 1e-4 relative accuracy in float32, so neither form uses it.)"""
    exact = x if x.dtype.itemsize >= 4 else x.astype("float32")  # float16 counts to 2048 only
    checked = mnp.take(npx.arange_like(exact, axis=-1), labels, mode="raise")
    n = x.shape[0] if x.ndim == 2 else 0
    if n and reduction != "none" and x.dtype.name in _FUSED:
        if not _SOFTMAX_CE:
            _SOFTMAX_CE.append(op_handle("softmax_cross_entropy"))
        total = _imperative_invoke(_SOFTMAX_CE[0], [x, checked], [], [], None, True, False)
        return total.reshape(()) if reduction == "sum" else total.reshape(()) * (1.0 / n)
    s = x - mnp.max(x, axis=-1, keepdims=True)
    loss = mnp.log(mnp.sum(mnp.exp(s), axis=-1)) - npx.pick(s, checked, axis=-1)
    return _REDUCE[reduction](loss)


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS: dict[str, Any] = {"cross_entropy": _cross_entropy}
