"""Optimisers with PyTorch's update rules: ``md.optim.SGD`` and ``md.optim.Adam``.

``step()`` updates every parameter that has a gradient, in place (the parameters keep their
identity, storage and device; nothing is recorded), so the same training loop gives the same
numbers as ``torch.optim`` within float32 rounding. ``zero_grad()`` drops the gradients.
Hyperparameters live in ``opt.param_groups`` (a list of dicts, as in PyTorch), so a schedule
can change ``opt.param_groups[0]["lr"]`` between steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import Any

from . import ops
from .autograd import paused
from .creation import zeros_like
from .dispatch import check_same as _check_same
from .dispatch import on as _on
from .tensors import Tensor

__all__ = ["SGD", "Adam", "Optimizer"]


def _check(name: str, value: Any, ok: bool, want: str) -> None:
    if not ok:
        raise ValueError(f"Expected {name} {want}. Received: {value!r}")


def _add_scaled_(data: Tensor, update: Tensor, alpha: float) -> None:
    """``data += alpha * update`` in place, through the adapter's fused update."""
    bk = data._bk
    if update._bk is not bk or update._dev is not data._dev:
        _check_same(data, update)
    u = update._native
    if update._dtype is not data._dtype:
        u = _on(bk, data._dev, bk.ops.astype, u, data._dtype)
    data._native = _on(bk, data._dev, bk.add_scaled_, data._native, u, alpha)


class Optimizer:
    """Base class: holds ``param_groups`` and per-parameter ``state``; subclasses define
    ``_update(p, grad, group, state)``."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[Any, dict[str, Any]] = {}
        if isinstance(params, Tensor):
            raise TypeError(
                "Expected an iterable of Parameters (e.g. net.parameters()). Received: a single "
                f"{type(params).__name__}. Wrap it in a list: [p]."
            )
        groups = list(params)
        if not groups:
            raise ValueError(
                "Expected at least one parameter to optimise. Received: an empty iterable. "
                "Pass net.parameters() of a block that has parameters (run a forward pass first "
                "for lazy layers if you filter by shape)."
            )
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add parameters with their own hyperparameters (missing ones take the defaults)."""
        from .nn.parameter import Parameter

        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(
                "Expected a parameter group: a dict with a 'params' entry. "
                f"Received: {type(group).__name__}"
            )
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Parameter):
                raise TypeError(
                    f"Expected nn.Parameter objects to optimise. Received: {type(p).__name__}. "
                    "Pass net.parameters(), or wrap a tensor in nn.Parameter."
                )
            if id(p) in seen:
                raise ValueError(
                    "Expected each parameter in one group only. Received: a parameter that "
                    "appears twice. Pass each parameter once (net.parameters() does)."
                )
            seen.add(id(p))
        unknown = set(group) - set(self.defaults) - {"params"}
        if unknown:
            raise TypeError(
                f"Expected hyperparameters among {sorted(self.defaults)}. "
                f"Received: {sorted(unknown)}"
            )
        self.param_groups.append({**self.defaults, **group, "params": params})

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (``set_to_none=False``: set it to zeros)."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad = zeros_like(p.grad)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient, in place. ``closure`` (optional)
        recomputes and returns the loss before the update."""
        loss = closure() if closure is not None else None
        with ExitStack() as stack:
            adapters = {id(p._bk): p._bk for g in self.param_groups for p in g["params"]}
            for bk in adapters.values():
                cm = paused(bk)
                if cm is not None:
                    stack.enter_context(cm)
            for group in self.param_groups:
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    state = self.state.get(p)
                    if state is None:
                        state = self.state[p] = {}
                    self._update(p, grad, group, state)
        return loss

    def _update(self, p: Any, grad: Tensor, group: dict[str, Any], state: dict[str, Any]):
        raise NotImplementedError

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        return "\n".join(lines) + "\n)"


class SGD(Optimizer):
    """Stochastic gradient descent, PyTorch's rule: with weight decay ``g += wd * p``; with
    momentum ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` at the first step) and
    ``g = buf`` (Nesterov: ``g += momentum * buf``); then ``p -= lr * g``."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        _check("lr", lr, isinstance(lr, (int, float)) and lr >= 0, "to be a number >= 0")
        _check("momentum", momentum, momentum >= 0, "to be >= 0")
        _check("weight_decay", weight_decay, weight_decay >= 0, "to be >= 0")
        _check(
            "nesterov",
            nesterov,
            not nesterov or (momentum > 0 and dampening == 0),
            "only with momentum > 0 and dampening 0",
        )
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "weight_decay": weight_decay,
            "dampening": dampening,
            "nesterov": nesterov,
        }
        super().__init__(params, defaults)

    def _update(self, p, grad, group, state):
        data = p.data
        wd = group["weight_decay"]
        if wd:
            grad = grad + data * wd
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.to(grad.device, copy=True)
            else:
                buf = buf * momentum + grad * (1 - group["dampening"])
            state["momentum_buffer"] = buf
            grad = grad + buf * momentum if group["nesterov"] else buf
        _add_scaled_(data, grad, -group["lr"])


class Adam(Optimizer):
    """Adam (Kingma & Ba), PyTorch's rule: with weight decay ``g += wd * p``;
    ``m = beta1 * m + (1 - beta1) * g``, ``v = beta2 * v + (1 - beta2) * g * g``;
    ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)`` at step t."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        _check("lr", lr, isinstance(lr, (int, float)) and lr >= 0, "to be a number >= 0")
        _check("eps", eps, eps >= 0, "to be >= 0")
        _check(
            "betas",
            betas,
            len(betas) == 2 and all(0 <= b < 1 for b in betas),
            "to be two numbers in [0, 1)",
        )
        _check("weight_decay", weight_decay, weight_decay >= 0, "to be >= 0")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _update(self, p, grad, group, state):
        data = p.data
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(data)
            state["exp_avg_sq"] = zeros_like(data)
        beta1, beta2 = group["betas"]
        wd = group["weight_decay"]
        if wd:
            grad = grad + data * wd
        step = state["step"] = state["step"] + 1
        m = state["exp_avg"]
        m = state["exp_avg"] = m + (grad - m) * (1 - beta1)
        v = state["exp_avg_sq"] = state["exp_avg_sq"] * beta2 + grad * grad * (1 - beta2)
        step_size = group["lr"] / (1 - beta1**step)
        denom = ops.sqrt(v) / math.sqrt(1 - beta2**step) + group["eps"]
        data -= m / denom * step_size
