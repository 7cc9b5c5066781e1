"""Gradient clipping with PyTorch's names and rules: ``clip_grad_norm_``, ``clip_grad_value_``.

Both change ``p.grad`` of the given parameters (call them after ``loss.backward()`` and
before ``opt.step()``); a parameter listed twice (tied) is counted and clipped once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .. import ops
from ..autograd import no_grad
from ..tensors import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _unique(parameters: Any) -> list[Any]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    seen: set[int] = set()
    out = []
    for p in parameters:
        if id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    return out


def _norm(x: Tensor, norm_type: float) -> Tensor:
    if norm_type == math.inf:
        return ops.max(abs(x))
    if norm_type == 2.0:
        return ops.sqrt(ops.sum(x * x))
    if norm_type == 1.0:
        return ops.sum(abs(x))
    return ops.sum(abs(x) ** norm_type) ** (1.0 / norm_type)


@no_grad()  # as PyTorch's: gradient arithmetic is never recorded
def clip_grad_norm_(
    parameters: Iterable[Any] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale the gradients so that their joint ``norm_type``-norm (all gradients as one
    vector; ``math.inf`` for the largest magnitude) is at most ``max_norm``: each is
    multiplied by ``min(1, max_norm / (total + 1e-6))``, as in PyTorch.

    Returns the total norm before clipping (a 0-d Tensor on the first gradient's device;
    0.0 when no parameter has a gradient). Raises ``RuntimeError`` for a NaN or infinite total
    when ``error_if_nonfinite``, and ``ValueError`` for a negative ``max_norm`` or a
    ``norm_type`` that is not positive.
    """
    from ..creation import asarray

    norm_type = float(norm_type)
    if not norm_type > 0:
        raise ValueError(f"Expected norm_type > 0 (or math.inf). Received: {norm_type!r}")
    if not max_norm >= 0:
        raise ValueError(f"Expected max_norm >= 0. Received: {max_norm!r}")
    params = [p for p in _unique(parameters) if p.grad is not None]
    if not params:
        return asarray(0.0)
    grads = [p.grad for p in params]
    dev = grads[0].device
    norms = [_norm(g, norm_type).to(dev) for g in grads]
    total = norms[0] if len(norms) == 1 else _norm(ops.stack(norms), norm_type)
    value = total.item()
    if error_if_nonfinite and not math.isfinite(value):
        raise RuntimeError(
            f"Expected finite gradients. Received: a total {norm_type}-norm of {value}. "
            "Check the loss for NaN/inf, or pass error_if_nonfinite=False to clip anyway."
        )
    coef = ops.clip(max_norm / (total + 1e-6), None, 1.0)
    for p, g in zip(params, grads, strict=True):
        p.grad = g * coef.to(g.device).astype(g.dtype)
    return total


@no_grad()
def clip_grad_value_(parameters: Iterable[Any] | Tensor, clip_value: float) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]``, in place of
    ``p.grad``. Raises ``ValueError`` for a negative ``clip_value``."""
    if not clip_value >= 0:
        raise ValueError(f"Expected clip_value >= 0. Received: {clip_value!r}")
    for p in _unique(parameters):
        g = p.grad
        if g is not None:
            p.grad = ops.clip(g, -float(clip_value), float(clip_value))
