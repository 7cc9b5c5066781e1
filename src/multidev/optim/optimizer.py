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
import numbers
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import Any, ClassVar

import numpy as np

from .. import array_api as _xp
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


def _is_real(value: Any) -> bool:
    """A finite real number (bools, strings, NaN, infinities and ints beyond float are not)."""
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _check_number(group: dict[str, Any], name: str, high: float | None = None) -> None:
    """``group[name]`` is a finite number >= 0 (and < ``high`` where given)."""
    value = group[name]
    ok = _is_real(value) and value >= 0 and (high is None or value < high)
    want = "a finite number >= 0" + ("" if high is None else f" and < {high}")
    _check(name, value, ok, f"to be {want}")


def _check_flag(group: dict[str, Any], name: str) -> None:
    value = group[name]
    _check(name, value, isinstance(value, (bool, np.bool_)), "to be True or False")


# Keys that torch.optim writes into every parameter group. They choose how torch computes the
# update (kernels, autograd through the step), not what it computes, so a group holding them
# loads with them dropped; the one that changes the result (``maximize``) must be False, and
# Adam's ``decoupled_weight_decay`` must match the class (AdamW for True).
_TORCH_GROUP_FLAGS = ("foreach", "fused", "capturable", "differentiable", "maximize")
# Keys that a learning-rate scheduler adds to the groups it drives.
_SCHEDULER_GROUP_KEYS = ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")


def _plain(value: Any) -> Any:
    """NumPy scalars and 0-d arrays as Python numbers, lists as tuples (hyperparameters may
    come back from a NumPy-converted or a JSON-like state dict)."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return value


def _is_index(value: Any) -> bool:
    """A parameter index: a whole number >= 0 (not a bool, float or string)."""
    return (
        isinstance(value, (int, np.integer))
        and not isinstance(value, (bool, np.bool_))
        and value >= 0
    )


def _step_count(value: Any, key: str, bk: Any) -> int:
    """A loaded ``step``: a whole number >= 0, given as a Python number or a 0-d tensor or
    array (``torch.optim`` stores it as a 0-d float tensor), as a Python int."""
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, (numbers.Number, str)):
        if tuple(shape) != ():
            raise StateDictError(
                f"Expected {key} to be a number or a 0-d tensor. Received: shape {tuple(shape)}."
            )
        if isinstance(value, (Tensor, np.ndarray, np.generic)):
            value = value.item()
        elif bk.tensor_types and isinstance(value, bk.tensor_types):
            value = _new_tensor(value, bk, bk.device_of(value), bk.dtype_of(value)).item()
        else:
            value = np.asarray(value).item()
    if not _is_real(value) or value < 0 or value != int(value):
        raise StateDictError(
            f"Expected optimiser state {key} to be a whole number >= 0 (the steps taken). "
            f"Received: {value!r}."
        )
    return int(value)


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
                many = bk.add_scaled_many_
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


def _check_state_tensor(key: str, p: Any, kind: str, dtype: str, shape: tuple) -> None:
    if kind not in "fc" or kind != p._dtype.kind:
        raise StateDictError(
            f"Expected {key} of a floating-point dtype, as the parameter's "
            f"({p._dtype.name}). Received: {dtype}. Load the state an optimiser saved."
        )
    if tuple(shape) != tuple(p.shape):
        raise StateDictError(
            f"Expected {key} of the parameter's shape {p.shape}. "
            f"Received: shape {tuple(shape)}. Load the state dict of an optimiser over the same "
            "model."
        )


def _state_value(
    value: Any, p: Any, key: str, nonnegative: bool = False, checked: bool = True
) -> Tensor:
    """A loaded state tensor on ``p``'s backend, device and floating dtype (as in PyTorch),
    checked: of ``p``'s shape, floating point, finite (and >= 0 for running squares); with
    ``checked=False`` (state a custom optimiser declares no spec for) only the shape, and
    other dtypes kept. Raises ``md.StateDictError`` naming ``key`` otherwise."""
    bk = p._bk
    if isinstance(value, Tensor):
        t = value if value._bk is bk else value.to_backend(bk.name)
    elif isinstance(value, np.ndarray) and not checked:
        arr = np.ascontiguousarray(value)
        t = _new_tensor(bk.from_numpy(arr, p._dev), bk, p._dev, _dt.from_numpy_dtype(arr.dtype))
    elif isinstance(value, np.ndarray):
        # dtype and shape checked on the array: an unsupported dtype never reaches the framework
        _check_state_tensor(key, p, value.dtype.kind, value.dtype.name, tuple(value.shape))
        with np.errstate(over="ignore"):  # an overflow to inf is refused below
            arr = np.ascontiguousarray(value, dtype=p._dtype.numpy)
        t = _new_tensor(bk.from_numpy(arr, p._dev), bk, p._dev, p._dtype)
    elif bk.tensor_types and isinstance(value, bk.tensor_types):
        t = _new_tensor(value, bk, bk.device_of(value), bk.dtype_of(value))
    else:
        raise StateDictError(
            f"Expected {key} to be a tensor or an array of the parameter's "
            f"shape {p.shape}. Received: {type(value).__name__}. Convert framework tensors with "
            "md.asarray or .numpy()."
        )
    if not checked:
        if tuple(t.shape) != tuple(p.shape):
            _check_state_tensor(key, p, p._dtype.kind, p._dtype.name, t.shape)
        if t._dtype.kind == "f" and t._dtype is not p._dtype:
            t = t.astype(p._dtype)
        return t.to(p._dev, copy=True)
    _check_state_tensor(key, p, t._dtype.kind, t._dtype.name, t.shape)
    if t._dtype is not p._dtype:
        t = t.astype(p._dtype)
    t = t.to(p._dev, copy=True)
    if t.size:
        if not _xp.all(_xp.isfinite(t)).item():
            raise StateDictError(
                f"Expected finite values in {key} (in {p._dtype.name}). "
                "Received: NaN or infinite values. Training from it would give non-finite "
                "parameters; load a state saved before the run diverged."
            )
        if nonnegative and t._dtype.kind == "f" and ops.min(t).item() < 0:
            raise StateDictError(
                f"Expected {key} >= 0 (a running sum of squares). Received: negative values."
            )
    return t


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
        for key, value in self.defaults.items():
            if isinstance(value, tuple) and isinstance(full[key], list):
                full[key] = tuple(full[key])
        self._check_group(full)
        self.param_groups.append(full)
        for p in params:
            init = self._init_state(p, full)
            if init:
                self.state[p] = init

    def _check_group(self, group: dict[str, Any]) -> None:
        """Validate one group's hyperparameters (subclasses check their own); ``ValueError``
        naming the first bad one."""
        _check_number(group, "lr")
        _check_number(group, "weight_decay")

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

    # What a parameter's state may hold, by name: "step" (a count of steps), "tensor" (of the
    # parameter's shape), "square" (such a tensor, >= 0), "tensor?" (a tensor or None). Empty
    # (a custom optimiser that declares nothing): any names, numbers kept, tensors of the
    # parameter's shape.
    _state_spec: ClassVar[dict[str, str]] = {}
    # The torch.optim group keys this optimiser's groups may carry when loading.
    _torch_group_keys: tuple[str, ...] = _TORCH_GROUP_FLAGS

    def _required_state(self, group: dict[str, Any]) -> set[str]:
        """The state names a parameter's (non-empty) loaded state must hold under ``group``."""
        return set()

    def _check_torch_keys(self, i: int, saved: dict[str, Any]) -> None:
        """Refuse torch.optim group keys that would change the update (``maximize=True``)."""
        for key in _TORCH_GROUP_FLAGS:
            if key not in saved:
                continue
            value = saved[key]
            ok = value is False or (key != "maximize" and (value is None or value is True))
            if not ok:
                raise StateDictError(
                    f"Expected {key!r} in group {i} to be "
                    + ("False (multidev minimises)" if key == "maximize" else "True, False or None")
                    + f". Received: {value!r}. Negate the loss instead of maximize=True."
                )

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
        """Restore what ``state_dict()`` returned (on any backend), or what ``torch.optim``'s
        optimiser of the same name saved: hyperparameters per group and each parameter's
        state, converted to the parameter's backend, device and dtype (torch's 0-d ``step``
        tensors become Python ints; its ``foreach``/``fused``/... group flags are dropped).

        The saved groups must hold as many parameters as this optimiser's, in the same order;
        hyperparameters they lack keep their current values. Everything is checked before
        anything changes: the layout, parameter indices (whole numbers), every hyperparameter
        (finite numbers in range, flags), that no other optimiser's hyperparameters or state
        are present, and each state entry (required names present, ``step`` a whole number
        >= 0, tensors floating point, finite, of the parameter's shape). A problem raises
        ``md.StateDictError`` naming the field and leaves the optimiser as it was.
        """
        name = type(self).__name__
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
        saved_state, saved_groups = state_dict["state"], state_dict["param_groups"]
        if not isinstance(saved_state, dict):
            raise StateDictError(
                "Expected 'state' to be a dict {parameter index: {name: value}}. "
                f"Received: {type(saved_state).__name__}"
            )
        if not isinstance(saved_groups, (list, tuple)) or not all(
            isinstance(g, dict) for g in saved_groups
        ):
            raise StateDictError(
                "Expected 'param_groups' to be a list of dicts (hyperparameters and 'params'). "
                f"Received: {saved_groups!r:.200}"
            )
        if len(saved_groups) != len(self.param_groups):
            raise StateDictError(
                f"Expected {len(self.param_groups)} parameter group(s), as this optimiser has. "
                f"Received: {len(saved_groups)}. Load the state of an optimiser built the same way."
            )
        allowed = set(self.defaults) | set(_SCHEDULER_GROUP_KEYS)
        by_index: dict[int, Any] = {}
        group_of: dict[int, dict[str, Any]] = {}
        new_groups = []
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups, strict=True)):
            ids = saved.get("params")
            if not isinstance(ids, (list, tuple)) or not all(_is_index(j) for j in ids):
                raise StateDictError(
                    f"Expected 'params' of group {i} to be a list of parameter indices (whole "
                    f"numbers >= 0). Received: {ids!r:.200}"
                )
            if len(ids) != len(group["params"]):
                raise StateDictError(
                    f"Expected {len(group['params'])} parameter(s) in group {i}, as this "
                    f"optimiser has. Received: {len(ids)}. Load the state of an optimiser over "
                    "the same model."
                )
            unknown = sorted(set(saved) - allowed - set(self._torch_group_keys) - {"params"})
            if unknown:
                raise StateDictError(
                    f"Expected hyperparameters of {name} in group {i} (among "
                    f"{sorted(self.defaults)}). Received: {unknown}. Load a state dict saved by "
                    f"{name}: another optimiser's state does not fit."
                )
            self._check_torch_keys(i, saved)
            new = {k: v for k, v in group.items() if k != "params"}
            new.update({k: _plain(v) for k, v in saved.items() if k in allowed})
            try:
                self._check_group(new)
                for key in _SCHEDULER_GROUP_KEYS:
                    if key in new:
                        _check_number(new, key)
            except ValueError as e:
                raise StateDictError(f"In group {i} of the state dict: {e}") from None
            new["params"] = group["params"]
            new_groups.append(new)
            for j, p in zip(ids, group["params"], strict=True):
                if int(j) in by_index:
                    raise StateDictError(
                        f"Expected each parameter index once in 'param_groups'. Received: {j} "
                        f"again in group {i}."
                    )
                by_index[int(j)] = p
                group_of[id(p)] = new
        new_state: dict[Any, dict[str, Any]] = {}
        spec = self._state_spec
        for key, entries in saved_state.items():
            if not _is_index(key):
                raise StateDictError(
                    "Expected parameter indices (whole numbers >= 0) as the keys of 'state'. "
                    f"Received: {key!r}"
                )
            p = by_index.get(int(key))
            if p is None:
                raise StateDictError(
                    f"Expected state only for parameters {sorted(by_index)}. "
                    f"Received: state for parameter {key!r}."
                )
            if not isinstance(entries, dict):
                raise StateDictError(
                    f"Expected state[{key}] to be a dict {{name: value}}. "
                    f"Received: {type(entries).__name__}"
                )
            if not entries:
                continue
            unknown = sorted(str(k) for k in entries if spec and k not in spec)
            missing = sorted(self._required_state(group_of[id(p)]) - set(entries))
            if unknown or missing:
                raise StateDictError(
                    f"Expected state[{key}] of {name} to hold {sorted(self._required_state(group_of[id(p)]))}"
                    f" (names among {sorted(spec)}). Received: "
                    + (f"unknown {unknown}" if unknown else f"missing {missing}")
                    + f". Load a state dict saved by {name} with the same settings."
                )
            loaded: dict[str, Any] = {}
            for k, v in entries.items():
                field = f"state[{key}][{k!r}]"
                kind = spec.get(k, "any")
                if kind == "any" and (
                    v is None or isinstance(v, (bool, int, float, str, np.generic))
                ):
                    loaded[k] = v.item() if isinstance(v, np.generic) else v
                elif kind == "any":
                    loaded[k] = _state_value(v, p, field, checked=False)
                elif kind == "step":
                    loaded[k] = _step_count(v, field, p._bk)
                elif v is None and kind == "tensor?":
                    loaded[k] = None
                else:
                    loaded[k] = _state_value(v, p, field, nonnegative=kind == "square")
            new_state[p] = loaded
        for group in new_groups:
            for p in group["params"]:
                if p not in new_state:
                    init = self._init_state(p, group)
                    if init:
                        new_state[p] = init
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
            "nesterov": bool(nesterov),
        }
        super().__init__(params, defaults)

    _state_spec: ClassVar[dict[str, str]] = {"momentum_buffer": "tensor?"}

    def _check_group(self, group):
        super()._check_group(group)
        _check_number(group, "momentum")
        _check_number(group, "dampening")
        _check_flag(group, "nesterov")
        momentum = group["momentum"]
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

    _state_spec: ClassVar[dict[str, str]] = {
        "step": "step",
        "exp_avg": "tensor",
        "exp_avg_sq": "square",
        "max_exp_avg_sq": "square",
    }
    _torch_group_keys = (*_TORCH_GROUP_FLAGS, "decoupled_weight_decay")

    def _required_state(self, group):
        needed = {"step", "exp_avg", "exp_avg_sq"}
        return needed | {"max_exp_avg_sq"} if group["amsgrad"] else needed

    def _check_torch_keys(self, i, saved):
        super()._check_torch_keys(i, saved)
        decoupled = saved.get("decoupled_weight_decay", self._decoupled)
        if decoupled is not self._decoupled:
            raise StateDictError(
                f"Expected 'decoupled_weight_decay' in group {i} to be {self._decoupled} for "
                f"{type(self).__name__}. Received: {decoupled!r}. Load it into "
                f"md.optim.{'Adam' if self._decoupled else 'AdamW'}."
            )

    def _check_group(self, group):
        super()._check_group(group)
        _check_number(group, "eps")
        _check_flag(group, "amsgrad")
        betas = group["betas"]
        _check(
            "betas",
            betas,
            isinstance(betas, tuple)
            and len(betas) == 2
            and all(_is_real(b) and 0 <= b < 1 for b in betas),
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

    _state_spec: ClassVar[dict[str, str]] = {
        "step": "step",
        "square_avg": "square",
        "momentum_buffer": "tensor",
        "grad_avg": "tensor",
    }

    def _required_state(self, group):
        needed = {"step", "square_avg"}
        if group["momentum"] > 0:
            needed.add("momentum_buffer")
        if group["centered"]:
            needed.add("grad_avg")
        return needed

    def _check_group(self, group):
        super()._check_group(group)
        for key in ("alpha", "eps", "momentum"):
            _check_number(group, key)
        _check_flag(group, "centered")

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

    _state_spec: ClassVar[dict[str, str]] = {"step": "step", "sum": "square"}

    def _required_state(self, group):
        return {"step", "sum"}

    def _check_group(self, group):
        super()._check_group(group)
        for key in ("lr_decay", "initial_accumulator_value", "eps"):
            _check_number(group, key)

    def _init_state(self, p, group):
        return {"step": 0, "sum": full_like(p.data, group["initial_accumulator_value"])}

    def _update(self, p, grad, group, state):
        step = state["step"] = state["step"] + 1
        grad = _decayed(grad, p, group["weight_decay"])
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        s = state["sum"] = state["sum"] + grad * grad
        self._add_scaled_(p, grad / (ops.sqrt(s) + group["eps"]), -clr)


class Adadelta(Optimizer):
    """Adadelta, PyTorch's rule: with weight decay ``g += wd * p``;
    ``v = rho * v + (1 - rho) * g * g``; ``delta = sqrt(u + eps) / sqrt(v + eps) * g``;
    ``u = rho * u + (1 - rho) * delta * delta``; ``p -= lr * delta`` (``v`` is ``square_avg``,
    ``u`` is ``acc_delta``)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
    ) -> None:
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    _state_spec: ClassVar[dict[str, str]] = {
        "step": "step",
        "square_avg": "square",
        "acc_delta": "square",
    }

    def _required_state(self, group):
        return {"step", "square_avg", "acc_delta"}

    def _check_group(self, group):
        super()._check_group(group)
        rho = group["rho"]
        _check("rho", rho, _is_real(rho) and 0 <= rho <= 1, "to be a finite number in [0, 1]")
        _check_number(group, "eps")

    def _update(self, p, grad, group, state):
        rho, eps = group["rho"], group["eps"]
        if not state:
            state.update(step=0, square_avg=zeros_like(p.data), acc_delta=zeros_like(p.data))
        state["step"] += 1
        grad = _decayed(grad, p, group["weight_decay"])
        v = state["square_avg"] = state["square_avg"] * rho + grad * grad * (1 - rho)
        delta = ops.sqrt(state["acc_delta"] + eps) / ops.sqrt(v + eps) * grad
        state["acc_delta"] = state["acc_delta"] * rho + delta * delta * (1 - rho)
        self._add_scaled_(p, delta, -group["lr"])


#: the update rules that use ``lr`` only in the step size of ``_add_scaled_`` (AdamW's
#: decoupled weight decay multiplies the parameter by ``1 - lr * wd``: excluded by its flag)
_LR_IS_STEP_SIZE = frozenset(
    {SGD._update, Adam._update, RMSprop._update, Adagrad._update, Adadelta._update}
)
