"""PyTorch's ranking, embedding and likelihood losses (``F.margin_ranking_loss``,
``F.triplet_margin_loss``, ``F.gaussian_nll_loss``, ...) and their layers, composed of
multidev ops with PyTorch's formulas, constants and reductions."""

from __future__ import annotations

import math
from typing import Any

from .. import array_api, ops
from ..dispatch import as_tensor as _tensor
from ..dispatch import floating as _floating
from ..tensors import Tensor
from .activations import logsigmoid, softplus
from .losses import LossLayer, check_reduction, reduce_loss
from .module import Block

__all__ = [
    "CosineEmbeddingLoss",
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "MarginRankingLoss",
    "MultiLabelSoftMarginLoss",
    "PairwiseDistance",
    "PoissonNLLLoss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "cosine_embedding_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multilabel_soft_margin_loss",
    "pairwise_distance",
    "poisson_nll_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
]


def _floats(*tensors: Any) -> list[Tensor]:
    """The arguments as floating tensors of the first one's dtype and device."""
    first = _floating(_tensor(tensors[0]))
    rest = [_tensor(t, first) for t in tensors[1:]]
    return [first, *(t if t._dtype is first._dtype else ops.astype(t, first._dtype) for t in rest)]


def margin_ranking_loss(
    input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``; ``target`` is 1 where ``input1``
    should rank higher, -1 where ``input2`` should."""
    check_reduction(reduction)
    x1, x2, y = _floats(input1, input2, target)
    return reduce_loss(ops.maximum(-y * (x1 - x2) + margin, 0.0), reduction)


def hinge_embedding_loss(
    input: Any, target: Any, margin: float = 1.0, reduction: str = "mean"
) -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1."""
    check_reduction(reduction)
    x, y = _floats(input, target)
    hinge = ops.where(y != 1, ops.maximum(margin - x, 0.0), 0.0)
    return reduce_loss(hinge + ops.where(y != -1, x, 0.0), reduction)


def soft_margin_loss(input: Any, target: Any, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))`` (targets 1 or -1)."""
    check_reduction(reduction)
    x, y = _floats(input, target)
    return reduce_loss(softplus(-y * x), reduction)


def cosine_embedding_loss(
    input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """``1 - cos(input1, input2)`` where ``target`` is 1, ``max(0, cos - margin)`` where it
    is -1; the cosine along the last dimension of (N, D) or (D,) inputs, each squared norm
    plus 1e-12, as PyTorch computes it."""
    check_reduction(reduction)
    x1, x2, y = _floats(input1, input2, target)
    if x1.ndim not in (1, 2) or x1.shape != x2.shape:
        raise ValueError(
            "Expected input1 and input2 of one shape, (N, D) or (D,), for "
            f"cosine_embedding_loss. Received: {x1.shape} and {x2.shape}"
        )
    eps = 1e-12
    dot = ops.sum(x1 * x2, axis=-1)
    cos = dot / ops.sqrt((ops.sum(x1 * x1, axis=-1) + eps) * (ops.sum(x2 * x2, axis=-1) + eps))
    loss = ops.where(y == 1, 1.0 - cos, 0.0) + ops.where(
        y == -1, ops.maximum(cos - margin, 0.0), 0.0
    )
    return reduce_loss(loss, reduction)


def pairwise_distance(
    x1: Any, x2: Any, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The p-norm of ``x1 - x2 + eps`` along the last dimension."""
    a, b = _floats(x1, x2)
    d = ops.abs(a - b + eps)
    if p == math.inf:
        return ops.max(d, axis=-1, keepdims=keepdim)
    if p == 0:
        return ops.sum(ops.astype(d != 0, a._dtype), axis=-1, keepdims=keepdim)
    return ops.sum(d**p, axis=-1, keepdims=keepdim) ** (1.0 / p)


def triplet_margin_loss(
    anchor: Any,
    positive: Any,
    negative: Any,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``max(d(anchor, positive) - d(anchor, negative) + margin, 0)`` with ``d`` the
    ``pairwise_distance``; ``swap`` uses the smaller of d(anchor, negative) and
    d(positive, negative)."""
    check_reduction(reduction)
    a, pos, neg = _floats(anchor, positive, negative)
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = ops.minimum(d_neg, pairwise_distance(pos, neg, p, eps))
    return reduce_loss(ops.maximum(d_pos - d_neg + margin, 0.0), reduction)


def gaussian_nll_loss(
    input: Any,
    target: Any,
    var: Any,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """``0.5 * (log(var) + (input - target) ** 2 / var)`` (plus ``0.5 * log(2 pi)`` with
    ``full``); ``var`` has the input's shape, or one dimension fewer or a last dimension of 1
    (one variance per row). Variances below ``eps`` count as ``eps``, the gradient passing as
    if they were not clamped (PyTorch clamps them without recording)."""
    check_reduction(reduction)
    x, y, v = _floats(input, target, var)
    if v.ndim == x.ndim - 1 and v.shape == x.shape[:-1]:
        v = v[..., None]
    if v.ndim != x.ndim or any(a not in (b, 1) for a, b in zip(v.shape, x.shape, strict=True)):
        raise ValueError(
            f"Expected var of the input's shape {x.shape}, without its last dimension, or with a "
            f"last dimension of 1. Received: {v.shape}"
        )
    if bool(array_api.any(v < 0)):
        raise ValueError("Expected var >= 0 for gaussian_nll_loss. Received: a negative value.")
    v = v + (ops.maximum(v, eps) - v).detach()
    loss = (ops.log(v) + (x - y) ** 2 / v) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)


def poisson_nll_loss(
    input: Any,
    target: Any,
    log_input: bool = True,
    full: bool = False,
    eps: float = 1e-8,
    reduction: str = "mean",
) -> Tensor:
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input +
    eps)``; ``full`` adds Stirling's approximation of ``log(target!)`` where target > 1."""
    check_reduction(reduction)
    x, y = _floats(input, target)
    loss = ops.exp(x) - y * x if log_input else x - y * ops.log(x + eps)
    if full:
        safe = ops.where(y > 1, y, 2.0)
        stirling = safe * ops.log(safe) - safe + 0.5 * ops.log(safe * (2 * math.pi))
        loss = loss + ops.where(y > 1, stirling, 0.0)
    return reduce_loss(loss, reduction)


def multilabel_soft_margin_loss(
    input: Any, target: Any, weight: Any = None, reduction: str = "mean"
) -> Tensor:
    """Binary cross-entropy of each of the C labels of (N, C) logits against 0/1 targets
    (optionally weighted per label), averaged over the labels of each sample."""
    check_reduction(reduction)
    x, y = _floats(input, target)
    loss = -(y * logsigmoid(x) + (1.0 - y) * logsigmoid(-x))
    if weight is not None:
        loss = loss * _tensor(weight, x)
    return reduce_loss(ops.mean(loss, axis=-1), reduction)


class MarginRankingLoss(Block):
    """``margin_ranking_loss`` as a layer: ``forward(input1, input2, target)``."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__()
        check_reduction(reduction)
        self.margin = margin
        self.reduction = reduction

    def forward(self, input1: Any, input2: Any, target: Any) -> Tensor:
        return margin_ranking_loss(input1, input2, target, self.margin, self.reduction)


class CosineEmbeddingLoss(MarginRankingLoss):
    """``cosine_embedding_loss`` as a layer: ``forward(input1, input2, target)``."""

    def forward(self, input1: Any, input2: Any, target: Any) -> Tensor:
        return cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)


class HingeEmbeddingLoss(LossLayer):
    """``hinge_embedding_loss`` as a layer."""

    _fn = staticmethod(hinge_embedding_loss)

    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(margin=margin, reduction=reduction)


class SoftMarginLoss(LossLayer):
    """``soft_margin_loss`` as a layer."""

    _fn = staticmethod(soft_margin_loss)

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)


class MultiLabelSoftMarginLoss(LossLayer):
    """``multilabel_soft_margin_loss`` as a layer; ``weight`` is a buffer."""

    _fn = staticmethod(multilabel_soft_margin_loss)

    def __init__(self, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__(weight=weight, reduction=reduction)


class PoissonNLLLoss(LossLayer):
    """``poisson_nll_loss`` as a layer."""

    _fn = staticmethod(poisson_nll_loss)

    def __init__(
        self, log_input: bool = True, full: bool = False, eps: float = 1e-8, reduction: str = "mean"
    ) -> None:
        super().__init__(log_input=log_input, full=full, eps=eps, reduction=reduction)


class GaussianNLLLoss(Block):
    """``gaussian_nll_loss`` as a layer: ``forward(input, target, var)``."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__()
        check_reduction(reduction)
        self.full = full
        self.eps = eps
        self.reduction = reduction

    def forward(self, input: Any, target: Any, var: Any) -> Tensor:
        return gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class TripletMarginLoss(Block):
    """``triplet_margin_loss`` as a layer: ``forward(anchor, positive, negative)``."""

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        check_reduction(reduction)
        self.margin, self.p, self.eps, self.swap, self.reduction = margin, p, eps, swap, reduction

    def forward(self, anchor: Any, positive: Any, negative: Any) -> Tensor:
        return triplet_margin_loss(
            anchor, positive, negative, self.margin, self.p, self.eps, self.swap, self.reduction
        )


class PairwiseDistance(Block):
    """``pairwise_distance`` as a layer."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Any, x2: Any) -> Tensor:
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
