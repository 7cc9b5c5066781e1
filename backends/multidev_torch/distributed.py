"""What differs on PyTorch for ``md.distributed``: ``torch.distributed`` (gloo on CPU, NCCL on
GPU) and torchrun as the launcher."""

from __future__ import annotations

import datetime
import os
import sys
from typing import Any

import torch
import torch.distributed as dist

from multidev.device import Device
from multidev.distributed.group import DistributedError, Group, Job

__all__ = ["TorchGroup", "data_parallel", "framework_launcher", "start"]


class TorchGroup(Group):
    """A ``torch.distributed`` process group; collectives work in place on torch tensors."""

    def __init__(self, rank: int, world_size: int, local_rank: int, device: Device, engine: str):
        super().__init__(rank, world_size, local_rank, device)
        self.engine = engine

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
        if dist.is_initialized():
            dist.destroy_process_group()


def start(job: Job) -> TorchGroup:
    """Join the group through ``torch.distributed.init_process_group`` (``env://``)."""
    gpus = torch.cuda.device_count()
    engine = job.backend or ("nccl" if job.local_rank < gpus else "gloo")
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
    try:
        dist.init_process_group(
            engine,
            init_method="env://",
            rank=job.rank,
            world_size=job.world_size,
            timeout=datetime.timedelta(seconds=job.timeout),
        )
    except (RuntimeError, ValueError) as e:
        raise job.meeting_error(e) from e
    return TorchGroup(job.rank, job.world_size, job.local_rank, device, engine)


def framework_launcher(
    *,
    nproc_per_node: int,
    nnodes: int,
    node_rank: int,
    master_addr: str,
    master_port: int,
    log_dir: str,
    argv: list[str],
) -> list[str]:
    """The torchrun command that starts this node's workers (every worker stopped when one
    fails). Their output goes into files under ``log_dir`` (``--redirects=3``), which
    ``multidev launch`` writes out a whole line at a time with each rank's prefix: torchrun's
    own console copy (``--tee``) writes whatever part of a line has arrived."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc_per_node}",
        f"--nnodes={nnodes}",
        f"--node-rank={node_rank}",
        f"--master-addr={master_addr}",
        f"--master-port={master_port}",
        "--max-restarts=0",
        f"--log-dir={log_dir}",
        "--redirects=3",
        *argv,
    ]


def data_parallel(
    module: Any, group: TorchGroup, bucket_cap_mb: float, find_unused_parameters: bool
) -> Any:
    """torch's own ``DistributedDataParallel`` around ``module`` (``net.native``): its reducer
    all-reduces each bucket of gradients as soon as autograd has produced them, during the
    backward pass, and leaves the average in every parameter's ``.grad``."""
    ids = [group.local_rank] if group.device.type == "gpu" else None
    return torch.nn.parallel.DistributedDataParallel(
        module,
        device_ids=ids,
        bucket_cap_mb=bucket_cap_mb,
        find_unused_parameters=find_unused_parameters,
    )
