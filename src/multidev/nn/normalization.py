"""Normalisation layers: ``BatchNorm1d``, ``BatchNorm2d``, ``LazyBatchNorm1d``,
``LazyBatchNorm2d``, ``SyncBatchNorm`` and
``GroupNorm``, with PyTorch's arguments, parameters, buffers and printing.

BatchNorm's ``running_mean``, ``running_var`` and ``num_batches_tracked`` are buffers: in
``state_dict()``, moved by ``to()``, updated only in training mode.
"""

from __future__ import annotations

from typing import Any

from .. import amp as _amp
from .. import dtypes as _dt
from ..autograd import no_grad
from ..creation import asarray, full, ones, zeros
from ..tensors import Tensor
from . import functional as F
from . import init
from .module import Block
from .parameter import Parameter, UninitializedParameter

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "SyncBatchNorm",
]


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

    def _track_batch(self) -> float:
        """Count this batch when training with running statistics; the factor the running
        statistics move by (``momentum``, or 1/batches for a cumulative average)."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            # in place, as PyTorch does: the buffer stays the same tensor (a compiled step
            # carries it as a graph input it updates)
            self.num_batches_tracked += 1
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        return factor

    def forward(self, X: Any) -> Tensor:
        X = X if isinstance(X, Tensor) else asarray(X)
        self._check_input(X)
        factor = self._track_batch()
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


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics are those of the whole batch over every process
    of the group (``md.distributed``), as ``torch.nn.SyncBatchNorm``: for an (N, C),
    (N, C, L) or (N, C, H, W) input on each rank, in training.

    The forward pass sums each channel's values and the number of values over the ranks
    (one all-reduce), then the squared deviations from that mean (a second one), so ranks
    with different batch sizes give the statistics of their concatenated batch, computed in
    two passes as the framework's own BatchNorm does. Both all-reduces are recorded by
    autograd (``md.distributed.recorded_sum``: each engine's differentiable all-reduce), so
    the backward pass sums the gradient of the statistics over the ranks: the gradient of
    the sum of every rank's loss, which ``DistributedDataParallel`` then averages.
    ``running_mean`` and ``running_var`` (unbiased, over the whole batch) are updated from
    the global statistics, so they are the same on every rank.

    Without a process group, with a group of one process, in eval mode, or on a backend
    without autograd (NumPy) it is ``BatchNorm`` exactly (PyTorch refuses a CPU input in
    training; multidev computes on any device). Every rank must call it the same number of
    times, with the same number of channels, in training. ``process_group`` is None or
    ``md.distributed.group()`` (multidev has one group: every process). Convert a model's
    BatchNorm layers with ``SyncBatchNorm.convert_sync_batchnorm(net)`` before
    ``DistributedDataParallel``.
    """

    _dims = (2, 3, 4)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        from ..distributed import Group

        if process_group is not None and not isinstance(process_group, Group):
            raise TypeError(
                "Expected process_group None or md.distributed.group(). Received: "
                f"{type(process_group).__name__}. multidev has one group (every process): "
                "leave process_group out."
            )
        if num_features == 0 and not isinstance(num_features, bool):
            raise ValueError(
                "Expected num_features > 0 for SyncBatchNorm. Received: 0. Give the "
                "number of channels."
            )
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )
        self.process_group = process_group

    def _group(self) -> Any:
        """The group to reduce over in this call, or None to run as BatchNorm."""
        if not self.training:
            return None
        from .. import distributed

        g = self.process_group if self.process_group is not None else distributed._group
        if g is None or g.world_size == 1:
            return None
        return g

    def forward(self, X: Any) -> Tensor:
        X = X if isinstance(X, Tensor) else asarray(X)
        g = self._group()
        if g is None or "autograd" not in X._bk.capabilities:
            return super().forward(X)
        self._check_input(X)
        from ..distributed import recorded_sum
        from ..ops import concat

        factor = self._track_batch()  # training: _group() returned a group
        weight, bias = self.weight, self.bias
        if _amp.ACTIVE:
            X, weight, bias = _amp.cast("batch_norm", X, weight, bias)
        c = X.shape[1]
        if c != self.num_features:
            raise ValueError(
                f"Expected {self.num_features} channels (dimension 1) for {type(self).__name__}. "
                f"Received: input of shape {X.shape}."
            )
        axes = (0, *range(2, X.ndim))
        shape = (1, c) + (1,) * (X.ndim - 2)
        local = X.size // c if c else 0
        count = full((1,), float(local), dtype=X.dtype, device=X.device)
        # the count travels with the sums: ranks may hold different batch sizes
        totals = recorded_sum(concat([X.sum(axis=axes), count]), g)
        n = totals[c:]
        mean = totals[:c] / n
        centred = X - mean.reshape(shape)
        var = recorded_sum((centred * centred).sum(axis=axes), g) / n
        y = centred * ((var + self.eps) ** -0.5).reshape(shape)
        if weight is not None:
            y = y * weight.reshape(shape)
        if bias is not None:
            y = y + bias.reshape(shape)
        if self.track_running_stats and self.running_mean is not None:
            with no_grad():  # tensors only: a traced step (md.jit) reads no value back
                m, rm, rv = factor, self.running_mean, self.running_var
                rm[...] = rm * (1 - m) + mean.detach().astype(rm.dtype) * m
                unbiased = var.detach() * n / (n - 1)
                rv[...] = rv * (1 - m) + unbiased.astype(rv.dtype) * m
        return y

    @classmethod
    def convert_sync_batchnorm(cls, module: Block, process_group: Any = None) -> Block:
        """``module`` with every ``BatchNorm1d``/``BatchNorm2d`` below it replaced by a
        ``SyncBatchNorm`` holding the same parameters and buffers (the same tensors) and
        training mode, as ``torch.nn.SyncBatchNorm.convert_sync_batchnorm``; a BatchNorm
        layer itself comes back as a new ``SyncBatchNorm``. Raises ValueError for a lazy
        BatchNorm before its first call (run one forward pass first)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            if (module.weight is not None and not module.weight.initialized) or (
                module.num_features == 0
            ):
                raise ValueError(
                    f"Expected BatchNorm layers with a number of features. Received: "
                    f"{type(module).__name__} before its first call. Run one forward pass "
                    "(net(X)) before convert_sync_batchnorm."
                )
            out = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
                bias=module.bias is not None,
            )
            if module.affine:
                with no_grad():
                    out.register_parameter("weight", module.weight)
                    out.register_parameter("bias", module.bias)
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                out.register_buffer(name, getattr(module, name))
            out.train(module.training)
        for name, child in list(module.named_children()):
            if child is not None:
                new = cls.convert_sync_batchnorm(child, process_group)
                if new is not child:
                    out.add_module(name, new)
        return out


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


class _InstanceNorm(_BatchNorm):
    """Instance normalisation: each channel of each sample over its positions; PyTorch's
    defaults (no affine parameters, no running statistics); an unbatched input is one sample."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, X: Any) -> Tensor:
        X = X if isinstance(X, Tensor) else asarray(X)
        self._check_input(X)
        unbatched = X.ndim == self._dims[0]
        if unbatched:
            X = X[None]
        # PyTorch's instance norms count no batches: the momentum alone moves the statistics
        momentum = self.momentum if self.momentum is not None else 0.0
        use_input = self.training or not self.track_running_stats
        y = F.instance_norm(  # (the running statistics are None without track_running_stats)
            X,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_input,
            momentum,
            self.eps,
        )
        return y[0] if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of an (N, C, L) or (C, L) input."""

    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of an (N, C, H, W) or (C, H, W) input."""

    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of an (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = (4, 5)
