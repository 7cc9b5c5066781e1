"""Compilation benchmark: one training step (forward, loss, backward, SGD) timed in one
process, as each alternative a user could pick runs it.

Rows: multidev eager; multidev ``md.jit`` of the whole step; multidev with the forward
hybridized (``net.hybridize()``) and the step eager; the framework's own code eagerly; the
framework's own compiler (``torch.compile``, ``tf.function``, ``paddle.jit.to_static`` of the
model, hybridized Gluon; on JAX a hand-written ``jax.jit`` + ``optax`` step); Keras 3's
``train_on_batch`` (torch, tensorflow and jax, when keras is installed:
``constraints/bench-keras.txt``). Cases: ``mlp_small`` (3 layers, 256 wide,
batch 32) and ``mlp_large`` (3 layers, 1024 wide, batch 128), mean-squared error; and the
CNNs of ``cnn_cases.py`` with cross-entropy: ``lenet_step`` (d2l's LeNet, batch 64, 28x28)
and ``resnet18_step`` (d2l's ResNet-18, batch 16, 64x64), the native and Keras models
translated from the multidev one with its weights (Keras in NHWC). ``BENCH_CASES`` (comma
separated) picks cases, all by default; a run of some cases keeps the other cases' rows of the
results file from their earlier run.

Run it with ``MULTIDEV_BACKEND=torch python benchmarks/compile.py`` (one backend per run,
one CPU thread, TensorFlow's included); it writes ``benchmarks/results/compile_<backend>.{json,md}``.
Times are medians over ``BENCH_ROUNDS`` (7) rounds that take turns between the sides, after
warm-up calls that include compilation: wall-clock and CPU time of the process per step.

Every side starts from the same weights and its three warm-up calls are its first three steps:
their losses are compared with multidev eager's losses of the same steps (``check_losses``),
and the table marks a side whose loss differs by more than ``LOSS_RTOL`` (relative) of its
case and step. The first loss (same weights on every side) checks the forward; the later ones
the gradients and the update. ResNet-18 in float32 has a looser bound after its first update:
a few of its pre-ReLU values at initialisation lie within float32 rounding of zero (the
smallest, 3e-7, in the last block of the third stage), so which side of the ReLU each
framework's summation order lands them on changes its first gradients by 3e-3 (relative),
which two steps of SGD at lr 0.01 grow to 0.7% in the third loss. In float64 the eager
steps of multidev (on torch and on TensorFlow), torch, TensorFlow and Keras on TensorFlow
give the same four losses to 1e-9, and multidev's weights and running statistics after three
steps equal torch's to 1e-14 (Keras 3.15 on torch runs BatchNormalization in float32 even on
float64 inputs, so it cannot take part); ``loss_steps.py`` prints these losses.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

CASES = {"mlp_small": (256, 32), "mlp_large": (1024, 128)}
#: CNN cases: the ``multidev.examples.modern_cnns`` builder, batch, image side
CNN_CASES: dict[str, tuple[Callable[[Any], Any], int, int]] = {
    "lenet_step": (lambda m: m.lenet(), 64, 28),
    "resnet18_step": (lambda m: m.resnet18(small_inputs=False), 16, 64),
}
ALL_CASES = [*CASES, *CNN_CASES]
LR = 1e-3
#: the largest relative difference allowed between a side's loss and multidev eager's at each
#: of the first three steps (the module docstring says why ResNet-18's later steps differ more)
LOSS_RTOL: dict[str, tuple[float, ...]] = {"resnet18_step": (1e-5, 1e-3, 3e-2)}
DEFAULT_LOSS_RTOL = (1e-5, 1e-4, 1e-4)
#: the side every other side's losses are compared with
LOSS_REFERENCE = "multidev eager"
RESULTS = Path(__file__).parent / "results"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))


def _threads(n: int = 1) -> None:
    """One compute thread for every library (TensorFlow reads its own two variables)."""
    for var in (
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "TF_NUM_INTRAOP_THREADS",
        "TF_NUM_INTEROP_THREADS",
    ):
        os.environ.setdefault(var, str(n))


def _data(width: int, batch: int):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((batch, width), dtype=np.float32)
    Y = rng.standard_normal((batch, 10), dtype=np.float32)
    return X, Y


def _weights(width: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    shapes = [(width, width), (width, width), (10, width)]
    return [
        (
            (rng.standard_normal(s, dtype=np.float32) / np.sqrt(s[1])).astype(np.float32),
            np.zeros(s[0], np.float32),
        )
        for s in shapes
    ]


# ---------------------------------------------------------------- multidev
def _md_sides(
    make_net: Callable[[], Any], loss_fn: Callable, X: np.ndarray, Y: np.ndarray, lr: float
) -> dict[str, Callable[[], object]]:
    """multidev's three sides of one case, each with a fresh model from ``make_net``: the
    step eager, ``md.jit`` of the step, and the model hybridized with the step eager."""
    import multidev as md

    out: dict[str, Callable[[], object]] = {}
    for label in ("multidev eager", "multidev md.jit(step)", "multidev net.hybridize()"):
        net = make_net()
        opt = md.optim.SGD(net.parameters(), lr=lr)
        x, y = md.asarray(X), md.asarray(Y)

        def step(net=net, opt=opt, x=x, y=y):
            with md.autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        if label == "multidev net.hybridize()":
            net.hybridize()
        out[label] = md.jit(step) if label == "multidev md.jit(step)" else step
    return out


def md_steps(width: int, batch: int) -> dict[str, Callable[[], object]]:
    import multidev as md
    from multidev import nn

    def make_net() -> Any:
        net = nn.Sequential(
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, 10),
        )
        with md.no_grad():
            for lin, (w, b) in zip([net[0], net[2], net[4]], _weights(width), strict=True):
                lin.weight[...] = md.asarray(w)
                lin.bias[...] = md.asarray(b)
        return net

    X, Y = _data(width, batch)
    return _md_sides(make_net, nn.functional.mse_loss, X, Y, LR)


# ---------------------------------------------------------------- native code
def torch_steps(width: int, batch: int) -> dict[str, Callable[[], object]]:
    import torch

    torch.set_num_threads(1)
    X, Y = (torch.from_numpy(a) for a in _data(width, batch))
    out = {}
    for label in ("torch eager", "torch.compile(step)"):
        net = torch.nn.Sequential(
            torch.nn.Linear(width, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, 10),
        )
        with torch.no_grad():
            for lin, (w, b) in zip([net[0], net[2], net[4]], _weights(width), strict=True):
                lin.weight.copy_(torch.from_numpy(w))
                lin.bias.copy_(torch.from_numpy(b))
        opt = torch.optim.SGD(net.parameters(), lr=LR)

        def step(net=net, opt=opt):
            loss = torch.nn.functional.mse_loss(net(X), Y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        backend = os.environ.get("MULTIDEV_TORCH_COMPILE_BACKEND", "inductor")
        out[label] = torch.compile(step, backend=backend) if "compile" in label else step
    return out


def tensorflow_steps(width: int, batch: int) -> dict[str, Callable[[], object]]:
    import tensorflow as tf

    X, Y = (tf.constant(a) for a in _data(width, batch))
    out = {}
    for label in ("tensorflow eager", "tf.function(step)"):
        vs = [(tf.Variable(w.T), tf.Variable(b)) for w, b in _weights(width)]
        flat = [v for pair in vs for v in pair]

        def step(vs=vs, flat=flat):
            with tf.GradientTape() as tape:
                h = X
                for i, (w, b) in enumerate(vs):
                    h = h @ w + b
                    if i < 2:
                        h = tf.nn.relu(h)
                loss = tf.reduce_mean((h - Y) ** 2)
            for v, g in zip(flat, tape.gradient(loss, flat), strict=True):
                v.assign_sub(LR * g)
            return loss

        out[label] = tf.function(step) if "function" in label else step
    return out


def paddle_steps(width: int, batch: int) -> dict[str, Callable[[], object]]:
    import paddle

    X, Y = (paddle.to_tensor(a) for a in _data(width, batch))
    out = {}
    for label in ("paddle eager", "paddle.jit.to_static(model)"):
        net = paddle.nn.Sequential(
            paddle.nn.Linear(width, width),
            paddle.nn.ReLU(),
            paddle.nn.Linear(width, width),
            paddle.nn.ReLU(),
            paddle.nn.Linear(width, 10),
        )
        for lin, (w, b) in zip([net[0], net[2], net[4]], _weights(width), strict=True):
            lin.weight.set_value(w.T)
            lin.bias.set_value(b)
        opt = paddle.optimizer.SGD(learning_rate=LR, parameters=net.parameters())
        if "static" in label:
            net = paddle.jit.to_static(net, full_graph=True)

        def step(net=net, opt=opt):
            loss = paddle.nn.functional.mse_loss(net(X), Y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        out[label] = step
    return out


def mxnet_steps(width: int, batch: int) -> dict[str, Callable[[], object]]:
    import mxnet as mx
    from mxnet import autograd, gluon, npx

    npx.set_np()
    X, Y = (mx.np.array(a) for a in _data(width, batch))
    out = {}
    for label in ("mxnet eager (Gluon)", "mxnet hybridize()"):
        net = gluon.nn.HybridSequential()
        net.add(
            gluon.nn.Dense(width, activation="relu", in_units=width),
            gluon.nn.Dense(width, activation="relu", in_units=width),
            gluon.nn.Dense(10, in_units=width),
        )
        net.initialize()
        for lin, (w, b) in zip(net, _weights(width), strict=True):
            lin.weight.set_data(mx.np.array(w))
            lin.bias.set_data(mx.np.array(b))
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
        if "hybridize" in label:
            net.hybridize(static_alloc=True, static_shape=True)

        def step(net=net, trainer=trainer):
            with autograd.record():
                loss = ((net(X) - Y) ** 2).mean()
            loss.backward()
            trainer.step(1)
            return loss

        out[label] = step
    return out


def jax_steps(width: int, batch: int) -> dict[str, Callable[[], object]]:
    """The step as a JAX user writes it: a pure loss of the parameters, ``jax.value_and_grad``
    and ``optax.sgd``; compiled, the whole update through ``jax.jit`` with its state donated."""
    import jax
    import jax.numpy as jnp
    import optax

    X, Y = (jnp.asarray(a) for a in _data(width, batch))
    opt = optax.sgd(LR)

    def loss_fn(params, x, y):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w.T + b
            if i < 2:
                h = jax.nn.relu(h)
        return jnp.mean((h - y) ** 2)

    def update(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    out = {}
    for label in (EAGER["jax"], COMPILED["jax"]):
        params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in _weights(width)]
        fn = jax.jit(update, donate_argnums=(0, 1)) if label == COMPILED["jax"] else update
        state = [params, opt.init(params)]

        def step(state=state, fn=fn):
            state[0], state[1], loss = fn(state[0], state[1], X, Y)
            return loss

        out[label] = step
    return out


def _keras(backend: str) -> Any:
    """Keras 3 on ``backend``, or None where keras is not installed (or loaded on another)."""
    os.environ["KERAS_BACKEND"] = backend
    try:
        import keras
    except ImportError:
        return None
    return keras if keras.backend.backend() == backend else None


def keras_steps(backend: str, width: int, batch: int) -> dict[str, Callable[[], object]]:
    keras = _keras(backend)
    if keras is None:
        return {}
    X, Y = _data(width, batch)
    model = keras.Sequential(
        [
            keras.Input((width,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    for layer, (w, b) in zip(model.layers, _weights(width), strict=True):
        layer.set_weights([w.T, b])
    model.compile(optimizer=keras.optimizers.SGD(LR), loss="mse")
    return {f"Keras {keras.__version__} train_on_batch": lambda: model.train_on_batch(X, Y)}


# ---------------------------------------------------------------- CNN cases
def _cnn_cases() -> Any:
    """``cnn_cases``, loaded through ``cases`` (which imports it once its own classes exist)."""
    import cases  # noqa: F401
    import cnn_cases

    return cnn_cases


def _cnn_block(case: str) -> Any:
    """A fresh multidev model of a CNN case, the same initial weights on every call."""
    import multidev as md
    from multidev.examples import modern_cnns

    md.manual_seed(0)
    net = CNN_CASES[case][0](modern_cnns)
    net.train()
    return net


def md_cnn_steps(case: str) -> dict[str, Callable[[], object]]:
    import multidev as md

    cnn = _cnn_cases()
    _, batch, side_len = CNN_CASES[case]
    X, Y = cnn.cnn_data(batch, side_len)
    return _md_sides(lambda: _cnn_block(case), md.nn.functional.cross_entropy, X, Y, cnn.LR)


def _failing(error: Exception) -> Callable[[], object]:
    """A side whose construction failed: calling it raises that error (reported in the table)."""

    def side() -> object:
        raise error

    return side


def native_cnn_steps(backend: str, case: str) -> dict[str, Callable[[], object]]:
    """The framework's own model of ``cnn_cases.py``, eager and through its compiler."""
    cnn = _cnn_cases()
    _, batch, side_len = CNN_CASES[case]
    X, Y = cnn.cnn_data(batch, side_len)
    make = cnn.NATIVE_STEPS[backend]
    out = {EAGER[backend]: make(_cnn_block(case), X, Y)}
    try:
        if backend == "torch":
            import torch

            torch.set_num_threads(1)
            compiler = os.environ.get("MULTIDEV_TORCH_COMPILE_BACKEND", "inductor")
            fn = torch.compile(make(_cnn_block(case), X, Y), backend=compiler)
        elif backend == "tensorflow":
            import tensorflow as tf

            fn = tf.function(make(_cnn_block(case), X, Y))
        elif backend == "paddle":
            fn = make(_cnn_block(case), X, Y, to_static=True)
        elif backend == "jax":
            fn = make(_cnn_block(case), X, Y, jit=True)
        else:
            fn = make(_cnn_block(case), X, Y, hybrid=True)
    except Exception as e:  # a compiler that cannot take the model is reported, not hidden
        fn = _failing(e)
    out[COMPILED[backend]] = fn
    return out


def keras_cnn_steps(backend: str, case: str) -> dict[str, Callable[[], object]]:
    """Keras 3's ``train_on_batch`` of the same network (``cnn_cases.keras_model``, NHWC),
    sparse cross-entropy from logits and plain SGD."""
    keras = _keras(backend)
    if keras is None:
        return {}
    cnn = _cnn_cases()
    _, batch, side_len = CNN_CASES[case]
    X, Y = cnn.cnn_data(batch, side_len)
    x = np.ascontiguousarray(X.transpose(0, 2, 3, 1))
    label = f"Keras {keras.__version__} train_on_batch"
    try:
        model = cnn.keras_model(_cnn_block(case), side_len)
        model.compile(
            optimizer=keras.optimizers.SGD(cnn.LR),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    except Exception as e:  # reported in the table, not hidden
        return {label: _failing(e)}
    return {label: lambda: model.train_on_batch(x, Y)}


#: the backends Keras 3 runs on (of multidev's)
KERAS_BACKENDS = ("torch", "tensorflow", "jax")

#: the side of each backend that is the framework's own compiled step (the issue's bar)
COMPILED = {
    "torch": "torch.compile(step)",
    "tensorflow": "tf.function(step)",
    "paddle": "paddle.jit.to_static(model)",
    "mxnet": "mxnet hybridize()",
    "jax": "jax.jit(step) + optax",
}

#: the label of each backend's own eager step
EAGER = {
    "torch": "torch eager",
    "tensorflow": "tensorflow eager",
    "paddle": "paddle eager",
    "mxnet": "mxnet eager (Gluon)",
    "jax": "jax eager + optax",
}

NATIVE = {
    "torch": torch_steps,
    "tensorflow": tensorflow_steps,
    "paddle": paddle_steps,
    "mxnet": mxnet_steps,
    "jax": jax_steps,
}


def _time_all(
    sides: dict[str, Callable[[], object]], finish: Callable[[object], float], budget_s: float
) -> dict[str, dict]:
    """Per side: the median wall-clock and CPU (process) seconds per call over rounds that
    take turns between the sides (a machine whose load changes slows every side alike),
    after warm-up calls that include compilation; or the error a side raised."""
    out: dict[str, dict] = {}
    number: dict[str, int] = {}
    for label, fn in sides.items():
        try:
            losses = [finish(fn()) for _ in range(len(DEFAULT_LOSS_RTOL))]
            out[label] = {"losses": losses, "wall": [], "cpu": []}
            start = time.perf_counter()
            fn()
            one = max(time.perf_counter() - start, 1e-6)
        except Exception as e:  # a side that cannot run is reported, not hidden
            out[label] = {"error": repr(e)[:300]}
            continue
        number[label] = max(1, int(budget_s / ROUNDS / one))
    for _ in range(ROUNDS):
        for label, n in number.items():
            fn = sides[label]
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(n):
                last = fn()
            finish(last)
            out[label]["wall"].append((time.perf_counter() - wall) / n)
            out[label]["cpu"].append((time.process_time() - cpu) / n)
    for r in out.values():
        if "wall" in r:
            r["wall"] = statistics.median(r.pop("wall"))
            r["cpu"] = statistics.median(r.pop("cpu"))
    return out


def check_losses(case: str, losses: dict[str, list[float]]) -> dict[str, str]:
    """Per side, ``""`` when each of its losses is within ``LOSS_RTOL`` of the case (relative)
    of ``LOSS_REFERENCE``'s loss of the same step; else what differs. Every side is checked
    against the reference when it ran; without it, nothing is checked."""
    ref = losses.get(LOSS_REFERENCE)
    if ref is None:
        return {label: "" for label in losses}
    rtol = LOSS_RTOL.get(case, DEFAULT_LOSS_RTOL)
    out = {}
    for label, mine in losses.items():
        problems = []
        for step, (a, b, tol) in enumerate(zip(mine, ref, rtol, strict=True), 1):
            rel = abs(a - b) / max(abs(b), 1e-30)
            if not rel <= tol:  # NaN fails too
                problems.append(
                    f"step {step} loss {a:.6g} differs from {LOSS_REFERENCE}'s {b:.6g} by "
                    f"{rel:.1e} relative (> {tol:.0e})"
                )
        out[label] = "; ".join(problems)
    return out


def _value(x: object) -> float:
    if hasattr(x, "item"):
        return float(x.item())
    if hasattr(x, "numpy"):
        return float(np.asarray(x.numpy()))
    return float(np.asarray(x))


def chosen_cases() -> list[str]:
    """The cases ``BENCH_CASES`` names (comma separated), in the benchmark's order; all by
    default."""
    raw = os.environ.get("BENCH_CASES", "").strip()
    if not raw:
        return list(ALL_CASES)
    names = [c.strip() for c in raw.split(",") if c.strip()]
    unknown = [c for c in names if c not in ALL_CASES]
    if unknown:
        raise ValueError(
            f"BENCH_CASES expected comma-separated names among {', '.join(ALL_CASES)}. "
            f"Received unknown {', '.join(unknown)}. Fix the names or unset BENCH_CASES."
        )
    return [c for c in ALL_CASES if c in names]


def _sides(backend: str, case: str) -> dict[str, Callable[[], object]]:
    """Every side of one case, multidev's first."""
    keras_ok = backend in KERAS_BACKENDS
    if case in CASES:
        width, batch = CASES[case]
        sides = md_steps(width, batch)
        sides.update(NATIVE[backend](width, batch))
        if keras_ok:
            sides.update(keras_steps(backend, width, batch))
        return sides
    sides = md_cnn_steps(case)
    sides.update(native_cnn_steps(backend, case))
    if keras_ok:
        sides.update(keras_cnn_steps(backend, case))
    return sides


def main() -> int:
    _threads()
    backend = os.environ.get("MULTIDEV_BACKEND", "torch")
    budget = float(os.environ.get("BENCH_BUDGET_S", "1.0"))
    cases = chosen_cases()
    load_start = os.getloadavg()
    rows = []
    for case in cases:
        case_start = (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sides = _sides(backend, case)
        notes = sorted({str(w.message) for w in caught if "md.jit" in str(w.message)})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            timed = _time_all(sides, _value, budget)
        notes += sorted({str(w.message) for w in caught if "JitWarning" in w.category.__name__})
        checks = check_losses(case, {k: r["losses"] for k, r in timed.items() if "losses" in r})
        for label, r in timed.items():
            if "error" in r:
                rows.append({"case": case, "side": label, "error": r["error"]})
                print(f"{case:10s} {label:40s} failed: {r['error']}", flush=True)
                continue
            rows.append(
                {
                    "case": case,
                    "side": label,
                    "us_per_step": r["wall"] * 1e6,
                    "cpu_us_per_step": r["cpu"] * 1e6,
                    "losses": r["losses"],
                    "loss_check": checks[label],
                }
            )
            print(
                f"{case:10s} {label:40s} {r['wall'] * 1e6:12.1f} us  cpu {r['cpu'] * 1e6:12.1f} us",
                flush=True,
            )
            if checks[label]:
                print(f"{case:10s} {label:40s} LOSS DIFFERS: {checks[label]}", flush=True)
        rows.append(
            {
                "case": case,
                "notes": sorted(set(notes)),
                "started": case_start[0],
                "load_start": case_start[1],
                "load_end": os.getloadavg(),
            }
        )
    meta = {
        "backend": backend,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_start": load_start,
        "load_average": os.getloadavg(),
        "threads": 1,
        "rounds": ROUNDS,
        "cases": cases,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"compile_{backend}.json"
    if path.exists() and set(cases) != set(ALL_CASES):  # keep the other cases' earlier rows
        earlier = json.loads(path.read_text())
        rows += [r for r in earlier["rows"] if r.get("case") not in cases]
    path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (RESULTS / f"compile_{backend}.md").write_text(_table(backend, meta, rows))
    return 0


def _table(backend: str, meta: dict, rows: list[dict]) -> str:
    start, end = (", ".join(f"{x:.1f}" for x in meta[k]) for k in ("load_start", "load_average"))
    lines = [
        f"# Compilation benchmark, {backend}",
        "",
        "One training step (forward, loss: MSE for the MLPs, cross-entropy for the CNNs, "
        f"backward, SGD) per side, median over {meta['rounds']} rounds that take turns between "
        "the sides; 1 thread. Wall-clock µs per step and the process's CPU µs per step (less "
        "sensitive to other jobs on a shared machine). This run's cases: "
        f"{', '.join(meta.get('cases', CASES))}; load average at the start: {start}; at the "
        f"end: {end}, on {meta['cpus']} CPUs.",
        "",
        f"| case | side | µs/step | CPU µs/step | × {COMPILED[backend]} | × (CPU) "
        "| loss, steps 1-3 | same loss |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    present = {r.get("case") for r in rows}
    for case in [c for c in ALL_CASES if c in present]:
        base = next(
            (
                r
                for r in rows
                if r.get("case") == case
                and r.get("side") == COMPILED[backend]
                and "us_per_step" in r
            ),
            None,
        )
        for r in rows:
            if r.get("case") != case or "side" not in r:
                continue
            if "error" in r:
                lines.append(f"| {case} | {r['side']} | failed: {r['error']} | | | | | |")
                continue
            wall, cpu = r["us_per_step"], r["cpu_us_per_step"]
            ratios = (
                (f"{wall / base['us_per_step']:.2f}", f"{cpu / base['cpu_us_per_step']:.2f}")
                if base
                else ("", "")
            )
            losses = ", ".join(f"{x:.6g}" for x in r.get("losses", []))
            check = r.get("loss_check")
            same = "" if check is None else f"**no**: {check}" if check else "yes"
            lines.append(
                f"| {case} | {r['side']} | {wall:.0f} | {cpu:.0f} | {ratios[0]} | {ratios[1]} "
                f"| {losses} | {same} |"
            )
    lines += [
        "",
        f"Same loss: each of the side's first three losses (every side starts from the same "
        f"weights) within the case's bound of {LOSS_REFERENCE}'s loss of the same step, "
        "relative: "
        + "; ".join(
            f"{c} {', '.join(f'{t:.0e}' for t in LOSS_RTOL.get(c, DEFAULT_LOSS_RTOL))}"
            for c in ALL_CASES
            if c in present
        )
        + " (benchmarks/compile.py's docstring says why ResNet-18's bounds are looser after "
        "its first update).",
    ]
    runs = [
        f"- {r['case']}: started {r['started']}, load average "
        + "; ".join(", ".join(f"{x:.1f}" for x in r[k]) for k in ("load_start", "load_end"))
        for r in rows
        if "started" in r
    ]
    if runs:
        lines += ["", "When each case ran (load average at its start; at its end):", *runs]
    notes = sorted({n for r in rows for n in r.get("notes", [])})
    if notes:
        lines += ["", "Notes:", *(f"- {n}" for n in notes)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    raise SystemExit(main())
