"""Learning-rate schedules with PyTorch's names, arguments and numbers: ``StepLR``,
``MultiStepLR``, ``ExponentialLR``, ``CosineAnnealingLR``, ``LambdaLR``, ``OneCycleLR``.

A scheduler sets ``opt.param_groups[i]["lr"]`` when it is made and at each ``step()`` (call it
after ``opt.step()``), with the same recurrences as ``torch.optim.lr_scheduler``, so the lr
sequence is torch's to the last bit. ``state_dict()`` holds plain Python values only (it saves
with ``md.save``); to resume, build the optimiser and the scheduler as before, then load the
optimiser's state and then the scheduler's.
"""

from __future__ import annotations

import math
import numbers
import types
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from ..errors import StateDictError
from .optimizer import Optimizer

_Check = tuple[Callable[[Any, int], bool], str]

__all__ = [
    "CosineAnnealingLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "MultiStepLR",
    "OneCycleLR",
    "StepLR",
]


class LRScheduler:
    """Base class: subclasses define ``get_lr()``, the lrs at ``self.last_epoch``."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"Expected an md.optim optimiser. Received: {type(optimizer).__name__}")
        self.optimizer = optimizer
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group in groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            missing = [i for i, g in enumerate(groups) if "initial_lr" not in g]
            if missing:
                raise ValueError(
                    f"Expected 'initial_lr' in every parameter group when last_epoch={last_epoch} "
                    f"(resuming). Received: none in group(s) {missing}. Load the optimiser's "
                    "state dict first, or leave last_epoch at -1."
                )
        self.base_lrs: list[float] = [g["initial_lr"] for g in groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The lrs the last ``step()`` (or the constructor) set, one per parameter group."""
        return list(self._last_lr)

    def _current(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def step(self) -> None:
        """Advance one epoch (or batch, for ``OneCycleLR``) and set the groups' lrs."""
        self._step_count += 1
        self.last_epoch += 1
        values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = self._current()

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimiser, as plain Python values."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict()`` returned (load the optimiser's state first).

        Every entry is checked before any changes (known names only; counts whole numbers,
        lrs and factors finite numbers, one lr per parameter group); a problem raises
        ``md.StateDictError`` naming the entry and leaves the scheduler as it was."""
        own = self.state_dict()
        name = type(self).__name__
        if not isinstance(state_dict, dict) or not set(state_dict) <= set(own):
            got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise StateDictError(
                f"Expected the state dict of a {name} (keys among {sorted(own)}). Received: {got}"
            )
        checks = {**_BASE_CHECKS, **self._state_checks}
        values = {}
        for key, value in state_dict.items():
            if isinstance(own[key], tuple) and isinstance(value, list):
                value = tuple(value)
            check = checks.get(key)
            if check is None:
                ok = type(value) is type(own[key])
                want = f"a {type(own[key]).__name__}"
            else:
                test, want = check
                ok = test(value, len(self.optimizer.param_groups))
            if not ok:
                raise StateDictError(
                    f"Expected {key!r} in the state dict of a {name} to be {want}. "
                    f"Received: {value!r:.200}"
                )
            values[key] = value
        for key, value in values.items():
            setattr(self, key, value)

    # name -> (test(value, number of parameter groups), what is expected), per subclass
    _state_checks: ClassVar[dict[str, _Check]] = {}


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _finite(value: Any) -> bool:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float's range
        return False


def _real(value: Any) -> bool:
    return _finite(value) and value >= 0


def _lrs(value: Any, n: int) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == n and all(map(_real, value))


_REAL = (lambda v, n: _real(v), "a finite number >= 0")
_BASE_CHECKS: dict[str, _Check] = {
    "last_epoch": (lambda v, n: _whole(v, -1), "a whole number >= -1"),
    "_step_count": (lambda v, n: _whole(v, 0), "a whole number >= 0"),
    "base_lrs": (_lrs, "a list of finite lrs >= 0, one per parameter group"),
    "_last_lr": (_lrs, "a list of finite lrs >= 0, one per parameter group"),
    "_is_initial": (lambda v, n: isinstance(v, bool), "True or False"),
}
_FLAG = (lambda v, n: isinstance(v, bool), "True or False")
_PHASE_KEYS = {"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"}


def _phases(value: Any, n: int) -> bool:
    return (
        isinstance(value, list)
        and len(value) in (2, 3)
        and all(
            isinstance(ph, dict)
            and set(ph) == {"end_step", "start_lr", "end_lr", "start_momentum", "end_momentum"}
            and _finite(ph["end_step"])
            and all(ph[k] in _PHASE_KEYS for k in ph if k != "end_step")
            for ph in value
        )
    )


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        if not isinstance(step_size, int) or step_size < 1:
            raise ValueError(f"Expected step_size to be an int >= 1. Received: {step_size!r}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    _state_checks: ClassVar[dict[str, _Check]] = {
        "step_size": (lambda v, n: _whole(v, 1), "a whole number >= 1"),
        "gamma": _REAL,
    }

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [lr * self.gamma for lr in self._current()]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each epoch in ``milestones`` (twice for a milestone
    given twice)."""

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        counts: dict[int, int] = {}
        for m in milestones:
            counts[int(m)] = counts.get(int(m), 0) + 1
        self.milestones = dict(sorted(counts.items()))
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    _state_checks: ClassVar[dict[str, _Check]] = {
        "milestones": (
            lambda v, n: (
                isinstance(v, dict) and all(_whole(k, 0) and _whole(c, 1) for k, c in v.items())
            ),
            "a dict {epoch: times} of whole numbers",
        ),
        "gamma": _REAL,
    }

    def get_lr(self) -> list[float]:
        times = self.milestones.get(self.last_epoch)
        if times is None:
            return self._current()
        return [lr * self.gamma**times for lr in self._current()]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    _state_checks: ClassVar[dict[str, _Check]] = {"gamma": _REAL}

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current()
        return [lr * self.gamma for lr in self._current()]


class CosineAnnealingLR(LRScheduler):
    """Anneal the lr from its initial value to ``eta_min`` along a half cosine over ``T_max``
    epochs (then back up, as in PyTorch), by PyTorch's recurrence."""

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        if not isinstance(T_max, int) or T_max < 1:
            raise ValueError(f"Expected T_max to be an int >= 1. Received: {T_max!r}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    _state_checks: ClassVar[dict[str, _Check]] = {
        "T_max": (lambda v, n: _whole(v, 1), "a whole number >= 1"),
        "eta_min": _REAL,
    }

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current()
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        if (t - 1 - T) % (2 * T) == 0:
            return [
                lr + (base - lo) * (1 - math.cos(math.pi / T)) / 2
                for base, lr in zip(self.base_lrs, self._current(), strict=True)
            ]
        return [
            (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T)) * (lr - lo) + lo
            for lr in self._current()
        ]


class LambdaLR(LRScheduler):
    """The initial lr times ``lr_lambda(epoch)`` (one function, or one per parameter group).
    ``state_dict()`` keeps the attributes of callable objects, not plain functions."""

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(
                    f"Expected {n} lr_lambda functions, one per parameter group. "
                    f"Received: {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [
            base * fn(self.last_epoch)
            for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)
        ]

    def state_dict(self) -> dict[str, Any]:
        out = super().state_dict()
        out["lr_lambdas"] = [
            None if _is_function(fn) or not hasattr(fn, "__dict__") else dict(fn.__dict__)
            for fn in self.lr_lambdas
        ]
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict) if isinstance(state_dict, dict) else state_dict
        attrs = state.pop("lr_lambdas", None) if isinstance(state, dict) else None
        if attrs is None:
            attrs = []
        n = len(self.lr_lambdas)
        if (
            not isinstance(attrs, list)
            or (attrs and len(attrs) != n)
            or not all(a is None or isinstance(a, dict) for a in attrs)
        ):
            raise StateDictError(
                f"Expected 'lr_lambdas' in the state dict of a LambdaLR to be a list of {n} "
                f"entries (None or a dict of attributes). Received: {attrs!r:.200}"
            )
        super().load_state_dict(state)
        for fn, saved in zip(self.lr_lambdas, attrs, strict=False):
            if saved is not None:
                fn.__dict__.update(saved)


def _is_function(fn: Any) -> bool:
    return isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, types.MethodType))


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list[float]:
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(
                f"Expected {n} values of {name}, one per parameter group. Received: {len(value)}"
            )
        return list(value)
    return [value] * n


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith): the lr rises from ``max_lr / div_factor`` to ``max_lr`` over
    ``pct_start`` of ``total_steps`` (or ``epochs * steps_per_epoch``) batches, then falls to
    ``initial_lr / final_div_factor``; momentum (or Adam's beta1) moves the other way between
    ``max_momentum`` and ``base_momentum``. Step it after every batch."""

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"Expected an md.optim optimiser. Received: {type(optimizer).__name__}")
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(
                    f"Expected total_steps to be an int > 0. Received: {total_steps!r}"
                )
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            for name, v in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if not isinstance(v, int) or v <= 0:
                    raise ValueError(f"Expected {name} to be an int > 0. Received: {v!r}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError(
                "Expected total_steps, or epochs and steps_per_epoch. Received: neither."
            )
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected pct_start to be a float in [0, 1]. Received: {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"Expected anneal_strategy 'cos' or 'linear'. Received: {anneal_strategy!r}"
            )
        self._anneal_func_type = anneal_strategy
        up = float(pct_start * self.total_steps) - 1
        phase = {"start_momentum": "max_momentum", "end_momentum": "base_momentum"}
        down = {"start_momentum": "base_momentum", "end_momentum": "max_momentum"}
        self._schedule_phases: list[dict[str, Any]]
        if three_phase:
            self._schedule_phases = [
                {"end_step": up, "start_lr": "initial_lr", "end_lr": "max_lr", **phase},
                {
                    "end_step": float(2 * pct_start * self.total_steps) - 2,
                    "start_lr": "max_lr",
                    "end_lr": "initial_lr",
                    **down,
                },
                {
                    "end_step": self.total_steps - 1,
                    "start_lr": "initial_lr",
                    "end_lr": "min_lr",
                    "start_momentum": "max_momentum",
                    "end_momentum": "max_momentum",
                },
            ]
        else:
            self._schedule_phases = [
                {"end_step": up, "start_lr": "initial_lr", "end_lr": "max_lr", **phase},
                {
                    "end_step": self.total_steps - 1,
                    "start_lr": "max_lr",
                    "end_lr": "min_lr",
                    **down,
                },
            ]
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs, strict=True):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "Expected an optimiser with momentum or betas for cycle_momentum=True. "
                    f"Received: {type(optimizer).__name__}. Pass cycle_momentum=False."
                )
            self.use_beta1 = "betas" in optimizer.defaults
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for hi, lo, group in zip(highs, lows, optimizer.param_groups, strict=True):
                    self._set_momentum(group, hi)
                    group["max_momentum"] = hi
                    group["base_momentum"] = lo
        super().__init__(optimizer, last_epoch)

    _state_checks: ClassVar[dict[str, _Check]] = {
        "total_steps": (lambda v, n: _whole(v, 1), "a whole number >= 1"),
        "_anneal_func_type": (lambda v, n: v in ("cos", "linear"), "'cos' or 'linear'"),
        "_schedule_phases": (_phases, "the list of phases a OneCycleLR saves"),
        "cycle_momentum": _FLAG,
        "use_beta1": _FLAG,
    }

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Expected at most total_steps={self.total_steps} steps. Received: step {step}. "
                "Make the schedule as long as the training run."
            )
        lrs = []
        phases = self._schedule_phases
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(phases):
                end = phase["end_step"]
                if step <= end or i == len(phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                    break
                start = end
            lrs.append(lr)
            if self.cycle_momentum:
                self._set_momentum(group, momentum)
        return lrs
