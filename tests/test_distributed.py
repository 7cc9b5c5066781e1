"""md.distributed on the active backend: the sampler and the single-process group in this
process; the engine itself through `multidev launch` with 2 worker processes on 127.0.0.1
(free ports, every wait bounded by a subprocess timeout)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_ranks_match

import multidev as md
from multidev import distributed as dist
from multidev import nn

ROOT = Path(__file__).resolve().parents[1]
BK = md.get_backend()
ENGINE = dist.engine_module(BK) is not None
AUTOGRAD = "autograd" in md.registry.current().capabilities
#: bound on a whole 2-worker run (two framework imports on a busy 2-core machine)
RUN_TIMEOUT = 300
#: how long the others may take to stop once a worker died, on top of starting up
DEATH_TIMEOUT = 60

needs_engine = pytest.mark.skipif(not ENGINE, reason=f"{BK} has no distributed engine")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "TF_CONFIG")}
    paths = [str(ROOT / "src"), str(ROOT / "backends"), env.get("PYTHONPATH", "")]
    env.update(MULTIDEV_BACKEND=BK, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    return env


def _launch(args: list[str], timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "2", *args]
    return subprocess.run(
        cmd, env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_sampler_gives_each_rank_a_disjoint_share_padded_to_equal_length():
    shares = [list(dist.DistributedSampler(range(7), num_replicas=2, rank=r)) for r in (0, 1)]
    assert [len(s) for s in shares] == [4, 4]
    assert sorted(set(shares[0]) | set(shares[1])) == list(range(7))
    again = list(dist.DistributedSampler(range(7), num_replicas=2, rank=0))
    assert again == shares[0]
    later = [dist.DistributedSampler(range(7), num_replicas=2, rank=r) for r in (0, 1)]
    for s in later:
        s.set_epoch(1)
    assert [list(s) for s in later] != shares
    assert sorted(set(later[0]) | set(later[1])) == list(range(7))
    plain = list(dist.DistributedSampler(range(6), num_replicas=2, rank=1, shuffle=False))
    assert plain == [1, 3, 5]
    assert len(dist.DistributedSampler(range(7), num_replicas=2, rank=1, drop_last=True)) == 3


def test_sampler_rejects_a_rank_outside_the_group():
    with pytest.raises(ValueError, match="0 <= rank < num_replicas"):
        dist.DistributedSampler(range(4), num_replicas=2, rank=2)


def test_without_a_launcher_the_process_is_rank_0_of_1(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    dist.init_process_group()
    try:
        assert (dist.get_rank(), dist.get_world_size(), dist.is_initialized()) == (0, 1, True)
        t = md.asarray(np.arange(3, dtype=np.float32))
        np.testing.assert_array_equal(dist.all_reduce(t).numpy(), [0, 1, 2])
        np.testing.assert_array_equal(dist.broadcast(t, 0).numpy(), [0, 1, 2])
        with pytest.raises(dist.DistributedError, match="once per process"):
            dist.init_process_group()
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
    with pytest.raises(dist.DistributedError, match="init_process_group"):
        dist.get_rank()


def test_inconsistent_rank_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(dist.DistributedError, match=r"rank in \[0, world_size\)"):
        dist.init_process_group()
    assert not dist.is_initialized()


def _example():
    spec = importlib.util.spec_from_file_location("ddp_mlp", ROOT / "examples" / "ddp_mlp.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@needs_engine
@pytest.mark.skipif(not AUTOGRAD, reason=f"{BK} has no autograd")
def test_two_processes_on_half_batches_end_like_one_on_the_whole_batch(tmp_path, monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert _example().main(["--out-dir", str(tmp_path / "one")]) == 0
    # 1 KiB buckets: the first layer's weight alone, then the rest (several all-reduces a step)
    args = ["--bucket-cap-mb", str(1 / 1024), "--out-dir", str(tmp_path / "two")]
    res = _launch(["examples/ddp_mlp.py", *args])
    assert res.returncode == 0, res.stdout + res.stderr
    assert_ranks_match(tmp_path / "one", tmp_path / "two")


KILLED = """
import os, signal
import multidev as md
from multidev import distributed as dist

dist.init_process_group(timeout={timeout})
t = md.ones((4,))
for step in range(100000):
    if step == 3 and dist.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(t)
    t = md.ones((4,))
"""


@needs_engine
def test_a_killed_worker_stops_the_others_with_a_clear_error(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text(KILLED.format(timeout=DEATH_TIMEOUT))
    res = _launch([str(script)], timeout=RUN_TIMEOUT + DEATH_TIMEOUT)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "multidev launch:" in out and "stopping the other processes" in out
    # torch: read from torchrun's own report of the first failure (its exit code -9)
    assert "first failure: rank 1 (node 0) was killed by signal SIGKILL." in out, out


MISMATCH = """
import multidev as md
from multidev import distributed as dist, nn

dist.init_process_group()
net = nn.Sequential(nn.Linear(3, 4 + dist.get_rank()), nn.ReLU(), nn.Linear(4 + dist.get_rank(), 1))
dist.DistributedDataParallel(net)
"""


@needs_engine
def test_ranks_with_different_models_get_a_clear_error(tmp_path):
    script = tmp_path / "mismatch.py"
    script.write_text(MISMATCH)
    res = _launch([str(script)])
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "Expected every rank to build the same model" in out
    assert "0.weight (4, 3) float32" in out or "0.weight (5, 3) float32" in out


BUFFERS = """
import json
import sys
import numpy as np
import multidev as md
from multidev import distributed as dist, nn

dist.init_process_group()
rank = dist.get_rank()
net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
X = md.asarray(np.random.default_rng(rank).standard_normal((8, 3)).astype(np.float32))
for _ in range(1 + 2 * rank):  # each rank's own running statistics and batch count
    net(X)
before = {k: b.numpy().tolist() for k, b in net.named_buffers()}
net = dist.DistributedDataParallel(net)
after = {k: b.numpy().tolist() for k, b in net.module.named_buffers()}
sys.stdout.write(f"BUFFERS {rank} {json.dumps([before, after])}\\n")
dist.barrier()
dist.destroy_process_group()
"""


@needs_engine
def test_ddp_gives_every_rank_the_buffers_of_rank_0_integers_too(tmp_path):
    """BatchNorm's int64 ``num_batches_tracked`` included (it aborted MXNet's kvstore server,
    which sums floating-point arrays only)."""
    script = tmp_path / "buffers.py"
    script.write_text(BUFFERS)
    res = _launch([str(script)])
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    got = {}
    for line in out.splitlines():
        if "BUFFERS " in line:
            rank, value = line.split("BUFFERS ", 1)[1].split(" ", 1)
            got[int(rank)] = json.loads(value)
    assert sorted(got) == [0, 1], out
    (before0, after0), (before1, after1) = got[0], got[1]
    assert before0["1.num_batches_tracked"] == 1 and before1["1.num_batches_tracked"] == 3, out
    assert before0["1.running_mean"] != before1["1.running_mean"], out
    assert after0 == after1 == before0, out


def test_ddp_needs_a_process_group(monkeypatch):
    if dist.is_initialized():
        pytest.skip("a process group is running")
    with pytest.raises(dist.DistributedError, match="init_process_group"):
        dist.DistributedDataParallel(nn.Linear(2, 1))


def test_launch_without_an_engine_or_script_is_a_clear_error():
    from multidev.distributed.launch import launch

    with pytest.raises(ValueError, match="Expected a script"):
        launch([], nproc_per_node=2)
    with pytest.raises(md.BackendError, match="distributed engine"):
        launch(["x.py"], nproc_per_node=2, backend="numpy")


ENGINE_NAME = """
from multidev import distributed as dist

dist.init_process_group()
print("engine", dist.group().engine, "device", dist.device())
dist.barrier()
"""


@pytest.mark.gpu
@pytest.mark.skipif(md.num_gpus() < 2, reason="needs two GPUs: num_gpus() < 2")
@pytest.mark.skipif(BK not in ("torch", "paddle"), reason="NCCL is torch's and paddle's")
def test_processes_on_gpus_use_nccl_one_gpu_each(tmp_path):
    script = tmp_path / "engine.py"
    script.write_text(ENGINE_NAME)
    res = _launch([str(script)])
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "engine nccl device gpu:0" in out and "engine nccl device gpu:1" in out


@pytest.mark.gpu
@pytest.mark.skipif(md.num_gpus() < 2, reason="needs two GPUs: num_gpus() < 2")
@pytest.mark.skipif(BK not in ("torch", "paddle"), reason="NCCL is torch's and paddle's")
def test_two_gpu_processes_on_half_batches_end_like_one_on_the_whole_batch(tmp_path, monkeypatch):
    """The NCCL path of DistributedDataParallel (one GPU a rank, gradients bucketed and averaged
    by NCCL all-reduces) ends where one process on the whole batch does."""
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert _example().main(["--out-dir", str(tmp_path / "one")]) == 0
    args = ["--bucket-cap-mb", str(1 / 1024), "--out-dir", str(tmp_path / "two")]
    res = _launch(["examples/ddp_mlp.py", *args])
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "2 processes, gpu:0" in out, out
    # GPU kernels sum in other orders than the CPU's: a looser bound than the CPU test's
    assert_ranks_match(tmp_path / "one", tmp_path / "two", rtol=1e-5)


GLUON_TRAINER = """
import json
import numpy as np
import mxnet as mx
from mxnet import gluon
import multidev as md
from multidev import distributed as dist, nn

dist.init_process_group()
rank = dist.get_rank()
md.manual_seed(0)
net = dist.DistributedDataParallel(nn.Linear(3, 2))
opt = md.optim.SGD(net.parameters(), lr=0.1)
dense = gluon.nn.Dense(2, in_units=3)
dense.initialize(mx.init.Constant(0.5))
trainer = gluon.Trainer(
    dense.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore=dist.group().kv,
    update_on_kvstore=False,
)
for step in range(3):
    X = np.full((2, 3), rank + 1.0, np.float32)
    with md.autograd.record():
        loss = net(md.asarray(X)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    with mx.autograd.record():
        out = dense(mx.np.array(X)).sum()
    out.backward()
    trainer.step(1)
total = dist.all_reduce(md.asarray(np.array([rank + 1.0], np.float32)))
result = {
    "rank": rank,
    "md": np.concatenate([p.numpy().ravel() for p in net.parameters()]).tolist(),
    "gluon": dense.weight.data().asnumpy().ravel().tolist(),
    "total": total.numpy().tolist(),
}
print("RESULT " + json.dumps(result), flush=True)
dist.barrier()
"""


@pytest.mark.skipif(BK != "mxnet", reason="a gluon Trainer on the dist_sync kvstore is MXNet's")
def test_a_gluon_trainer_shares_the_kvstore_with_multidev(tmp_path):
    """multidev's kvstore keys are integers above a gluon Trainer's (which numbers its
    parameters from 0): both train in one job on ``dist.group().kv``, each rank ending with
    the same parameters of either model. The Trainer's first step broadcasts its parameters,
    then sums gradients on the same keys: ``group().kv.broadcast`` waits for its pull, else a
    rank could start from the summed gradients (4 runs of 10 before)."""
    script = tmp_path / "gluon_trainer.py"
    script.write_text(GLUON_TRAINER)
    res = _launch([str(script)])
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    results = [
        json.loads(line.split("RESULT ", 1)[1]) for line in out.splitlines() if "RESULT " in line
    ]
    assert sorted(r["rank"] for r in results) == [0, 1], out
    for key in ("md", "gluon"):
        np.testing.assert_array_equal(results[0][key], results[1][key])
    assert results[0]["gluon"] != [0.5] * 6  # the trainer stepped
    assert results[0]["total"] == results[1]["total"] == [3.0]


@pytest.mark.skipif(BK != "jax", reason="JAX's runtime must not start before jax.distributed")
def test_jax_tensors_before_the_process_group_are_a_clear_error(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(
        "import multidev as md\nfrom multidev import distributed as dist\n"
        "x = md.ones((2,)) + 1\ndist.init_process_group()\n"
    )
    res = _launch([str(script)])
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "DistributedError: Expected jax.distributed to start before JAX computed" in out, out
    assert "Call md.distributed.init_process_group() first in the script" in out, out
