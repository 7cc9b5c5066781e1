"""``DistributedDataParallel``: one model per process, gradients averaged across processes."""

from __future__ import annotations

import weakref
import zlib
from typing import Any

import numpy as np

from .. import autograd
from ..dispatch import new_tensor as _new_tensor
from ..nn.module import Block
from ..nn.native import call_native, native_module
from ..ops import concat, reshape
from ..tensors import Tensor
from ..tracing import untraceable
from .group import DistributedError

__all__ = ["DistributedDataParallel"]


def _signature(named: list[tuple[str, Any]]) -> tuple[np.ndarray, str]:
    """A small float32 fingerprint of the parameters' names, shapes and dtypes (values below
    256, so sums of them over ranks are exact on every engine), and its text."""
    text = "; ".join(f"{n} {tuple(p.shape)} {p.dtype.name}" for n, p in named)
    crc = zlib.crc32(text.encode())
    digits = [(crc >> s) & 0xFF for s in (0, 8, 16, 24)] + [len(named) % 256]
    v = np.array(digits, dtype=np.float32)
    return np.concatenate([v, v * v]), text


class DistributedDataParallel(Block):
    """Train ``net`` in every process of the group: ``net = DistributedDataParallel(net)``.

    At construction it checks that every rank built the same parameters (names, shapes,
    dtypes; else DistributedError on every rank) and copies rank 0's values to all ranks.
    Calling it runs ``net``; after each ``loss.backward()`` every parameter's gradient is the
    average over ranks (the first ``backward()`` after a call of this wrapper: a backward
    through another model leaves this one's gradients alone). On torch, hooks on the
    parameters (the engine module's ``gradient_reducer``) all-reduce each bucket of
    gradients as soon as autograd has produced it, overlapping the rest of the backward
    pass, and write the averages at its end, as torch's own ``DistributedDataParallel``
    reducer does (the forward runs ``net`` itself, after copying rank 0's buffers, such as
    BatchNorm's running statistics, to every rank, as torch's wrapper does). Where the framework has a data-parallel
    wrapper that averages gradients during the backward pass (``paddle.DataParallel``),
    calls go through it, around ``net.native``. Elsewhere (TensorFlow, MXNet) the gradients
    are averaged after ``backward()``, one engine call per bucket: MXNet's kvstore reduces
    the bucket's gradient buffers in place (one ``pushpull`` of the list), TensorFlow's
    collectives in one ``tf.function`` that packs the bucket into one all-reduce. Buckets
    hold at most ``bucket_cap_mb`` MiB. A parameter without a gradient in a step contributes
    zeros and gets the average, except with paddle's wrapper, where it is the framework's
    error unless ``find_unused_parameters`` (which makes the wrapper search the graph each
    step); on torch, ``find_unused_parameters`` leaves the gradient of a parameter that no
    rank used None (one more value per parameter in each all-reduce), as torch does. Call
    the wrapper, not ``net``, in the training step, or the gradients are not averaged on
    torch and paddle.
    Each rank should see a different shard of every batch (``DistributedSampler``); the
    optimiser then makes the same step on every rank.
    """

    def __init__(
        self, net: Block, bucket_cap_mb: float = 25.0, find_unused_parameters: bool = False
    ) -> None:
        from . import group

        super().__init__()
        if not isinstance(net, Block):
            raise TypeError(f"Expected an nn.Block. Received: {type(net).__name__}")
        g = group()
        named = list(net.named_parameters())
        for name, p in named:
            if not p.initialized:
                raise ValueError(
                    f"Expected parameters with shapes. Received: {name!r} of a lazy layer "
                    "without one. Run one forward pass (net(X)) before DistributedDataParallel."
                )
        self.module = net
        self.__dict__["_group"] = g
        self.__dict__["_params"] = [p for _, p in named if p.requires_grad]
        self.__dict__["_cap"] = max(1, int(bucket_cap_mb * 2**20))
        self._check_same_model(named)
        self._broadcast_parameters()
        self.__dict__["_reducer"] = self._engine_reducer(
            bucket_cap_mb, bool(find_unused_parameters)
        )
        self.__dict__["_native_ddp"] = None
        if self._reducer is None:
            self.__dict__["_native_ddp"] = self._native_wrapper(
                named, bucket_cap_mb, bool(find_unused_parameters)
            )
        self.__dict__["_called"] = False
        self.__dict__["_buffered"] = any(True for _ in net.buffers())
        ref = weakref.ref(self)

        def hook(bk: Any) -> None:
            ddp = ref()
            if ddp is None or not ddp._called or not ddp._params:
                return
            if ddp._params[0]._bk is bk:
                ddp.__dict__["_called"] = False
                ddp.average_gradients()

        self.__dict__["_hook"] = autograd.register_post_backward_hook(hook)
        weakref.finalize(self, self._hook.remove)
        if self._reducer is not None:
            weakref.finalize(self, self._reducer.remove)

    def _check_same_model(self, named: list[tuple[str, Any]]) -> None:
        g = self._group
        if g.world_size == 1:
            return
        mine, text = _signature(named)
        from ..creation import asarray

        expected = mine * g.world_size
        probe = asarray(mine.copy(), device=g.device)
        total = np.asarray(
            _new_tensor(g.all_reduce(probe._native), probe._bk, g.device, probe._dtype)
        )
        if not np.array_equal(total, expected):
            raise DistributedError(
                "Expected every rank to build the same model. Received: ranks whose parameters "
                f"differ in names, shapes or dtypes; rank {g.rank} has {len(named)} "
                f"parameters: {text}. Build the model identically on every rank (compare "
                "the other ranks' messages) before DistributedDataParallel(net)."
            )

    def _broadcast_parameters(self) -> None:
        g = self._group
        if g.world_size == 1:
            return
        with autograd.no_grad():
            for p in self.module.parameters():
                data = p.data
                native = g.broadcast(data._native, 0)
                if native is not data._native:
                    p.data = _new_tensor(native, data._bk, data._dev, data._dtype)
            for b in self.module.buffers():
                native = g.broadcast(b._native, 0)
                if native is not b._native:
                    b[...] = _new_tensor(native, b._bk, b._dev, b._dtype)

    def _engine_reducer(self, bucket_cap_mb: float, find_unused: bool) -> Any:
        """The engine's hooks that average the gradients during the backward pass (torch),
        or None where the engine module has no ``gradient_reducer`` (or for a group of one)."""
        from . import engine_module

        if self._group.world_size == 1 or not self._params:
            return None
        bk = self._params[0]._bk
        engine = engine_module(bk)
        make = None if engine is None else engine.gradient_reducer
        if make is None:
            return None
        return make([p.native for p in self._params], self._group, bucket_cap_mb, find_unused)

    def _native_wrapper(
        self, named: list[tuple[str, Any]], bucket_cap_mb: float, find_unused: bool
    ) -> Any:
        """The engine's own data-parallel module around ``net.native`` (None where the
        engine module has no ``data_parallel``, or for a group of one process)."""
        from . import engine_module

        if self._group.world_size == 1 or not self._params:
            return None
        bk = named[0][1]._bk
        engine = engine_module(bk)
        wrap = None if engine is None else engine.data_parallel
        if wrap is None:
            return None
        return wrap(native_module(self.module), self._group, bucket_cap_mb, find_unused)

    @property
    def jit_blocker(self) -> str | None:
        """Why ``md.jit`` must run a function that calls this wrapper eagerly, or None: a
        compiler that follows Python (torch.compile) traces ``backward()`` into its graph,
        where the engine's gradient hooks (torch's) are not known to run."""
        hooked = self._native_ddp is not None or self._reducer is not None
        if not hooked or self._params[0]._bk.jit_traces_once:
            return None
        return (
            f"DistributedDataParallel on {self._group.engine} averages gradients in autograd "
            "hooks during backward(), which a compiled step's backward does not run (the "
            "ranks' parameters would drift apart)"
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # marked here, not in forward: md.jit on MXNet swaps forward for a compiled one
        if self._reducer is not None:  # the engine's hooks average the next backward pass
            buffers = [b._native for b in self.module.buffers()] if self._buffered else ()
            self._reducer.prepare(buffers)
        elif self._native_ddp is None:  # the next backward() averages this model's gradients
            self.__dict__["_called"] = True
        return super().__call__(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        wrapped = self._native_ddp
        if wrapped is None:
            return self.module(*args, **kwargs)
        return call_native(wrapped, self._params[0]._bk, args, kwargs)

    def _buckets(self) -> list[list[Any]]:
        buckets: list[list[Any]] = [[]]
        size = 0
        for p in self._params:
            nbytes = p.size * p.dtype.itemsize
            if buckets[-1] and (size + nbytes > self._cap or p.dtype is not buckets[-1][0].dtype):
                buckets.append([])
                size = 0
            buckets[-1].append(p)
            size += nbytes
        return [b for b in buckets if b]

    def average_gradients(self) -> None:
        """Replace every parameter's gradient by its average over the ranks (what runs after
        each ``backward()`` where the engine has no data-parallel wrapper; call it yourself
        after changing gradients by hand)."""
        g = self._group
        if g.world_size == 1 or not self._params:
            return
        if not g.traceable:
            untraceable(
                f"DistributedDataParallel averages gradients with {g.engine}'s collectives, "
                "which this backend's compiler cannot hold in a traced graph"
            )
        from ..creation import zeros_like

        with autograd.no_grad():
            for index, bucket in enumerate(self._buckets()):
                natives = [self._grad_buffer(p)._native for p in bucket]
                means = g.average(natives, index)
                if means is not None:
                    for p, x, m in zip(bucket, natives, means, strict=True):
                        if m is not x:
                            p.grad = _new_tensor(m, p._bk, p._dev, p._dtype)
                    continue
                grads = []
                for p in bucket:
                    grad = p.grad
                    grads.append(reshape(zeros_like(p.data) if grad is None else grad, (-1,)))
                flat = grads[0] if len(grads) == 1 else concat(grads, axis=0)
                summed = _new_tensor(g.all_reduce(flat._native), flat._bk, flat._dev, flat._dtype)
                mean = summed / g.world_size
                start = 0
                for p in bucket:
                    n = p.size
                    p.grad = reshape(mean[start : start + n], p.shape)
                    start += n

    @staticmethod
    def _grad_buffer(p: Any) -> Tensor:
        """``p``'s gradient, zeros written into it first when the step gave it none."""
        grad = p.grad
        if grad is None:
            from ..creation import zeros_like

            p.grad = zeros_like(p.data)
            grad = p.grad
        return grad

    def extra_repr(self) -> str:
        return f"rank={self._group.rank}, world_size={self._group.world_size}"
