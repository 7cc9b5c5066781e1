"""Data parallelism on several devices of one process (the d2l "multiple GPUs" and "concise
multi-GPU" sections), written once for every backend with autograd.

    MULTIDEV_BACKEND=tensorflow python examples/multi_device.py   # two logical CPUs
    MULTIDEV_BACKEND=mxnet python examples/multi_device.py        # cpu(0) and cpu(1)
    MULTIDEV_BACKEND=torch python examples/multi_device.py        # every GPU (or the CPU)

It shows the pieces (``split_batch``, ``replicate``, ``allreduce``), then trains the same MLP
with ``DataParallel`` and on one device from the same start, and exits non-zero unless both
end with the same parameters (1e-6 relative).
"""

from __future__ import annotations

import numpy as np

import multidev as md
from multidev import nn, parallel


def pick_devices() -> list[md.Device]:
    """Every GPU; else two CPU devices where the backend has them; else the CPU."""
    if md.num_gpus():
        return md.try_all_gpus()
    cpus = [d for d in md.devices() if d.type == "cpu"]
    return cpus[:2]


def make_net() -> nn.Block:
    md.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 10))


def train(net: nn.Block, X: md.Tensor, y: md.Tensor, steps: int = 10) -> list[np.ndarray]:
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(steps):
        with md.autograd.record():
            loss = loss_fn(net(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step + 1}/{steps} loss {loss.item():.5f}")
    return [p.numpy().copy() for p in net.parameters()]


def main() -> int:
    devices = pick_devices()
    print(f"{md.get_backend()}: devices {[str(d) for d in devices]}")
    rng = np.random.default_rng(0)
    X = md.asarray(rng.standard_normal((32, 20)).astype(np.float32))
    y = md.asarray(rng.integers(0, 10, 32).astype(np.int64))

    xs, ys = parallel.split_batch(X, y, devices)
    print(
        "shards:",
        [(tuple(x.shape), tuple(t.shape), str(x.device)) for x, t in zip(xs, ys, strict=True)],
    )
    replicas = parallel.replicate(make_net(), devices)
    print("replica devices:", [str(next(r.parameters()).device) for r in replicas])
    parts = [md.ones((2,), device=d) * (i + 1) for i, d in enumerate(devices)]
    print("allreduce:", [t.tolist() for t in parallel.allreduce(parts)])

    dp = parallel.DataParallel(make_net(), devices=devices)
    several = train(dp, X, y)
    one = train(make_net().to(devices[0]), X, y)
    worst = max(
        np.linalg.norm(a - b) / np.linalg.norm(b) for a, b in zip(several, one, strict=True)
    )
    print(f"DataParallel on {len(devices)} devices vs one device: {worst:.2e} relative")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
