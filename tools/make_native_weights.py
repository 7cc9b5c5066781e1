"""Write the weights files of tests/fixtures/native/ with the frameworks themselves.

Run once per framework, in an environment that has it (the nox session venvs do):

    .nox/tests-torch/bin/python tools/make_native_weights.py torch
    .nox/tests-tensorflow/bin/python tools/make_native_weights.py keras
    .nox/tests-paddle/bin/python tools/make_native_weights.py paddle
    .nox/tests-mxnet/bin/python tools/make_native_weights.py mxnet

For each of two models (an MLP with square and non-square weights; a CNN with a convolution,
BatchNorm with trained running statistics, and a Linear after Flatten) it saves the framework's
own weights file and ``<model>.npz`` holding an input and the framework's own output for it in
evaluation mode: what ``md.load_native`` must reproduce (tests/test_load_native.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "native"
RNG = np.random.default_rng(7)
X_MLP = RNG.standard_normal((4, 5)).astype(np.float32)
X_CNN = RNG.standard_normal((2, 1, 6, 6)).astype(np.float32)
STATS = RNG.uniform(0.5, 1.5, (2, 2)).astype(np.float32)  # running mean, running var


def torch_models(out: Path) -> None:
    import torch

    torch.manual_seed(0)
    nn = torch.nn
    mlp = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 7), nn.ReLU(), nn.Linear(7, 3))
    cnn = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3)
    )
    with torch.no_grad():
        cnn[1].running_mean.copy_(torch.from_numpy(STATS[0]))
        cnn[1].running_var.copy_(torch.from_numpy(STATS[1]))
        cnn[1].weight.uniform_(0.5, 1.5)
        cnn[1].bias.uniform_(-0.5, 0.5)
    for name, net, x in (("mlp", mlp, X_MLP), ("cnn", cnn, X_CNN)):
        net.eval()
        torch.save(net.state_dict(), out / f"{name}.pt")
        with torch.no_grad():
            y = net(torch.from_numpy(x)).numpy()
        np.savez(out / f"{name}.npz", x=x, y=y)


def keras_models(out: Path) -> None:
    import keras

    keras.utils.set_random_seed(0)
    L = keras.layers
    mlp = keras.Sequential(
        [
            keras.Input((5,)),
            L.Dense(7, activation="relu"),
            L.Dense(7, activation="relu"),
            L.Dense(3),
        ]
    )
    cnn = keras.Sequential(
        [
            keras.Input((1, 6, 6)),
            L.Conv2D(2, 3, data_format="channels_first"),
            L.BatchNormalization(axis=1),
            L.ReLU(),
            L.Flatten(),
            L.Dense(3),
        ]
    )
    bn = cnn.layers[1]
    bn.set_weights(
        [
            RNG.uniform(0.5, 1.5, 2).astype(np.float32),
            RNG.uniform(-0.5, 0.5, 2).astype(np.float32),
            STATS[0],
            STATS[1],
        ]
    )
    for name, net, x in (("mlp", mlp, X_MLP), ("cnn", cnn, X_CNN)):
        net.save_weights(out / f"{name}.weights.h5")
        y = np.asarray(net(x, training=False))
        np.savez(out / f"{name}.npz", x=x, y=y)


def paddle_models(out: Path) -> None:
    import paddle

    paddle.seed(0)
    nn = paddle.nn
    mlp = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 7), nn.ReLU(), nn.Linear(7, 3))
    cnn = nn.Sequential(
        nn.Conv2D(1, 2, 3), nn.BatchNorm2D(2), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3)
    )
    bn = cnn[1]
    bn._mean.set_value(STATS[0])
    bn._variance.set_value(STATS[1])
    bn.weight.set_value(RNG.uniform(0.5, 1.5, 2).astype(np.float32))
    bn.bias.set_value(RNG.uniform(-0.5, 0.5, 2).astype(np.float32))
    for name, net, x in (("mlp", mlp, X_MLP), ("cnn", cnn, X_CNN)):
        net.eval()
        paddle.save(net.state_dict(), str(out / f"{name}.pdparams"))
        y = net(paddle.to_tensor(x)).numpy()
        np.savez(out / f"{name}.npz", x=x, y=y)


def mxnet_models(out: Path) -> None:
    import mxnet as mx
    from mxnet.gluon import nn

    mx.random.seed(0)
    mlp = nn.HybridSequential()
    mlp.add(
        nn.Dense(7, in_units=5),
        nn.Activation("relu"),
        nn.Dense(7, in_units=7),
        nn.Activation("relu"),
        nn.Dense(3, in_units=7),
    )
    cnn = nn.HybridSequential()
    cnn.add(
        nn.Conv2D(2, 3, in_channels=1),
        nn.BatchNorm(in_channels=2),
        nn.Activation("relu"),
        nn.Flatten(),
        nn.Dense(3, in_units=32),
    )
    for net in (mlp, cnn):
        net.initialize(mx.init.Xavier())
    bn = cnn[1]
    bn.running_mean.set_data(mx.nd.array(STATS[0]))
    bn.running_var.set_data(mx.nd.array(STATS[1]))
    bn.gamma.set_data(mx.nd.array(RNG.uniform(0.5, 1.5, 2)))
    bn.beta.set_data(mx.nd.array(RNG.uniform(-0.5, 0.5, 2)))
    for name, net, x in (("mlp", mlp, X_MLP), ("cnn", cnn, X_CNN)):
        net.save_parameters(str(out / f"{name}.params"))
        y = net(mx.nd.array(x)).asnumpy()
        np.savez(out / f"{name}.npz", x=x, y=y)


if __name__ == "__main__":
    framework = sys.argv[1]
    target = OUT / framework
    target.mkdir(parents=True, exist_ok=True)
    {"torch": torch_models, "keras": keras_models, "paddle": paddle_models, "mxnet": mxnet_models}[
        framework
    ](target)
    print(f"wrote {sorted(p.name for p in target.iterdir())}")
