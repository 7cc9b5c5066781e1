"""The ``gru_step`` case: one training step of a GRU sequence model, multidev against the same
model in the framework's own code (``torch.nn.GRU``, Keras ``GRU``, ``paddle.nn.GRU``, Gluon
``rnn.GRU``), the same initial weights on both sides.

Model: GRU(64 → 128) over 35 steps, batch 32, then ``Linear(128 → 64)`` on every step's output;
MSE loss, backward, SGD step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from cases import Case, Context, Row, side
from harness import Target

__all__ = ["gru_step_case"]

IN, HIDDEN, STEPS, BATCH, LR = 64, 128, 35, 32, 1e-3


def _torch_step(gru_w, lin_w, X, Y) -> Callable[[], Any]:
    import torch

    gru = torch.nn.GRU(IN, HIDDEN, batch_first=True)
    lin = torch.nn.Linear(HIDDEN, IN)
    with torch.no_grad():
        for p, w in zip([*gru.parameters(), *lin.parameters()], [*gru_w, *lin_w], strict=True):
            p.copy_(torch.from_numpy(w))
    params = [*gru.parameters(), *lin.parameters()]
    opt = torch.optim.SGD(params, lr=LR)
    x, y = torch.from_numpy(X), torch.from_numpy(Y)

    def step():
        loss = torch.nn.functional.mse_loss(lin(gru(x)[0]), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


def _tensorflow_step(gru_w, lin_w, X, Y) -> Callable[[], Any]:
    import keras
    import tensorflow as tf
    from multidev_tensorflow.sequence_reference import _keras_direction

    gru = _keras_direction("gru", [tf.constant(w) for w in gru_w], reverse=False)
    dense = keras.layers.Dense(IN)
    dense.build((None, HIDDEN))
    dense.kernel.assign(lin_w[0].T)
    dense.bias.assign(lin_w[1])
    variables = [*gru.trainable_variables, *dense.trainable_variables]
    opt = keras.optimizers.SGD(LR)
    x, y = tf.constant(X), tf.constant(Y)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(dense(gru(x)) - y))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return step


def _paddle_step(gru_w, lin_w, X, Y) -> Callable[[], Any]:
    import paddle

    gru = paddle.nn.GRU(IN, HIDDEN)
    lin = paddle.nn.Linear(HIDDEN, IN)
    for p, w in zip(gru.parameters(), gru_w, strict=True):
        p.set_value(w)
    lin.weight.set_value(lin_w[0].T)
    lin.bias.set_value(lin_w[1])
    params = [*gru.parameters(), *lin.parameters()]
    opt = paddle.optimizer.SGD(LR, parameters=params)
    x, y = paddle.to_tensor(X), paddle.to_tensor(Y)

    def step():
        loss = paddle.nn.functional.mse_loss(lin(gru(x)[0]), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    return step


def _mxnet_step(gru_w, lin_w, X, Y) -> Callable[[], Any]:
    import mxnet as mx
    from mxnet import gluon

    gru = gluon.rnn.GRU(HIDDEN, layout="NTC", input_size=IN)
    lin = gluon.nn.Dense(IN, in_units=HIDDEN, flatten=False)
    gru.initialize()
    lin.initialize()
    for p, w in zip(gru.collect_params().values(), gru_w, strict=True):
        p.set_data(mx.np.array(w))
    lin.weight.set_data(mx.np.array(lin_w[0]))
    lin.bias.set_data(mx.np.array(lin_w[1]))
    params = {**gru.collect_params(), **lin.collect_params()}
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": LR})
    x, y = mx.np.array(X), mx.np.array(Y)

    def step():
        with mx.autograd.record():
            loss = mx.np.mean(mx.np.square(lin(gru(x)) - y))
        loss.backward()
        trainer.step(1)
        return loss

    return step


NATIVE_STEPS = {
    "torch": _torch_step,
    "tensorflow": _tensorflow_step,
    "paddle": _paddle_step,
    "mxnet": _mxnet_step,
}


def gru_step_case(ctx: Context) -> list[Case]:
    md, nat = ctx.md, ctx.nat
    rng = np.random.default_rng(1)
    X = rng.standard_normal((BATCH, STEPS, IN), dtype=np.float32)
    Y = rng.standard_normal((BATCH, STEPS, IN), dtype=np.float32)
    with side("multidev"):
        nn = md.nn
        md.manual_seed(0)
        gru = nn.GRU(IN, HIDDEN, batch_first=True)
        lin = nn.Linear(HIDDEN, IN)
        params = [*gru.parameters(), *lin.parameters()]
        opt = md.optim.SGD(params, lr=LR)
        x, y = md.asarray(X), md.asarray(Y)
        mse, record = nn.functional.mse_loss, md.autograd.record
        gru_w = [np.array(p.numpy(), copy=True) for p in gru.parameters()]
        lin_w = [np.array(p.numpy(), copy=True) for p in lin.parameters()]

        def md_step():
            with record():
                loss = mse(lin(gru(x)[0]), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        md_loss = float(md_step().item())
        nat.sync()
    with side("native"):
        nat_step = NATIVE_STEPS[ctx.backend](gru_w, lin_w, X, Y)
        nat_loss = nat.loss_value(nat_step())
        nat.sync()
    rel = abs(md_loss - nat_loss) / max(abs(nat_loss), 1e-30)
    check = "same first loss" if rel < 1e-4 else f"first losses differ: {md_loss} vs {nat_loss}"
    return [
        Case(
            f"gru_step (GRU {IN}→{HIDDEN}, {STEPS} steps, batch {BATCH})",
            {"md": md_step, "native": nat_step},
            [Row("native", f"{nat.name} (own GRU + SGD)", Target("ratio", 1.10))],
            repeats=5 if ctx.quick else 15,
            budget_s=0.2,
            note=check,
            extra={"first_loss": {"md": md_loss, "native": nat_loss}},
        )
    ]
