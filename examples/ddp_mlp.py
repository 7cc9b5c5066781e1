"""Data-parallel training of an MLP over several processes, the same code on every backend.

    multidev launch --nproc-per-node 2 examples/ddp_mlp.py --out-dir runs/ddp
    python examples/ddp_mlp.py --out-dir runs/one     # one process, the whole batch

Each of the N processes takes 1/N of every batch (``DistributedSampler``);
``DistributedDataParallel`` gives every rank rank 0's initial parameters and averages the
gradients after each ``backward()``, so every rank ends with the parameters one process
would reach on the whole batch. Each rank saves its final parameters to
``<out-dir>/rank<r>.npz``. The single-process version is the same script without the
``DistributedDataParallel`` line doing anything (rank 0 of 1).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import multidev as md
from multidev import distributed as dist
from multidev import nn


def data(steps: int, batch: int, features: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed regression problem: every rank builds the same arrays."""
    rng = np.random.default_rng(1234)
    X = rng.standard_normal((steps * batch, features)).astype(np.float32)
    w = rng.standard_normal((features, 1)).astype(np.float32)
    y = (X @ w + 0.1 * rng.standard_normal((steps * batch, 1))).astype(np.float32)
    return X, y


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=16, help="global batch size")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0, help="gradient bucket size")
    ap.add_argument("--out-dir", type=Path, default=None)
    args = ap.parse_args(argv)

    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        raise SystemExit(f"--batch {args.batch} must be a multiple of the {world} processes")
    md.manual_seed(rank)  # ranks start apart on purpose: DistributedDataParallel syncs them

    dev = dist.device()  # gpu(local_rank) with NCCL, else the CPU
    net = nn.Sequential(nn.Linear(20, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 1)).to(dev)
    net = dist.DistributedDataParallel(net, bucket_cap_mb=args.bucket_cap_mb)
    opt = md.optim.SGD(net.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()
    shard = list(dist.DistributedSampler(range(args.batch), shuffle=False))
    X, y = data(args.steps, args.batch, 20)

    for step in range(args.steps):
        rows = [step * args.batch + i for i in shard]
        Xb, yb = md.asarray(X[rows], device=dev), md.asarray(y[rows], device=dev)
        with md.autograd.record():
            loss = loss_fn(net(Xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            print(f"step {step + 1}/{args.steps} loss {loss.item():.6f} ({world} processes, {dev})")

    if args.out_dir is not None:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        state = {k: v.numpy() for k, v in net.module.state_dict().items()}
        np.savez(args.out_dir / f"rank{rank}.npz", **state)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
