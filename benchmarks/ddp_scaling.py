"""``python benchmarks/ddp_scaling.py --backend torch [--model resnet18]``: data-parallel
training step with 1 and 2 worker processes, multidev's ``DistributedDataParallel`` against
the framework's own data-parallel code on the same engine: torch ``DistributedDataParallel``,
``paddle.DataParallel``, a ``MultiWorkerMirroredStrategy`` step (``tf.function``, and the
same step eagerly), a gluon ``Trainer`` on the ``dist_sync`` kvstore.

Models (``--model``): ``mlp`` (64-256-256-10, global batch 64), or d2l's ResNet-18
(``resnet18``: the 7x7/2 stem and 3x3/2 max-pool, BatchNorm in training mode, on 3x32x32
images, global batch 16, so 8 per process with 2), the native side translated layer by layer
from the multidev model with its weights by ``cnn_cases`` (Keras in NHWC, the batch transposed
in the step). Cross-entropy and plain SGD on every side. BatchNorm's running statistics
follow each side's default: multidev on torch, like torch's wrapper, copies rank 0's buffers
to every rank at each forward; ``paddle.DataParallel`` (multidev's wrapper on paddle too),
multidev on TensorFlow and MXNet copy them once, at construction, as gluon's ``Trainer`` does
through the kvstore at its first step; then each rank keeps its own. Under the strategy the
Keras moving statistics are mirrored variables without aggregation, each replica updating its
own copy. Each rank normalises with its own batch's statistics on every side (no synchronised
BatchNorm).

Each configuration runs under ``multidev launch`` (every side starts the engine with
``md.distributed.init_process_group``, outside the timed loop), one CPU thread per worker.
After ``--warmup`` steps, rank 0 times ``--rounds`` rounds of ``--steps`` steps of every
side between two barriers, alternating the sides' order each round so that a change in the
machine's load hits them alike (``md.jit`` compiles at its second call: on TensorFlow keep
``--warmup`` at 2 or more). Writes ``benchmarks/results/ddp_<backend>.{json,md}``
(``--out-dir``), keeping the other model's last results; the ratio is the median multidev
time per step over the median native one (1.00 = as fast); the CPU time per step (rank 0's
process, all its threads, median round) is given beside it. On a machine with fewer free
cores than processes the 2-process figures include contention.
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
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
FEATURES, HIDDEN, CLASSES = 64, 256, 10
LR = 0.01
#: one example's shape per model (ResNet-18: NCHW images)
INPUT = {"mlp": (FEATURES,), "resnet18": (3, 32, 32)}
#: per model, the defaults of --steps, --rounds, --warmup and --batch (global)
DEFAULTS = {
    "mlp": {"steps": 20, "rounds": 21, "warmup": 10, "batch": 64},
    "resnet18": {"steps": 5, "rounds": 9, "warmup": 3, "batch": 16},
}
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


def _batch(
    step: int, batch: int, rank: int, world: int, model: str = "mlp"
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    X = rng.standard_normal((batch, *INPUT[model])).astype(np.float32)
    y = rng.integers(0, CLASSES, batch).astype(np.int64)
    per = batch // world
    return X[rank * per : (rank + 1) * per], y[rank * per : (rank + 1) * per]


def _md_net(model: str):
    """The multidev model: the MLP (each rank its own initial weights, which
    ``DistributedDataParallel`` replaces by rank 0's), or d2l's ResNet-18 in training mode,
    seeded so that the native sides translate the same network (``_twin``)."""
    import multidev as md
    from multidev import nn

    if model == "resnet18":
        from multidev.examples import modern_cnns

        md.manual_seed(0)
        net = modern_cnns.resnet18(CLASSES, INPUT[model][0], small_inputs=False)
        net.train()
        return net
    return nn.Sequential(
        nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, CLASSES),
    )  # fmt: skip


def _cnn_cases() -> Any:
    """The ``cnn_cases`` module (imported through ``cases``, which it imports back)."""
    import cases  # noqa: F401
    import cnn_cases

    return cnn_cases


def _twin(backend: str, model: str) -> Any:
    """The framework's own ResNet-18 with the multidev model's layers and weights, as the
    ``resnet18_step`` benchmark translates it (``cnn_cases``). That module builds the paddle
    and gluon models inside its step functions, so they are taken from the step's closure."""
    import inspect

    cnn_cases = _cnn_cases()
    block = _md_net(model)
    if backend == "torch":
        return cnn_cases._torch_model(block).train()
    X, y = cnn_cases.cnn_data(2, INPUT[model][-1])
    X = np.repeat(X, INPUT[model][0], axis=1)
    step = {"paddle": cnn_cases._paddle_step, "mxnet": cnn_cases._mxnet_step}[backend](block, X, y)
    return inspect.getclosurevars(step).nonlocals["model"]


def _md_step(lr: float, compiled: bool = False, model: str = "mlp"):
    import multidev as md
    from multidev import distributed as dist
    from multidev import nn

    net = dist.DistributedDataParallel(_md_net(model))
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


def _native_torch(lr: float, model: str = "mlp"):
    import torch

    if model == "resnet18":
        net = _twin("torch", model)
    else:
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


def _native_paddle(lr: float, model: str = "mlp"):
    import paddle

    if model == "resnet18":
        net = _twin("paddle", model)
    else:
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


def _native_tensorflow(lr: float, compiled: bool = True, model: str = "mlp"):
    import tensorflow as tf

    from multidev import distributed as dist

    strategy = dist.group().strategy
    if model == "resnet18":  # Keras layers in NHWC, BatchNorm in training mode (cnn_cases)
        cnn_cases = _cnn_cases()
        block = _md_net(model)
        with strategy.scope():
            net, made = cnn_cases._keras_net(block, INPUT[model][-1], tf.nn.relu, tf.nn.sigmoid)
        variables = [v for layer in made for v in layer.trainable_variables]
    else:
        sizes = [FEATURES, HIDDEN, HIDDEN, CLASSES]
        with strategy.scope():
            ws = [
                tf.Variable(tf.random.normal((a, b), stddev=0.05))
                for a, b in itertools.pairwise(sizes)
            ]
            bs = [tf.Variable(tf.zeros((b,))) for b in sizes[1:]]
        variables = [v for pair in zip(ws, bs, strict=True) for v in pair]

        def net(h):
            for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
                h = tf.nn.bias_add(h @ w, b)
                if i < len(ws) - 1:
                    h = tf.nn.relu(h)
            return h

    def replica_step(X, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, net(X)))
        grads = tape.gradient(loss, variables)
        ctx = tf.distribute.get_replica_context()
        grads = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
        for v, g in zip(variables, grads, strict=True):
            v.assign_sub(lr * g)

    def train(X, y):
        strategy.run(replica_step, args=(X, y))

    if compiled:
        train = tf.function(train)

    if model == "resnet18":  # the NCHW batch transposed to Keras's NHWC in the step
        return lambda X, y: train(tf.constant(X.transpose(0, 2, 3, 1)), tf.constant(y))
    return lambda X, y: train(tf.constant(X), tf.constant(y))


def _native_mxnet(lr: float, model: str = "mlp"):
    import mxnet as mx
    from mxnet import gluon

    from multidev import distributed as dist

    mx.npx.set_np()  # NumPy mode, as multidev's MXNet adapter runs
    if model == "resnet18":  # gluon blocks, not hybridised, like the multidev model
        net = _twin("mxnet", model)
    else:
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
    # the kvstore sums the workers' gradients; the Trainer divides by step()'s argument in the
    # update kernel (rescale_grad), so step(world) makes the averaged step multidev makes
    world = dist.get_world_size()

    def step(X, y):
        Xb, yb = mx.np.array(X), mx.np.array(y)
        with mx.autograd.record():
            loss = loss_fn(net(Xb), yb).mean()
        loss.backward()
        trainer.step(world)

    return step


def _native_tensorflow_eager(lr: float, model: str = "mlp"):
    """The same ``MultiWorkerMirroredStrategy`` step run eagerly (multidev's own execution
    mode on TensorFlow), to separate the cost of eager execution from that of multidev."""
    return _native_tensorflow(lr, compiled=False, model=model)


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
    steps = {n: _md_step(LR, n == "md_jit", args.model) if n.startswith("md")
             else globals()[f"_native_{backend}{n[6:]}"](LR, model=args.model)
             for n in names}  # fmt: skip
    batches = [
        _batch(i, args.batch, rank, world, args.model) for i in range(args.warmup + args.steps)
    ]
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
    cmd += ["--warmup", str(args.warmup), "--rounds", str(args.rounds), "--model", args.model]
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


def _load(path: Path) -> dict:
    """The results file's models (one written before the models were named holds the MLP's)."""
    if not path.exists():
        return {}
    old = json.loads(path.read_text())
    if "models" in old:
        return old["models"]
    return {"mlp": {k: v for k, v in old.items() if k not in ("backend", "cpus")}}


def _table(backend: str, models: dict[str, dict]) -> str:
    lines = [
        "| model | backend | processes | multidev ms/step | native | ms/step | ratio | CPU ms/step "
        "(multidev / native) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for model, result in models.items():
        for r in result["rows"]:
            for side, ratio in r["ratio"].items():
                mine = AGAINST.get((backend, side), "md")
                label = f" ({LABELS[backend, mine]})" if mine != "md" else ""
                lines.append(
                    f"| {model} | {backend} | {r['procs']} | {r['step_ms'][mine]:.2f}{label} | "
                    f"{LABELS[backend, side]} | {r['step_ms'][side]:.2f} | {ratio:.2f} | "
                    f"{r['cpu_ms'][mine]:.2f} / {r['cpu_ms'][side]:.2f} |"
                )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=os.environ.get("MULTIDEV_BACKEND", "torch"))
    ap.add_argument("--model", choices=sorted(DEFAULTS), default="mlp")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, help="steps per timed round (mlp 20, resnet18 5)")
    ap.add_argument("--rounds", type=int, help="timed rounds (mlp 21, resnet18 9)")
    ap.add_argument("--warmup", type=int, help="untimed steps first (mlp 10, resnet18 3)")
    ap.add_argument("--batch", type=int, help="global batch size (mlp 64, resnet18 16)")
    ap.add_argument("--out-dir", type=Path, default=HERE / "results")
    args = ap.parse_args()
    for name, value in DEFAULTS[args.model].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
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
    out = args.out_dir / f"ddp_{args.backend}.json"
    models = _load(out)  # the other models' last results kept
    models[args.model] = {
        "batch": args.batch,
        "steps_per_round": args.steps,
        "rounds": args.rounds,
        "load_average_1min_after": load,
        "rows": rows,
    }
    models = {m: models[m] for m in DEFAULTS if m in models}
    result = {"backend": args.backend, "cpus": os.cpu_count(), "models": models}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    table = _table(args.backend, models)
    (args.out_dir / f"ddp_{args.backend}.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
