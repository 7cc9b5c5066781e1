"""What differs on Paddle for ``md.distributed``: ``paddle.distributed`` (gloo on CPU, NCCL
on GPU), configured through the ``PADDLE_*`` variables ``init_parallel_env`` reads."""

from __future__ import annotations

import os
import time
from typing import Any

import paddle
import paddle.distributed as pdist

from multidev.device import Device
from multidev.distributed.group import DistributedError, Group, Job

__all__ = ["PaddleGroup", "data_parallel", "recorded_all_reduce", "start"]


class PaddleGroup(Group):
    """Paddle's default process group; collectives work in place on Paddle tensors."""

    def __init__(self, job: Job, device: Device, engine: str):
        super().__init__(job.rank, job.world_size, job.local_rank, device)
        self.engine = engine
        self.timeout = job.timeout
        self._barriers = 0

    def all_reduce(self, x: Any) -> Any:
        if self.world_size > 1:
            pdist.all_reduce(x, op=pdist.ReduceOp.SUM)
        return x

    def broadcast(self, x: Any, src: int) -> Any:
        if self.world_size > 1:
            pdist.broadcast(x, src=src)
        return x

    def barrier(self) -> None:
        """Every rank's arrival. Paddle's gloo collectives give up after a fixed 30 s (Paddle
        has no setting for it), which a rank waiting while rank 0 writes a large checkpoint
        can pass: on gloo the ranks count their arrivals in Paddle's store instead, within
        the group's timeout."""
        if self.world_size == 1:
            return
        if self.engine != "gloo":
            pdist.barrier()
            return
        store = paddle.base.core.create_or_get_global_tcp_store()
        self._barriers += 1
        key = f"multidev/barrier/{self._barriers}"
        store.add(key, 1)
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while store.add(key, 0) < self.world_size:
            if time.monotonic() > deadline:
                arrived = store.add(key, 0)
                raise DistributedError(
                    f"Expected all {self.world_size} workers to reach the barrier within "
                    f"{self.timeout:g} s. Received: {arrived} of them there after "
                    f"{self.timeout:g} s on rank {self.rank} (another worker stopped or "
                    "hangs). If a rank may wait "
                    "longer for the others (writing a checkpoint), raise the bound: "
                    "init_process_group(timeout=...) or MULTIDEV_DIST_TIMEOUT."
                )
            time.sleep(pause)
            pause = min(2 * pause, 0.05)


class _RecordedSum(paddle.autograd.PyLayer):
    """The sum over the ranks, whose backward is the sum over the ranks of the incoming
    gradient (the gradient of the sum of every rank's loss)."""

    @staticmethod
    def forward(ctx: Any, x: Any, group: PaddleGroup) -> Any:
        ctx.group = group
        return group.all_reduce(x.clone())

    @staticmethod
    def backward(ctx: Any, dy: Any) -> Any:
        return ctx.group.all_reduce(dy.clone())


def recorded_all_reduce(group: PaddleGroup, x: Any) -> Any:
    """The sum of native ``x`` over every rank, recorded by autograd (a ``PyLayer``): its
    gradient is the sum over the ranks of the gradient that reaches it
    (``nn.SyncBatchNorm``'s statistics)."""
    return _RecordedSum.apply(x, group)


def start(job: Job) -> PaddleGroup:
    """Join the group through ``paddle.distributed.init_parallel_env`` (its TCP store at
    ``master_addr:master_port``)."""
    gpus = paddle.device.cuda.device_count() if paddle.is_compiled_with_cuda() else 0
    engine = job.backend or job.default_engine(gpus)
    if engine not in ("gloo", "nccl"):
        raise ValueError(f"Expected backend 'gloo' or 'nccl' on paddle. Received: {engine!r}")
    if engine == "nccl" and job.local_rank >= gpus:
        raise DistributedError(
            f"Expected a GPU for local rank {job.local_rank} with NCCL. Received: {gpus} GPUs on "
            "this machine. Start at most one process per GPU, or use backend='gloo'."
        )
    device = Device("gpu", job.local_rank) if engine == "nccl" else Device("cpu", 0)
    endpoints = list(job.endpoints or ()) or [
        f"{job.master_addr}:{job.master_port + i}" for i in range(job.world_size)
    ]
    os.environ.update(
        PADDLE_TRAINER_ID=str(job.rank),
        PADDLE_TRAINERS_NUM=str(job.world_size),
        PADDLE_TRAINER_ENDPOINTS=",".join(endpoints),
        PADDLE_CURRENT_ENDPOINT=endpoints[job.rank],
        PADDLE_DISTRI_BACKEND=engine,
        PADDLE_RANK_IN_NODE=str(job.local_rank),
        MASTER_ADDR=job.master_addr,
        MASTER_PORT=str(job.master_port),
        FLAGS_stop_check_timeout=str(max(1, int(job.timeout))),
    )
    if engine == "nccl":
        os.environ.update(FLAGS_selected_gpus=str(job.local_rank))
        paddle.set_device(f"gpu:{job.local_rank}")
    if job.world_size > 1:
        if job.rank == 0 and job.endpoints is None:
            from multidev.distributed.launch import check_port

            # Paddle's store aborts the process (libuv) on a port in use, without its number
            check_port(job.master_port, "Paddle's store on rank 0 (MASTER_PORT)")
        if engine == "nccl":  # the NCCL process group's own timeout (gloo keeps 30 s)
            os.environ.setdefault("PADDLE_PG_TIMEOUT", str(int(job.timeout * 1000)))
        try:
            pdist.init_parallel_env()
        except (RuntimeError, ValueError, AssertionError) as e:
            raise job.meeting_error(e) from e
    return PaddleGroup(job, device, engine)


def data_parallel(
    module: Any, group: PaddleGroup, bucket_cap_mb: float, find_unused_parameters: bool
) -> Any:
    """``paddle.DataParallel`` around ``module`` (``net.native``): its reducer all-reduces each
    bucket of gradients (``comm_buffer_size`` MiB) as soon as they are ready, during the
    backward pass, and leaves the average in every parameter's gradient."""
    return paddle.DataParallel(
        module,
        comm_buffer_size=bucket_cap_mb,
        last_comm_buffer_size=min(1.0, bucket_cap_mb),
        find_unused_parameters=find_unused_parameters,
    )
