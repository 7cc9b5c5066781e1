"""``MULTIDEV_BACKEND=B python benchmarks/amp.py``: one training step of an MLP (256 -> 512 ->
512 -> 10, batch 256, SGD) in float32 and under ``md.autocast`` beside the framework's own
float32 step and its own AMP step (``torch.autocast``; ``paddle.amp.auto_cast`` O1; on
TensorFlow, which has no op-level autocast, the tape over bfloat16 casts of inputs and weights,
as Keras's mixed policy does), interleaved in one process by ``harness.measure``. Prints one
Markdown row. The low dtype is bfloat16 (float16 on MXNet, which has no bfloat16 and no native
CPU AMP: its native AMP column is n/a).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import itertools

import harness

SIZES = (256, 512, 512, 10)
BATCH = 256


def _data() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int64)
    ws = [
        (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)
        for i, o in itertools.pairwise(SIZES)
    ]
    return x, y, ws


def _md_step(autocast: bool) -> Any:
    import multidev as md
    import multidev.nn.functional as F
    from multidev import nn

    x, y, ws = _data()
    layers = []
    for w in ws:
        lin = nn.Linear(w.shape[1], w.shape[0])
        lin.weight = nn.Parameter(md.asarray(w))
        layers += [lin, nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    opt = md.optim.SGD(model.parameters(), lr=0.01)
    X, Y = md.asarray(x), md.asarray(y)
    low = md.float16 if md.get_backend() == "mxnet" else md.bfloat16

    def step() -> Any:
        with md.autograd.record(), md.autocast(dtype=low, enabled=autocast):
            loss = F.cross_entropy(model(X), Y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


def _native_steps(backend: str) -> dict[str, Any]:
    x, y, ws = _data()
    if backend == "torch":
        import torch

        model = torch.nn.Sequential(
            torch.nn.Linear(256, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 10),
        )
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        X, Y = torch.from_numpy(x), torch.from_numpy(y)

        def tstep(amp: bool) -> Any:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                loss = torch.nn.functional.cross_entropy(model(X), Y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return {"native f32": lambda: tstep(False), "native AMP": lambda: tstep(True)}
    if backend == "paddle":
        import paddle

        model = paddle.nn.Sequential(
            paddle.nn.Linear(256, 512),
            paddle.nn.ReLU(),
            paddle.nn.Linear(512, 512),
            paddle.nn.ReLU(),
            paddle.nn.Linear(512, 10),
        )
        opt = paddle.optimizer.SGD(0.01, parameters=model.parameters())
        X, Y = paddle.to_tensor(x), paddle.to_tensor(y)

        def pstep(amp: bool) -> Any:
            with paddle.amp.auto_cast(enable=amp, level="O1", dtype="bfloat16"):
                loss = paddle.nn.functional.cross_entropy(model(X), Y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        return {"native f32": lambda: pstep(False), "native AMP": lambda: pstep(True)}
    if backend == "tensorflow":
        import tensorflow as tf

        vs = [tf.Variable(w.T) for w in ws]
        X, Y = tf.constant(x), tf.constant(y)

        def fstep(amp: bool) -> Any:
            with tf.GradientTape() as tape:
                h = tf.cast(X, tf.bfloat16) if amp else X
                for i, v in enumerate(vs):
                    h = h @ (tf.cast(v, tf.bfloat16) if amp else v)
                    if i < len(vs) - 1:
                        h = tf.nn.relu(h)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(Y, tf.cast(h, tf.float32))
                )
            for v, g in zip(vs, tape.gradient(loss, vs), strict=True):
                v.assign_sub(0.01 * g)
            return loss

        return {"native f32": lambda: fstep(False), "native AMP": lambda: fstep(True)}
    return {}


def _sync(backend: str) -> Any:
    import multidev as md

    return lambda: md.synchronize()


def main() -> None:
    import multidev as md

    backend = md.get_backend()
    sides = {"md f32": _md_step(False)}
    cpu = md.registry.current().default_device().type == "cpu"
    if not (backend == "mxnet" and cpu):  # MXNet's CPU build has no float16 gemm
        sides["md autocast"] = _md_step(True)
    sides.update(_native_steps(backend))
    timings = harness.measure(sides, _sync(backend), repeats=9, budget_s=0.2)
    cols = ["md f32", "md autocast", "native f32", "native AMP"]
    cells = [harness.fmt_time(timings[c].median) if c in timings else "n/a" for c in cols]
    ratio = (
        f"{timings['md autocast'].median / timings['md f32'].median:.2f}"
        if "md autocast" in timings
        else "n/a"
    )
    print("| backend | " + " | ".join(cols) + " | md autocast ÷ md f32 |")
    print("|---" * (len(cols) + 2) + "|")
    print(f"| {backend} | " + " | ".join(cells) + f" | {ratio} |")


if __name__ == "__main__":
    main()
