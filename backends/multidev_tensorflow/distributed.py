"""What differs on TensorFlow for ``md.distributed`` and ``md.parallel``: the collectives of
``tf.distribute.MultiWorkerMirroredStrategy`` (configured through ``TF_CONFIG``), and a
recorded cross-device copy (``tf.identity``; the adapter's CPU copy is not differentiable)."""

from __future__ import annotations

import json
import os
import signal
import threading
from typing import Any

import tensorflow as tf

from multidev.device import Device
from multidev.distributed.group import DistributedError, Group, Job

__all__ = [
    "COLLECTIVE_ERRORS",
    "TFGroup",
    "cluster_workers",
    "recorded_all_reduce",
    "recorded_copy",
    "start",
    "stopped_error",
    "worker_envs",
]

#: what TensorFlow raises when a collective's peer stopped or timed out
COLLECTIVE_ERRORS = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError)


def recorded_copy(x: Any, native_device: Any) -> Any:
    """``x`` copied to ``native_device`` by an op a GradientTape differentiates."""
    with tf.device(native_device):
        return tf.identity(x)


class TFGroup(Group):
    """The collectives of a ``MultiWorkerMirroredStrategy`` with one replica per worker.

    Called eagerly, each collective is a ``tf.function`` of its own. Inside a function being
    traced (``md.jit`` of a training step), it is built into that graph directly instead:
    ``MultiWorkerMirroredStrategy`` gives each collective op it builds its own instance key,
    taken when the compiled function is called, and one ordering token per device, so every
    rank runs the same collectives in the same order. Calling the eager ``tf.function``
    there would reuse one concrete function (one instance key) for every bucket of the same
    or a relaxed signature, and the ranks' buckets would pair up wrongly."""

    engine = "MultiWorkerMirroredStrategy"
    traceable = True

    def __init__(
        self,
        strategy: Any,
        rank: int,
        world_size: int,
        local_rank: int,
        device: Device,
        timeout: float,
    ):
        super().__init__(rank, world_size, local_rank, device)
        self.strategy = strategy
        self._options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=timeout)
        options = self._options

        def replica_sum(x):
            ctx = tf.distribute.get_replica_context()
            # a copy on the replica's device: the reduction's destination
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(x), options=options)

        def replica_mean(xs):
            ctx = tf.distribute.get_replica_context()
            sums = ctx.all_reduce(
                tf.distribute.ReduceOp.SUM, [tf.identity(x) for x in xs], options=options
            )
            return [s / world_size for s in sums]

        self._replica = {"sum": replica_sum, "mean": replica_mean}
        self._eager = {k: _on_replicas(strategy, f) for k, f in self._replica.items()}

    def _collective(self, kind: str, x: Any) -> Any:
        if tf.inside_function():  # part of the graph being traced (see the class)
            out = self.strategy.run(self._replica[kind], args=(x,))
            return self.strategy.experimental_local_results(out)[0]
        try:
            out = self._eager[kind](x)
        except COLLECTIVE_ERRORS as e:
            raise self.stopped(e) from e
        return self.strategy.experimental_local_results(out)[0]

    def all_reduce(self, x: Any) -> Any:
        return self._collective("sum", tf.convert_to_tensor(x))

    def average(self, xs: list[Any], bucket: int = 0) -> list[Any]:
        """One collective call for the whole list: ``MultiWorkerMirroredStrategy`` packs the
        arrays into one all-reduce (concatenated, reduced, split), then divides."""
        return list(self._collective("mean", [tf.convert_to_tensor(x) for x in xs]))

    def barrier(self) -> None:
        self.all_reduce(tf.zeros((1,), tf.float32))


def recorded_all_reduce(group: TFGroup, x: Any) -> Any:
    """The sum of native ``x`` over every rank, differentiated by a GradientTape
    (``tf.custom_gradient``): its gradient is the sum over the ranks of the gradient that
    reaches it (``nn.SyncBatchNorm``'s statistics)."""

    from tensorflow.python.eager import record

    x = tf.convert_to_tensor(x)
    # reduced with the tape paused (the custom gradient below stands for it): the strategy's
    # eager collective refuses to run while a GradientTape records
    with record.stop_recording():
        total = group.all_reduce(x)

    @tf.custom_gradient
    def summed(v: Any) -> Any:
        def grad(dy: Any) -> Any:
            return group.all_reduce(dy)

        return tf.identity(total), grad

    return summed(x)


def _on_replicas(strategy: Any, replica_fn: Any) -> Any:
    """``replica_fn`` run by ``strategy`` on its replica, as a ``tf.function`` of its own."""
    return tf.function(lambda x: strategy.run(replica_fn, args=(x,)), reduce_retracing=True)


def stopped_error(e: BaseException) -> BaseException:
    """The group's clear error for a collective error ``e`` raised by a compiled function
    (``md.jit``) when a worker stopped; ``e`` itself outside a process group."""
    from multidev import distributed

    g = distributed._group
    return g.stopped(e) if isinstance(g, TFGroup) else e


def _tf_config(addresses: list[str], rank: int) -> str:
    return json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": rank}})


def start(job: Job) -> TFGroup:
    """Start the collectives. ``TF_CONFIG`` from the environment if set, else workers at
    ``master_addr:master_port + rank`` (one machine)."""
    if job.backend not in (None, "ring", "auto", "nccl"):
        raise ValueError(
            "Expected backend None, 'ring', 'auto' or 'nccl' on TensorFlow. "
            f"Received: {job.backend!r}"
        )
    gpus = tf.config.list_physical_devices("GPU")
    device = Device("cpu", 0)
    if gpus:  # one GPU per worker: the local rank's, seen as /GPU:0
        if job.local_rank >= len(gpus):
            raise DistributedError(
                f"Expected a GPU for local rank {job.local_rank}. Received: {len(gpus)} GPUs on "
                "this machine. Start at most one process per GPU."
            )
        tf.config.set_visible_devices(gpus[job.local_rank], "GPU")
        device = Device("gpu", 0)
    if "TF_CONFIG" not in os.environ:
        workers = list(job.endpoints or ()) or [
            f"{job.master_addr}:{job.master_port + i}" for i in range(job.world_size)
        ]
        os.environ["TF_CONFIG"] = _tf_config(workers, job.rank)
    _check_own_port(os.environ["TF_CONFIG"], job.rank)
    impl = {
        None: tf.distribute.experimental.CommunicationImplementation.AUTO,
        "auto": tf.distribute.experimental.CommunicationImplementation.AUTO,
        "ring": tf.distribute.experimental.CommunicationImplementation.RING,
        "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
    }[job.backend]
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=impl, timeout_seconds=job.timeout
    )
    main = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main else None
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    except (RuntimeError, ValueError) as e:
        raise DistributedError(
            f"Expected to configure TensorFlow's collectives before anything else ran. "
            f"Received: {e}. Call md.distributed.init_process_group() first in the script."
        ) from e
    finally:
        if main and sigterm is not None:
            # the coordination service's preemption notifier takes SIGTERM and only logs it,
            # so a worker that a launcher or scheduler stops ran on until SIGKILL: give
            # SIGTERM back what it did before (by default, end the process)
            signal.signal(signal.SIGTERM, sigterm)
    ctx = strategy.cluster_resolver
    chiefs = len(ctx.cluster_spec().as_dict().get("chief", []))  # a chief is rank 0
    task_rank = ctx.task_id + (chiefs if ctx.task_type == "worker" else 0)
    if task_rank != job.rank or strategy.num_replicas_in_sync != job.world_size:
        raise DistributedError(
            f"Expected TF_CONFIG to describe rank {job.rank} of {job.world_size}. Received: task "
            f"{ctx.task_type} {ctx.task_id} with {strategy.num_replicas_in_sync} replicas. Set RANK and "
            "WORLD_SIZE to match TF_CONFIG, or leave TF_CONFIG unset."
        )
    return TFGroup(strategy, job.rank, job.world_size, job.local_rank, device, job.timeout)


def _check_own_port(tf_config: str, rank: int) -> None:
    """A DistributedError naming this worker's port (from ``TF_CONFIG``) when another process
    listens on it: TensorFlow's own error ("Could not start gRPC server") does not name it."""
    from multidev.distributed.launch import check_port

    try:
        config = json.loads(tf_config)
        task = config["task"]
        port = int(str(config["cluster"][task["type"]][int(task["index"])]).rsplit(":", 1)[1])
    except (ValueError, KeyError, IndexError, TypeError):
        return  # TensorFlow's own check reports a malformed TF_CONFIG
    check_port(port, f"TensorFlow worker {rank} (its TF_CONFIG entry)")


def cluster_workers(node_addrs: list[str], nproc_per_node: int, master_port: int) -> list[str]:
    """Every worker's ``host:port`` on several machines, in rank order: rank ``r`` at its
    node's address, port ``master_port + 1 + r`` (node 0's launcher meets the others on
    ``master_port`` itself; a port per rank, not per local rank, so that nodes sharing an
    address, as on loopback, do not collide)."""
    return [
        f"{a}:{master_port + 1 + n * nproc_per_node + i}"
        for n, a in enumerate(node_addrs)
        for i in range(nproc_per_node)
    ]


def worker_envs(
    *, nproc_per_node: int, nnodes: int, node_rank: int, master_addr: str, master_port: int
) -> list[dict[str, str]]:
    """``TF_CONFIG`` for each worker of this node. One machine: rank 0 at ``master_port``,
    the others on free ports. Several: the launchers first agree on every node's address
    (``node_addresses``), then each worker of node ``r`` gets ``cluster_workers``' list."""
    from multidev.distributed.launch import free_port, node_addresses

    if nnodes > 1:
        addrs = node_addresses(nnodes, node_rank, master_addr, master_port)
        workers = cluster_workers(addrs, nproc_per_node, master_port)
    else:
        ports = [master_port] + [free_port(master_addr) for _ in range(nproc_per_node - 1)]
        workers = [f"{master_addr}:{p}" for p in ports]
    first = node_rank * nproc_per_node
    return [{"TF_CONFIG": _tf_config(workers, first + r)} for r in range(nproc_per_node)]
