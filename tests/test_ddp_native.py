"""md.distributed.DistributedDataParallel averaging during the backward pass (torch: hooks on
the parameters; paddle: ``paddle.DataParallel``), so a backward run by the framework itself
averages the gradients too; a parameter left without gradient is allowed with
``find_unused_parameters`` (on torch also without it: it contributes zeros).
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
ENGINE = dist.engine_module(BK)
#: the engine averages during the backward pass: torch's hooks, paddle's wrapper
WRAPPED = any(getattr(ENGINE, f, None) is not None for f in ("gradient_reducer", "data_parallel"))
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


def _run_tagged(tmp_path: Path, script: str, tag: str, whats: tuple[str, ...]) -> tuple:
    """Run ``script`` on 2 workers; its output and ``{(what, rank): value}`` of its lines
    ``<tag><what> <rank> <JSON value>``, one for each of ``whats`` on each rank."""
    path = tmp_path / "script.py"
    path.write_text(script)
    out = _launch(path)
    found = {}
    for line in out.splitlines():
        if tag in line:
            what, rank, value = line.split(tag, 1)[1].split(" ", 2)
            found[what, int(rank)] = json.loads(value)
    assert sorted(found) == [(w, r) for w in sorted(whats) for r in (0, 1)], out
    return out, found


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
    # one write per line (multidev launch now writes whole lines; the test does not rely on it)
    sys.stdout.write(f"GRAD {how} {rank} {net.module.weight.grad.numpy().ravel().tolist()}\\n")
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.skipif(not WRAPPED, reason=f"{BK} averages after backward() (torch, paddle)")
def test_a_backward_run_by_the_framework_itself_averages_the_gradients(tmp_path):
    _, grads = _run_tagged(tmp_path, SCRIPT, "GRAD ", ("md", "native"))
    # d(sum of outputs)/dW = the batch's column sums: 4 * (rank + 1); averaged over 2 ranks: 6
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


LOCAL = """
import json
import sys
import numpy as np
import multidev as md
from multidev import distributed as dist, nn


class Net(nn.Block):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(3, 2)
        self.rank0 = nn.Linear(3, 2)  # a gradient on rank 0 only
        self.spare = nn.Linear(3, 2)  # no gradient on any rank

    def forward(self, x):
        y = self.used(x)
        return y + self.rank0(x) if dist.get_rank() == 0 else y


dist.init_process_group()
rank = dist.get_rank()
for find_unused in (False, True):
    net = dist.DistributedDataParallel(Net(), find_unused_parameters=find_unused)
    X = md.asarray(np.ones((4, 3), np.float32))
    with md.autograd.record():
        loss = net(X).sum()
    loss.backward()
    m = net.module
    grads = [m.used.weight.grad, m.rank0.weight.grad, m.spare.weight.grad]
    grads = [None if g is None else g.numpy().ravel().tolist() for g in grads]
    sys.stdout.write(f"GRADS {find_unused} {rank} {json.dumps(grads)}\\n")
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.skipif(
    getattr(ENGINE, "gradient_reducer", None) is None, reason="torch's gradient hooks"
)
def test_a_parameter_used_on_some_ranks_gets_the_average_and_one_used_on_none_stays_none(
    tmp_path,
):
    out, got = _run_tagged(tmp_path, LOCAL, "GRADS ", ("False", "True"))
    for (find_unused, _), (used, rank0, spare) in got.items():
        # d(sum of outputs)/dW = the batch's column sums, 4; rank 0's alone averaged: 2
        assert used == [4.0] * 6 and rank0 == [2.0] * 6, out
        # a parameter no rank used: zeros averaged, or left None as torch's reducer does
        assert spare == (None if find_unused == "True" else [0.0] * 6), out


BUFFERS = """
import json
import sys
import numpy as np
import multidev as md
from multidev import distributed as dist, nn

dist.init_process_group()
rank = dist.get_rank()
net = dist.DistributedDataParallel(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)))
bn = net.module[1]
X = md.asarray(np.random.default_rng(rank).standard_normal((8, 3)).astype(np.float32))
with md.autograd.record():
    loss = net(X).sum()  # each rank's running statistics move with its own batch
loss.backward()
mine = bn.running_mean.numpy().tolist()
net.eval()
net(X)  # rank 0's statistics copied to every rank first; eval leaves them
sys.stdout.write(f"STATS train {rank} {json.dumps(mine)}\\n")
sys.stdout.write(f"STATS eval {rank} {json.dumps(bn.running_mean.numpy().tolist())}\\n")
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.skipif(
    getattr(ENGINE, "gradient_reducer", None) is None, reason="torch's gradient hooks"
)
def test_each_forward_gives_every_rank_the_buffers_of_rank_0(tmp_path):
    out, got = _run_tagged(tmp_path, BUFFERS, "STATS ", ("eval", "train"))
    assert got["train", 0] != got["train", 1], out  # the ranks' batches differ
    assert got["eval", 0] == got["eval", 1] == got["train", 0], out


@pytest.mark.skipif(
    getattr(ENGINE, "gradient_reducer", None) is None, reason="torch's gradient hooks"
)
def test_the_first_bucket_is_small_so_its_all_reduce_starts_early():
    """Buckets fill in backward's order (the parameters reversed); the first one stops at
    1 MiB, as in torch's own reducer, the others at bucket_cap_mb."""
    import torch

    sizes = (300_000, 300_000, 100_000, 10)  # float32: 1.2 MB, 1.2 MB, 0.4 MB, 40 bytes
    params = [torch.nn.Parameter(torch.zeros(n)) for n in sizes]
    reducer = ENGINE.GradientReducer(params, None, 25 * 2**20, False)
    try:
        got = [[p.numel() for p in b] for b in reducer.buckets]
    finally:
        reducer.remove()
    assert got == [[10, 100_000], [300_000, 300_000]]
    small = ENGINE.GradientReducer(params, None, 1024, False)
    small.remove()
    assert [[p.numel() for p in b] for b in small.buckets] == [
        [10],
        [100_000],
        [300_000],
        [300_000],
    ]
