"""The fused cross-entropy in a data-parallel step: 2 processes (``multidev launch``), each given
half of every batch, end with the parameters of 1 process given the whole batch, on each
backend with a distributed engine (the mean over a half batch, averaged over the ranks, is the
mean over the whole batch)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_ranks_match

import multidev as md
from multidev import distributed as dist

ROOT = Path(__file__).resolve().parents[1]
BK = md.get_backend()
#: bound on a whole 2-worker run (two framework imports on a busy 2-core machine)
RUN_TIMEOUT = 300

pytestmark = pytest.mark.skipif(
    dist.engine_module(BK) is None or "autograd" not in md.registry.current().capabilities,
    reason=f"{BK} has no distributed engine with autograd",
)

SCRIPT = """
import sys
import numpy as np
import multidev as md
from multidev import distributed as dist, nn

dist.init_process_group()
rank, world = dist.get_rank(), dist.get_world_size()
md.manual_seed(0)
net = dist.DistributedDataParallel(
    nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)), bucket_cap_mb=1 / 1024
)
opt = md.optim.SGD(net.parameters(), lr=0.5)
rng = np.random.default_rng(1)
for step in range(6):
    X = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.integers(0, 4, 8)
    per = 8 // world
    Xb, yb = md.asarray(X[rank * per : (rank + 1) * per]), md.asarray(y[rank * per : (rank + 1) * per])
    with md.autograd.record():
        loss = nn.functional.cross_entropy(net(Xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
np.savez(f"{sys.argv[1]}/rank{rank}.npz", *[p.numpy() for p in net.parameters()])
dist.destroy_process_group()
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "TF_CONFIG")}
    env.pop("LOCAL_RANK", None)
    paths = [str(ROOT / "src"), str(ROOT / "backends"), env.get("PYTHONPATH", "")]
    env.update(MULTIDEV_BACKEND=BK, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    return env


def _run(cmd: list[str]) -> None:
    res = subprocess.run(
        cmd, env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_two_processes_on_half_batches_end_like_one_on_the_whole_batch(tmp_path):
    script = tmp_path / "xent_ddp.py"
    script.write_text(SCRIPT)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    _run([sys.executable, str(script), str(tmp_path / "one")])
    launch = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "2"]
    _run([*launch, str(script), str(tmp_path / "two")])
    assert_ranks_match(tmp_path / "one", tmp_path / "two")
