"""Loss functions (``mse_loss``, ``cross_entropy``) and their layer forms (``MSELoss``,
``CrossEntropyLoss``), written with multidev ops so that they differentiate on every backend
with autograd; ``cross_entropy`` runs the framework's fused kernel where the adapter has one."""

from __future__ import annotations

from typing import Any

from .. import amp as _amp
from .. import dtypes as _dt
from .. import ops
from ..creation import arange, zeros_like
from ..dispatch import as_tensor as _tensor
from ..dispatch import call as _call
from ..dispatch import check_same as _check_same
from ..dispatch import floating as _floating
from ..dispatch import wrap as _wrap
from ..tensors import Tensor
from .module import Block

__all__ = ["CrossEntropyLoss", "MSELoss", "cross_entropy", "mse_loss"]

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    return loss


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Expected reduction in {_REDUCTIONS}. Received: {reduction!r}")


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or elementwise with ``"none"``) of ``(input - target) ** 2``.

    ``input`` and ``target`` must have the same shape: reshape the target first (e.g.
    ``y.reshape(y_hat.shape)``), since broadcasting (n, 1) against (n,) would silently
    compare every prediction with every target.
    """
    if _amp.ACTIVE:
        input, target = _amp.cast("mse_loss", input, target)
    _check_reduction(reduction)
    x = _floating(_tensor(input))
    y = _tensor(target, x)
    if x.shape != y.shape:
        raise ValueError(
            f"Expected input and target of the same shape. Received: {x.shape} and {y.shape}. "
            f"Reshape the target first, e.g. target.reshape({x.shape})."
        )
    d = x - y
    return _reduce(d * d, reduction)


def _label_error(classes: int, received: str) -> IndexError:
    return IndexError(
        f"Expected class labels in [0, {classes}) for logits of {classes} classes. Received: "
        f"{received}. Check the labels' encoding (e.g. 1-based labels, or a marker for "
        "unlabelled samples) and the number of classes; pass ignore_index= for a marker "
        "(PyTorch ignores -100 by default, multidev only when asked: ignore_index=-100)."
    )


def _masked_cross_entropy(
    logits: Tensor,
    labels: Tensor,
    weight: Tensor | None,
    ignore_index: int | None,
    reduction: str,
    smoothing: float,
) -> Tensor:
    """PyTorch's cross-entropy with class weights, ignored labels and label smoothing, from
    multidev ops: per sample ``(1 - s) * -w[y] log p[y] + s / C * -sum_c w[c] log p[c]``, 0 for
    an ignored label, and the mean divides by the sum of ``w[y]`` over the labels kept. The
    labels are checked on the host first, as in the composed form, except while a compiler
    that follows Python (``torch.compile``) traces the step: there an out-of-range label
    counts 0."""
    classes = logits.shape[-1]
    compiling = logits._bk.jit_compiling
    if labels.size and not (compiling is not None and compiling()):
        values = labels.numpy()
        values = values[values != ignore_index] if ignore_index is not None else values
        if values.size and (values.min() < 0 or values.max() >= classes):
            raise _label_error(classes, f"labels in [{values.min()}, {values.max()}]")
    kept = None if ignore_index is None else labels != ignore_index
    safe = labels if kept is None else ops.where(kept, labels, zeros_like(labels))
    onehot = ops.astype(
        ops.expand_dims(safe, -1) == arange(classes, dtype=labels._dtype, device=logits._dev),
        logits._dtype,
    )
    log_p = _wrap(
        logits, _call(logits, "log_softmax", logits._native, logits.ndim - 1), logits._dtype
    )
    weighted = log_p if weight is None else log_p * weight
    loss = -ops.sum(onehot * weighted, axis=-1)
    if smoothing:
        loss = (1.0 - smoothing) * loss - smoothing / classes * ops.sum(weighted, axis=-1)
    # each sample's share of the mean: its label's weight, 0 where ignored
    share = ops.sum(onehot, axis=-1) if weight is None else ops.sum(onehot * weight, axis=-1)
    if kept is not None:
        share = share * ops.astype(kept, logits._dtype)
        loss = loss * ops.astype(kept, logits._dtype)
    if reduction == "mean":
        return ops.sum(loss) / ops.sum(share)
    return _reduce(loss, reduction)


def _composed_cross_entropy(logits: Tensor, labels: Tensor, reduction: str) -> Tensor:
    """The cross-entropy from multidev ops, the NumPy reference meaning of the fused op (and
    its form where an adapter has none): one-hot labels times ``log_softmax``. The labels are
    checked on the host first, since an out-of-range label would give a zero one-hot row."""
    shape = logits.shape
    if labels.size:
        lo, hi = int(ops.min(labels).item()), int(ops.max(labels).item())
        if lo < 0 or hi >= shape[-1]:
            raise _label_error(shape[-1], f"labels in [{lo}, {hi}]")
    classes = arange(shape[-1], dtype=labels._dtype, device=logits._dev)
    onehot = ops.astype(ops.expand_dims(labels, -1) == classes, logits._dtype)
    log_p = _wrap(
        logits, _call(logits, "log_softmax", logits._native, len(shape) - 1), logits._dtype
    )
    nll = -ops.sum(onehot * log_p, axis=-1)
    return _reduce(nll, reduction)


def cross_entropy(
    input: Any,
    target: Any,
    weight: Any = None,
    *,
    ignore_index: int | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy between ``input`` logits of shape (N, C) (or (C,)) and integer class
    labels ``target`` of shape (N,) (or ()), in [0, C): ``-log_softmax(input)[i, target[i]]``,
    averaged over the batch (``reduction="mean"``), summed, or per sample (``"none"``).

    As in PyTorch: ``weight`` (C class weights: the mean divides by the weights of the
    labels), ``ignore_index`` (samples with that label count 0 and are left out of the
    mean; PyTorch's default -100 is not assumed: pass it), ``label_smoothing`` (the target
    mixes ``1 - s`` of the label with ``s`` spread over the C classes). With any of them the
    loss is composed of multidev ops, the labels checked on the host.

    Runs the framework's fused kernel where the adapter lowers the ``cross_entropy`` op
    (``torch.nn.functional.cross_entropy``, ``tf.nn.sparse_softmax_cross_entropy_with_logits``,
    ...), else the composed form. Raises TypeError for non-integer labels, ValueError for
    mismatched shapes, IndexError for labels outside [0, C) (on MXNet, whose engine runs
    asynchronously, MXNet's error where the loss is read instead; inside ``md.jit``, the
    framework's own error when the compiled step runs).
    """
    if _amp.ACTIVE:
        (input,) = _amp.cast("cross_entropy", input)
    if isinstance(weight, str):
        raise TypeError(
            f"Expected class weights (a tensor of C values) as the third argument. Received: "
            f"{weight!r}. Pass the reduction by name: reduction={weight!r}."
        )
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"Expected label_smoothing in [0, 1]. Received: {label_smoothing!r}")
    logits = _floating(_tensor(input))
    labels = _tensor(target, logits)
    if labels._dtype.kind not in "iu":
        raise TypeError(
            f"Expected integer class labels. Received: {labels._dtype}. Convert them, e.g. "
            "labels.astype(md.int64)."
        )
    shape = logits.shape
    if len(shape) not in (1, 2) or labels.shape != shape[:-1]:
        raise ValueError(
            f"Expected logits of shape (N, C) with labels of shape (N,), or (C,) with a 0-d "
            f"label. Received: logits {shape} and labels {labels.shape}."
        )
    _check_same(logits, labels)
    if weight is not None or ignore_index is not None or label_smoothing:
        w = None
        if weight is not None:
            w = ops.astype(_tensor(weight, logits), logits._dtype)
            if w.shape != shape[-1:]:
                raise ValueError(
                    f"Expected one weight per class, shape {shape[-1:]}. Received: {w.shape}."
                )
        return _masked_cross_entropy(
            logits, labels, w, ignore_index, reduction, float(label_smoothing)
        )
    if getattr(logits._bk.ops, "cross_entropy", None) is None or not logits.size:
        return _composed_cross_entropy(logits, labels, reduction)
    if labels._dtype is not _dt.int64:
        labels = ops.astype(labels, _dt.int64)
    x, y = (logits, labels) if len(shape) == 2 else (logits.reshape(1, -1), labels.reshape(1))
    try:
        out = _call(x, "cross_entropy", x._native, y._native, reduction)
    except IndexError as e:
        raise _label_error(shape[-1], str(e).strip().splitlines()[0].rstrip(". ")) from e
    loss = _wrap(logits, out, logits._dtype)
    return loss.reshape(()) if len(shape) == 1 and reduction == "none" else loss


class MSELoss(Block):
    """``mse_loss`` as a layer: ``loss = nn.MSELoss(); loss(y_hat, y)``."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        _check_reduction(reduction)
        self.reduction = reduction

    def forward(self, input: Any, target: Any) -> Tensor:
        return mse_loss(input, target, self.reduction)


class CrossEntropyLoss(Block):
    """``cross_entropy`` as a layer: ``loss = nn.CrossEntropyLoss(); loss(logits, labels)``,
    with its ``weight``, ``ignore_index``, ``reduction`` and ``label_smoothing``."""

    def __init__(
        self,
        weight: Any = None,
        *,
        ignore_index: int | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__()
        if isinstance(weight, str):
            raise TypeError(
                f"Expected class weights as the first argument. Received: {weight!r}. Pass "
                f"the reduction by name: nn.CrossEntropyLoss(reduction={weight!r})."
            )
        _check_reduction(reduction)
        self.weight = weight
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing

    def forward(self, input: Any, target: Any) -> Tensor:
        return cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )
