"""md.jit of a training step with DistributedDataParallel, 2 real worker processes on
127.0.0.1, on the four engines. Every jitted step ends with the parameters of the eager step on
both ranks, and a backward through one model averages that model's gradients only.
TensorFlow compiles it (its gradient all-reduces are collective ops of the traced graph, one
instance key each, so equal-shaped buckets pair up right) and a killed worker stops the other
with a clear error. Torch runs it eagerly with one JitWarning: torch.compile traces
``backward()`` into its graph, where the gradient hooks of torch's own DistributedDataParallel
do not run, so a compiled step would leave each rank with its own gradients."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import multidev as md

ROOT = Path(__file__).resolve().parents[1]
BK = md.get_backend()
#: bound on a whole 2-worker run (two TensorFlow imports on a busy 2-core machine)
RUN_TIMEOUT = 300
#: how long the other worker may take to stop once one died, on top of starting up
DEATH_TIMEOUT = 60

pytestmark = pytest.mark.skipif(
    BK not in ("torch", "tensorflow", "paddle", "mxnet"), reason="the four distributed engines"
)

SCRIPT = """
import json, warnings
import numpy as np
import multidev as md
from multidev import distributed as dist, nn

dist.init_process_group()
rank, world = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
batches = []
for _ in range(10):
    X = rng.standard_normal((16, 12)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)
    batches.append((md.asarray(X[rank::world]), md.asarray(y[rank::world])))
result = {"rank": rank}
nets = []
for mode in ("eager", "jit"):
    md.manual_seed(0)
    # two hidden layers of one shape, one bucket per parameter: buckets of equal signature
    net = nn.Sequential(
        nn.Linear(12, 12), nn.ReLU(), nn.Linear(12, 12), nn.ReLU(), nn.Linear(12, 1)
    )
    net = dist.DistributedDataParallel(net, bucket_cap_mb=1e-9)
    nets.append(net)
    opt = md.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    python_runs = [0]

    def step(X, y):
        python_runs[0] += 1
        with md.autograd.record():
            loss = nn.functional.mse_loss(net(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    run = md.jit(step) if mode == "jit" else step
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = [float(run(X, y)) for X, y in batches]
    result[mode] = {
        "params": np.concatenate([p.numpy().ravel() for p in net.parameters()]).tolist(),
        "losses": losses,
        "python_runs": python_runs[0],
        "jit_warnings": [str(w.message) for w in caught if issubclass(w.category, md.JitWarning)],
    }
# a backward through the second model leaves the first one's gradients as they are
for p in nets[0].parameters():
    p.grad = md.ones(p.shape) * (rank + 1)
with md.autograd.record():
    loss = nn.functional.mse_loss(nets[1](batches[0][0]), batches[0][1])
loss.backward()
result["other_model_grads"] = sorted({float(v) for p in nets[0].parameters() for v in p.grad.numpy().ravel()})
print("RESULT " + json.dumps(result), flush=True)
dist.barrier()
dist.destroy_process_group()
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "TF_CONFIG")}
    paths = [str(ROOT / "src"), str(ROOT / "backends"), env.get("PYTHONPATH", "")]
    env.update(MULTIDEV_BACKEND=BK, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    return env


def test_a_jitted_ddp_step_ends_like_the_eager_step(tmp_path):
    """Two models in each process: the eager one stays alive while the jitted one trains,
    and its gradients are not averaged (nor traced into the other's step) by their backward."""
    import numpy as np

    script = tmp_path / "ddp_jit.py"
    script.write_text(SCRIPT)
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "2", str(script)]
    res = subprocess.run(
        cmd, env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    results = [
        json.loads(line.split("RESULT ", 1)[1]) for line in out.splitlines() if "RESULT " in line
    ]
    assert sorted(r["rank"] for r in results) == [0, 1], out
    for r in results:
        eager, jit = r["eager"], r["jit"]
        assert eager["python_runs"] == 10
        if BK == "tensorflow":
            assert jit["jit_warnings"] == [], jit["jit_warnings"]
            # compiled: the Python runs only while tf.function traces (no gradients yet, then
            # gradients and the momentum buffers), not at every step
            assert jit["python_runs"] <= 3, jit["python_runs"]
        elif BK == "torch":
            assert len(jit["jit_warnings"]) == 1, jit["jit_warnings"]
            assert "averages gradients in autograd hooks" in jit["jit_warnings"][0]
        want, got = np.array(eager["params"]), np.array(jit["params"])
        assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max(), r["rank"]
        np.testing.assert_allclose(jit["losses"], eager["losses"], rtol=1e-5)
        assert r["other_model_grads"] == [r["rank"] + 1.0], r["other_model_grads"]
    # every rank holds the same parameters: the gradients were averaged across ranks
    assert results[0]["jit"]["params"] == results[1]["jit"]["params"]


KILLED = """
import os, signal
import multidev as md
from multidev import distributed as dist, nn

dist.init_process_group(timeout={timeout})
net = dist.DistributedDataParallel(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)))
opt = md.optim.SGD(net.parameters(), lr=0.01)


@md.jit
def step(X, y):
    with md.autograd.record():
        loss = nn.functional.mse_loss(net(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


X, y = md.ones((4, 8)), md.zeros((4, 1))
for i in range(100000):
    if i == 5 and dist.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    step(X, y)
"""


@pytest.mark.skipif(BK != "tensorflow", reason="the engine whose step compiles")
def test_a_killed_worker_stops_the_other_with_a_distributed_error(tmp_path):
    """Workers started without the launcher (which would stop the survivor itself): the
    survivor's compiled step fails with md.distributed.DistributedError."""
    from multidev_tensorflow.distributed import worker_envs

    from multidev.distributed.launch import free_port

    script = tmp_path / "killed.py"
    script.write_text(KILLED.format(timeout=DEATH_TIMEOUT // 2))
    port = free_port("127.0.0.1")
    envs = worker_envs(
        nproc_per_node=2, nnodes=1, node_rank=0, master_addr="127.0.0.1", master_port=port
    )
    procs = []
    for rank, extra in enumerate(envs):
        env = _env()
        env.update(extra, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1")
        env["MASTER_PORT"] = str(port)
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script)],
                env=env,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        _, err1 = procs[1].communicate(timeout=RUN_TIMEOUT)
        assert procs[1].returncode == -9, err1
        _, err0 = procs[0].communicate(timeout=DEATH_TIMEOUT)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert procs[0].returncode == 1, err0
    assert "DistributedError: Expected all 2 workers to take part" in err0, err0
