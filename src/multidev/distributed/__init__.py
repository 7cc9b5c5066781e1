"""Several processes (one per device, on one or several machines), each framework's own engine.

``init_process_group()`` reads what the launcher (``multidev launch``, torchrun, …) put in the
environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``) and
starts the active backend's engine: ``torch.distributed`` (gloo on CPU, NCCL on GPU),
TensorFlow's ``MultiWorkerMirroredStrategy`` collectives (``TF_CONFIG``), ``paddle.distributed``
(gloo on CPU, NCCL on GPU), MXNet's ``dist_sync`` kvstore. multidev adds no communication of
its own: ``all_reduce``, ``broadcast`` and ``barrier`` are the engine's. Without any launcher
variable, the process is rank 0 of 1 and every collective returns its input.

``DistributedDataParallel(net)`` is the one-line change from single-process training: it
checks that every rank built the same model, copies rank 0's parameters to every rank, and
after each ``loss.backward()`` averages the gradients across ranks (flattened into buckets,
one engine all-reduce per bucket). ``DistributedSampler`` gives each rank its shard of a
dataset. What differs per framework lives in ``multidev_<backend>.distributed``.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
from typing import Any

from .. import registry
from ..contract import Engine
from ..device import Device
from ..dispatch import new_tensor as _new_tensor
from ..errors import BackendError
from ..tensors import Tensor
from .ddp import DistributedDataParallel
from .env import detect
from .group import DistributedError, Group, Job, LocalGroup, bounded_start
from .sampler import DistributedSampler

__all__ = [
    "DistributedDataParallel",
    "DistributedError",
    "DistributedSampler",
    "add_prefix",
    "all_reduce",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "device",
    "get_local_rank",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "is_initialized",
    "is_main_process",
    "recorded_sum",
    "strip_prefix",
]

_group: Group | None = None

#: the environment variable that sets the collective timeout (seconds) where the script
#: passes none to ``init_process_group``
TIMEOUT_ENV = "MULTIDEV_DIST_TIMEOUT"
#: the collective timeout without either (seconds): a hung rank ends the job within it plus
#: a few seconds of teardown, under a minute
DEFAULT_TIMEOUT = 45.0


def engine_module(bk: Any) -> Engine | None:
    """The engine of adapter ``bk`` (or of the backend called ``bk``): its package's
    ``distributed`` module read through ``contract.DistributedEngine`` (hooks it lacks are
    their declared defaults); None where the backend has none (NumPy)."""
    backend = bk if isinstance(bk, str) else bk.name
    package = registry.adapter_package(backend)
    if package is None:
        return None
    name = f"{package}.distributed"
    try:
        return Engine(importlib.import_module(name))
    except ModuleNotFoundError as e:
        if e.name not in (name, package):
            raise
        return None


def engine_backends() -> list[str]:
    """The registered backends whose adapter has a distributed engine (found without
    importing their frameworks)."""
    out = []
    for backend in registry.registered_backends():
        package = registry.adapter_package(backend)
        try:
            if package and importlib.util.find_spec(f"{package}.distributed") is not None:
                out.append(backend)
        except (ImportError, ValueError):
            continue
    return out


def no_engine(name: str) -> BackendError:
    """The error for a backend without a distributed engine, naming those that have one."""
    return BackendError(
        f"Expected a backend with a distributed engine ({', '.join(engine_backends())}). "
        f"Received: {name}. Select one with MULTIDEV_BACKEND."
    )


def _backend_name() -> str:
    """The active backend's name, without building its adapter when none is built yet (an
    engine may need to start before the framework's runtime does: TensorFlow)."""
    if registry._context.get() is None and registry._global is None:
        return os.environ.get(registry.ENV, "").strip() or registry.DEFAULT
    return registry.get_backend()


def _env_int(name: str, given: int | None) -> int | None:
    if given is not None:
        return int(given)
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise DistributedError(
            f"Expected an integer in the environment variable {name}. Received: {value!r}. "
            "Start the workers with `multidev launch` or torchrun, which set it."
        ) from None


def _timeout(given: float | None) -> float:
    """The collective timeout in seconds: ``given``, else ``MULTIDEV_DIST_TIMEOUT``, else 45."""
    if given is None:
        text = os.environ.get(TIMEOUT_ENV, "").strip()
        if not text:
            return DEFAULT_TIMEOUT
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise DistributedError(
                f"Expected a number of seconds > 0 in {TIMEOUT_ENV}. Received: {text!r}. Set it "
                f"to the longest time a rank may wait for the others (default {DEFAULT_TIMEOUT:g})."
            )
        return value
    if (
        isinstance(given, bool)
        or not isinstance(given, (int, float))
        or not math.isfinite(given)
        or given <= 0
    ):
        raise ValueError(
            f"Expected timeout= a number of seconds > 0. Received: {given!r}. Pass the longest "
            "time a rank may wait for the others, or None for MULTIDEV_DIST_TIMEOUT or "
            f"{DEFAULT_TIMEOUT:g} s."
        )
    return float(given)


def init_process_group(
    backend: str | None = None,
    *,
    rank: int | None = None,
    world_size: int | None = None,
    local_rank: int | None = None,
    master_addr: str | None = None,
    master_port: int | None = None,
    timeout: float | None = None,
) -> None:
    """Join the group of worker processes through the active backend's engine.

    Arguments default to the launcher's environment: ``RANK``, ``WORLD_SIZE``,
    ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT`` (``multidev launch``, torchrun,
    Kubeflow), else SLURM's ``srun``, Open MPI or PMI (``mpirun``), ``TF_CONFIG`` or Paddle's
    launcher variables (see ``multidev.distributed.env``); with none of them the process is
    rank 0 of 1. ``backend`` picks the engine's
    transport where it has several (``"gloo"`` or ``"nccl"`` on torch and paddle; default:
    NCCL when this process has a GPU, else gloo). ``timeout`` (seconds; default
    ``MULTIDEV_DIST_TIMEOUT``, else 45) bounds the start-up meeting and every wait of a
    collective for the other ranks: a rank that stopped or hangs makes the others fail
    within it (Paddle's gloo keeps its own 30 s per collective; MXNet's kvstore, which has
    no timeout, ends the waiting worker with exit code 1). Call it first thing in the script
    (TensorFlow must configure its collectives before other work). Raises DistributedError
    when called twice, with an inconsistent rank and world size, or when a launcher's
    variables are present but incomplete (never a silent world of one); BackendError on a
    backend without an engine.
    """
    global _group
    if _group is not None:
        raise DistributedError(
            "Expected init_process_group() once per process. Received: a second call. "
            "Call destroy_process_group() first to start a new group."
        )
    seconds = _timeout(timeout)
    endpoints = None
    world: int | None
    local: int | None
    local_world: int | None
    if rank is None and world_size is None:
        found = detect(os.environ)
        if found is None:
            _group = LocalGroup()
            return
        rank, world, local = found.rank, found.world_size, found.local_rank
        addr = master_addr or found.master_addr or "127.0.0.1"
        port = found.master_port if master_port is None else int(master_port)
        endpoints, local_world = found.endpoints, found.local_world_size
    else:
        rank = _env_int("RANK", rank)
        world = _env_int("WORLD_SIZE", world_size)
        local = _env_int("LOCAL_RANK", local_rank)
        local_world = _env_int("LOCAL_WORLD_SIZE", None)
        addr = master_addr or os.environ.get("MASTER_ADDR") or "127.0.0.1"
        port = _env_int("MASTER_PORT", master_port)
    if local_rank is not None:
        local = int(local_rank)
    if world is None or rank is None or not 0 <= rank < world:
        raise DistributedError(
            f"Expected a rank in [0, world_size). Received: rank={rank}, world_size={world}. "
            "Start the workers with `multidev launch --nproc-per-node N script.py`, or pass "
            "both rank= and world_size=."
        )
    if port is None:
        raise DistributedError(
            "Expected MASTER_PORT (the rank-0 port) in the environment or as master_port=. "
            "Received: none. `multidev launch` sets it."
        )
    name = _backend_name()
    engine = engine_module(name)
    if engine is None:
        raise no_engine(name)
    with bounded_start(f"{name} backend", rank, seconds):
        _group = engine.start(
            Job(
                rank=rank,
                world_size=world,
                local_rank=rank if local is None else local,
                master_addr=addr,
                master_port=port,
                backend=backend,
                timeout=seconds,
                endpoints=endpoints,
                local_world_size=local_world,
            )
        )


def is_initialized() -> bool:
    """Whether ``init_process_group()`` ran (and ``destroy_process_group()`` did not)."""
    return _group is not None


def is_main_process() -> bool:
    """Whether this process is rank 0, or runs alone (no process group): the one that should
    print, log and write files that every rank would otherwise write alike."""
    return _group is None or _group.rank == 0


def strip_prefix(state_dict: dict[str, Any], prefix: str = "module.") -> dict[str, Any]:
    """A copy of ``state_dict`` whose keys lose ``prefix`` where they start with it (the
    ``module.`` that a data-parallel wrapper's ``state_dict()`` adds), in the same order: load
    a ``DistributedDataParallel`` checkpoint into the plain model. Raises ValueError when two
    keys would become one."""
    out: dict[str, Any] = {}
    for key, value in state_dict.items():
        new = key[len(prefix) :] if key.startswith(prefix) else key
        if new in out:
            raise ValueError(
                f"Expected keys that stay distinct without the prefix {prefix!r}. Received: "
                f"{key!r} and another key that both become {new!r}."
            )
        out[new] = value
    return out


def add_prefix(state_dict: dict[str, Any], prefix: str = "module.") -> dict[str, Any]:
    """A copy of ``state_dict`` with ``prefix`` before every key, in the same order: load a
    plain model's checkpoint into a ``DistributedDataParallel`` wrapper."""
    return {prefix + key: value for key, value in state_dict.items()}


def group() -> Group:
    """The process group (its ``engine`` name; the native object where one exists:
    ``strategy`` on TensorFlow, ``kv`` on MXNet); raises DistributedError before
    ``init_process_group()``."""
    if _group is None:
        raise DistributedError(
            "Expected md.distributed.init_process_group() to run first. Received: a call that "
            "needs the process group before it. Call init_process_group() at the start of "
            "the script."
        )
    return _group


def get_rank() -> int:
    """This process's rank in [0, world_size) (the engine's own numbering)."""
    return group().rank


def get_world_size() -> int:
    """The number of processes in the group."""
    return group().world_size


def get_local_rank() -> int:
    """This process's index among the processes on its machine (which GPU it uses)."""
    return group().local_rank


def device() -> Device:
    """The device this rank computes on (``gpu(local_rank)`` with NCCL, else the CPU)."""
    return group().device


def barrier() -> None:
    """Wait until every rank reaches this point (bounded by the group's timeout where the
    engine allows it)."""
    group().barrier()


def _check_tensor(t: Any, what: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"Expected an md.Tensor for {what}. Received: {type(t).__name__}")
    return t


def all_reduce(tensor: Tensor, op: str = "sum") -> Tensor:
    """Sum (``op="sum"``) or average (``op="mean"``) ``tensor`` over every rank; the result
    is written into ``tensor`` and returned. Every rank must call it with the same shape."""
    t = _check_tensor(tensor, "all_reduce")
    if op not in ("sum", "mean"):
        raise ValueError(f"Expected op 'sum' or 'mean'. Received: {op!r}")
    g = group()
    native = g.all_reduce(t._native)
    out = _new_tensor(native, t._bk, t._dev, t._dtype)
    if op == "mean":
        out = out / g.world_size
    if out._native is not t._native:
        t[...] = out
    return t


def broadcast(tensor: Tensor, src: int = 0) -> Tensor:
    """Copy rank ``src``'s values of ``tensor`` into ``tensor`` on every rank; returns it."""
    t = _check_tensor(tensor, "broadcast")
    g = group()
    if not 0 <= src < g.world_size:
        raise ValueError(f"Expected src in [0, {g.world_size}). Received: {src}")
    native = g.broadcast(t._native, src)
    if native is not t._native:
        t[...] = _new_tensor(native, t._bk, t._dev, t._dtype)
    return t


def destroy_process_group() -> None:
    """Leave the group and release the engine's resources."""
    global _group
    g, _group = _group, None
    if g is not None:
        g.close()


def recorded_sum(tensor: Tensor, g: Group | None = None) -> Tensor:
    """A new tensor: the sum of ``tensor`` over every rank of ``g`` (default: the process
    group), recorded by autograd, whose gradient is the sum over the ranks of the gradient
    that reaches it (the gradient of the sum of every rank's loss), as
    ``torch.distributed.nn.functional.all_reduce``: what ``nn.SyncBatchNorm`` reduces its
    statistics with. Every rank must call it with the same shape, and run the backward pass
    through it too. Raises DistributedError before ``init_process_group()``, BackendError
    on an engine without a recorded all-reduce."""
    t = _check_tensor(tensor, "recorded_sum")
    g = group() if g is None else g
    if g.world_size == 1:
        return t + 0
    engine = engine_module(t._bk)
    make = None if engine is None else engine.recorded_all_reduce
    if make is None:
        raise BackendError(
            f"Expected an engine with a differentiable all-reduce. Received: {t._bk.name}, "
            "whose engine module has no recorded_all_reduce."
        )
    return _new_tensor(make(g, t._native), t._bk, t._dev, t._dtype)
