"""md.distributed on a cluster: each launcher's variables (srun, mpirun, PMI, TF_CONFIG, Paddle,
torchrun) give the rank, world size and rank-0 address, incomplete ones are a typed error (never
a silent world of one), and real worker processes started with only a launcher's variables
meet through the active backend's engine on 127.0.0.1. Also the rank-aware helpers:
``is_main_process``, ``md.save(..., rank=0)`` and the ``module.`` prefix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import multidev as md
from multidev import distributed as dist
from multidev.distributed.env import DEFAULT_PORT, detect, first_host
from multidev.distributed.launch import free_port

ROOT = Path(__file__).resolve().parents[1]
BK = md.get_backend()
ENGINE = dist.engine_module(BK)
LAUNCHER_PREFIXES = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_",
    "SLURM_",
    "OMPI_",
    "PMI_",
    "MPI_LOCAL",
    "TF_CONFIG",
    "PADDLE_",
    "DMLC_",
)


@pytest.mark.parametrize(
    ("nodes", "first"),
    [
        ("node07", "node07"),
        ("gpu[07-09,12],cpu3", "gpu07"),
        ("a,b,c", "a"),
        ("rack1-n[003,005]", "rack1-n003"),
        ("n[1-2]-ib", "n1-ib"),
        ("127.0.0.1", "127.0.0.1"),
    ],
)
def test_the_first_host_of_a_slurm_node_list(nodes, first):
    assert first_host(nodes) == first


def test_a_malformed_slurm_node_list_is_a_clear_error():
    with pytest.raises(dist.DistributedError, match="MASTER_ADDR"):
        first_host("node[01-02")


def test_srun_variables_give_rank_world_local_rank_and_the_first_node():
    env = {
        "SLURM_PROCID": "5",
        "SLURM_NTASKS": "8",
        "SLURM_LOCALID": "1",
        "SLURM_JOB_NODELIST": "gpu[03-06]",
        "SLURM_JOB_ID": "123456",
    }
    found = detect(env)
    assert (found.rank, found.world_size, found.local_rank) == (5, 8, 1)
    assert found.master_addr == "gpu03"
    port = found.master_port
    assert 15000 <= port < 35000 and detect(dict(env, SLURM_PROCID="0")).master_port == port
    assert detect(dict(env, SLURM_JOB_ID="123457")).master_port != port
    explicit = detect(dict(env, MASTER_ADDR="10.1.2.3", MASTER_PORT="4000"))
    assert (explicit.master_addr, explicit.master_port) == ("10.1.2.3", 4000)


@pytest.mark.parametrize(
    ("env", "per_machine"),
    [
        ({"RANK": "0", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2"}, 2),
        ({"RANK": "0", "WORLD_SIZE": "4"}, None),
        (
            {
                "SLURM_PROCID": "0",
                "SLURM_NTASKS": "8",
                "SLURM_LOCALID": "0",
                "SLURM_JOB_NODELIST": "n[1-2]",
                "SLURM_STEP_TASKS_PER_NODE": "4(x2)",
            },
            4,
        ),
        (  # nodes with different numbers of tasks: no one count
            {
                "SLURM_PROCID": "0",
                "SLURM_NTASKS": "3",
                "SLURM_LOCALID": "0",
                "SLURM_JOB_NODELIST": "n[1-2]",
                "SLURM_STEP_TASKS_PER_NODE": "2,1",
            },
            None,
        ),
        (
            {
                "OMPI_COMM_WORLD_RANK": "0",
                "OMPI_COMM_WORLD_SIZE": "2",
                "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
            },
            2,
        ),
        (
            {
                "PADDLE_TRAINER_ID": "0",
                "PADDLE_TRAINERS_NUM": "2",
                "PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:1,127.0.0.1:2",
                "PADDLE_LOCAL_SIZE": "2",
            },
            2,
        ),
    ],
)
def test_each_launcher_s_count_of_processes_per_machine(env, per_machine):
    assert detect(env).local_world_size == per_machine


@pytest.mark.parametrize(
    ("world", "per_machine", "gpus", "engine"),
    [
        (2, 2, 2, "nccl"),
        (2, 2, 1, "gloo"),  # two processes on one GPU: gloo on every rank, rank 0 too
        (2, 2, 0, "gloo"),
        (16, 8, 8, "nccl"),  # two machines of 8 GPUs
        (16, None, 8, "gloo"),  # no count per machine: the world size stands in
        (2, None, 2, "nccl"),
    ],
)
def test_every_rank_of_a_machine_picks_the_same_default_engine(world, per_machine, gpus, engine):
    picks = {
        dist.Job(
            r, world, r % (per_machine or world), "h", 1, None, 1.0, None, per_machine
        ).default_engine(gpus)
        for r in range(world)
    }
    assert picks == {engine}


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({"SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_JOB_NODELIST": "n1"}, "SLURM_NTASKS"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0"}, "SLURM_JOB_NODELIST"),
        ({"OMPI_COMM_WORLD_RANK": "1"}, "OMPI_COMM_WORLD_SIZE"),
        ({"PMI_SIZE": "4"}, "PMI_RANK"),
        ({"PADDLE_TRAINER_ID": "0", "PADDLE_TRAINERS_NUM": "2"}, "PADDLE_TRAINER_ENDPOINTS"),
        ({"RANK": "1"}, "WORLD_SIZE"),
        (
            {
                "OMPI_COMM_WORLD_RANK": "1",
                "OMPI_COMM_WORLD_SIZE": "4",
                "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
            },
            "MASTER_ADDR",
        ),
        (
            {"TF_CONFIG": '{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}}'},
            "TF_CONFIG",
        ),
        ({"TF_CONFIG": "{not json"}, "TF_CONFIG"),
        ({"SLURM_PROCID": "x", "SLURM_NTASKS": "2"}, "SLURM_PROCID"),
        (
            {
                "SLURM_PROCID": "2",
                "SLURM_NTASKS": "2",
                "SLURM_LOCALID": "0",
                "SLURM_JOB_NODELIST": "n1",
            },
            r"rank in \[0, world_size\)",
        ),
    ],
)
def test_incomplete_launcher_variables_are_a_typed_error_naming_what_is_missing(env, missing):
    with pytest.raises(dist.DistributedError, match=missing):
        detect(env)


def test_open_mpi_and_pmi_on_one_machine_meet_on_the_loopback_address():
    ompi = detect(
        {
            "OMPI_COMM_WORLD_RANK": "1",
            "OMPI_COMM_WORLD_SIZE": "2",
            "OMPI_COMM_WORLD_LOCAL_RANK": "1",
            "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
        }
    )
    assert (ompi.rank, ompi.world_size, ompi.local_rank) == (1, 2, 1)
    assert (ompi.master_addr, ompi.master_port) == ("127.0.0.1", DEFAULT_PORT)
    pmi = detect(
        {
            "PMI_RANK": "3",
            "PMI_SIZE": "4",
            "MPI_LOCALRANKID": "1",
            "MASTER_ADDR": "h0",
            "MASTER_PORT": "7000",
        }
    )
    assert (pmi.rank, pmi.world_size, pmi.local_rank, pmi.master_addr, pmi.master_port) == (
        3,
        4,
        1,
        "h0",
        7000,
    )


def test_tf_config_and_paddle_variables_name_every_endpoint():
    tf_config = {
        "cluster": {"chief": ["c:10"], "worker": ["w0:11", "w1:12"]},
        "task": {"type": "worker", "index": 1},
    }
    found = detect({"TF_CONFIG": json.dumps(tf_config)})
    assert (found.rank, found.world_size, found.master_addr, found.master_port) == (2, 3, "c", 10)
    assert found.endpoints == ("c:10", "w0:11", "w1:12")
    paddle = detect(
        {
            "PADDLE_TRAINER_ID": "1",
            "PADDLE_TRAINERS_NUM": "2",
            "PADDLE_TRAINER_ENDPOINTS": "h0:6170,h1:6171",
            "PADDLE_RANK_IN_NODE": "0",
        }
    )
    assert (paddle.rank, paddle.world_size, paddle.local_rank) == (1, 2, 0)
    assert (paddle.master_addr, paddle.master_port, paddle.endpoints) == (
        "h0",
        6170,
        ("h0:6170", "h1:6171"),
    )


def test_torchrun_variables_win_over_the_cluster_manager_s():
    found = detect(
        {
            "RANK": "1",
            "WORLD_SIZE": "2",
            "MASTER_PORT": "9",
            "SLURM_PROCID": "0",
            "SLURM_NTASKS": "1",
        }
    )
    assert (found.source, found.rank, found.world_size) == ("torchrun", 1, 2)
    assert detect({"PATH": "/bin"}) is None


def test_a_process_started_by_srun_never_becomes_a_silent_world_of_one(monkeypatch):
    for name in list(os.environ):
        if name.startswith(LAUNCHER_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SLURM_PROCID", "1")
    monkeypatch.setenv("SLURM_LOCALID", "1")
    with pytest.raises(dist.DistributedError, match="SLURM_NTASKS"):
        dist.init_process_group()
    assert not dist.is_initialized()


def test_outside_a_group_this_process_is_the_main_one_and_saves_with_rank(tmp_path):
    assert not dist.is_initialized() and dist.is_main_process()
    path = tmp_path / "x.safetensors"
    md.save({"x": md.ones((2,))}, path, rank=0)
    np.testing.assert_array_equal(md.load(path)["x"].numpy(), [1, 1])


def test_the_module_prefix_comes_off_and_goes_back_in_order():
    sd = {"module.0.weight": 1, "module.0.bias": 2, "head": 3}
    plain = dist.strip_prefix(sd)
    assert list(plain.items()) == [("0.weight", 1), ("0.bias", 2), ("head", 3)]
    assert list(dist.add_prefix(plain)) == ["module.0.weight", "module.0.bias", "module.head"]
    with pytest.raises(ValueError, match="'head'"):
        dist.strip_prefix({"module.head": 1, "head": 2})


WORKER = """
import json, sys
import multidev as md
from multidev import distributed as dist

dist.init_process_group(timeout=60)
rank, world = dist.get_rank(), dist.get_world_size()
t = md.full((3,), float(rank + 1))
dist.all_reduce(t)
md.save({{"t": t, "rank": md.full((1,), float(rank))}}, sys.argv[1], rank=0)
print(json.dumps({{"rank": rank, "world": world, "local": dist.get_local_rank(),
                  "sum": t.tolist(), "main": dist.is_main_process()}}))
dist.destroy_process_group()
"""


def _launcher_env(kind: str, rank: int, ports: list[int]) -> dict[str, str]:
    """What each launcher puts in a worker's environment, for 2 ranks on this machine."""
    if kind == "srun":
        return {
            "SLURM_PROCID": str(rank),
            "SLURM_NTASKS": "2",
            "SLURM_LOCALID": str(rank),
            "SLURM_JOB_NODELIST": "127.0.0.1",
            "MASTER_PORT": str(ports[0]),
        }
    if kind == "mpirun":
        return {
            "OMPI_COMM_WORLD_RANK": str(rank),
            "OMPI_COMM_WORLD_SIZE": "2",
            "OMPI_COMM_WORLD_LOCAL_RANK": str(rank),
            "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
            "MASTER_PORT": str(ports[0]),
        }
    if kind == "pmi":
        return {
            "PMI_RANK": str(rank),
            "PMI_SIZE": "2",
            "MPI_LOCALRANKID": str(rank),
            "MPI_LOCALNRANKS": "2",
            "MASTER_PORT": str(ports[0]),
        }
    if kind == "tf_config":
        workers = [f"127.0.0.1:{p}" for p in ports]
        return {
            "TF_CONFIG": json.dumps(
                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}}
            )
        }
    endpoints = ",".join(f"127.0.0.1:{p}" for p in ports)
    return {
        "PADDLE_TRAINER_ID": str(rank),
        "PADDLE_TRAINERS_NUM": "2",
        "PADDLE_TRAINER_ENDPOINTS": endpoints,
        "PADDLE_CURRENT_ENDPOINT": endpoints.split(",")[rank],
        "PADDLE_RANK_IN_NODE": str(rank),
    }


@pytest.mark.skipif(ENGINE is None, reason=f"{BK} has no distributed engine")
@pytest.mark.parametrize("kind", ["srun", "mpirun", "pmi", "tf_config", "paddle"])
def test_workers_started_with_only_a_launcher_s_variables_meet(kind, tmp_path):
    base = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    paths = [str(ROOT / "src"), str(ROOT / "backends"), base.get("PYTHONPATH", "")]
    base.update(
        MULTIDEV_BACKEND=BK,
        PYTHONPATH=os.pathsep.join(p for p in paths if p),
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    ports = [free_port(), free_port()]
    if kind in ("tf_config", "paddle"):  # the first endpoint is the rank-0 address
        ports[1] = ports[0] + 1 if ports[0] < 65000 else free_port()
    out = tmp_path / "ckpt.safetensors"
    helpers = getattr(ENGINE, "helper_processes", None)
    procs = []
    try:
        if helpers is not None:  # MXNet: its scheduler and server, as `multidev launch` starts
            for h in helpers(
                nnodes=1, node_rank=0, world_size=2, master_addr="127.0.0.1", master_port=ports[0]
            ):
                procs.append(
                    subprocess.Popen(
                        h.cmd,
                        env={**base, **h.env},
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", WORKER.format(), str(out)],
                env={**base, **_launcher_env(kind, r, ports)},
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for r in (0, 1)
        ]
        procs += workers
        results = [w.communicate(timeout=240) for w in workers]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)
    for w, (_, stderr) in zip(workers, results, strict=True):
        assert w.returncode == 0, stderr[-3000:]
    seen = sorted(
        (json.loads(stdout.strip().splitlines()[-1]) for stdout, _ in results),
        key=lambda r: r["rank"],
    )
    assert [(r["rank"], r["world"], r["main"]) for r in seen] == [(0, 2, True), (1, 2, False)]
    assert all(r["sum"] == [3.0, 3.0, 3.0] for r in seen)
    assert md.load(out)["rank"].tolist() == [0.0]
