"""``MULTIDEV_BACKEND=B python benchmarks/loss_steps.py [case] [steps]``: the losses of the
first steps of every side of a ``compile.py`` case, in float32 as benchmarked, and of the eager
sides again in float64 (multidev, torch's own model on torch, Keras layers with TensorFlow's
tape on tensorflow). Where the float32 sides differ and the float64 ones agree, the difference
is float32 rounding, not a different computation (issue 13: ResNet-18). Nothing is written.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import compile as bench


def _md_f64(case: str, X: np.ndarray, Y: np.ndarray, lr: float) -> Callable[[], Any]:
    import multidev as md

    def make_net() -> Any:
        return bench._cnn_block(case).to(md.float64)

    sides = bench._md_sides(make_net, md.nn.functional.cross_entropy, X, Y, lr)
    return sides[bench.LOSS_REFERENCE]


def _native_f64(backend: str, case: str, X: np.ndarray, Y: np.ndarray, lr: float):
    cnn = bench._cnn_cases()
    if backend == "torch":
        import torch

        model = cnn._torch_model(bench._cnn_block(case)).train().double()
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        x, t = torch.from_numpy(X), torch.from_numpy(Y)

        def step():
            loss = torch.nn.functional.cross_entropy(model(x), t)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return step
    keras = bench._keras(backend)
    if backend == "tensorflow" and keras is not None:
        import tensorflow as tf

        policy = keras.config.dtype_policy()
        keras.config.set_dtype_policy("float64")  # the layers made now hold float64
        try:
            net, made = cnn._keras_net(
                bench._cnn_block(case), X.shape[-1], tf.nn.relu, tf.nn.sigmoid
            )
        finally:
            keras.config.set_dtype_policy(policy)
        variables = [v for layer in made for v in layer.trainable_variables]
        x = tf.constant(X.transpose(0, 2, 3, 1))
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits

        def tf_step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(xent(labels=Y, logits=net(x)))
            for v, g in zip(variables, tape.gradient(loss, variables), strict=True):
                v.assign_sub(lr * g)
            return loss

        return tf_step
    return None


def main(case: str = "resnet18_step", steps: int = 3) -> int:
    if case not in bench.CNN_CASES:
        raise ValueError(
            f"Expected a CNN case among {', '.join(bench.CNN_CASES)}. Received: {case}. "
            "The MLP cases agree in float32 already."
        )
    bench._threads()
    backend = os.environ.get("MULTIDEV_BACKEND", "torch")
    cnn = bench._cnn_cases()
    _, batch, side_len = bench.CNN_CASES[case]
    X, Y = cnn.cnn_data(batch, side_len)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sides = bench._sides(backend, case)
        X64 = X.astype(np.float64)
        sides["float64: " + bench.LOSS_REFERENCE] = _md_f64(case, X64, Y, cnn.LR)
        native = _native_f64(backend, case, X64, Y, cnn.LR)
        if native is not None:
            sides[f"float64: {bench.EAGER[backend]}"] = native
        for label, fn in sides.items():
            try:
                losses = " ".join(f"{bench._value(fn()):.9f}" for _ in range(steps))
            except Exception as e:  # a side that cannot run is reported, not hidden
                losses = f"failed: {e!r}"[:200]
            print(f"{label:45s} {losses}", flush=True)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    raise SystemExit(main(*args[:1], *(int(a) for a in args[1:2])))
