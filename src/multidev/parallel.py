"""One process, several devices (the d2l "multiple GPUs" sections, written once).

``split_batch`` shards a minibatch across devices, ``replicate`` copies a Block onto each
device, ``allreduce`` sums tensors that live on different devices into every one of them,
and ``DataParallel`` does all three for each call: it splits the batch, runs a replica of
the Block on each device and gathers the outputs on the first device. The replicas read the
first device's parameters through copies the framework records (``Tensor.to`` under
``md.autograd.record()``), so ``loss.backward()`` sums every device's gradient into the
original parameters with the framework's own cross-device copies, and one optimiser over
``net.parameters()`` keeps every replica in sync.

Tested on the devices a machine without GPUs has: TensorFlow's logical CPUs and MXNet's
``cpu(i)`` contexts; on GPUs the same code runs on ``md.try_all_gpus()``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from . import registry
from .device import Device, as_device, check_available, try_all_gpus
from .dispatch import new_tensor
from .dispatch import on as _on
from .errors import DeviceError
from .nn.module import Block
from .nn.parameter import Parameter
from .ops import concat
from .tensors import Tensor

__all__ = ["DataParallel", "allreduce", "replicate", "split_batch"]


def _engine(bk: Any) -> Any:
    """The adapter's ``distributed`` module (what differs per framework), or None."""
    from .distributed import engine_module

    return engine_module(bk)


def _devices(devices: Any) -> list[Device]:
    if isinstance(devices, (str, Device)):
        devices = [devices]
    devs = [as_device(d) for d in devices]
    if not devs:
        raise DeviceError(
            "Expected at least one device. Received: an empty list. "
            "Pass md.try_all_gpus(), or e.g. [md.cpu(0), md.cpu(1)] on TensorFlow or MXNet."
        )
    if len(set(devs)) != len(devs):
        raise DeviceError(
            f"Expected distinct devices. Received: {[str(d) for d in devs]}. List each device once."
        )
    bk = registry.current()
    for d in devs:
        check_available(bk, d)
    return devs


def _shards(n: int, parts: int) -> list[slice]:
    """``parts`` contiguous slices of ``range(n)`` whose sizes differ by at most one."""
    size, extra = divmod(n, parts)
    out, start = [], 0
    for i in range(parts):
        stop = start + size + (1 if i < extra else 0)
        out.append(slice(start, stop))
        start = stop
    return out


def split_batch(X: Tensor, y: Tensor, devices: Sequence[Any]) -> tuple[list[Tensor], list[Tensor]]:
    """Split the examples of ``X`` and labels ``y`` (along axis 0) into one contiguous shard
    per device, each copied to its device. Shard sizes differ by at most one.

    Raises ValueError when X and y hold different numbers of examples, or fewer examples than
    devices.
    """
    devs = _devices(devices)
    if not isinstance(X, Tensor) or not isinstance(y, Tensor):
        raise TypeError(
            f"Expected md.Tensor inputs. Received: {type(X).__name__} and {type(y).__name__}. "
            "Convert with md.asarray."
        )
    if X.ndim == 0 or y.ndim == 0 or X.shape[0] != y.shape[0]:
        raise ValueError(
            f"Expected X and y with the same number of examples along axis 0. Received: "
            f"shapes {X.shape} and {y.shape}."
        )
    return _split(X, devs), _split(y, devs)


def _split(X: Tensor, devs: list[Device]) -> list[Tensor]:
    n = X.shape[0]
    if n < len(devs):
        raise ValueError(
            f"Expected at least one example per device. Received: a batch of {n} for "
            f"{len(devs)} devices. Use a batch of at least {len(devs)} examples."
        )
    return [X[s].to(d) for s, d in zip(_shards(n, len(devs)), devs, strict=True)]


def _copy_block(net: Block, dev: Device) -> Block:
    """A new Block of ``net``'s structure whose parameters and buffers are copies on ``dev``."""
    memo: dict[int, Any] = {}
    for p in net.parameters():
        memo[id(p._bk)] = p._bk
        q = Parameter(p.data.to(dev, copy=True), requires_grad=p.requires_grad)
        memo[id(p)] = q
    for b in net.buffers():
        memo[id(b._bk)] = b._bk
        memo[id(b)] = b.to(dev, copy=True)
    return copy.deepcopy(net, memo)


def replicate(net: Block, devices: Sequence[Any]) -> list[Block]:
    """One copy of ``net`` per device, each with its own parameters (copies of ``net``'s
    values) and buffers on that device. ``net`` itself is not changed or returned."""
    if not isinstance(net, Block):
        raise TypeError(f"Expected an nn.Block to replicate. Received: {type(net).__name__}")
    for p in net.parameters():
        if not p.initialized:
            raise ValueError(
                "Expected a Block whose parameters have shapes. Received: one with an "
                "uninitialised lazy parameter. Run one forward pass (net(X)) first."
            )
    return [_copy_block(net, d) for d in _devices(devices)]


def allreduce(tensors: Sequence[Tensor]) -> list[Tensor]:
    """Sum tensors of one shape that live on different devices, into every one of them.

    Uses the framework's own cross-device reduction where it has one (MXNet's ``device``
    kvstore), else its cross-device copies. Each input tensor is overwritten with the sum
    (where the framework's tensors are immutable, the Tensor object gets the new value), and
    the list of sums is returned; assign them where they belong, e.g. ``p.grad = out[i]``.
    """
    ts = list(tensors)
    if not ts or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(
            "Expected a non-empty list of md.Tensor, one per device. Received: "
            f"{[type(t).__name__ for t in ts]}"
        )
    first = ts[0]
    for t in ts[1:]:
        if t._bk is not first._bk or t.shape != first.shape or t._dtype is not first._dtype:
            raise ValueError(
                f"Expected tensors of one backend, shape and dtype. Received: "
                f"{[(t.backend, t.shape, t.dtype.name) for t in ts]}."
            )
    engine = _engine(first._bk)
    fast = None if engine is None else engine.device_allreduce
    if fast is not None and len(ts) > 1:
        natives = fast([t._native for t in ts], [t._dev for t in ts])
        for t, native in zip(ts, natives, strict=True):
            t._native = native
        return ts
    total = first.to(first.device, copy=True)
    for t in ts[1:]:
        total = total + t.to(first.device)
    for t in ts:
        t[...] = total.to(t.device)
    return ts


def _broadcast_copy(bk: Any, x: Any, dev: Device) -> Any:
    """A copy of native ``x`` on ``dev`` that the framework's autograd records."""
    engine = _engine(bk)
    copy_fn = None if engine is None else engine.recorded_copy
    if copy_fn is not None:
        return copy_fn(x, bk.native_device(dev))
    return _on(bk, dev, bk.to_device, x, dev)


class DataParallel(Block):
    """Run ``net`` on several devices of one process: ``DataParallel(net, devices)``.

    Each call splits every tensor argument along axis 0 (``split_batch``), runs a replica of
    ``net`` on each device and concatenates the outputs on ``devices[0]``, where ``net``'s
    parameters live. The replicas read those parameters through recorded copies, so
    ``loss.backward()`` leaves the sum of every device's gradient in ``net``'s parameters,
    and an optimiser over ``net.parameters()`` (same as ``DataParallel.parameters()``)
    updates the only copy there is. Results equal a single-device run up to float rounding.
    """

    def __init__(self, net: Block, devices: Sequence[Any] | None = None) -> None:
        super().__init__()
        if not isinstance(net, Block):
            raise TypeError(f"Expected an nn.Block. Received: {type(net).__name__}")
        devs = _devices(try_all_gpus() if devices is None else devices)
        self.module = net.to(devs[0])
        self.__dict__["devices"] = devs
        self.__dict__["_replicas"] = None

    def _build(self) -> None:
        net, devs = self.module, self.devices
        reps: list[tuple[Block, list[tuple[Parameter, Parameter]]]] = [(net, [])]
        for d in devs[1:]:
            rep = _copy_block(net, d)
            pairs = list(zip(net.parameters(), rep.parameters(), strict=True))
            reps.append((rep, pairs))
        self.__dict__["_replicas"] = reps

    def forward(self, *inputs: Any) -> Tensor:
        devs = self.devices
        if len(devs) == 1:
            return self.module(*inputs)
        if any(not p.initialized for p in self.module.parameters()):
            raise ValueError(
                "Expected a Block whose parameters have shapes. Received: one with an "
                "uninitialised lazy parameter. Run it once on one device (net(X)) first."
            )
        if self._replicas is None:
            self._build()
        shards = [_split(x, devs) if isinstance(x, Tensor) else [x] * len(devs) for x in inputs]
        outs = []
        for i, (rep, pairs) in enumerate(self._replicas):
            for src, dst in pairs:
                dst._native = _broadcast_copy(src._bk, src._native, dst._dev)
            rep.train(self.module.training)
            out = rep(*(s[i] for s in shards))
            if out._dev is not devs[0]:
                native = _broadcast_copy(out._bk, out._native, devs[0])
                out = new_tensor(native, out._bk, devs[0], out._dtype)
            outs.append(out)
        return concat(outs, axis=0)

    def extra_repr(self) -> str:
        return "devices=[" + ", ".join(str(d) for d in self.devices) + "]"
