"""Convolution layers: ``Conv1d``, ``Conv2d``, ``LazyConv2d`` and ``ConvTranspose2d``, with
PyTorch's arguments, parameter names and shapes, default initialisation and printing."""

from __future__ import annotations

import math
from typing import Any, cast

from ..creation import asarray
from ..tensors import Tensor
from . import functional as F
from . import init
from .module import Block
from .parameter import Parameter, UninitializedParameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose2d", "LazyConv2d"]

_SQRT5 = math.sqrt(5)
_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value: Any, n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    if isinstance(value, (tuple, list)) and len(value) == n:
        return tuple(value)
    raise TypeError(f"Expected an int or {n} ints for {name}. Received: {value!r}")


def _positive(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"Expected a positive int for {name}. Received: {value!r}")
    return value


class _ConvNd(Block):
    """What Conv1d, Conv2d and ConvTranspose2d share: arguments, parameters, init, printing."""

    _n = 2
    _transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
        output_padding: Any = 0,
    ) -> None:
        super().__init__()
        n = self._n
        _positive("groups", groups)
        if in_channels:
            _positive("in_channels", in_channels)
            if in_channels % groups:
                raise ValueError(
                    f"Expected in_channels divisible by groups. Received: {in_channels} and "
                    f"{groups}"
                )
        if _positive("out_channels", out_channels) % groups:
            raise ValueError(
                f"Expected out_channels divisible by groups. Received: {out_channels} and {groups}"
            )
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"Expected padding_mode in {_PADDING_MODES}. Received: {padding_mode!r}"
            )
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Expected padding 'same', 'valid' or ints. Received: {padding!r}")
            if padding == "same" and _tuple(stride, n, "stride") != (1,) * n:
                raise ValueError(
                    "Expected stride 1 with padding='same'. Received: stride "
                    f"{stride!r}. Pass an explicit padding for strided convolutions."
                )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, n, "kernel_size")
        self.stride = _tuple(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n, "padding")
        self.dilation = _tuple(dilation, n, "dilation")
        self.output_padding = _tuple(output_padding, n, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        self.transposed = self._transposed
        if in_channels:
            self._create(in_channels, bias, device, dtype)
        else:
            # typed as Parameter, what _create assigns; a lazy layer materializes these in place
            self.weight: Parameter = UninitializedParameter(dtype=dtype, device=device)
            if bias:
                self.bias: Parameter | None = UninitializedParameter(dtype=dtype, device=device)
            else:
                self.register_parameter("bias", None)

    def _weight_shape(self, in_channels: int) -> tuple[int, ...]:
        if self._transposed:
            return (in_channels, self.out_channels // self.groups, *self.kernel_size)
        return (self.out_channels, in_channels // self.groups, *self.kernel_size)

    def _create(self, in_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        shape = self._weight_shape(in_channels)
        w = init.kaiming_uniform_sample(shape, a=_SQRT5)
        self.weight = Parameter(asarray(w, dtype=dtype, device=device))
        if bias:
            b = init.bias_uniform_sample((self.out_channels,), init.fans(shape)[0])
            self.bias = Parameter(asarray(b, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """Draw new values with the default initialisation."""
        init.kaiming_uniform_(self.weight, a=_SQRT5)
        if self.bias is not None:
            fan_in = init.fans(self.weight.shape)[0]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def _padded(self, X: Any) -> tuple[Any, Any]:
        """The input padded by ``padding_mode`` (when not zeros) and the padding left to do."""
        if self.padding_mode == "zeros":
            return X, self.padding
        if isinstance(self.padding, str):
            raise ValueError(
                f"Expected int padding with padding_mode={self.padding_mode!r}. "
                f"Received: padding={self.padding!r}"
            )
        pads: list[int] = []
        for p in reversed(self.padding):
            pads += [p, p]
        return F.pad(X, pads, self.padding_mode), 0

    def extra_repr(self) -> str:
        n = self._n
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv2d(_ConvNd):
    """2-D convolution over an (N, C_in, H, W) input: ``weight`` (out_channels,
    in_channels / groups, kH, kW), ``bias`` (out_channels,), initialised as in PyTorch
    (kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)))."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype,
        )  # fmt: skip

    def forward(self, X: Any) -> Tensor:
        X, padding = self._padded(X)
        return F.conv2d(X, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D convolution over an (N, C_in, L) input: ``weight`` (out_channels,
    in_channels / groups, k), ``bias`` (out_channels,), initialised as in PyTorch."""

    _n = 1

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype,
        )  # fmt: skip

    def forward(self, X: Any) -> Tensor:
        X, padding = self._padded(X)
        return F.conv1d(X, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class LazyConv2d(Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is inferred from its first input's dimension 1;
    until then its parameters are uninitialised (see ``nn.LazyLinear``)."""

    _lazy = True
    cls_to_become = Conv2d

    def __init__(
        self,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            0, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype,
        )  # fmt: skip

    def initialize_parameters(self, X: Any, *args: Any, **kwargs: Any) -> None:
        w = self.weight
        if w.initialized:
            self.in_channels = w.shape[1] * self.groups
        else:
            shape = X.shape if isinstance(X, Tensor) else asarray(X).shape
            if len(shape) != 4:
                raise ValueError(
                    f"Expected a 4-D input (N, C_in, H, W) to infer in_channels. "
                    f"Received: shape {shape}"
                )
            self.in_channels = shape[1]
            if shape[1] % self.groups:
                raise ValueError(
                    f"Expected in_channels divisible by groups. Received: {shape[1]} and "
                    f"{self.groups}"
                )
            wshape = self._weight_shape(shape[1])
            # a parameter that is not initialized is an UninitializedParameter
            cast(UninitializedParameter, w)._materialize(
                init.kaiming_uniform_sample(wshape, a=_SQRT5)
            )
        b = self.bias
        if b is not None and not b.initialized:
            cast(UninitializedParameter, b)._materialize(
                init.bias_uniform_sample((self.out_channels,), init.fans(self.weight.shape)[0])
            )

    def reset_parameters(self) -> None:
        if self.weight.initialized:
            super().reset_parameters()


class ConvTranspose2d(_ConvNd):
    """Transposed 2-D convolution: ``weight`` (in_channels, out_channels / groups, kH, kW),
    ``bias`` (out_channels,), initialised as in PyTorch."""

    _transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(
                f"Expected padding_mode='zeros' for ConvTranspose2d. Received: {padding_mode!r}"
            )
        if isinstance(padding, str):
            raise ValueError(f"Expected int padding for ConvTranspose2d. Received: {padding!r}")
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype, output_padding,
        )  # fmt: skip

    def forward(self, X: Any) -> Tensor:
        return F.conv_transpose2d(
            X,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.output_padding,
            self.groups,
            self.dilation,
        )
