"""Parameter initialisers, PyTorch's ``nn.init`` names and formulas.

Each function takes a Parameter or a Tensor, writes new values into it in place and returns
it. Random values come from multidev's host generator (``md.manual_seed``), drawn in float32
on the host, so the same seed gives bit-identical values on every backend. Applied to the
uninitialised parameter of a lazy layer, an initialiser is recorded and runs when the layer's
first call gives the parameter its shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd import no_grad
from ..dispatch import new_tensor as _new_tensor
from ..random import host_normal, host_uniform
from ..tensors import Tensor
from .parameter import UninitializedParameter

__all__ = [
    "calculate_gain",
    "constant_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity`` (PyTorch's table)."""
    if nonlinearity in (*_LINEAR, "conv_transpose3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"Expected a number as the negative slope. Received: {param!r}")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(
        "Expected a nonlinearity among linear, conv1d/2d/3d, sigmoid, tanh, relu, leaky_relu, "
        f"selu. Received: {nonlinearity!r}"
    )


def fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of ``shape`` laid out as (out, in, *kernel)."""
    if len(shape) < 2:
        raise ValueError(
            "Expected a tensor with at least 2 dimensions to compute fan in and fan out. "
            f"Received: shape {shape}. Use uniform_ or normal_ for 1-D tensors."
        )
    receptive = 1
    for s in shape[2:]:
        receptive *= s
    return shape[1] * receptive, shape[0] * receptive


def _fan(shape: tuple[int, ...], mode: str) -> int:
    fan_in, fan_out = fans(shape)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"Expected mode 'fan_in' or 'fan_out'. Received: {mode!r}")


# ---------------------------------------------------------------- host samplers
# Shared by the initialisers and by layers that create their parameters, so both draw the
# same numbers from the host generator.


def kaiming_uniform_sample(
    shape: tuple[int, ...], a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> np.ndarray:
    fan = _fan(shape, mode)
    if fan == 0:
        return np.zeros(shape, dtype=np.float32)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return host_uniform(shape, -bound, bound)


def bias_uniform_sample(shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """PyTorch's default bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), zeros when fan_in is 0."""
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return host_uniform(shape, -bound, bound)


# ---------------------------------------------------------------- writing


def _init(
    t: Any, fn: Callable[..., Any], args: tuple, kwargs: dict, sample: Callable[[tuple], Any]
) -> Any:
    """Write ``sample(t.shape)`` into ``t`` in place, or record ``fn`` for a lazy parameter."""
    if isinstance(t, UninitializedParameter):
        t._defer(fn, args, kwargs)
        return t
    if not isinstance(t, Tensor):
        raise TypeError(
            f"Expected an nn.Parameter or md.Tensor to initialise. Received: {type(t).__name__}"
        )
    values = sample(t.shape)
    # an initialiser is no part of any graph (as torch.nn.init runs under no_grad): a lazy
    # layer built by its first forward inside record() writes its values here
    with no_grad():
        if isinstance(values, np.ndarray):
            _write_host(t, values)
        else:
            bk = t._bk
            full = bk.full(t.shape, values, t._dtype, t._dev)
            t[...] = _new_tensor(full, bk, t._dev, t._dtype)
    return t


def _write_host(t: Tensor, values: np.ndarray) -> None:
    dt = t._dtype
    arr = values if values.dtype == dt.numpy else values.astype(dt.numpy)
    bk = t._bk
    with no_grad():
        t[...] = _new_tensor(bk.from_numpy(arr, t._dev), bk, t._dev, dt)


def _floating(t: Any, name: str) -> None:
    if isinstance(t, Tensor) and t._dtype.kind != "f":
        raise TypeError(
            f"Expected a floating-point tensor for {name}. Received: {t._dtype}. "
            "Use constant_, zeros_ or ones_ for integer tensors."
        )


# ---------------------------------------------------------------- public initialisers


def uniform_(tensor: Any, a: float = 0.0, b: float = 1.0) -> Any:
    """Fill with values from U(a, b)."""
    _floating(tensor, "uniform_")
    return _init(tensor, uniform_, (a, b), {}, lambda s: host_uniform(s, a, b))


def normal_(tensor: Any, mean: float = 0.0, std: float = 1.0) -> Any:
    """Fill with values from N(mean, std**2)."""
    _floating(tensor, "normal_")
    return _init(tensor, normal_, (mean, std), {}, lambda s: host_normal(s, mean, std))


def constant_(tensor: Any, val: float) -> Any:
    """Fill with ``val``."""
    return _init(tensor, constant_, (val,), {}, lambda s: val)


def zeros_(tensor: Any) -> Any:
    """Fill with 0."""
    return _init(tensor, zeros_, (), {}, lambda s: 0)


def ones_(tensor: Any) -> Any:
    """Fill with 1."""
    return _init(tensor, ones_, (), {}, lambda s: 1)


def xavier_uniform_(tensor: Any, gain: float = 1.0) -> Any:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    _floating(tensor, "xavier_uniform_")

    def sample(shape):
        fan_in, fan_out = fans(shape)
        bound = gain * math.sqrt(6.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
        return host_uniform(shape, -bound, bound)

    return _init(tensor, xavier_uniform_, (gain,), {}, sample)


def xavier_normal_(tensor: Any, gain: float = 1.0) -> Any:
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    _floating(tensor, "xavier_normal_")

    def sample(shape):
        fan_in, fan_out = fans(shape)
        std = gain * math.sqrt(2.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
        return host_normal(shape, 0.0, std)

    return _init(tensor, xavier_normal_, (gain,), {}, sample)


def kaiming_uniform_(
    tensor: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Any:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan), gain from ``calculate_gain``."""
    _floating(tensor, "kaiming_uniform_")
    return _init(
        tensor,
        kaiming_uniform_,
        (a, mode, nonlinearity),
        {},
        lambda s: kaiming_uniform_sample(s, a, mode, nonlinearity),
    )


def kaiming_normal_(
    tensor: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Any:
    """He normal: N(0, std**2) with std = gain / sqrt(fan)."""
    _floating(tensor, "kaiming_normal_")

    def sample(shape):
        fan = _fan(shape, mode)
        std = calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0
        return host_normal(shape, 0.0, std)

    return _init(tensor, kaiming_normal_, (a, mode, nonlinearity), {}, sample)
