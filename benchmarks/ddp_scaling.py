"""``python benchmarks/ddp_scaling.py --backend torch``: data-parallel MLP training step
with 1 and 2 worker processes, multidev's ``DistributedDataParallel`` against the framework's
own data-parallel code on the same engine: torch ``DistributedDataParallel``,
``paddle.DataParallel``, a ``MultiWorkerMirroredStrategy`` step (``tf.function``, and the
same step eagerly), a gluon ``Trainer`` on the ``dist_sync`` kvstore.

Each configuration runs under ``multidev launch`` (every side starts the engine with
``md.distributed.init_process_group``, outside the timed loop), one CPU thread per worker.
After ``--warmup`` steps, rank 0 times ``--rounds`` rounds of ``--steps`` steps of every
side between two barriers, alternating the sides' order each round so that a change in the
machine's load hits them alike. Writes ``benchmarks/results/ddp_<backend>.{json,md}``; the
ratio is the median multidev time per step over the median native one (1.00 = as fast); the
CPU time per step (rank 0's process, all its threads, median round) is given beside it. On
a machine with fewer free cores than processes the 2-process figures include contention.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FEATURES, HIDDEN, CLASSES = 64, 256, 10
LR = 0.01
#: the framework's own data-parallel steps timed against multidev's, beyond ``native``
NATIVE = {"tensorflow": ("native", "native_eager")}
#: multidev's steps beyond ``md`` (eager), and the multidev side each native side is compared
#: with (default ``md``): compiled against compiled, eager against eager
MD = {"tensorflow": ("md", "md_jit")}
AGAINST = {("tensorflow", "native"): "md_jit"}
LABELS = {
    ("torch", "native"): "torch DDP",
    ("paddle", "native"): "paddle.DataParallel",
    ("tensorflow", "native"): "MWMS, tf.function",
    ("tensorflow", "native_eager"): "MWMS, eager",
    ("mxnet", "native"): "gluon Trainer, dist_sync",
    ("tensorflow", "md_jit"): "md.jit",
}


def _batch(step: int, batch: int, rank: int, world: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    X = rng.standard_normal((batch, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, batch).astype(np.int64)
    per = batch // world
    return X[rank * per : (rank + 1) * per], y[rank * per : (rank + 1) * per]


def _md_step(lr: float, compiled: bool = False):
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

    def step(Xb, yb):
        with md.autograd.record():
            loss = loss_fn(net(Xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()

    if compiled:  # the batch copied in outside, as the native compiled step does
        step = md.jit(step)
    return lambda X, y: step(md.asarray(X), md.asarray(y))


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


def _native_tensorflow(lr: float, compiled: bool = True):
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

    def train(X, y):
        strategy.run(replica_step, args=(X, y))

    if compiled:
        train = tf.function(train)

    return lambda X, y: train(tf.constant(X), tf.constant(y))


def _native_mxnet(lr: float):
    import mxnet as mx
    from mxnet import gluon

    from multidev import distributed as dist

    mx.npx.set_np()  # NumPy mode, as multidev's MXNet adapter runs
    net = gluon.nn.Sequential()
    net.add(
        gluon.nn.Dense(HIDDEN, activation="relu", in_units=FEATURES),
        gluon.nn.Dense(HIDDEN, activation="relu", in_units=HIDDEN),
        gluon.nn.Dense(CLASSES, in_units=HIDDEN),
    )
    net.initialize(mx.init.Xavier())
    # gradients all-reduced through the kvstore, the update made by each worker (as multidev
    # does); with the optimiser on the kvstore's server the 2-worker run did not end in 8 min here
    trainer = gluon.Trainer(
        net.collect_params(),
        "sgd",
        {"learning_rate": lr},
        kvstore=dist.group().kv,
        update_on_kvstore=False,
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step(X, y):
        Xb, yb = mx.np.array(X), mx.np.array(y)
        with mx.autograd.record():
            loss = loss_fn(net(Xb), yb).mean()
        loss.backward()
        trainer.step(1)

    return step


def _native_tensorflow_eager(lr: float):
    """The same ``MultiWorkerMirroredStrategy`` step run eagerly (multidev's own execution
    mode on TensorFlow), to separate the cost of eager execution from that of multidev."""
    return _native_tensorflow(lr, compiled=False)


def _one_thread(backend: str) -> None:
    """One CPU thread per worker: two workers on two cores measure the step, not the
    contention between their thread pools."""
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    elif backend == "torch":
        import torch

        torch.set_num_threads(1)


def _barrier(backend: str):
    """A barrier that first waits for this process's queued work: MXNet's engine runs the
    operations a step issues asynchronously, so a round ends when they have run."""
    from multidev import distributed as dist

    if backend != "mxnet":
        return dist.barrier
    import mxnet as mx

    def barrier() -> None:
        mx.nd.waitall()
        dist.barrier()

    return barrier


def _timed(step, batches, barrier) -> tuple[float, float]:
    """Wall-clock and CPU seconds (this process, all its threads) per step of one round."""
    barrier()
    start, cpu = time.perf_counter(), time.process_time()
    for X, y in batches:
        step(X, y)
    barrier()
    n = len(batches)
    return (time.perf_counter() - start) / n, (time.process_time() - cpu) / n


def worker(args: argparse.Namespace) -> None:
    """One worker of a launched job: build each side named in ``--worker``, warm them up, then
    time ``--rounds`` rounds of ``--steps`` steps per side, the order alternating each round."""
    backend = os.environ["MULTIDEV_BACKEND"]
    _one_thread(backend)
    from multidev import distributed as dist

    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    names = args.worker.split(",")
    steps = {n: _md_step(LR, n == "md_jit") if n.startswith("md")
             else globals()[f"_native_{backend}{n[6:]}"](LR) for n in names}  # fmt: skip
    batches = [_batch(i, args.batch, rank, world) for i in range(args.warmup + args.steps)]
    for step in steps.values():
        for X, y in batches[: args.warmup]:
            step(X, y)
    times: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        for n in names if r % 2 == 0 else names[::-1]:
            wall, used = _timed(steps[n], batches[args.warmup :], _barrier(backend))
            times[n].append(wall)
            cpu[n].append(used)
    if rank == 0:
        print("RESULT " + json.dumps({"procs": world, "step_s": times, "cpu_s": cpu}), flush=True)
    dist.destroy_process_group()


def _run(backend: str, sides: list[str], procs: int, args: argparse.Namespace) -> dict:
    """The RESULT of rank 0: per-round wall (``step_s``) and CPU (``cpu_s``) seconds per
    step of every side."""
    cmd = [sys.executable, "-m", "multidev", "launch", "--nproc-per-node", str(procs), __file__]
    cmd += ["--worker", ",".join(sides), "--steps", str(args.steps), "--batch", str(args.batch)]
    cmd += ["--warmup", str(args.warmup), "--rounds", str(args.rounds)]
    threads = {v: "1" for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    env = dict(os.environ, MULTIDEV_BACKEND=backend, **threads)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    for line in out.stdout.splitlines():
        if "RESULT " in line:
            return json.loads(line.split("RESULT ", 1)[1])
    raise RuntimeError(f"{backend} {sides} x{procs} failed:\n{out.stdout}\n{out.stderr}")


def measure(backend: str, procs: int, args: argparse.Namespace) -> dict[str, dict]:
    """Per-round wall and CPU seconds per step of every side with ``procs`` workers. The sides share each
    process, their rounds interleaved (on MXNet they share the kvstore too: the gluon
    ``Trainer`` numbers its keys from 0, multidev's start above them)."""
    sides = [*MD.get(backend, ("md",)), *NATIVE.get(backend, ("native",))]
    return _run(backend, sides, procs, args)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=os.environ.get("MULTIDEV_BACKEND", "torch"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=20, help="steps per timed round")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64, help="global batch size")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    rows = []
    for procs in (1, 2):
        got = measure(args.backend, procs, args)
        times = got["step_s"]
        med = {s: statistics.median(t) for s, t in times.items()}
        row = {
            "procs": procs,
            "step_ms": {s: m * 1e3 for s, m in med.items()},
            "cpu_ms": {s: statistics.median(t) * 1e3 for s, t in got["cpu_s"].items()},
            "rounds_s": times,
        }
        row["ratio"] = {
            s: med[AGAINST.get((args.backend, s), "md")] / m
            for s, m in med.items()
            if not s.startswith("md")
        }
        rows.append(row)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    result = {
        "backend": args.backend,
        "batch": args.batch,
        "steps_per_round": args.steps,
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
        "load_average_1min_after": load,
        "rows": rows,
    }
    out = HERE / "results" / f"ddp_{args.backend}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "| backend | processes | multidev ms/step | native | ms/step | ratio | CPU ms/step "
        "(multidev / native) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for side, ratio in r["ratio"].items():
            mine = AGAINST.get((args.backend, side), "md")
            label = f" ({LABELS[args.backend, mine]})" if mine != "md" else ""
            lines.append(
                f"| {args.backend} | {r['procs']} | {r['step_ms'][mine]:.2f}{label} | "
                f"{LABELS[args.backend, side]} | {r['step_ms'][side]:.2f} | {ratio:.2f} | "
                f"{r['cpu_ms'][mine]:.2f} / {r['cpu_ms'][side]:.2f} |"
            )
    table = "\n".join(lines)
    (HERE / "results" / f"ddp_{args.backend}.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
