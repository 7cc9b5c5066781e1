"""Optimisers with PyTorch's update rules: ``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``.

``step()`` updates every parameter that has a gradient, in place (the parameters keep their
identity, storage and device; nothing is recorded); the final ``p += alpha * update`` of each
rule goes through the adapter's fused update, applied at the end of ``step()`` for every
parameter at once (``add_scaled_many_``: one multi-tensor kernel per device, dtype and step
size where the framework has one, ``add_scaled_`` per parameter otherwise). The same training loop gives
the same numbers as ``torch.optim`` within float32 rounding. ``zero_grad()`` drops the
gradients. Hyperparameters live in ``opt.param_groups`` (a list of dicts, as in PyTorch; the
constructor also takes a list of groups with their own ``lr``, ``weight_decay``, …), so a
schedule can change ``opt.param_groups[0]["lr"]`` between steps.

``state_dict()`` / ``load_state_dict()`` use PyTorch's layout: ``{"state": {index: {...}},
"param_groups": [{..., "params": [index, ...]}]}`` with parameters numbered in group order,
so the optimiser's state saves with ``md.save`` and resumes on any backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..autograd import paused
from ..creation import full_like, zeros_like
from ..dispatch import check_same as _check_same
from ..dispatch import new_tensor as _new_tensor
from ..dispatch import on as _on
from ..errors import StateDictError
from ..nn.parameter import Parameter, clear_grads
from ..tensors import Tensor
from ..tracing import TracedScalar

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop"]


def _check(name: str, value: Any, ok: bool, want: str) -> None:
    if not ok:
        raise ValueError(f"Expected {name} {want}. Received: {value!r}")


def _check_lr(lr: Any) -> None:
    _check(
        "lr",
        lr,
        isinstance(lr, (int, float)) and not isinstance(lr, bool) and lr >= 0,
        "to be a number >= 0",
    )


class _Updates:
    """The ``data += alpha * update`` of one ``step()``, queued and applied together: one
    ``add_scaled_many_`` call per adapter, device, dtype and alpha (the per-pair
    ``add_scaled_`` where an adapter lacks the hook). ``data`` may be the Parameter itself:
    the update goes into its framework tensor with recording paused (``step()`` pauses it),
    without a ``p.data`` view per parameter and step."""

    def __init__(self) -> None:
        self._queued: dict[tuple, tuple[list[Tensor], list[Any]]] = {}

    def add(self, data: Tensor, update: Tensor, alpha: float) -> None:
        bk = data._bk
        if update._bk is not bk or update._dev is not data._dev:
            _check_same(data, update)
        u = update._native
        if update._dtype is not data._dtype:
            u = _on(bk, data._dev, bk.ops.astype, u, data._dtype)
        if type(alpha) is TracedScalar:  # an input of an md.jit trace: a tensor of the graph
            u = bk.ops.multiply(u, bk.ops.astype(alpha.native, data._dtype))
            alpha = 1.0
        key = (id(bk), data._dev, data._dtype, alpha)
        queued = self._queued.get(key)
        if queued is None:
            queued = self._queued[key] = ([], [])
        queued[0].append(data)
        queued[1].append(u)

    def apply(self) -> None:
        try:
            for (_, dev, _, alpha), (datas, us) in self._queued.items():
                bk = datas[0]._bk
                xs = [d._native for d in datas]
                many = getattr(bk, "add_scaled_many_", None)
                if many is None:
                    outs = [
                        _on(bk, dev, bk.add_scaled_, x, u, alpha)
                        for x, u in zip(xs, us, strict=True)
                    ]
                else:
                    outs = _on(bk, dev, many, xs, us, alpha)
                for d, out in zip(datas, outs, strict=True):
                    if out is d._native:
                        continue
                    if isinstance(d, Parameter):  # a replacement: its values go into p's storage
                        d.data = _new_tensor(out, bk, dev, d._dtype)
                    else:
                        d._native = out
        finally:
            self._queued.clear()


def _state_value(value: Any, p: Any, key: str) -> Any:
    """A loaded state entry on ``p``'s backend and device; floating tensors take ``p``'s dtype
    (as in PyTorch). Plain Python values are kept."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    bk = p._bk
    if isinstance(value, Tensor):
        t = value if value._bk is bk else value.to_backend(bk.name)
    elif isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)
        t = _new_tensor(bk.from_numpy(arr, p._dev), bk, p._dev, _dt.from_numpy_dtype(arr.dtype))
    elif bk.tensor_types and isinstance(value, bk.tensor_types):
        t = _new_tensor(value, bk, bk.device_of(value), bk.dtype_of(value))
    else:
        raise TypeError(
            f"Expected tensors and plain numbers in optimiser state {key!r}. "
            f"Received: {type(value).__name__}"
        )
    if t._dtype.kind == "f" and t._dtype is not p._dtype:
        t = t.astype(p._dtype)
    if t.shape != p.shape:
        raise StateDictError(
            f"Expected optimiser state {key!r} of the parameter's shape {p.shape}. "
            f"Received: shape {t.shape}. Load the state dict of an optimiser over the same model."
        )
    return t.to(p._dev, copy=True)


class Optimizer:
    """Base class: holds ``param_groups`` and per-parameter ``state``; subclasses define
    ``_update(p, grad, group, state)`` (and ``_init_state`` for state made up front)."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[Any, dict[str, Any]] = {}
        self._updates = _Updates()
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
        full = {**self.defaults, **group, "params": params}
        self._check_group(full)
        self.param_groups.append(full)
        for p in params:
            init = self._init_state(p, full)
            if init:
                self.state[p] = init

    def _check_group(self, group: dict[str, Any]) -> None:
        """Validate one group's hyperparameters (subclasses check their own)."""
        _check_lr(group["lr"])
        wd = group.get("weight_decay", 0.0)
        _check("weight_decay", wd, wd >= 0, "to be >= 0")

    def _init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        """State made when a parameter is added (empty: made at its first step)."""
        return {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (``set_to_none=False``: set it to zeros)."""
        if set_to_none:
            clear_grads([p for group in self.param_groups for p in group["params"]])
            return
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
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
            self._updates.apply()
        return loss

    def _update(self, p: Any, grad: Tensor, group: dict[str, Any], state: dict[str, Any]):
        raise NotImplementedError

    def _lr_is_step_size(self) -> bool:
        """Whether ``_update`` uses ``group["lr"]`` only in Python arithmetic that ends in the
        step size of ``_add_scaled_`` (so ``md.jit`` may pass it as a tensor input; a new
        learning rate then needs no retrace). False for rules this class does not know."""
        return type(self)._update in _LR_IS_STEP_SIZE and not getattr(self, "_decoupled", False)

    def _add_scaled_(self, data: Tensor, update: Tensor, alpha: float) -> None:
        """``data += alpha * update`` (``data``: a Parameter or a view of one), applied with
        the step's other updates at its end."""
        self._updates.add(data, update, alpha)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The optimiser's state in PyTorch's layout: ``{"state": {index: {name: value}},
        "param_groups": [{hyperparameters..., "params": [index, ...]}]}``. Parameters are
        numbered 0, 1, … in group order; state holds Tensors and plain numbers, so the
        result saves with ``md.save`` as it is."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state.get(p)
                if s:
                    state[index[id(p)]] = dict(s)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict()`` returned (on any backend): hyperparameters per group
        and each parameter's state, converted to the parameter's backend, device and dtype.

        The saved groups must hold as many parameters as this optimiser's, in the same order;
        hyperparameters they lack keep their current values.
        Everything is checked before anything changes; a mismatch raises ``md.StateDictError``
        and leaves the optimiser as it was.
        """
        if (
            not isinstance(state_dict, dict)
            or "state" not in state_dict
            or "param_groups" not in state_dict
        ):
            got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise StateDictError(
                "Expected an optimiser state dict with 'state' and 'param_groups' entries "
                f"(opt.state_dict()). Received: {got}"
            )
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise StateDictError(
                f"Expected {len(self.param_groups)} parameter group(s), as this optimiser has. "
                f"Received: {len(saved_groups)}. Load the state of an optimiser built the same way."
            )
        by_index: dict[int, Any] = {}
        new_groups = []
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups, strict=True)):
            ids = list(saved.get("params", ()))
            if len(ids) != len(group["params"]):
                raise StateDictError(
                    f"Expected {len(group['params'])} parameter(s) in group {i}, as this "
                    f"optimiser has. Received: {len(ids)}. Load the state of an optimiser over "
                    "the same model."
                )
            for j, p in zip(ids, group["params"], strict=True):
                by_index[int(j)] = p
            new = {k: v for k, v in {**group, **saved}.items() if k != "params"}
            for key, value in new.items():
                if isinstance(group.get(key), tuple) and isinstance(value, list):
                    new[key] = tuple(value)
            new["params"] = group["params"]
            new_groups.append(new)
        new_state: dict[Any, dict[str, Any]] = {}
        for key, entries in dict(state_dict["state"]).items():
            p = by_index.get(int(key))
            if p is None:
                raise StateDictError(
                    f"Expected state only for parameters 0..{len(by_index) - 1}. "
                    f"Received: state for parameter {key!r}."
                )
            new_state[p] = {k: _state_value(v, p, k) for k, v in dict(entries).items()}
        self.param_groups[:] = new_groups
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        return "\n".join(lines) + "\n)"


def _decayed(grad: Tensor, p: Any, wd: float) -> Tensor:
    """``grad + wd * p`` (L2 weight decay folded into the gradient), or ``grad``."""
    return grad + p.data * wd if wd else grad


class SGD(Optimizer):
    """Stochastic gradient descent, PyTorch's rule: with weight decay ``g += wd * p``; with
    momentum ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` at the first step) and
    ``g = buf`` (Nesterov: ``g += momentum * buf``); then ``p -= lr * g``."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "weight_decay": weight_decay,
            "dampening": dampening,
            "nesterov": nesterov,
        }
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        momentum = group["momentum"]
        _check("momentum", momentum, momentum >= 0, "to be >= 0")
        _check(
            "nesterov",
            group["nesterov"],
            not group["nesterov"] or (momentum > 0 and group["dampening"] == 0),
            "only with momentum > 0 and dampening 0",
        )

    def _update(self, p, grad, group, state):
        grad = _decayed(grad, p, group["weight_decay"])
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.to(grad.device, copy=True)
            else:
                buf = buf * momentum + grad * (1 - group["dampening"])
            state["momentum_buffer"] = buf
            grad = grad + buf * momentum if group["nesterov"] else buf
        self._add_scaled_(p, grad, -group["lr"])


class Adam(Optimizer):
    """Adam (Kingma & Ba), PyTorch's rule: with weight decay ``g += wd * p``;
    ``m = beta1 * m + (1 - beta1) * g``, ``v = beta2 * v + (1 - beta2) * g * g``;
    ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)`` at step t
    (``amsgrad``: the running maximum of ``v`` in place of ``v``)."""

    _decoupled = False

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": bool(amsgrad),
        }
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        _check("eps", group["eps"], group["eps"] >= 0, "to be >= 0")
        betas = group["betas"]
        _check(
            "betas",
            betas,
            len(betas) == 2 and all(0 <= b < 1 for b in betas),
            "to be two numbers in [0, 1)",
        )

    def _update(self, p, grad, group, state):
        if not state:
            data = p.data
            state["step"] = 0
            state["exp_avg"] = zeros_like(data)
            state["exp_avg_sq"] = zeros_like(data)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(data)
        beta1, beta2 = group["betas"]
        lr, wd = group["lr"], group["weight_decay"]
        step = state["step"] = state["step"] + 1
        if self._decoupled:
            if wd:
                data = p.data
                data *= 1 - lr * wd
        else:
            grad = _decayed(grad, p, wd)
        m = state["exp_avg"]
        m = state["exp_avg"] = m + (grad - m) * (1 - beta1)
        v = state["exp_avg_sq"] = state["exp_avg_sq"] * beta2 + grad * grad * (1 - beta2)
        if group["amsgrad"]:
            v = state["max_exp_avg_sq"] = ops.maximum(state["max_exp_avg_sq"], v)
        step_size = lr / (1 - beta1**step)
        denom = ops.sqrt(v) / math.sqrt(1 - beta2**step) + group["eps"]
        self._add_scaled_(p, m / denom, -step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), PyTorch's rule: each step first
    multiplies ``p`` by ``1 - lr * weight_decay``, then takes Adam's step without weight decay
    in the gradient. ``weight_decay`` defaults to 0.01, as in PyTorch."""

    _decoupled = True

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)


class RMSprop(Optimizer):
    """RMSprop, PyTorch's rule: with weight decay ``g += wd * p``;
    ``v = alpha * v + (1 - alpha) * g * g``; ``avg = sqrt(v) + eps`` (``centered``:
    ``sqrt(v - mean_g**2) + eps`` with ``mean_g`` the running mean of ``g``); then
    ``p -= lr * g / avg``, or with momentum ``buf = momentum * buf + g / avg``, ``p -= lr * buf``."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "alpha": alpha,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "centered": bool(centered),
        }
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        _check("alpha", group["alpha"], group["alpha"] >= 0, "to be >= 0")
        _check("eps", group["eps"], group["eps"] >= 0, "to be >= 0")
        _check("momentum", group["momentum"], group["momentum"] >= 0, "to be >= 0")

    def _update(self, p, grad, group, state):
        alpha, momentum = group["alpha"], group["momentum"]
        if not state:
            data = p.data
            state["step"] = 0
            state["square_avg"] = zeros_like(data)
            if momentum > 0:
                state["momentum_buffer"] = zeros_like(data)
            if group["centered"]:
                state["grad_avg"] = zeros_like(data)
        state["step"] += 1
        grad = _decayed(grad, p, group["weight_decay"])
        v = state["square_avg"] = state["square_avg"] * alpha + grad * grad * (1 - alpha)
        if group["centered"]:
            g = state["grad_avg"]
            g = state["grad_avg"] = g + (grad - g) * (1 - alpha)
            avg = ops.sqrt(v - g * g) + group["eps"]
        else:
            avg = ops.sqrt(v) + group["eps"]
        if momentum > 0:
            buf = state["momentum_buffer"] = state["momentum_buffer"] * momentum + grad / avg
            self._add_scaled_(p, buf, -group["lr"])
        else:
            self._add_scaled_(p, grad / avg, -group["lr"])


class Adagrad(Optimizer):
    """Adagrad, PyTorch's rule: with weight decay ``g += wd * p``; ``sum += g * g``;
    ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)`` at step t. The sums start
    at ``initial_accumulator_value`` when the parameters are added (as in PyTorch)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
    ) -> None:
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "eps": eps,
        }
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        _check("lr_decay", group["lr_decay"], group["lr_decay"] >= 0, "to be >= 0")
        init = group["initial_accumulator_value"]
        _check("initial_accumulator_value", init, init >= 0, "to be >= 0")
        _check("eps", group["eps"], group["eps"] >= 0, "to be >= 0")

    def _init_state(self, p, group):
        return {"step": 0, "sum": full_like(p.data, group["initial_accumulator_value"])}

    def _update(self, p, grad, group, state):
        step = state["step"] = state["step"] + 1
        grad = _decayed(grad, p, group["weight_decay"])
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        s = state["sum"] = state["sum"] + grad * grad
        self._add_scaled_(p, grad / (ops.sqrt(s) + group["eps"]), -clr)


#: the update rules that use ``lr`` only in the step size of ``_add_scaled_`` (AdamW's
#: decoupled weight decay multiplies the parameter by ``1 - lr * wd``: excluded by its flag)
_LR_IS_STEP_SIZE = frozenset({SGD._update, Adam._update, RMSprop._update, Adagrad._update})
