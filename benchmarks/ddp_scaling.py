"""``python benchmarks/ddp_scaling.py --backend torch``: data-parallel MLP training throughput
with 1 and 2 worker processes, multidev's ``DistributedDataParallel`` against the
framework's own data-parallel code on the same engine (torch DDP, ``paddle.DataParallel``,
a ``MultiWorkerMirroredStrategy`` step, a gluon ``Trainer`` on the ``dist_sync`` kvstore).

Each configuration runs under ``multidev launch`` (both sides start the engine with
``md.distributed.init_process_group``, outside the timed loop). Rank 0 times ``--steps``
steps after ``--warmup`` steps, between two barriers. Writes
``benchmarks/results/ddp_<backend>.json`` and prints a Markdown table whose ratio is
multidev's time per step over the native one (1.00 = as fast). On a machine with fewer
cores than processes the 2-process figures measure contention, not scaling.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FEATURES, HIDDEN, CLASSES = 64, 256, 10


def _batch(step: int, batch: int, rank: int, world: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    X = rng.standard_normal((batch, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, batch).astype(np.int64)
    per = batch // world
    return X[rank * per : (rank + 1) * per], y[rank * per : (rank + 1) * per]


def _md_step(lr: float):
    import multidev as md
    from multidev import distributed as dist
    from multidev import nn

    net = nn.Sequential(
        nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, CLASSES),
    )  # fmt: skip
    net = dist.DistributedDataParallel(net)
    opt = md.optim.SGD(net.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()

    def step(X, y):
        Xb, yb = md.asarray(X), md.asarray(y)
        with md.autograd.record():
            loss = loss_fn(net(Xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def _native_torch(lr: float):
    import torch

    net = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN),
        torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES),
    )  # fmt: skip
    net = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(X, y):
        loss = loss_fn(net(torch.from_numpy(X)), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def _native_paddle(lr: float):
    import paddle

    net = paddle.nn.Sequential(
        paddle.nn.Linear(FEATURES, HIDDEN), paddle.nn.ReLU(), paddle.nn.Linear(HIDDEN, HIDDEN),
        paddle.nn.ReLU(), paddle.nn.Linear(HIDDEN, CLASSES),
    )  # fmt: skip
    net = paddle.DataParallel(net)
    opt = paddle.optimizer.SGD(learning_rate=lr, parameters=net.parameters())
    loss_fn = paddle.nn.CrossEntropyLoss()

    def step(X, y):
        loss = loss_fn(net(paddle.to_tensor(X)), paddle.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()

    return step


def _native_tensorflow(lr: float):
    import tensorflow as tf

    from multidev import distributed as dist

    strategy = dist.group().strategy
    sizes = [FEATURES, HIDDEN, HIDDEN, CLASSES]
    with strategy.scope():
        ws = [
            tf.Variable(tf.random.normal((a, b), stddev=0.05)) for a, b in itertools.pairwise(sizes)
        ]
        bs = [tf.Variable(tf.zeros((b,))) for b in sizes[1:]]
    variables = [v for pair in zip(ws, bs, strict=True) for v in pair]

    def replica_step(X, y):
        with tf.GradientTape() as tape:
            h = X
            for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
                h = tf.nn.bias_add(h @ w, b)
                if i < len(ws) - 1:
                    h = tf.nn.relu(h)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, h))
        grads = tape.gradient(loss, variables)
        ctx = tf.distribute.get_replica_context()
        grads = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
        for v, g in zip(variables, grads, strict=True):
            v.assign_sub(lr * g)

    @tf.function
    def train(X, y):
        strategy.run(replica_step, args=(X, y))

    return lambda X, y: train(tf.constant(X), tf.constant(y))


def _native_mxnet(lr: float):
    import mxnet as mx
    from mxnet import gluon

    from multidev import distributed as dist

    net = gluon.nn.Sequential()
    net.add(
        gluon.nn.Dense(HIDDEN, activation="relu", in_units=FEATURES),
        gluon.nn.Dense(HIDDEN, activation="relu", in_units=HIDDEN),
        gluon.nn.Dense(CLASSES, in_units=HIDDEN),
    )
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": lr}, kvstore=dist.group().kv
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step(X, y):
        Xb, yb = mx.np.array(X), mx.np.array(y)
        with mx.autograd.record():
            loss = loss_fn(net(Xb), yb).mean()
        loss.backward()
        trainer.step(1)

    return step


def worker(args: argparse.Namespace) -> None:
    from multidev import distributed as dist

    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    backend = os.environ["MULTIDEV_BACKEND"]
    step = _md_step(0.01) if args.worker == "md" else globals()[f"_native_{backend}"](0.01)
    batches = [_batch(i, args.batch, rank, world) for i in range(args.warmup + args.steps)]
    for X, y in batches[: args.warmup]:
        step(X, y)
    dist.barrier()
    start = time.perf_counter()
    for X, y in batches[args.warmup :]:
        step(X, y)
    dist.barrier()
    elapsed = time.perf_counter() - start
    if rank == 0:
        result = {"side": args.worker, "procs": world, "step_s": elapsed / args.steps}
        print("RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()


def _run(backend: str, side: str, procs: int, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", str(procs)]
    cmd += [__file__, "--worker", side, "--steps", str(args.steps), "--batch", str(args.batch)]
    env = dict(os.environ, MULTIDEV_BACKEND=backend)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    for line in out.stdout.splitlines():
        if "RESULT " in line:
            return json.loads(line.split("RESULT ", 1)[1])
    raise RuntimeError(f"{backend} {side} x{procs} failed:\n{out.stdout}\n{out.stderr}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=os.environ.get("MULTIDEV_BACKEND", "torch"))
    ap.add_argument("--worker", choices=("md", "native"), help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64, help="global batch size")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    rows = []
    for procs in (1, 2):
        md_side = _run(args.backend, "md", procs, args)
        native = _run(args.backend, "native", procs, args)
        rows.append(
            {
                "procs": procs,
                "multidev_step_ms": md_side["step_s"] * 1e3,
                "native_step_ms": native["step_s"] * 1e3,
                "ratio": md_side["step_s"] / native["step_s"],
                "samples_per_s": args.batch / md_side["step_s"],
            }
        )
    result = {"backend": args.backend, "batch": args.batch, "steps": args.steps, "rows": rows}
    out = HERE / "results" / f"ddp_{args.backend}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print("| backend | processes | multidev ms/step | native ms/step | ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {args.backend} | {r['procs']} | {r['multidev_step_ms']:.2f} | "
            f"{r['native_step_ms']:.2f} | {r['ratio']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
