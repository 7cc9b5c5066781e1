"""Write the weights files of tests/fixtures/native/ with the frameworks themselves.

Run once per framework, in an environment that has it (the nox session venvs do):

    .nox/tests-torch/bin/python tools/make_native_weights.py torch
    .nox/tests-tensorflow/bin/python tools/make_native_weights.py keras
    .nox/tests-paddle/bin/python tools/make_native_weights.py paddle
    .nox/tests-mxnet/bin/python tools/make_native_weights.py mxnet

For each model (an MLP with square and non-square weights; a CNN with a convolution,
BatchNorm with trained running statistics, and a Linear after Flatten; the d2l zoo models of
``multidev.examples`` at small widths: ResNet-18, the GRU language model and the Transformer
encoder classifier, written with the framework's own layers) it saves the framework's own
weights file and ``<model>.npz`` holding an input and the framework's own output for it in
evaluation mode: what ``md.load_native`` must reproduce (tests/test_load_native.py). The MLP's
``.npz`` also holds its first two weight matrices in (out, in) orientation as the framework
computes with them.
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
# the d2l zoo models (multidev.examples): ResNet-18 at width 4 (modern_cnns.resnet18(3, width=4)),
# the GRU language model (rnn_language_model) and the Transformer classifier
# (transformer_classifier), with their sizes spelled out so that no framework imports multidev
ZOO = np.random.default_rng(11)
WIDTH, CLASSES = 4, 3
X_RESNET = ZOO.standard_normal((2, 1, 8, 8)).astype(np.float32)
LM_VOCAB, LM_EMBED, LM_HIDDEN = 30, 16, 32
X_LM = ZOO.integers(0, LM_VOCAB, (2, 6)).astype(np.int64)
TF_VOCAB, TF_LEN, TF_D, TF_HEADS, TF_FF = 6, 12, 16, 2, 32
X_TF = ZOO.integers(0, TF_VOCAB, (2, TF_LEN)).astype(np.int64)
ZOO_INPUTS = {"resnet18": X_RESNET, "gru_lm": X_LM, "transformer": X_TF}


def _bn_values(channels: int) -> list[np.ndarray]:
    """Weight, bias, running mean and running variance a trained BatchNorm could have."""
    return [
        ZOO.uniform(0.5, 1.5, channels).astype(np.float32),
        ZOO.uniform(-0.5, 0.5, channels).astype(np.float32),
        ZOO.uniform(-0.5, 0.5, channels).astype(np.float32),
        ZOO.uniform(0.5, 1.5, channels).astype(np.float32),
    ]


def _stages() -> list[tuple[int, int, bool]]:
    """(in channels, out channels, first) of ResNet-18's four stages."""
    w = WIDTH
    return [(w, w, True), (w, 2 * w, False), (2 * w, 4 * w, False), (4 * w, 8 * w, False)]


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
    # the (out, in) matrices W of y = x W^T + b, as the writer itself computes with them
    w = {"w0": mlp[0].weight.detach().numpy(), "w2": mlp[2].weight.detach().numpy()}
    np.savez(out / "mlp.npz", x=X_MLP, y=np.load(out / "mlp.npz")["y"], **w)
    torch_zoo(out)


def torch_zoo(out: Path) -> None:
    import torch

    nn = torch.nn
    F = nn.functional

    class Residual(nn.Module):
        def __init__(self, cin: int, cout: int, use_1x1conv: bool = False, strides: int = 1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, stride=strides)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
            self.conv3 = nn.Conv2d(cin, cout, 1, stride=strides) if use_1x1conv else None
            self.bn1 = nn.BatchNorm2d(cout)
            self.bn2 = nn.BatchNorm2d(cout)

        def forward(self, x):
            y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
            return F.relu(y + (self.conv3(x) if self.conv3 is not None else x))

    def stage(cin: int, cout: int, first: bool) -> nn.Module:
        if first:
            return nn.Sequential(Residual(cin, cout), Residual(cout, cout))
        return nn.Sequential(Residual(cin, cout, True, 2), Residual(cout, cout))

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(LM_VOCAB, LM_EMBED)
            self.rnn = nn.GRU(LM_EMBED, LM_HIDDEN, num_layers=2, batch_first=True, dropout=0.1)
            self.output = nn.Linear(LM_HIDDEN, LM_VOCAB)

        def forward(self, x):
            return self.output(self.rnn(self.embedding(x))[0])

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(TF_VOCAB, TF_D)
            self.position = nn.Parameter(torch.randn(1, TF_LEN, TF_D) * 0.1)
            self.encoder = nn.Sequential(
                *(
                    nn.TransformerEncoderLayer(
                        TF_D, TF_HEADS, TF_FF, dropout=0.1, batch_first=True, activation="gelu"
                    )
                    for _ in range(2)
                )
            )
            self.head = nn.Linear(TF_D, 2)

        def forward(self, x):
            return self.head(self.encoder(self.embedding(x) + self.position).mean(1))

    torch.manual_seed(0)
    w = WIDTH
    resnet = nn.Sequential(
        nn.Conv2d(1, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
        *(stage(*s) for s in _stages()),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(8 * w, CLASSES),
    )  # fmt: skip
    with torch.no_grad():
        for m in resnet.modules():
            if isinstance(m, nn.BatchNorm2d):
                for t, v in zip(
                    (m.weight, m.bias, m.running_mean, m.running_var),
                    _bn_values(m.num_features),
                    strict=True,
                ):
                    t.copy_(torch.from_numpy(v))
    nets = {"resnet18": resnet, "gru_lm": LanguageModel(), "transformer": Classifier()}
    for name, net in nets.items():
        net.eval()
        torch.save(net.state_dict(), out / f"{name}.pt")
        with torch.no_grad():
            y = net(torch.from_numpy(ZOO_INPUTS[name])).numpy()
        np.savez(out / f"{name}.npz", x=ZOO_INPUTS[name], y=y)


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
    # Keras computes x @ kernel: its (in, out) kernel transposed is the (out, in) W
    w = {"w0": np.asarray(mlp.layers[0].kernel).T, "w2": np.asarray(mlp.layers[1].kernel).T}
    np.savez(out / "mlp.npz", x=X_MLP, y=np.load(out / "mlp.npz")["y"], **w)
    keras_zoo(out)


def keras_zoo(out: Path) -> None:
    import keras

    L = keras.layers
    cf = "channels_first"
    keras.utils.set_random_seed(0)

    def conv(cout: int, k: int, stride: int = 1) -> keras.Layer:
        return L.Conv2D(cout, k, strides=stride, data_format=cf, bias_initializer="random_normal")

    def bn() -> keras.Layer:
        return L.BatchNormalization(axis=1, epsilon=1e-5)

    pad = L.ZeroPadding2D(1, data_format=cf)  # PyTorch's padding=1 (Keras' "same" is uneven)

    def residual(x, cout: int, use_1x1conv: bool = False, strides: int = 1):
        # created in the order of multidev's Residual (conv1, conv2, conv3, bn1, bn2): Keras
        # numbers each kind's layers in creation order, and that is how the loader pairs them
        conv1, conv2 = conv(cout, 3, strides), conv(cout, 3)
        conv3 = conv(cout, 1, strides) if use_1x1conv else None
        bn1, bn2 = bn(), bn()
        y = bn2(conv2(pad(L.ReLU()(bn1(conv1(pad(x)))))))
        return L.ReLU()(y + (conv3(x) if conv3 is not None else x))

    x = inputs = keras.Input((1, 8, 8))
    x = L.ReLU()(bn()(conv(WIDTH, 3)(pad(x))))
    for _, cout, first in _stages():
        x = residual(x, cout, use_1x1conv=not first, strides=1 if first else 2)
        x = residual(x, cout)
    x = L.Dense(CLASSES)(L.Flatten()(L.GlobalAveragePooling2D(data_format=cf)(x)))
    resnet = keras.Model(inputs, x)
    for layer in resnet.layers:
        if isinstance(layer, L.BatchNormalization):
            layer.set_weights(_bn_values(layer.gamma.shape[0]))

    tokens = keras.Input((None,), dtype="int32")
    h = L.Embedding(LM_VOCAB, LM_EMBED)(tokens)
    h = L.GRU(LM_HIDDEN, return_sequences=True, bias_initializer="random_normal")(h)
    h = L.GRU(LM_HIDDEN, return_sequences=True, bias_initializer="random_normal")(h)
    gru_lm = keras.Model(tokens, L.Dense(LM_VOCAB)(h))

    class Position(L.Layer):  # multidev's Classifier.position: one learned (1, T, d) weight
        def build(self, shape):
            self.position = self.add_weight(
                shape=(1, TF_LEN, TF_D), initializer="random_normal", name="position"
            )

        def call(self, x):
            return x + self.position

    # created in multidev's order: embedding, position, per encoder layer attention, linear1,
    # linear2, norm1, norm2, then the head
    embedding, position = L.Embedding(TF_VOCAB, TF_D), Position()
    layers = [
        (
            L.MultiHeadAttention(TF_HEADS, TF_D // TF_HEADS, bias_initializer="random_normal"),
            L.Dense(TF_FF, activation="gelu", bias_initializer="random_normal"),
            L.Dense(TF_D, bias_initializer="random_normal"),
            L.LayerNormalization(epsilon=1e-5),
            L.LayerNormalization(epsilon=1e-5),
        )
        for _ in range(2)
    ]
    head = L.Dense(2)
    tokens = keras.Input((TF_LEN,), dtype="int32")
    h = position(embedding(tokens))
    for attention, linear1, linear2, norm1, norm2 in layers:
        h = norm1(h + attention(h, h))
        h = norm2(h + linear2(linear1(h)))
    transformer = keras.Model(tokens, head(keras.ops.mean(h, axis=1)))

    nets = {"resnet18": resnet, "gru_lm": gru_lm, "transformer": transformer}
    for name, net in nets.items():
        net.save_weights(out / f"{name}.weights.h5")
        x = ZOO_INPUTS[name]
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
    # Paddle computes x @ weight: its (in, out) weight transposed is the (out, in) W
    w = {"w0": mlp[0].weight.numpy().T, "w2": mlp[2].weight.numpy().T}
    np.savez(out / "mlp.npz", x=X_MLP, y=np.load(out / "mlp.npz")["y"], **w)
    paddle_zoo(out)


def paddle_zoo(out: Path) -> None:
    import paddle

    nn = paddle.nn
    F = nn.functional

    class Residual(nn.Layer):
        def __init__(self, cin: int, cout: int, use_1x1conv: bool = False, strides: int = 1):
            super().__init__()
            self.conv1 = nn.Conv2D(cin, cout, 3, padding=1, stride=strides)
            self.conv2 = nn.Conv2D(cout, cout, 3, padding=1)
            self.conv3 = nn.Conv2D(cin, cout, 1, stride=strides) if use_1x1conv else None
            self.bn1 = nn.BatchNorm2D(cout)
            self.bn2 = nn.BatchNorm2D(cout)

        def forward(self, x):
            y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
            return F.relu(y + (self.conv3(x) if self.conv3 is not None else x))

    def stage(cin: int, cout: int, first: bool) -> nn.Layer:
        if first:
            return nn.Sequential(Residual(cin, cout), Residual(cout, cout))
        return nn.Sequential(Residual(cin, cout, True, 2), Residual(cout, cout))

    class LanguageModel(nn.Layer):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(LM_VOCAB, LM_EMBED)
            self.rnn = nn.GRU(LM_EMBED, LM_HIDDEN, num_layers=2, dropout=0.1)  # batch first
            self.output = nn.Linear(LM_HIDDEN, LM_VOCAB)

        def forward(self, x):
            return self.output(self.rnn(self.embedding(x))[0])

    class Classifier(nn.Layer):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(TF_VOCAB, TF_D)
            self.position = self.create_parameter([1, TF_LEN, TF_D])
            self.encoder = nn.Sequential(
                *(
                    nn.TransformerEncoderLayer(
                        TF_D, TF_HEADS, TF_FF, dropout=0.1, activation="gelu"
                    )
                    for _ in range(2)
                )
            )
            self.head = nn.Linear(TF_D, 2)

        def forward(self, x):
            return self.head(self.encoder(self.embedding(x) + self.position).mean(1))

    paddle.seed(0)
    w = WIDTH
    resnet = nn.Sequential(
        nn.Conv2D(1, w, 3, padding=1), nn.BatchNorm2D(w), nn.ReLU(),
        *(stage(*s) for s in _stages()),
        nn.AdaptiveAvgPool2D((1, 1)), nn.Flatten(), nn.Linear(8 * w, CLASSES),
    )  # fmt: skip
    for m in resnet.sublayers():
        if isinstance(m, nn.BatchNorm2D):
            for t, v in zip(
                (m.weight, m.bias, m._mean, m._variance), _bn_values(m.weight.shape[0]), strict=True
            ):
                t.set_value(v)
    nets = {"resnet18": resnet, "gru_lm": LanguageModel(), "transformer": Classifier()}
    for name, net in nets.items():
        net.eval()
        paddle.save(net.state_dict(), str(out / f"{name}.pdparams"))
        y = net(paddle.to_tensor(ZOO_INPUTS[name])).numpy()
        np.savez(out / f"{name}.npz", x=ZOO_INPUTS[name], y=y)


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
    w = {"w0": mlp[0].weight.data().asnumpy(), "w2": mlp[2].weight.data().asnumpy()}
    np.savez(out / "mlp.npz", x=X_MLP, y=np.load(out / "mlp.npz")["y"], **w)
    mxnet_zoo(out)


def mxnet_zoo(out: Path) -> None:
    import mxnet as mx
    from mxnet.gluon import nn, rnn

    nd = mx.nd

    class Residual(nn.Block):
        def __init__(self, cin: int, cout: int, use_1x1conv: bool = False, strides: int = 1):
            super().__init__()
            self.conv1 = nn.Conv2D(cout, 3, padding=1, strides=strides, in_channels=cin)
            self.conv2 = nn.Conv2D(cout, 3, padding=1, in_channels=cout)
            self.conv3 = (
                nn.Conv2D(cout, 1, strides=strides, in_channels=cin) if use_1x1conv else None
            )
            self.bn1 = nn.BatchNorm(in_channels=cout)
            self.bn2 = nn.BatchNorm(in_channels=cout)

        def forward(self, x):
            y = self.bn2(self.conv2(nd.relu(self.bn1(self.conv1(x)))))
            return nd.relu(y + (self.conv3(x) if self.conv3 is not None else x))

    def stage(cin: int, cout: int, first: bool) -> nn.Block:
        net = nn.Sequential()
        net.add(
            Residual(cin, cout) if first else Residual(cin, cout, True, 2), Residual(cout, cout)
        )
        return net

    class LanguageModel(nn.Block):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(LM_VOCAB, LM_EMBED)
            self.rnn = rnn.GRU(LM_HIDDEN, 2, layout="NTC", dropout=0.1, input_size=LM_EMBED)
            self.output = nn.Dense(LM_VOCAB, in_units=LM_HIDDEN, flatten=False)

        def forward(self, x):
            return self.output(self.rnn(self.embedding(x)))

    # Gluon has no Transformer layer: PyTorch's post-norm encoder layer written with Gluon's
    # Dense and LayerNorm, the q, k, v projections stacked in one (3d, d) weight as PyTorch's
    class Attention(nn.Block):
        def __init__(self):
            super().__init__()
            self.in_proj_weight = self.params.get("in_proj_weight", shape=(3 * TF_D, TF_D))
            self.in_proj_bias = self.params.get("in_proj_bias", shape=(3 * TF_D,), init="zeros")
            self.out_proj = nn.Dense(TF_D, in_units=TF_D, flatten=False)

        def forward(self, x):
            n, t, d = x.shape
            hd = d // TF_HEADS
            qkv = nd.FullyConnected(
                x, self.in_proj_weight.data(), self.in_proj_bias.data(), num_hidden=3 * d,
                flatten=False,
            )  # fmt: skip
            q, k, v = (
                part.reshape((n, t, TF_HEADS, hd)).transpose((0, 2, 1, 3)).reshape((-1, t, hd))
                for part in nd.split(qkv, 3, axis=2)
            )
            a = nd.softmax(nd.batch_dot(q, k, transpose_b=True) / np.sqrt(hd), axis=-1)
            y = nd.batch_dot(a, v).reshape((n, TF_HEADS, t, hd)).transpose((0, 2, 1, 3))
            return self.out_proj(y.reshape((n, t, d)))

    class EncoderLayer(nn.Block):
        def __init__(self):
            super().__init__()
            self.self_attn = Attention()
            self.linear1 = nn.Dense(TF_FF, in_units=TF_D, flatten=False)
            self.linear2 = nn.Dense(TF_D, in_units=TF_FF, flatten=False)
            self.norm1 = nn.LayerNorm(in_channels=TF_D, epsilon=1e-5)
            self.norm2 = nn.LayerNorm(in_channels=TF_D, epsilon=1e-5)

        def forward(self, x):
            x = self.norm1(x + self.self_attn(x))
            h = self.linear1(x)
            return self.norm2(x + self.linear2(0.5 * h * (1 + nd.erf(h / np.sqrt(2.0)))))

    class Classifier(nn.Block):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(TF_VOCAB, TF_D)
            self.position = self.params.get("position", shape=(1, TF_LEN, TF_D))
            self.encoder = nn.Sequential()
            self.encoder.add(EncoderLayer(), EncoderLayer())
            self.head = nn.Dense(2, in_units=TF_D)

        def forward(self, x):
            h = self.encoder(nd.broadcast_add(self.embedding(x), self.position.data()))
            return self.head(h.mean(axis=1))

    mx.random.seed(0)
    w = WIDTH
    resnet = nn.Sequential()
    resnet.add(
        nn.Conv2D(w, 3, padding=1, in_channels=1), nn.BatchNorm(in_channels=w),
        nn.Activation("relu"), *(stage(*s) for s in _stages()), nn.GlobalAvgPool2D(),
        nn.Flatten(), nn.Dense(CLASSES, in_units=8 * w),
    )  # fmt: skip
    nets = {"resnet18": resnet, "gru_lm": LanguageModel(), "transformer": Classifier()}
    for net in nets.values():
        net.initialize(mx.init.Xavier())
        for name, p in net.collect_params().items():
            if name.endswith("bias"):  # Gluon's zeros would leave the biases' mapping untested
                p.set_data(nd.array(ZOO.uniform(-0.5, 0.5, p.shape)))
    for name, p in resnet.collect_params().items():
        if name.endswith("gamma"):
            prefix = name[: -len("gamma")]
            values = _bn_values(p.shape[0])
            for suffix, v in zip(
                ("gamma", "beta", "running_mean", "running_var"), values, strict=True
            ):
                resnet.collect_params()[prefix + suffix].set_data(nd.array(v))
    for name, net in nets.items():
        net.save_parameters(str(out / f"{name}.params"))
        x = ZOO_INPUTS[name]
        y = net(nd.array(x, dtype=x.dtype)).asnumpy()
        np.savez(out / f"{name}.npz", x=x, y=y)


if __name__ == "__main__":
    framework = sys.argv[1]
    target = OUT / framework
    target.mkdir(parents=True, exist_ok=True)
    {"torch": torch_models, "keras": keras_models, "paddle": paddle_models, "mxnet": mxnet_models}[
        framework
    ](target)
    print(f"wrote {sorted(p.name for p in target.iterdir())}")
