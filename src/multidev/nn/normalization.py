"""Normalisation layers: ``BatchNorm1d``, ``BatchNorm2d``, ``LazyBatchNorm1d``,
``LazyBatchNorm2d`` and
``GroupNorm``, with PyTorch's arguments, parameters, buffers and printing.

BatchNorm's ``running_mean``, ``running_var`` and ``num_batches_tracked`` are buffers: in
``state_dict()``, moved by ``to()``, updated only in training mode.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..creation import asarray, ones, zeros
from ..tensors import Tensor
from . import functional as F
from . import init
from .module import Block
from .parameter import Parameter, UninitializedParameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "GroupNorm", "LazyBatchNorm1d", "LazyBatchNorm2d"]


def _affine(block: Block, c: int, affine: bool, bias: bool, device: Any, dtype: Any) -> None:
    """``weight`` ones and (if ``bias``) ``bias`` zeros of shape (c,) when ``affine``."""
    if affine:
        block.weight = Parameter(ones((c,), dtype=dtype, device=device))
    else:
        block.register_parameter("weight", None)
    if affine and bias:
        block.bias = Parameter(zeros((c,), dtype=dtype, device=device))
    else:
        block.register_parameter("bias", None)


def _reset_affine(block: Block) -> None:
    if block.weight is not None:
        init.ones_(block.weight)
    if block.bias is not None:
        init.zeros_(block.bias)


class _BatchNorm(Block):
    _dims: tuple[int, ...] = (4,)
    #: a buffer (Block keeps it in _buffers): None before a lazy module's first call
    #: and without track_running_stats
    num_batches_tracked: Tensor | None

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(num_features, int) or isinstance(num_features, bool) or num_features < 0:
            raise ValueError(
                f"Expected a non-negative int for num_features. Received: {num_features!r}"
            )
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self._bias = bias and affine
        self._device, self._dtype_arg = device, dtype
        if num_features:
            self._create(num_features)
        else:
            for name in ("weight", "bias"):
                if affine and (bias or name == "weight"):
                    setattr(self, name, UninitializedParameter(dtype=dtype, device=device))
                else:
                    self.register_parameter(name, None)
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def _create(self, c: int) -> None:
        device, dtype = self._device, self._dtype_arg
        _affine(self, c, self.affine, self._bias, device, dtype)
        if self.track_running_stats:
            self.register_buffer("running_mean", zeros((c,), dtype=dtype, device=device))
            self.register_buffer("running_var", ones((c,), dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", zeros((), dtype=_dt.int64, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches tracked."""
        if self.track_running_stats:
            self.running_mean[...] = 0.0
            self.running_var[...] = 1.0
            tracked = self.num_batches_tracked
            if tracked is not None:  # it is when running_mean was (registered together)
                tracked[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input(self, X: Tensor) -> None:
        if X.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(
                f"Expected {want} input for {type(self).__name__}. Received: {X.ndim}D input "
                f"of shape {X.shape}"
            )

    def forward(self, X: Any) -> Tensor:
        X = X if isinstance(X, Tensor) else asarray(X)
        self._check_input(X)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            # in place, as PyTorch does: the buffer stays the same tensor (a compiled step
            # carries it as a graph input it updates)
            self.num_batches_tracked += 1
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            X,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self._bias}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of an (N, C) or (N, C, L) input over all but dimension 1."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of an (N, C, H, W) input per channel: ``weight`` ones and ``bias``
    zeros of shape (C,); buffers ``running_mean`` (zeros), ``running_var`` (ones) and
    ``num_batches_tracked`` (int64 0)."""

    _dims = (4,)


class _LazyBatchNorm(_BatchNorm):
    """A batch normalisation whose ``num_features`` is inferred from its first input's
    dimension 1."""

    _lazy = True

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _defer_to(self, device: Any, dtype: _dt.DType | None) -> None:
        # the running statistics created on the first call follow it, as PyTorch's
        # UninitializedBuffers do
        if device is not None:
            self._device = device
        if dtype is not None:
            self._dtype_arg = dtype

    def initialize_parameters(self, X: Any, *args: Any, **kwargs: Any) -> None:
        X = X if isinstance(X, Tensor) else asarray(X)
        self._check_input(X)
        c = self.num_features = X.shape[1]
        w, b = self.weight, self.bias
        if w is not None and not w.initialized:
            w._materialize(ones((c,), dtype=w.dtype, device=w.device))
        if b is not None and not b.initialized:
            b._materialize(zeros((c,), dtype=b.dtype, device=b.device))
        if self.track_running_stats and self.running_mean is None:
            device = X.device if self._device is None else self._device
            dtype = self._dtype_arg
            self.register_buffer("running_mean", zeros((c,), dtype=dtype, device=device))
            self.register_buffer("running_var", ones((c,), dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", zeros((), dtype=_dt.int64, device=device))


class LazyBatchNorm1d(_LazyBatchNorm, BatchNorm1d):
    """A ``BatchNorm1d`` whose ``num_features`` is inferred from its first input's dimension 1."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyBatchNorm, BatchNorm2d):
    """A ``BatchNorm2d`` whose ``num_features`` is inferred from its first input's dimension 1."""

    cls_to_become = BatchNorm2d


class GroupNorm(Block):
    """Normalise groups of ``num_channels / num_groups`` channels of an (N, C, ...) input;
    ``weight`` ones and ``bias`` zeros of shape (C,) when ``affine``."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(num_groups, int) or num_groups < 1 or num_channels % num_groups:
            raise ValueError(
                f"Expected num_channels divisible by num_groups. Received: {num_channels} and "
                f"{num_groups!r}"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self._bias = bias and affine
        _affine(self, num_channels, affine, bias, device, dtype)

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, X: Any) -> Tensor:
        return F.group_norm(X, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self._bias}"
        )
