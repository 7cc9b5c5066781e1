"""What differs on PyTorch for ``md.distributed``: ``torch.distributed`` (gloo on CPU, NCCL on
GPU) and torchrun as the launcher."""

from __future__ import annotations

import atexit
import datetime
import gc
import os
import sys
import weakref
from typing import Any

import torch
import torch.distributed as dist

from multidev.device import Device
from multidev.distributed.group import DistributedError, Group, Job
from multidev.distributed.launch import RESTART_ENV

__all__ = [
    "GradientReducer",
    "TorchGroup",
    "framework_launcher",
    "gradient_reducer",
    "recorded_all_reduce",
    "start",
]


class TorchGroup(Group):
    """A ``torch.distributed`` process group; collectives work in place on torch tensors."""

    def __init__(self, rank: int, world_size: int, local_rank: int, device: Device, engine: str):
        super().__init__(rank, world_size, local_rank, device)
        self.engine = engine
        # a script that ends, or raises, without destroy_process_group() would free gloo's
        # objects during finalisation, which can abort the process (SIGABRT instead of its
        # exit code)
        atexit.register(self.close)

    def all_reduce(self, x: Any) -> Any:
        x = x if x.is_contiguous() else x.contiguous()
        dist.all_reduce(x, op=dist.ReduceOp.SUM)
        return x

    def broadcast(self, x: Any, src: int) -> Any:
        x = x if x.is_contiguous() else x.contiguous()
        dist.broadcast(x, src=src)
        return x

    def barrier(self) -> None:
        dist.barrier()

    def close(self) -> None:
        atexit.unregister(self.close)
        if dist.is_initialized():
            # free what reference cycles still hold of gloo's work objects while the
            # interpreter is whole: one freed during finalisation can abort the process
            # ("terminate called without an active exception")
            gc.collect()
            dist.destroy_process_group()


class _RecordedSum(torch.autograd.Function):
    """The sum over the ranks, whose backward is the sum over the ranks of the incoming
    gradient (the gradient of the sum of every rank's loss), as
    ``torch.distributed.nn.functional.all_reduce``."""

    @staticmethod
    def forward(ctx: Any, x: Any, group: TorchGroup) -> Any:
        ctx.group = group
        return group.all_reduce(x.clone())

    @staticmethod
    def backward(ctx: Any, dy: Any) -> Any:
        return ctx.group.all_reduce(dy.clone()), None


def recorded_all_reduce(group: TorchGroup, x: Any) -> Any:
    """The sum of native ``x`` over every rank, recorded by autograd: its gradient is the sum
    over the ranks of the gradient that reaches it (``nn.SyncBatchNorm``'s statistics)."""
    return _RecordedSum.apply(x, group)


def start(job: Job) -> TorchGroup:
    """Join the group through ``torch.distributed.init_process_group`` (``env://``)."""
    gpus = torch.cuda.device_count()
    engine = job.backend or job.default_engine(gpus)
    if engine not in ("gloo", "nccl"):
        raise ValueError(f"Expected backend 'gloo' or 'nccl' on torch. Received: {engine!r}")
    if engine == "nccl":
        if job.local_rank >= gpus:
            raise DistributedError(
                f"Expected a GPU for local rank {job.local_rank} with NCCL. Received: {gpus} GPUs "
                "on this machine. Start at most one process per GPU, or use backend='gloo'."
            )
        torch.cuda.set_device(job.local_rank)
        device = Device("gpu", job.local_rank)
    else:
        device = Device("cpu", 0)
    os.environ["MASTER_ADDR"] = job.master_addr
    os.environ["MASTER_PORT"] = str(job.master_port)
    timeout = datetime.timedelta(seconds=job.timeout)
    try:
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            store = _attempt_store(job, timeout)
            dist.init_process_group(
                engine, store=store, rank=job.rank, world_size=job.world_size, timeout=timeout
            )
        else:
            dist.init_process_group(
                engine,
                init_method="env://",
                rank=job.rank,
                world_size=job.world_size,
                timeout=timeout,
            )
    except (RuntimeError, ValueError) as e:
        raise job.meeting_error(e) from e
    return TorchGroup(job.rank, job.world_size, job.local_rank, device, engine)


def _attempt_store(job: Job, timeout: datetime.timedelta) -> Any:
    """The keys of this attempt in the store of torchrun's agent. Its static rendezvous keeps
    one store for all the attempts of a run, which ``env://`` reads without a prefix: after a
    restart a rank could read the address a rank of the failed attempt published and fail to
    connect to it (gloo: "connectFullMesh failed ... Connection refused")."""
    store = dist.TCPStore(
        job.master_addr, job.master_port, job.world_size, is_master=False, timeout=timeout
    )
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return dist.PrefixStore(f"multidev/attempt_{attempt}/", store)


def framework_launcher(
    *,
    nproc_per_node: int,
    nnodes: int,
    node_rank: int,
    master_addr: str,
    master_port: int,
    log_dir: str,
    argv: list[str],
    restarts: int = 0,
) -> list[str]:
    """The torchrun command that starts this node's workers (every worker stopped when one
    fails). Their output goes into files under ``log_dir`` (``--redirects=3``), which
    ``multidev launch`` writes out a whole line at a time with each rank's prefix: torchrun's
    own console copy (``--tee``) writes whatever part of a line has arrived. With
    ``restarts`` torchrun's elastic agent starts the workers again after a failure, each
    attempt told in ``TORCHELASTIC_RESTART_COUNT``, which a shell copies into
    ``MULTIDEV_RESTART_COUNT`` before it becomes the worker (``exec``: torchrun watches the
    worker itself)."""
    worker = argv  # torchrun runs the script with its own ``python -u``
    if restarts:
        copy = f'{RESTART_ENV}="$TORCHELASTIC_RESTART_COUNT" exec "$0" "$@"'
        worker = ["--no-python", "/bin/sh", "-c", copy, sys.executable, "-u", *argv]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc_per_node}",
        f"--nnodes={nnodes}",
        f"--node-rank={node_rank}",
        f"--master-addr={master_addr}",
        f"--master-port={master_port}",
        f"--max-restarts={restarts}",
        f"--log-dir={log_dir}",
        "--redirects=3",
        *worker,
    ]


#: how many bytes of buffers one broadcast of ``GradientReducer.prepare`` carries (torch's own
#: wrapper's figure)
_BUFFER_BYTES = 250 * 2**20


#: the first bucket's size in torch's own reducer (``dist._DEFAULT_FIRST_BUCKET_BYTES``)
_FIRST_BUCKET_BYTES = 2**20


class GradientReducer:
    """Averages the gradients of ``params`` (torch parameters) over ``group`` during the
    backward pass after ``prepare()``, as torch's own ``DistributedDataParallel`` reducer does,
    without wrapping the module's forward: each parameter's post-accumulate-grad hook counts
    its bucket down, a bucket whose gradients are all there is copied into the bucket's flat
    tensor (kept from step to step, as torch's buckets are) and all-reduced asynchronously
    (buckets launched in the same order on every rank: the reverse parameter order, in which
    backward produces them), and a callback queued on autograd's engine waits for the rest
    at the end of the backward pass, divides each bucket by the world size once and writes
    the means into the ``.grad`` tensors. A parameter without a
    gradient in the step contributes zeros and gets the mean; with ``find_unused`` each
    bucket also sums a flag per parameter, and one that no rank used keeps ``.grad`` None
    (as in torch's reducer)."""

    def __init__(
        self, params: list[Any], group: TorchGroup, cap_bytes: int, find_unused: bool
    ) -> None:
        self.group = group
        self._find_unused = find_unused
        buckets: list[list[Any]] = [[]]
        size = 0
        for p in reversed(params):
            nbytes = p.numel() * p.element_size()
            last = buckets[-1]
            # the first bucket (the last layers' gradients, first out of backward) is capped
            # at 1 MiB, as in torch's reducer, so that its all-reduce starts early
            limit = min(cap_bytes, _FIRST_BUCKET_BYTES) if len(buckets) == 1 else cap_bytes
            if last and (
                size + nbytes > limit or p.dtype != last[0].dtype or p.device != last[0].device
            ):
                buckets.append([])
                size = 0
            buckets[-1].append(p)
            size += nbytes
        self.buckets = [b for b in buckets if b]
        self._sizes = [len(b) for b in self.buckets]
        self._bucket_of = {id(p): i for i, b in enumerate(self.buckets) for p in b}
        self._flats: list[Any] = [None] * len(self.buckets)
        self._views: list[list[Any]] = [[] for _ in self.buckets]
        self._armed = False
        self._left: list[int] = []
        self._next = 0
        self._works: list[tuple[list[Any], Any, Any, bool]] = []
        ref = weakref.ref(self)  # the parameters' hooks must not keep the reducer alive

        def ready(p: Any) -> None:
            reducer = ref()
            if reducer is None or not reducer._armed:
                return
            left = reducer._left
            if not left:  # the pass's first gradient: count down from full buckets
                left = reducer._left = list(reducer._sizes)
                reducer._next = 0
                reducer._works = []
                torch.autograd.Variable._execution_engine.queue_callback(reducer._finish)
            left[reducer._bucket_of[id(p)]] -= 1
            while reducer._next < len(left) and left[reducer._next] == 0:
                reducer._launch(reducer._next)

        self._handles = [p.register_post_accumulate_grad_hook(ready) for p in params]

    def prepare(self, buffers: list[Any] | tuple[()] = ()) -> None:
        """Average the gradients of the next backward pass, and give ``buffers`` (the model's,
        e.g. BatchNorm's running statistics) rank 0's values, as torch's own wrapper does at
        each forward (``broadcast_buffers``); called by each forward."""
        self._armed = True
        self._left = []
        if buffers:
            dist._broadcast_coalesced(dist.group.WORLD, buffers, _BUFFER_BYTES, 0)

    def _flat(self, index: int) -> tuple[Any, list[Any]]:
        """Bucket ``index``'s flat tensor, kept from step to step (as torch's reducer keeps its
        buckets: a new 25 MiB tensor each step cost its page faults, 14 ms a bucket on this
        CPU), and its views shaped as the bucket's parameters (then a flag per parameter with
        ``find_unused``)."""
        flat = self._flats[index]
        if flat is None:
            bucket = self.buckets[index]
            n = sum(p.numel() for p in bucket) + (len(bucket) if self._find_unused else 0)
            flat = torch.empty(n, dtype=bucket[0].dtype, device=bucket[0].device)
            views, start = [], 0
            for p in bucket:
                views.append(flat[start : start + p.numel()].view_as(p))
                start += p.numel()
            self._flats[index], self._views[index] = flat, views
        return flat, self._views[index]

    def _launch(self, index: int) -> None:
        bucket = self.buckets[index]
        flat, views = self._flat(index)
        grads = [p.grad for p in bucket]
        missing = any(g is None for g in grads)
        if missing:  # a parameter without gradient contributes zeros
            have = [(v, g) for v, g in zip(views, grads, strict=True) if g is not None]
            for v, g in zip(views, grads, strict=True):
                if g is None:
                    v.zero_()
            if have:
                torch._foreach_copy_([v for v, _ in have], [g for _, g in have])
        else:
            torch._foreach_copy_(views, grads)
        if self._find_unused:  # summed over the ranks: 0 for a parameter no rank used
            flat[-len(bucket) :].copy_(torch.tensor([float(g is not None) for g in grads]))
        # the process group's own call (dist.all_reduce adds argument checks and logging);
        # looked up each time: one kept past destroy_process_group aborted 2 of 4 runs at exit
        pg = dist.group.WORLD
        if pg is None:
            raise DistributedError(
                "Expected a process group for DistributedDataParallel's backward. Received: "
                "none (destroy_process_group ran). Train before destroy_process_group()."
            )
        self._works.append((bucket, flat, pg.allreduce([flat]), missing))
        self._next = index + 1

    def _finish(self) -> None:
        try:
            while self._next < len(self.buckets):
                self._launch(self._next)
            world = self.group.world_size
            for index, (bucket, flat, work, missing) in enumerate(self._works):
                work.wait()
                flat.div_(world)
                used = flat[-len(bucket) :].tolist() if self._find_unused else None
                views = self._views[index]
                have = [p.grad for p in bucket]
                if not missing:
                    torch._foreach_copy_(have, views)
                    continue
                for i, (p, g, v) in enumerate(zip(bucket, have, views, strict=True)):
                    if g is not None:
                        g.copy_(v)
                    elif used is None or used[i]:  # used on some rank
                        p.grad = v.clone()  # the bucket is written again next step
        finally:
            self._armed = False
            self._left = []
            self._works = []

    def remove(self) -> None:
        """Stop averaging (unregister the hooks)."""
        for h in self._handles:
            h.remove()
        self._handles = []


def gradient_reducer(
    params: list[Any], group: TorchGroup, bucket_cap_mb: float, find_unused_parameters: bool
) -> GradientReducer:
    """The hooks that average ``params``' gradients (torch parameters) during each backward
    pass after ``prepare()``: ``md.distributed.DistributedDataParallel`` on torch. It
    replaces torch's ``DistributedDataParallel`` wrapper, whose Python forward (and the
    native module's call back into the Block) cost more per step than the averaging itself."""
    cap = max(1, int(bucket_cap_mb * 2**20))
    return GradientReducer(params, group, cap, bool(find_unused_parameters))
