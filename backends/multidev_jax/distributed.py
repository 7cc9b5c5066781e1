"""What differs on JAX for ``md.distributed``: ``jax.distributed`` (its coordination service
at the rank-0 address) with gloo collectives between the processes' CPU devices.

JAX's collectives live inside compiled programs over a global mesh of every process's devices.
The eager all-reduce of one array is therefore a small ``jax.jit`` program, compiled once per
shape and dtype: each rank's array becomes its row of a global array sharded over the mesh,
and the program's replicated sum is read back from this process's device. A gradient bucket
is one array, so a DDP step costs one such call per bucket.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from multidev.device import Device
from multidev.distributed.group import DistributedError, ExitAtOnce, Group, Job, Watchdog

from .autograd import STATE, Variable

__all__ = ["JaxGroup", "recorded_all_reduce", "start"]


class JaxGroup(Group):
    """Every process's devices as one mesh axis; collectives are compiled programs over it.
    A collective waits for its result (bounded by the group's timeout), and an uncaught
    exception ends the process at once: JAX's shutdown at exit waits for every other worker."""

    engine = "jax.distributed (gloo)"

    def __init__(
        self, rank: int, world_size: int, local_rank: int, device: Device, timeout: float
    ) -> None:
        super().__init__(rank, world_size, local_rank, device)
        if world_size > 1:
            self._watchdog = Watchdog(rank, timeout, "gloo")
            self._exit = ExitAtOnce()  # after JAX's atexit shutdown, so that it runs first
        # one device per process, its first: a process may hold several CPU devices
        # (MULTIDEV_JAX_CPU_DEVICES), and the group is one rank per process
        firsts: dict[int, Any] = {}
        for d in sorted(jax.devices(), key=lambda d: d.id):
            firsts.setdefault(d.process_index, d)
        mesh = Mesh(np.array([firsts[p] for p in sorted(firsts)]), ("ranks",))
        self._rows = NamedSharding(mesh, PartitionSpec("ranks"))
        self._local = firsts[jax.process_index()]
        self._sum = jax.jit(
            lambda rows: rows.sum(0, dtype=rows.dtype),
            out_shardings=NamedSharding(mesh, PartitionSpec()),
        )

    def all_reduce(self, x: Any) -> Any:
        if isinstance(x, Variable):  # a parameter's native: the sum of its current array
            x = x.value
        if self.world_size == 1:
            return x
        row = jax.device_put(x[None], self._local)
        rows = jax.make_array_from_single_device_arrays(
            (self.world_size, *x.shape), self._rows, [row]
        )
        try:
            with self._watchdog.blocking("all-reduce"):
                total = self._sum(rows).addressable_data(0).block_until_ready()
            return jax.device_put(total, next(iter(x.devices())))
        except (jax.errors.JaxRuntimeError, ValueError) as e:  # gloo's errors are ValueErrors
            # the worker that stopped is the job's first failure: its exit is what ended this
            # collective, and the launcher names the rank that exits first
            time.sleep(1.0)
            raise self.stopped(e) from e

    def broadcast(self, x: Any, src: int) -> Any:
        if isinstance(x, Variable):
            x = x.value
        return self.all_reduce(x if self.rank == src else jnp.zeros_like(x))

    def barrier(self) -> None:
        self.all_reduce(jnp.zeros((1,), np.float32)).block_until_ready()

    def close(self) -> None:
        if self.world_size > 1:
            self._exit.remove()
            jax.distributed.shutdown()


def recorded_all_reduce(group: JaxGroup, x: Any) -> Any:
    """The sum of native ``x`` over every rank, on the open tape as an op of its own whose
    gradient is the sum over the ranks of the gradient that reaches it (``nn.SyncBatchNorm``'s
    statistics). The collective runs eagerly, so the tape keeps its vjp as a function of
    the cotangent rather than a ``jax.vjp`` of a traceable function."""
    total = group.all_reduce(x)
    rec = STATE.current
    key = None if rec is None else rec.key(x)
    if rec is None or key is None:
        return total
    if id(total) in rec.nodes or total is x:  # a result must be a new node of the tape
        total = jnp.array(total, copy=True)
    rec.nodes[id(total)] = total
    rec.entries.append(
        (
            lambda ct: (group.all_reduce(ct),),
            [key],
            [id(total)],
            jax.tree_util.tree_structure(total),
            [total],
        )
    )
    return total


def start(job: Job) -> JaxGroup:
    """Join through ``jax.distributed.initialize`` (its coordination service on rank 0 at
    ``master_addr:master_port``), with gloo for the collectives between CPU devices. It must
    run before JAX computes anything in the process."""
    if job.backend not in (None, "gloo"):
        raise ValueError(f"Expected backend None or 'gloo' on JAX. Received: {job.backend!r}")
    if job.world_size > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        if job.rank == 0:
            from multidev.distributed.launch import check_port

            check_port(job.master_port, "JAX's coordination service on rank 0 (MASTER_PORT)")
        main = threading.current_thread() is threading.main_thread()
        sigterm = signal.getsignal(signal.SIGTERM) if main else None
        try:
            jax.distributed.initialize(
                coordinator_address=f"{job.master_addr}:{job.master_port}",
                num_processes=job.world_size,
                process_id=job.rank,
                initialization_timeout=max(1, int(job.timeout)),
            )
        except RuntimeError as e:
            if "before any JAX" in str(e):
                raise DistributedError(
                    "Expected jax.distributed to start before JAX computed anything. Received: "
                    f"{str(e).rstrip('.')}. Call md.distributed.init_process_group() first in the script, "
                    "before creating tensors."
                ) from e
            raise job.meeting_error(e) from e
        finally:
            if main and sigterm is not None:
                # the coordination service's preemption notifier takes SIGTERM and only logs
                # it, so a worker a launcher or scheduler stops would run on until SIGKILL
                signal.signal(signal.SIGTERM, sigterm)
        if jax.process_count() != job.world_size:
            raise DistributedError(
                f"Expected {job.world_size} processes in the JAX job. Received: "
                f"{jax.process_count()}. Start every worker with the same WORLD_SIZE."
            )
    return JaxGroup(job.rank, job.world_size, job.local_rank, Device("cpu", 0), job.timeout)
