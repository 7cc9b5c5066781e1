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

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "MSELoss",
    "NLLLoss",
    "SmoothL1Loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "mse_loss",
    "nll_loss",
    "smooth_l1_loss",
]

_REDUCTIONS = ("mean", "sum", "none")


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """``loss`` averaged, summed, or as it is (``"none"``)."""
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    return loss


def check_reduction(reduction: str) -> None:
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
    check_reduction(reduction)
    x = _floating(_tensor(input))
    y = _tensor(target, x)
    if x.shape != y.shape:
        raise ValueError(
            f"Expected input and target of the same shape. Received: {x.shape} and {y.shape}. "
            f"Reshape the target first, e.g. target.reshape({x.shape})."
        )
    d = x - y
    return reduce_loss(d * d, reduction)


def _pair(input: Any, target: Any, reduction: str, what: str) -> tuple[Tensor, Tensor]:
    """Floating ``input`` and ``target`` of one shape (broadcasting would pair every
    prediction with every target), the reduction checked."""
    check_reduction(reduction)
    x = _floating(_tensor(input))
    y = _tensor(target, x)
    if x.shape != y.shape:
        raise ValueError(
            f"Expected input and target of the same shape for {what}. Received: {x.shape} and "
            f"{y.shape}. Reshape the target first, e.g. target.reshape({x.shape})."
        )
    return x, ops.astype(y, x._dtype) if y._dtype is not x._dtype else y


def l1_loss(input: Any, target: Any, reduction: str = "mean") -> Tensor:
    """``|input - target|``, averaged (or summed, or elementwise with ``"none"``)."""
    x, y = _pair(input, target, reduction, "l1_loss")
    return reduce_loss(ops.abs(x - y), reduction)


def smooth_l1_loss(input: Any, target: Any, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d**2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere (d = input -
    target); ``beta=0`` is the L1 loss."""
    if beta < 0:
        raise ValueError(f"Expected beta >= 0. Received: {beta}")
    x, y = _pair(input, target, reduction, "smooth_l1_loss")
    d = ops.abs(x - y)
    if beta == 0:
        return reduce_loss(d, reduction)
    return reduce_loss(ops.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``0.5 d**2`` where ``|d| <= delta``, ``delta * (|d| - 0.5 delta)`` elsewhere."""
    if delta <= 0:
        raise ValueError(f"Expected delta > 0. Received: {delta}")
    x, y = _pair(input, target, reduction, "huber_loss")
    d = ops.abs(x - y)
    return reduce_loss(ops.where(d <= delta, d * d * 0.5, (d - 0.5 * delta) * delta), reduction)


def _clamped_log(p: Tensor) -> Tensor:
    """``max(log p, -100)``, with -100 (and a zero gradient) where ``p`` is 0: a sigmoid
    saturates to exactly 0 or 1 in float32, and log(0) would make the gradient NaN."""
    positive = p > 0
    return ops.where(positive, ops.maximum(ops.log(ops.where(positive, p, 1.0)), -100.0), -100.0)


def binary_cross_entropy(
    input: Any, target: Any, weight: Any = None, reduction: str = "mean"
) -> Tensor:
    """``-(y log p + (1 - y) log(1 - p))`` for probabilities ``input``, each log clamped at
    -100 as PyTorch does (a probability of exactly 0 or 1 gives a finite loss), times
    ``weight`` (broadcast) where given."""
    p, y = _pair(input, target, reduction, "binary_cross_entropy")
    loss = -(y * _clamped_log(p) + (1.0 - y) * _clamped_log(1.0 - p))
    if weight is not None:
        loss = loss * _tensor(weight, p)
    return reduce_loss(loss, reduction)


def binary_cross_entropy_with_logits(
    input: Any, target: Any, weight: Any = None, reduction: str = "mean", pos_weight: Any = None
) -> Tensor:
    """``binary_cross_entropy(sigmoid(input), target)`` computed from the logits without
    overflow: ``(1 - y) x + (1 + (w_pos - 1) y) * softplus(-x)``, ``pos_weight`` (broadcast
    along the last axis) weighting the positive term; times ``weight`` where given."""
    x, y = _pair(input, target, reduction, "binary_cross_entropy_with_logits")
    softplus_neg = ops.maximum(-x, 0.0) + ops.log1p(ops.exp(-ops.abs(x)))  # log(1 + exp(-x))
    if pos_weight is None:
        loss = (1.0 - y) * x + softplus_neg
    else:
        scale = 1.0 + (_tensor(pos_weight, x) - 1.0) * y
        loss = (1.0 - y) * x + scale * softplus_neg
    if weight is not None:
        loss = loss * _tensor(weight, x)
    return reduce_loss(loss, reduction)


def nll_loss(
    input: Any,
    target: Any,
    weight: Any = None,
    *,
    ignore_index: int | None = None,
    reduction: str = "mean",
) -> Tensor:
    """The negative log-likelihood of log-probabilities ``input`` (N, C) at the class labels
    ``target`` (N,): ``-w[y] * input[i, y]``, the mean dividing by the weights of the labels
    kept (``cross_entropy`` is ``nll_loss(log_softmax(x), y)``); (N, C, d1, ...) with labels
    (N, d1, ...) per position. ``ignore_index`` as in ``cross_entropy``: not assumed."""
    check_reduction(reduction)
    log_p = _floating(_tensor(input))
    labels = _tensor(target, log_p)
    if labels._dtype.kind not in "iu":
        raise _not_labels(labels, "")
    if log_p.ndim < 2 or labels.shape != log_p.shape[:1] + log_p.shape[2:]:
        raise ValueError(
            f"Expected log-probabilities of shape (N, C) with labels of shape (N,), or (N, C, "
            f"d1, ...) with labels (N, d1, ...). Received: {log_p.shape} and {labels.shape}."
        )
    w = _class_weights(weight, log_p, log_p.shape[1])
    rows, labels = _classes_last(log_p, labels)
    loss = _masked_nll(rows, labels, w, ignore_index, reduction, 0.0)
    return loss.reshape(log_p.shape[:1] + log_p.shape[2:]) if reduction == "none" else loss


def kl_div(input: Any, target: Any, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``target * (log target - input)`` for log-probabilities ``input``, 0 where the target
    is 0; ``reduction="batchmean"`` divides the sum by the batch size (the mathematical KL
    divergence; ``"mean"`` divides by the number of elements, as PyTorch does)."""
    batchmean = reduction == "batchmean"
    x, t = _pair(input, target, "sum" if batchmean else reduction, "kl_div")
    if log_target:
        loss = ops.exp(t) * (t - x)
    else:
        positive = t > 0
        loss = ops.where(positive, t * (ops.log(ops.where(positive, t, 1.0)) - x), 0.0)
    if batchmean:
        return ops.sum(loss) / (x.shape[0] if x.ndim else 1)
    return reduce_loss(loss, reduction)


#: the tensor options of the loss layers, buffers as in PyTorch (``to()`` moves them, and
#: ``state_dict`` holds those given)
_TENSOR_OPTIONS = ("weight", "pos_weight")


class LossLayer(Block):
    """A loss function as a layer: its options kept, its tensor options (``weight``,
    ``pos_weight``) as buffers; ``forward(input, target)``."""

    _fn: Any = None

    def __init__(self, **options: Any) -> None:
        super().__init__()
        if "reduction" in options and options["reduction"] != "batchmean":
            check_reduction(options["reduction"])
        for name in _TENSOR_OPTIONS:
            if name in options:
                value = options.pop(name)
                self.register_buffer(name, None if value is None else _tensor(value))
        self._options = options

    def forward(self, input: Any, target: Any) -> Tensor:
        tensors = {n: self._buffers[n] for n in _TENSOR_OPTIONS if n in self._buffers}
        return type(self)._fn(input, target, **tensors, **self._options)


class L1Loss(LossLayer):
    """``l1_loss`` as a layer."""

    _fn = staticmethod(l1_loss)

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)


class SmoothL1Loss(LossLayer):
    """``smooth_l1_loss`` as a layer."""

    _fn = staticmethod(smooth_l1_loss)

    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction=reduction, beta=beta)


class HuberLoss(LossLayer):
    """``huber_loss`` as a layer."""

    _fn = staticmethod(huber_loss)

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction, delta=delta)


class BCELoss(LossLayer):
    """``binary_cross_entropy`` as a layer."""

    _fn = staticmethod(binary_cross_entropy)

    def __init__(self, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__(weight=weight, reduction=reduction)


class BCEWithLogitsLoss(LossLayer):
    """``binary_cross_entropy_with_logits`` as a layer."""

    _fn = staticmethod(binary_cross_entropy_with_logits)

    def __init__(self, weight: Any = None, reduction: str = "mean", pos_weight: Any = None):
        super().__init__(weight=weight, reduction=reduction, pos_weight=pos_weight)


class NLLLoss(LossLayer):
    """``nll_loss`` as a layer."""

    _fn = staticmethod(nll_loss)

    def __init__(
        self, weight: Any = None, *, ignore_index: int | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(weight=weight, ignore_index=ignore_index, reduction=reduction)


class KLDivLoss(LossLayer):
    """``kl_div`` as a layer."""

    _fn = staticmethod(kl_div)

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(reduction=reduction, log_target=log_target)


def _label_error(classes: int, received: str) -> IndexError:
    return IndexError(
        f"Expected class labels in [0, {classes}) for logits of {classes} classes. Received: "
        f"{received}. Check the labels' encoding (e.g. 1-based labels, or a marker for "
        "unlabelled samples) and the number of classes; pass ignore_index= for a marker "
        "(PyTorch ignores -100 by default, multidev only when asked: ignore_index=-100)."
    )


def _class_weights(weight: Any, like: Tensor, classes: int) -> Tensor | None:
    """``weight`` as one value per class in ``like``'s dtype, or None."""
    if weight is None:
        return None
    w = ops.astype(_tensor(weight, like), like._dtype)
    if w.shape != (classes,):
        raise ValueError(f"Expected one weight per class, shape ({classes},). Received: {w.shape}.")
    return w


def _not_labels(target: Tensor, probabilities: str) -> TypeError:
    return TypeError(
        f"Expected integer class labels{probabilities}. Received: {target._dtype} values of "
        f"shape {target.shape}. Convert labels, e.g. labels.astype(md.int64)."
    )


def _classes_last(scores: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """PyTorch's K-dimensional losses, one position at a time: ``scores`` (N, C, d1, ...) as
    rows (N * d1 * ..., C), and ``target`` (labels (N, d1, ...) or probabilities of the
    scores' shape) in the same order. (N, C) scores and their targets come back as they are."""
    if scores.ndim <= 2:
        return scores, target
    classes = scores.shape[1]
    last = (0, *range(2, scores.ndim), 1)
    rows = ops.reshape(ops.permute_dims(scores, last), (-1, classes))
    if target.ndim == scores.ndim:  # probabilities, one per class
        return rows, ops.reshape(ops.permute_dims(target, last), (-1, classes))
    return rows, ops.reshape(target, (-1,))


def _masked_nll(
    log_p: Tensor,
    labels: Tensor,
    weight: Tensor | None,
    ignore_index: int | None,
    reduction: str,
    smoothing: float,
) -> Tensor:
    """PyTorch's negative log-likelihood of log-probabilities with class weights, ignored
    labels and label smoothing, from multidev ops: per sample ``(1 - s) * -w[y] log p[y] +
    s / C * -sum_c w[c] log p[c]``, 0 for an ignored label, and the mean divides by the sum
    of ``w[y]`` over the labels kept. The labels are checked on the host first, as in the
    composed form, except while a compiler that follows Python (``torch.compile``) traces
    the step: there an out-of-range label counts 0."""
    classes = log_p.shape[-1]
    compiling = log_p._bk.jit_compiling
    if labels.size and not (compiling is not None and compiling()):
        values = labels.numpy()
        values = values[values != ignore_index] if ignore_index is not None else values
        if values.size and (values.min() < 0 or values.max() >= classes):
            raise _label_error(classes, f"labels in [{values.min()}, {values.max()}]")
    kept = None if ignore_index is None else labels != ignore_index
    safe = labels if kept is None else ops.where(kept, labels, zeros_like(labels))
    onehot = ops.astype(
        ops.expand_dims(safe, -1) == arange(classes, dtype=labels._dtype, device=log_p._dev),
        log_p._dtype,
    )
    weighted = log_p if weight is None else log_p * weight
    loss = -ops.sum(onehot * weighted, axis=-1)
    if smoothing:
        loss = (1.0 - smoothing) * loss - smoothing / classes * ops.sum(weighted, axis=-1)
    # each sample's share of the mean: its label's weight, 0 where ignored
    share = ops.sum(onehot, axis=-1) if weight is None else ops.sum(onehot * weight, axis=-1)
    if kept is not None:
        share = share * ops.astype(kept, log_p._dtype)
        loss = loss * ops.astype(kept, log_p._dtype)
    if reduction == "mean":
        return ops.sum(loss) / ops.sum(share)
    return reduce_loss(loss, reduction)


def _soft_cross_entropy(
    logits: Tensor,
    target: Tensor,
    weight: Any,
    ignore_index: int | None,
    reduction: str,
    smoothing: float,
) -> Tensor:
    """PyTorch's cross-entropy with class probabilities: per sample ``-sum_c w[c] q[c] log
    p[c]`` with ``q`` mixed ``1 - s`` with ``s / C`` by label smoothing; the mean is over the
    samples (and positions), not the weights."""
    if ignore_index is not None:
        raise ValueError(
            "Expected ignore_index only with integer class labels. Received: ignore_index="
            f"{ignore_index!r} with class probabilities. Drop ignore_index, or pass labels."
        )
    classes = logits.shape[0 if logits.ndim == 1 else 1]
    w = _class_weights(weight, logits, classes)
    rows, q = _classes_last(logits, target)
    log_p = _wrap(rows, _call(rows, "log_softmax", rows._native, rows.ndim - 1), rows._dtype)
    if smoothing:
        q = q * (1.0 - smoothing) + smoothing / classes
    weighted = log_p * q if w is None else log_p * q * w
    loss = -ops.sum(weighted, axis=-1)
    if reduction == "none" and logits.ndim >= 3:
        return loss.reshape(logits.shape[:1] + logits.shape[2:])
    return reduce_loss(loss, reduction)


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
    return reduce_loss(nll, reduction)


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
    Logits (N, C, d1, ...) with labels (N, d1, ...) give a loss per position; a floating
    ``target`` of the logits' shape holds class probabilities: ``-sum_c w[c] target[c]
    log_softmax(input)[c]``, the mean over the samples (PyTorch's soft targets).

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
    check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"Expected label_smoothing in [0, 1]. Received: {label_smoothing!r}")
    logits = _floating(_tensor(input))
    labels = _tensor(target, logits)
    if labels._dtype.kind == "f" and labels.shape == logits.shape and logits.ndim:
        _check_same(logits, labels)
        return _soft_cross_entropy(logits, labels, weight, ignore_index, reduction, label_smoothing)
    if labels._dtype.kind not in "iu":
        raise _not_labels(labels, ", or class probabilities of the logits' shape")
    if logits.ndim >= 3 and labels.shape == logits.shape[:1] + logits.shape[2:]:
        rows, flat = _classes_last(logits, labels)
        loss = cross_entropy(
            rows,
            flat,
            weight,
            ignore_index=ignore_index,
            reduction=reduction,
            label_smoothing=label_smoothing,
        )
        return loss.reshape(labels.shape) if reduction == "none" else loss
    shape = logits.shape
    if len(shape) not in (1, 2) or labels.shape != shape[:-1]:
        raise ValueError(
            f"Expected logits of shape (N, C) with labels of shape (N,), (C,) with a 0-d label, "
            f"or (N, C, d1, ...) with labels (N, d1, ...). Received: logits {shape} and labels "
            f"{labels.shape}."
        )
    _check_same(logits, labels)
    if weight is not None or ignore_index is not None or label_smoothing:
        log_p = _wrap(
            logits, _call(logits, "log_softmax", logits._native, len(shape) - 1), logits._dtype
        )
        w = _class_weights(weight, logits, shape[-1])
        return _masked_nll(log_p, labels, w, ignore_index, reduction, float(label_smoothing))
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
        check_reduction(reduction)
        self.reduction = reduction

    def forward(self, input: Any, target: Any) -> Tensor:
        return mse_loss(input, target, self.reduction)


class CrossEntropyLoss(Block):
    """``cross_entropy`` as a layer: ``loss = nn.CrossEntropyLoss(); loss(logits, labels)``,
    with its ``weight`` (a buffer), ``ignore_index``, ``reduction`` and ``label_smoothing``."""

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
        check_reduction(reduction)
        self.register_buffer("weight", None if weight is None else _tensor(weight))
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
