"""Which launcher started this process, read from the variables it set.

Each cluster launcher names ranks in its own variables: torchrun, Kubeflow's PyTorchJob and
``multidev launch`` set ``RANK``/``WORLD_SIZE``; ``srun`` sets ``SLURM_PROCID``/``SLURM_NTASKS``;
Open MPI's ``mpirun`` sets ``OMPI_COMM_WORLD_*``; MPICH and Intel MPI (PMI) set ``PMI_RANK``/
``PMI_SIZE``; a Kubernetes TFJob sets ``TF_CONFIG``; Paddle's launcher sets ``PADDLE_TRAINER_*``.
:func:`detect` turns whichever is present into one :class:`Launch`, in that order of precedence,
and raises :class:`DistributedError` naming the variables it found when they are incomplete or
contradictory: a process that a launcher started never silently becomes a world of one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .group import DistributedError

__all__ = ["Launch", "detect", "first_host"]

#: the rank-0 port used when a launcher that names no port started every rank on one machine
#: (torchrun's default)
DEFAULT_PORT = 29500


@dataclass(frozen=True)
class Launch:
    """This process's place in the job, as a launcher described it. ``endpoints`` lists every
    rank's ``host:port`` where the launcher gives them (``TF_CONFIG``, Paddle), else None."""

    source: str
    rank: int
    world_size: int
    local_rank: int
    master_addr: str | None
    master_port: int | None
    endpoints: tuple[str, ...] | None = None
    local_world_size: int | None = None


def first_host(nodelist: str) -> str:
    """The first host of a SLURM node list: ``"gpu[07-09,12],cpu3"`` -> ``"gpu07"``."""
    text = nodelist.strip()
    depth = 0
    for i, ch in enumerate(text):  # the first entry ends at the first comma outside brackets
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            text = text[:i]
            break
    m = re.fullmatch(r"([^\[\]]*)\[([^\]]+)\](.*)", text)
    if m:
        text = m[1] + re.split(r"[,-]", m[2])[0] + m[3]
    if not text or "[" in text or "]" in text:
        raise DistributedError(
            f"Expected a SLURM node list such as 'node[01-04]' or 'a,b'. Received: {nodelist!r}. "
            "Set MASTER_ADDR to the first node's address instead."
        )
    return text


def _int(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise DistributedError(
            f"Expected an integer in the environment variable {name}. Received: {value!r}. "
            "Start the workers through a launcher that sets it (multidev launch, torchrun, "
            "srun, mpirun), or unset it."
        ) from None


def _found(env: Mapping[str, str], prefix: str) -> str:
    names = sorted(k for k in env if k.startswith(prefix))
    return ", ".join(f"{k}={env[k]}" for k in names) or "none"


def _need(source: str, env: Mapping[str, str], prefix: str, **values: int | None) -> None:
    missing = [k for k, v in values.items() if v is None]
    if missing:
        raise DistributedError(
            f"Expected {', '.join(missing)} in the environment that {source} sets. Received: "
            f"{_found(env, prefix)}. Start every worker through {source}, or pass rank= and "
            "world_size= to init_process_group()."
        )


def _master(
    source: str, env: Mapping[str, str], one_node: bool, host: str | None = None
) -> tuple[str, int]:
    """MASTER_ADDR/MASTER_PORT where set, else ``host`` (or the loopback address when every
    rank runs on this machine) and torchrun's default port."""
    addr = env.get("MASTER_ADDR", "").strip() or host or ("127.0.0.1" if one_node else None)
    if addr is None:
        raise DistributedError(
            f"Expected MASTER_ADDR (the address of the machine of rank 0): {source} gives ranks "
            "but not that address, and the ranks run on several machines. Received: no "
            "MASTER_ADDR. Export MASTER_ADDR (and MASTER_PORT) to every rank, e.g. "
            "`mpirun -x MASTER_ADDR=host0 -x MASTER_PORT=29500 …`."
        )
    port = _int(env, "MASTER_PORT")
    return addr, DEFAULT_PORT if port is None else port


def _slurm_port(env: Mapping[str, str]) -> int | None:
    """A port every task of a SLURM job derives alike from the job id (15000-34999), so
    that two jobs sharing a node are unlikely to meet on one port."""
    job = _int(env, "SLURM_JOB_ID")
    return None if job is None else 15000 + job % 20000


def _endpoint(text: str, variable: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DistributedError(
            f"Expected host:port entries (port in 1-65535) in {variable}. Received: {text!r}."
        )
    return host, int(port)


def _torchrun(env: Mapping[str, str]) -> Launch | None:
    rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
    if rank is None and world is None:
        return None
    local = _int(env, "LOCAL_RANK")
    port = _int(env, "MASTER_PORT")
    addr = env.get("MASTER_ADDR", "").strip() or "127.0.0.1"
    if world is None or rank is None:
        raise DistributedError(
            f"Expected both RANK and WORLD_SIZE. Received: RANK={env.get('RANK')}, "
            f"WORLD_SIZE={env.get('WORLD_SIZE')}. Start the workers with `multidev launch "
            "--nproc-per-node N script.py` or torchrun, or pass both rank= and world_size=."
        )
    local_world = _int(env, "LOCAL_WORLD_SIZE")
    return Launch(
        "torchrun", rank, world, rank if local is None else local, addr, port, None, local_world
    )


def _slurm(env: Mapping[str, str]) -> Launch | None:
    if "SLURM_PROCID" not in env:
        return None
    rank = _int(env, "SLURM_PROCID")
    world = _int(env, "SLURM_NTASKS")
    if world is None:
        world = _int(env, "SLURM_NPROCS")
    local = _int(env, "SLURM_LOCALID")
    _need("srun", env, "SLURM_", SLURM_PROCID=rank, SLURM_NTASKS=world, SLURM_LOCALID=local)
    nodes = (
        env.get("SLURM_STEP_NODELIST")
        or env.get("SLURM_JOB_NODELIST")
        or env.get("SLURM_NODELIST", "")
    )
    host = first_host(nodes) if nodes.strip() else None
    if host is None and not env.get("MASTER_ADDR"):
        raise DistributedError(
            "Expected SLURM_JOB_NODELIST (or MASTER_ADDR) to find the machine of rank 0. "
            f"Received: {_found(env, 'SLURM_')}. Start the job with srun, or export MASTER_ADDR."
        )
    addr = env.get("MASTER_ADDR", "").strip() or host
    port = _int(env, "MASTER_PORT")
    port = port if port is not None else _slurm_port(env)
    assert rank is not None and world is not None and local is not None and addr
    # tasks per node, where every node has the same number: "4", or "4(x2)" for two nodes
    per_node = re.fullmatch(
        r"(\d+)(\(x\d+\))?",
        (env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_NTASKS_PER_NODE") or "").strip(),
    )
    return Launch(
        "srun",
        rank,
        world,
        local,
        addr,
        DEFAULT_PORT if port is None else port,
        None,
        int(per_node[1]) if per_node else None,
    )


def _mpi(env: Mapping[str, str]) -> Launch | None:
    if "OMPI_COMM_WORLD_RANK" in env or "OMPI_COMM_WORLD_SIZE" in env:
        source, prefix = "Open MPI's mpirun", "OMPI_COMM_WORLD_"
        rank, world = _int(env, "OMPI_COMM_WORLD_RANK"), _int(env, "OMPI_COMM_WORLD_SIZE")
        local = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK")
        local_size = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE")
        _need(source, env, prefix, OMPI_COMM_WORLD_RANK=rank, OMPI_COMM_WORLD_SIZE=world)
    elif "PMI_RANK" in env or "PMI_SIZE" in env:
        source, prefix = "the MPI launcher (PMI)", "PMI_"
        rank, world = _int(env, "PMI_RANK"), _int(env, "PMI_SIZE")
        local, local_size = _int(env, "MPI_LOCALRANKID"), _int(env, "MPI_LOCALNRANKS")
        _need(source, env, prefix, PMI_RANK=rank, PMI_SIZE=world)
    else:
        return None
    assert rank is not None and world is not None
    addr, port = _master(source, env, one_node=local_size == world)
    return Launch(
        source, rank, world, rank if local is None else local, addr, port, None, local_size
    )


def _tf_config(env: Mapping[str, str]) -> Launch | None:
    text = env.get("TF_CONFIG", "").strip()
    if not text:
        return None
    try:
        config = json.loads(text)
        cluster, task = config["cluster"], config["task"]
        roles = {"chief": list(cluster.get("chief", [])), "worker": list(cluster["worker"])}
        kind, index = str(task["type"]), int(task["index"])
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise DistributedError(
            "Expected TF_CONFIG as JSON with cluster.worker (a list of host:port) and task.type "
            f"and task.index. Received: {text[:200]!r} ({type(e).__name__}: {e}). Fix or unset "
            "TF_CONFIG."
        ) from None
    if kind not in roles or not 0 <= index < len(roles[kind]):
        raise DistributedError(
            "Expected TF_CONFIG's task to be one of its chief or worker entries (multidev "
            f"trains with all-reduce: every task is a worker). Received: task {kind!r} index "
            f"{index} with {len(roles['chief'])} chief and {len(roles['worker'])} workers."
        )
    endpoints = tuple(roles["chief"] + roles["worker"])
    rank = index + (len(roles["chief"]) if kind == "worker" else 0)
    host, port = _endpoint(endpoints[0], "TF_CONFIG")
    local = _int(env, "LOCAL_RANK")
    return Launch(
        "TF_CONFIG", rank, len(endpoints), 0 if local is None else local, host, port, endpoints
    )


def _paddle(env: Mapping[str, str]) -> Launch | None:
    if "PADDLE_TRAINER_ID" not in env and "PADDLE_TRAINERS_NUM" not in env:
        return None
    rank, world = _int(env, "PADDLE_TRAINER_ID"), _int(env, "PADDLE_TRAINERS_NUM")
    listed = [e.strip() for e in env.get("PADDLE_TRAINER_ENDPOINTS", "").split(",") if e.strip()]
    _need(
        "Paddle's launcher",
        env,
        "PADDLE_",
        PADDLE_TRAINER_ID=rank,
        PADDLE_TRAINERS_NUM=world,
        PADDLE_TRAINER_ENDPOINTS=len(listed) or None,
    )
    assert rank is not None and world is not None
    if len(listed) != world:
        raise DistributedError(
            f"Expected PADDLE_TRAINER_ENDPOINTS to list {world} endpoints (PADDLE_TRAINERS_NUM). "
            f"Received: {len(listed)}: {','.join(listed)}."
        )
    local = _int(env, "PADDLE_RANK_IN_NODE")
    host, port = _endpoint(listed[0], "PADDLE_TRAINER_ENDPOINTS")
    return Launch(
        "Paddle's launcher",
        rank,
        world,
        rank if local is None else local,
        host,
        port,
        tuple(listed),
        _int(env, "PADDLE_LOCAL_SIZE"),
    )


def detect(env: Mapping[str, str]) -> Launch | None:
    """This process's rank, world size, local rank and rank-0 address from the first launcher
    whose variables are present (``RANK``/``WORLD_SIZE``, SLURM, Open MPI, PMI, ``TF_CONFIG``,
    Paddle); None when none is. Raises DistributedError for incomplete or invalid variables."""
    for reader in (_torchrun, _slurm, _mpi, _tf_config, _paddle):
        found = reader(env)
        if found is not None:
            if not 0 <= found.rank < found.world_size:
                raise DistributedError(
                    f"Expected a rank in [0, world_size). Received: rank={found.rank}, "
                    f"world_size={found.world_size} (from {found.source}). Start the workers "
                    "with `multidev launch --nproc-per-node N script.py`, or pass both rank= "
                    "and world_size=."
                )
            return found
    return None
