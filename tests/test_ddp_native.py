"""md.distributed.DistributedDataParallel through the framework's own data-parallel wrapper
(torch ``DistributedDataParallel``, ``paddle.DataParallel``): gradients are averaged by the
engine during the backward pass, so a backward run by the framework itself averages them too;
a parameter left without gradient is allowed with ``find_unused_parameters``.
2 worker processes under ``multidev launch`` on 127.0.0.1, bounded by a subprocess timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import multidev as md
from multidev import distributed as dist

ROOT = Path(__file__).resolve().parents[1]
BK = md.get_backend()
WRAPPED = getattr(dist.engine_module(BK), "data_parallel", None) is not None
RUN_TIMEOUT = 300


def _launch(script: Path) -> str:
    """Run ``script`` as 2 workers of ``multidev launch``; its output (the run must succeed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "TF_CONFIG")}
    paths = [str(ROOT / "src"), str(ROOT / "backends"), env.get("PYTHONPATH", "")]
    env.update(MULTIDEV_BACKEND=BK, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "2", str(script)]
    res = subprocess.run(
        cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    return out


SCRIPT = """
import sys
import numpy as np
import multidev as md
from multidev import distributed as dist, nn

dist.init_process_group()
rank = dist.get_rank()
net = dist.DistributedDataParallel(nn.Linear(3, 2))
for how in ("md", "native"):
    for p in net.parameters():
        p.grad = None
    X = md.asarray(np.full((4, 3), rank + 1.0, np.float32))
    with md.autograd.record():
        loss = net(X).sum()
    if how == "md":
        loss.backward()
    else:
        loss._native.backward()
    # one write per line: the workers' output is unbuffered, and torchrun's rank prefixes
    # follow each write, so a print of several pieces could be cut by another rank's line
    sys.stdout.write(f"GRAD {how} {rank} {net.module.weight.grad.numpy().ravel().tolist()}\\n")
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.skipif(not WRAPPED, reason=f"{BK} has no data-parallel wrapper (torch, paddle)")
def test_a_backward_run_by_the_framework_itself_averages_the_gradients(tmp_path):
    script = tmp_path / "native_backward.py"
    script.write_text(SCRIPT)
    out = _launch(script)
    grads = {}
    for line in out.splitlines():
        if "GRAD " in line:
            how, rank, values = line.split("GRAD ", 1)[1].split(" ", 2)
            grads[how, int(rank)] = json.loads(values)
    # d(sum of outputs)/dW = the batch's column sums: 4 * (rank + 1); averaged over 2 ranks: 6
    assert sorted(grads) == [(h, r) for h in ("md", "native") for r in (0, 1)], out
    for key, values in grads.items():
        assert values == [6.0] * 6, (key, values)


UNUSED = """
import sys
import numpy as np
import multidev as md
from multidev import distributed as dist, nn


class Net(nn.Block):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(3, 2)
        self.spare = nn.Linear(3, 2)  # no gradient in any step

    def forward(self, x):
        return self.used(x)


dist.init_process_group()
rank = dist.get_rank()
net = dist.DistributedDataParallel(Net(), find_unused_parameters=True)
opt = md.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    X = md.asarray(np.full((4, 3), rank + 1.0, np.float32))
    with md.autograd.record():
        loss = net(X).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    sys.stdout.write(f"USED {rank} {net.module.used.weight.grad.numpy().ravel().tolist()}\\n")
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.skipif(dist.engine_module(BK) is None, reason=f"{BK} has no distributed engine")
@pytest.mark.skipif("autograd" not in md.registry.current().capabilities, reason="no autograd")
def test_a_parameter_without_gradient_is_allowed_with_find_unused_parameters(tmp_path):
    script = tmp_path / "unused.py"
    script.write_text(UNUSED)
    out = _launch(script)
    lines = [line.split("USED ", 1)[1] for line in out.splitlines() if "USED " in line]
    assert len(lines) == 6, out
    for line in lines:
        assert json.loads(line.split(" ", 1)[1]) == [6.0] * 6, line
