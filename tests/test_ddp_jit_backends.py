"""md.jit of a training step with DistributedDataParallel on torch, paddle and mxnet, 2 real
worker processes on 127.0.0.1: the jitted step ends with the parameters of the eager step on
both ranks. On torch it runs eagerly with one JitWarning: torch.compile traces ``backward()``
into its graph, where the gradient hooks of torch's own DistributedDataParallel do not run, so
a compiled step would leave each rank with its own gradients. (TensorFlow, whose step compiles:
tests/test_ddp_jit_tensorflow.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import multidev as md

ROOT = Path(__file__).resolve().parents[1]
BK = md.get_backend()
#: bound on a whole 2-worker run (two framework imports on a busy 2-core machine)
RUN_TIMEOUT = 300

pytestmark = pytest.mark.skipif(
    BK not in ("torch", "paddle", "mxnet"), reason="the engines other than TensorFlow's"
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
for mode in ("eager", "jit"):
    md.manual_seed(0)
    net = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 1))
    net(batches[0][0])
    net = dist.DistributedDataParallel(net)
    opt = md.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)

    def step(X, y):
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
        "jit_warnings": [str(w.message) for w in caught if issubclass(w.category, md.JitWarning)],
    }
print("RESULT " + json.dumps(result), flush=True)
dist.barrier()
dist.destroy_process_group()
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "TF_CONFIG")}
    paths = [str(ROOT / "src"), str(ROOT / "backends"), env.get("PYTHONPATH", "")]
    env.update(MULTIDEV_BACKEND=BK, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    return env


def test_a_jitted_ddp_step_ends_like_the_eager_step_on_every_rank(tmp_path):
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
        want, got = np.array(eager["params"]), np.array(jit["params"])
        assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max(), (r["rank"], jit)
        np.testing.assert_allclose(jit["losses"], eager["losses"], rtol=1e-5)
        if BK == "torch":
            assert len(jit["jit_warnings"]) == 1, jit["jit_warnings"]
            assert "data-parallel wrapper averages gradients" in jit["jit_warnings"][0]
    # every rank holds the same parameters: the gradients were averaged across ranks
    assert results[0]["jit"]["params"] == results[1]["jit"]["params"]
