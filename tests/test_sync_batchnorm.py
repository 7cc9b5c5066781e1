"""nn.SyncBatchNorm: BatchNorm statistics over every process of the group.

Two worker processes under ``multidev launch`` (127.0.0.1, every wait bounded by a subprocess
timeout), each with a different number of rows of every batch, train a small CNN with
BatchNorm2d and BatchNorm1d converted by ``convert_sync_batchnorm`` and wrapped in
``DistributedDataParallel``; they must end like one process on the whole batch with plain
BatchNorm: outputs, gradients, parameters and running statistics. On torch the
single-process reference is also torch's own ``nn.BatchNorm`` model (what
``torch.nn.SyncBatchNorm`` computes by its definition; torch's own SyncBatchNorm has no CPU
kernel). In one process ``SyncBatchNorm`` is ``BatchNorm`` exactly, on every backend."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import multidev as md
from multidev import distributed as dist
from multidev import nn

ROOT = Path(__file__).resolve().parents[1]
BK = md.get_backend()
ENGINE = dist.engine_module(BK) is not None
AUTOGRAD = "autograd" in md.registry.current().capabilities
RUN_TIMEOUT = 300
#: the brief's bound on any difference between 2 processes and 1 (values are of order 1)
TOL = 1e-5

SCRIPT = """
import sys
from pathlib import Path

import numpy as np

import multidev as md
from multidev import distributed as dist
from multidev import nn

STEPS = 3
#: rows of each batch per rank with 2 processes: different sizes on purpose
SPLIT = (5, 3)


def data():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((STEPS, 8, 3, 6, 6)).astype(np.float32) * 2 + 0.5
    y = rng.standard_normal((STEPS, 8, 2)).astype(np.float32)
    return X, y


def build():
    md.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(64, 5),
        nn.BatchNorm1d(5, momentum=None),
        nn.Linear(5, 2),
    )


def main(out_dir):
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    net = nn.SyncBatchNorm.convert_sync_batchnorm(build())
    # copies: numpy() may share the tensor's memory (torch), which training changes
    save = {"init." + k: np.array(v.numpy()) for k, v in net.state_dict().items()}
    model = dist.DistributedDataParallel(net) if world > 1 else net
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    X, y = data()
    lo = 0 if world == 1 else sum(SPLIT[:rank])
    hi = 8 if world == 1 else lo + SPLIT[rank]
    for step in range(STEPS):
        Xb, yb = md.asarray(X[step, lo:hi]), md.asarray(y[step, lo:hi])
        with md.autograd.record():
            out = model(Xb)
            # the global batch's mean, times world: DDP's average is its gradient
            loss = ((out - yb) ** 2).sum() * (world / 8.0)
        opt.zero_grad()
        loss.backward()
        save[f"out{step}"] = np.array(out.detach().numpy())
        for name, p in net.named_parameters():
            save[f"grad{step}.{name}"] = np.array(p.grad.numpy())
        opt.step()
    net.eval()
    save["eval"] = net(md.asarray(X[0, lo:hi])).numpy()
    save.update({k: v.numpy() for k, v in net.state_dict().items()})
    np.savez(Path(out_dir) / f"rank{rank}.npz", **save)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "TF_CONFIG")}
    paths = [str(ROOT / "src"), str(ROOT / "backends"), env.get("PYTHONPATH", "")]
    env.update(MULTIDEV_BACKEND=BK, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    return env


def _module(path: Path):
    spec = importlib.util.spec_from_file_location("sync_bn_script", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape, what
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
    assert err <= TOL, (what, err)


def _torch_reference(script, state: dict) -> dict:
    """The script's training run in torch itself on the whole batch, with torch.nn's
    BatchNorm (what torch.nn.SyncBatchNorm computes by definition), from the same initial
    parameters."""
    import torch

    tnn = torch.nn
    net = tnn.Sequential(
        tnn.Conv2d(3, 4, 3),
        tnn.BatchNorm2d(4),
        tnn.ReLU(),
        tnn.Flatten(),
        tnn.Linear(64, 5),
        tnn.BatchNorm1d(5, momentum=None),
        tnn.Linear(5, 2),
    )
    init = {k[len("init.") :]: torch.from_numpy(v) for k, v in state.items() if "init." in k}
    net.load_state_dict(init)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    X, y = script.data()
    out: dict = {}
    for step in range(script.STEPS):
        pred = net(torch.from_numpy(X[step]))
        loss = ((pred - torch.from_numpy(y[step])) ** 2).sum() / 8.0
        opt.zero_grad()
        loss.backward()
        out[f"out{step}"] = pred.detach().numpy().copy()
        for name, p in net.named_parameters():
            out[f"grad{step}.{name}"] = p.grad.numpy().copy()
        opt.step()
    net.eval()
    with torch.no_grad():
        out["eval"] = net(torch.from_numpy(X[0])).numpy()
    out.update({k: v.numpy() for k, v in net.state_dict().items()})
    return out


@pytest.mark.skipif(not ENGINE, reason=f"{BK} has no distributed engine")
@pytest.mark.skipif(not AUTOGRAD, reason=f"{BK} has no autograd")
def test_two_processes_with_uneven_batches_equal_one_process_on_the_whole_batch(
    tmp_path, monkeypatch
):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "sync_bn.py"
    path.write_text(SCRIPT)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    script = _module(path)
    script.main(tmp_path / "one")  # one process: SyncBatchNorm is BatchNorm there
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", "2"]
    res = subprocess.run(
        [*cmd, str(path), str(tmp_path / "two")],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    one = dict(np.load(tmp_path / "one" / "rank0.npz"))
    ranks = [dict(np.load(tmp_path / "two" / f"rank{r}.npz")) for r in (0, 1)]
    rows = np.cumsum((0, *script.SPLIT))
    for r, got in enumerate(ranks):
        assert sorted(got) == sorted(one)
        for key, want in one.items():
            if key.startswith(("out", "eval")):  # this rank's rows of the whole batch's
                want = want[rows[r] : rows[r + 1]]
            _close(got[key], want, f"rank {r} {key}")
    # the statistics moved: a run whose BatchNorm ignored the other rank would differ
    assert not np.allclose(one["1.running_mean"], one["init.1.running_mean"])
    assert int(one["5.num_batches_tracked"]) == script.STEPS
    if BK == "torch":
        ref = _torch_reference(script, one)
        for key, want in ref.items():
            _close(ranks[0][key] if not key.startswith(("out", "eval")) else one[key], want, key)
            if key.startswith(("out", "eval")):
                got = np.concatenate([ranks[0][key], ranks[1][key]])
                _close(got, want, f"2 processes {key}")


def _pair(momentum, affine=True, track=True):
    md.manual_seed(3)
    plain = nn.BatchNorm2d(3, momentum=momentum, affine=affine, track_running_stats=track)
    sync = nn.SyncBatchNorm(3, momentum=momentum, affine=affine, track_running_stats=track)
    if affine:
        with md.no_grad():
            for layer in (plain, sync):
                layer.weight[...] = md.asarray(np.array([0.5, 2.0, -1.0], np.float32))
                layer.bias[...] = md.asarray(np.array([0.1, -0.3, 0.0], np.float32))
    return plain, sync


@pytest.mark.parametrize("grouped", [False, True], ids=["no-group", "group-of-one"])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_in_one_process_it_is_batchnorm(grouped, momentum, monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    if grouped:
        dist.init_process_group()
    try:
        plain, sync = _pair(momentum)
        rng = np.random.default_rng(1)
        scale = np.arange(3.0, dtype=np.float32).reshape(3, 1, 1)
        for _ in range(2):
            x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
            outs = []
            for layer in (plain, sync):
                X = nn.Parameter(md.asarray(x)) if AUTOGRAD else md.asarray(x)
                if AUTOGRAD:
                    with md.autograd.record():
                        y = layer(X)
                        loss = (y * y * md.asarray(scale)).sum()
                    loss.backward()
                    outs.append((y.numpy(), X.grad.numpy(), layer.weight.grad.numpy()))
                else:
                    outs.append((layer(X).numpy(),))
            for a, b in zip(*outs, strict=True):
                np.testing.assert_array_equal(a, b)
        for key, value in plain.state_dict().items():
            np.testing.assert_array_equal(sync.state_dict()[key].numpy(), value.numpy())
        plain.eval()
        sync.eval()
        x = md.asarray(rng.standard_normal((2, 3, 5, 5)).astype(np.float32))
        np.testing.assert_array_equal(sync(x).numpy(), plain(x).numpy())
    finally:
        if grouped:
            dist.destroy_process_group()


class _Net(nn.Block):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
        self.norm = nn.BatchNorm1d(4, eps=1e-3, momentum=0.3, affine=False)
        self.head = nn.Linear(4, 4)
        self.group = nn.GroupNorm(1, 2)


def test_convert_replaces_every_batchnorm_keeping_parameters_buffers_and_mode():
    net = _Net()
    net.features[1].running_mean[...] = md.asarray(np.array([1.0, -2.0], np.float32))
    net.features[1].num_batches_tracked[...] = 4
    net.norm.eval()
    before = net.state_dict()
    params = {n: p for n, p in net.named_parameters()}
    buffers = {n: b for n, b in net.named_buffers()}
    untouched = (net.features[0], net.head, net.group)
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert out is net
    assert type(net.features[1]) is nn.SyncBatchNorm
    assert type(net.norm) is nn.SyncBatchNorm
    assert (net.features[0], net.head, net.group) == untouched
    assert not any(type(m) in (nn.BatchNorm1d, nn.BatchNorm2d) for m in net.modules())
    # the same tensors, not copies: the optimiser's and the user's references stay valid
    assert all(p is params[n] for n, p in net.named_parameters())
    assert sorted(params) == sorted(n for n, _ in net.named_parameters())
    assert all(b is buffers[n] for n, b in net.named_buffers())
    after = net.state_dict()
    assert list(after) == list(before)
    for key, value in before.items():
        np.testing.assert_array_equal(after[key].numpy(), value.numpy())
    norm = net.norm
    assert (norm.num_features, norm.eps, norm.momentum, norm.affine) == (4, 1e-3, 0.3, False)
    assert norm.weight is None and not norm.training and net.features[1].training
    single = nn.BatchNorm1d(3)
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(single)
    assert type(converted) is nn.SyncBatchNorm and converted.weight is single.weight
    with pytest.raises(ValueError, match="forward pass"):
        nn.SyncBatchNorm.convert_sync_batchnorm(nn.LazyBatchNorm1d())


def test_sync_batchnorm_checks_its_arguments():
    with pytest.raises(TypeError, match="process_group"):
        nn.SyncBatchNorm(3, process_group="world")
    with pytest.raises(ValueError, match="num_features"):
        nn.SyncBatchNorm(0)
    with pytest.raises(ValueError, match="2D or 3D or 4D"):
        nn.SyncBatchNorm(3)(md.zeros((3,)))
