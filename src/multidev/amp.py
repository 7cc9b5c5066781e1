"""Mixed precision: ``md.autocast`` and ``md.amp.GradScaler``, with PyTorch's names and rules.

``autocast`` casts at multidev's op layer, from one policy table (``POLICY``: op name ->
``"lower"`` or ``"float32"``), on every backend. The frameworks' own autocasts are not used:
their op lists differ (PyTorch's CPU list keeps softmax, norms and sums in the low precision
where its CUDA list computes them in float32; Paddle's O1 lists and MXNet's AMP lists are
others again; TensorFlow has none at the op level), so lowering to them would give each backend
different output dtypes for the same model. The table is PyTorch's CUDA autocast policy for the
ops multidev has. Casting goes through multidev's differentiable ``astype``, so parameters stay
float32 (the master weights) and their gradients arrive in float32.

Cost when autocast is off: each hooked op reads one module global (``ACTIVE``, the number of
enabled ``autocast`` contexts open in any thread); the context variable that holds the dtype is
read only while that is non-zero, so contexts stay local to their thread or task.
"""

from __future__ import annotations

import contextvars
import functools
import math
import threading
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from . import dtypes as _dt
from .dispatch import call as _call
from .dispatch import cast as _cast
from .dispatch import set_autocast as _set_operator_autocast
from .dispatch import wrap as _wrap
from .tensors import Tensor

__all__ = ["POLICY", "GradScaler", "autocast", "autocast_dtype"]

F = TypeVar("F", bound=Callable[..., Any])

#: op -> where it runs under autocast: "lower" (the autocast dtype) or "float32". Ops not listed
#: run in their inputs' dtype (binary ops promote, so bfloat16 + float32 is float32).
POLICY: dict[str, str] = {
    "matmul": "lower",
    "linear": "lower",
    "conv1d": "lower",
    "conv2d": "lower",
    "conv_transpose2d": "lower",
    "scaled_dot_product_attention": "lower",
    "softmax": "float32",
    "log_softmax": "float32",
    "cross_entropy": "float32",
    "mse_loss": "float32",
    "layer_norm": "float32",
    "group_norm": "float32",
    "batch_norm": "float32",
    "sum": "float32",
    "prod": "float32",
}

#: enabled autocast contexts open in any thread; the hooks test this before anything else
ACTIVE = 0
_lock = threading.Lock()
_dtype: contextvars.ContextVar[_dt.DType | None] = contextvars.ContextVar(
    "multidev_autocast", default=None
)
_warned_no_autograd = False


def autocast_dtype() -> _dt.DType | None:
    """The dtype of the innermost enabled ``autocast`` in this context, or None."""
    return _dtype.get() if ACTIVE else None


def cast(op: str, *xs: Any) -> tuple[Any, ...]:
    """``xs`` as ``op`` takes them under the current autocast (called by the hooked ops only
    while ``ACTIVE``): floating tensors but float64 go to the low dtype for a "lower" op, to
    float32 for a "float32" op; anything else passes through."""
    low = _dtype.get()
    if low is None:
        return xs
    target = low if POLICY[op] == "lower" else _dt.float32
    out = []
    for x in xs:
        if (
            isinstance(x, Tensor)
            and x._dtype.kind == "f"
            and x._dtype is not _dt.float64
            and x._dtype is not target
            and "autograd" in x._bk.capabilities
        ):
            x = _cast(x, target)  # the framework's own cast: differentiable
        out.append(x)
    return tuple(out)


class autocast:
    """Run the ops of ``POLICY`` in mixed precision inside ``with md.autocast():`` or a function
    decorated with ``@md.autocast()``: matmul, linear, convolutions and attention in ``dtype``
    (bfloat16 or float16), softmax, log_softmax, losses, norms and sums in float32. Contexts
    nest; ``enabled=False`` inside turns it off. On a backend without autograd (numpy) it does
    nothing and warns once. Raises TypeError for another dtype or a non-bool ``enabled``."""

    def __init__(self, dtype: Any = _dt.bfloat16, enabled: bool = True) -> None:
        dt = _dt.as_dtype(dtype)
        if dt not in (_dt.bfloat16, _dt.float16):
            raise TypeError(
                f"Expected autocast dtype md.bfloat16 or md.float16. Received: {dtype!r}. "
                "Pass one of those two (float32 is what runs without autocast)."
            )
        if not isinstance(enabled, bool):
            raise TypeError(f"Expected enabled to be True or False. Received: {enabled!r}")
        self.dtype = dt
        self.enabled = enabled
        self._tokens: list[contextvars.Token[_dt.DType | None]] = []

    def __enter__(self) -> autocast:
        global ACTIVE, _warned_no_autograd
        if self.enabled and not _warned_no_autograd:
            from . import registry

            bk = registry.current()
            if "autograd" not in bk.capabilities:
                _warned_no_autograd = True
                warnings.warn(
                    f"md.autocast does nothing on the {bk.name} backend (it has no autograd and "
                    "no mixed-precision training); ops run in their inputs' dtypes.",
                    UserWarning,
                    stacklevel=2,
                )
        self._tokens.append(_dtype.set(self.dtype if self.enabled else None))
        with _lock:
            ACTIVE += 1
            _set_operator_autocast(ACTIVE, cast)
        return self

    def __exit__(self, *exc: Any) -> None:
        global ACTIVE
        _dtype.reset(self._tokens.pop())
        with _lock:
            ACTIVE -= 1
            _set_operator_autocast(ACTIVE, cast)

    def __call__(self, fn: F) -> F:
        dtype, enabled = self.dtype, self.enabled

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(dtype, enabled):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"autocast(dtype={self.dtype}, enabled={self.enabled})"


# ---------------------------------------------------------------- loss scaling

_READY, _UNSCALED, _STEPPED = 0, 1, 2


def _scale_outputs(outputs: Any, scale: float) -> Any:
    if isinstance(outputs, Tensor):
        return outputs * scale
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(_scale_outputs(o, scale) for o in outputs)
    if isinstance(outputs, Iterable):
        return map(lambda o: _scale_outputs(o, scale), outputs)
    raise TypeError(
        f"Expected a Tensor or an iterable of Tensors to scale. Received: {type(outputs).__name__}"
    )


class GradScaler:
    """Loss scaling for float16 training, with ``torch.amp.GradScaler``'s methods and update rule.

    ``scaler.scale(loss).backward()``, then (optionally ``scaler.unscale_(opt)`` and
    ``md.nn.utils.clip_grad_norm_``), ``scaler.step(opt)`` and ``scaler.update()``. ``step``
    skips ``opt.step()`` when a gradient holds inf or NaN; ``update`` then multiplies the scale by
    ``backoff_factor`` (and resets the count of good steps), else after ``growth_interval`` good
    steps in a row multiplies it by ``growth_factor``. With ``enabled=False`` every method passes
    through (``scale`` returns its input, ``step`` calls ``opt.step()``).
    """

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if not growth_factor > 1.0:
            raise ValueError(f"Expected growth_factor > 1. Received: {growth_factor!r}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"Expected 0 < backoff_factor < 1. Received: {backoff_factor!r}")
        if not (isinstance(growth_interval, int) and growth_interval > 0):
            raise ValueError(
                f"Expected growth_interval to be a positive int. Received: {growth_interval!r}"
            )
        if not init_scale > 0:
            raise ValueError(f"Expected init_scale > 0. Received: {init_scale!r}")
        self._enabled = bool(enabled)
        # The scale is kept as torch keeps it, in float32: its value after each growth/backoff
        # is the float32 product.
        self._scale = _f32(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer: dict[int, list[Any]] = {}  # id -> [stage, found_inf]

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a Tensor, or a list/tuple/iterable of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        return _scale_outputs(outputs, self._scale)

    def _state(self, optimizer: Any) -> list[Any]:
        return self._per_optimizer.setdefault(id(optimizer), [_READY, False])

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, and note
        whether any is inf or NaN. Call it at most once per ``step``; RuntimeError otherwise."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state[0] == _UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state[0] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = _f32(1.0 / self._scale)  # float64 reciprocal rounded to float32, as torch does
        checks = []
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                # one reduction per gradient, combined on the device: one transfer below
                finite = _wrap(g, _call(g, "isfinite", g._native), _dt.bool)
                checks.append(_wrap(g, _call(g, "all", finite._native, None, False), _dt.bool))
                p.grad = g * inv
        found = False
        if checks:
            dev = checks[0].device
            total = checks[0]
            for c in checks[1:]:
                total = total & c.to(dev)
            found = not bool(total.item())
        state[0], state[1] = _UNSCALED, found

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step(*args, **kwargs)`` after unscaling its gradients (unless
        ``unscale_`` already did), skipped when any gradient is inf or NaN. Returns what
        ``optimizer.step`` returns, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        state = self._state(optimizer)
        if state[0] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state[0] == _READY:
            self.unscale_(optimizer)
        retval = None
        if not state[1]:
            retval = optimizer.step(*args, **kwargs)
        state[0] = _STEPPED
        return retval

    def update(self, new_scale: float | None = None) -> None:
        """Set the scale for the next iteration: ``new_scale`` where given, else by the rule
        (backoff after an inf/NaN, growth after ``growth_interval`` good steps). RuntimeError
        when no ``step``/``unscale_`` ran since the last update."""
        if not self._enabled:
            return
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                new_scale = new_scale.item()
            self._scale = _f32(float(new_scale))
        else:
            if not self._per_optimizer:
                raise RuntimeError("No inf checks were recorded prior to update.")
            found_inf = any(s[1] for s in self._per_optimizer.values())
            if found_inf:
                self._scale = _f32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = _f32(self._scale * self._growth_factor)
                    if math.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._per_optimizer = {}

    def state_dict(self) -> dict[str, Any]:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker`` (torch's keys); empty when disabled."""
        if not self._enabled:
            return {}
        return {
            "scale": self._scale,
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned. RuntimeError for an empty dict (saved from a
        disabled scaler); KeyError naming a missing key."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        keys = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
        missing = [k for k in keys if k not in state_dict]
        if missing:
            raise KeyError(f"Expected GradScaler state keys {list(keys)}. Missing: {missing}")
        scale = state_dict["scale"]
        self._scale = _f32(scale.item() if isinstance(scale, Tensor) else float(scale))
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        tracker = state_dict["_growth_tracker"]
        self._growth_tracker = int(tracker.item() if isinstance(tracker, Tensor) else tracker)


def _f32(x: float) -> float:
    import numpy as np

    return float(np.float32(x))
