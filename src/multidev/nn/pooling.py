"""Pooling layers and ``Identity``, with PyTorch's arguments and printing."""

from __future__ import annotations

from typing import Any

from ..tensors import Tensor
from . import functional as F
from .module import Block

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "Identity",
    "MaxPool1d",
    "MaxPool2d",
]


class _MaxPool(Block):
    """PyTorch's max-pooling arguments, kept as given; ``stride`` defaults to
    ``kernel_size``."""

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool2d(_MaxPool):
    """Maximum over windows of an (N, C, H, W) input; ``stride`` defaults to ``kernel_size``."""

    def forward(self, X: Any) -> Any:
        """The pooled input, or (pooled, indices) with ``return_indices``."""
        return F.max_pool2d(
            X,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
            self.return_indices,
        )


class MaxPool1d(_MaxPool):
    """Maximum over windows of an (N, C, L) or (C, L) input; ``stride`` defaults to
    ``kernel_size``."""

    def forward(self, X: Any) -> Any:
        """The pooled input, or (pooled, indices) with ``return_indices``."""
        return F.max_pool1d(
            X,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
            self.return_indices,
        )


class AvgPool2d(Block):
    """Mean over windows of an (N, C, H, W) input; ``stride`` defaults to ``kernel_size``."""

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, X: Any) -> Tensor:
        return F.avg_pool2d(
            X,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(Block):
    """Mean over windows of an (N, C, L) or (C, L) input; ``stride`` defaults to
    ``kernel_size``. The sizes are kept as 1-tuples, as PyTorch keeps them."""

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, X: Any) -> Tensor:
        return F.avg_pool1d(
            X, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _single(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class AdaptiveAvgPool1d(Block):
    """Mean over the windows that split an (N, C, L) or (C, L) input into ``output_size``
    cells."""

    def __init__(self, output_size: int) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, X: Any) -> Tensor:
        return F.adaptive_avg_pool1d(X, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(Block):
    """Mean over the windows that split an (N, C, H, W) input into ``output_size`` cells."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, X: Any) -> Tensor:
        return F.adaptive_avg_pool2d(X, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class Identity(Block):
    """Returns its input; takes (and ignores) any arguments, as PyTorch's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, X: Any) -> Any:
        return X


class AdaptiveMaxPool2d(AdaptiveAvgPool2d):
    """Maximum over the windows that split an (N, C, H, W) or (C, H, W) input into
    ``output_size`` cells."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, X: Any) -> Tensor:
        return F.adaptive_max_pool2d(X, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    """Maximum over the windows that split an (N, C, L) or (C, L) input into
    ``output_size`` cells."""

    def forward(self, X: Any) -> Tensor:
        return F.adaptive_max_pool1d(X, self.output_size, self.return_indices)
