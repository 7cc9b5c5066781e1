"""The ``lenet_step`` and ``resnet18_step`` cases: one training step of a CNN, multidev against
the same model written with the framework's own layers (``torch.nn``, Keras, ``paddle.nn``,
Gluon), the same initial weights on both sides.

- ``lenet_step``: d2l's LeNet (sigmoid, average pooling) on a batch of 64 28x28 images.
- ``resnet18_step``: d2l's ResNet-18 (7x7/2 stem and 3x3/2 max-pool, BatchNorm in training
  mode) on a batch of 16 64x64 images.

A step is forward, cross-entropy, backward and a plain SGD update. The multidev model is the
one of ``multidev.examples.modern_cnns``; each native model is translated from it layer by
layer (``_translate``), its weights copied, so both sides hold the same network. Keras runs
NHWC, its CPU kernels' only layout (multidev transposes NCHW around each of them): the native
input is the same batch transposed, and the flattened features feed a ``Dense`` kernel whose
rows are permuted to match.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from cases import Case, Context, Row, side
from harness import Target

__all__ = ["cnn_data", "keras_model", "lenet_step_case", "resnet18_step_case"]

LR = 0.01
State = dict[str, np.ndarray]


def _weights(block: Any) -> State:
    """A multidev block's own parameters and buffers as NumPy arrays."""
    out = {k: np.array(v.numpy(), copy=True) for k, v in block.named_parameters()}
    out.update({k: np.array(v.numpy(), copy=True) for k, v in block.named_buffers()})
    return out


def _kind(block: Any) -> str:
    return type(block).__name__


# ---------------------------------------------------------------- torch


def _torch_model(block: Any) -> Any:
    """The torch.nn twin of a multidev model (the same class names, the same state-dict keys)."""
    import torch

    class Residual(torch.nn.Module):
        def __init__(self, src: Any) -> None:
            super().__init__()
            self.conv1, self.conv2 = _torch_layer(src.conv1), _torch_layer(src.conv2)
            self.conv3 = None if src.conv3 is None else _torch_layer(src.conv3)
            self.bn1, self.bn2 = _torch_layer(src.bn1), _torch_layer(src.bn2)

        def forward(self, X):
            Y = torch.relu(self.bn1(self.conv1(X)))
            Y = self.bn2(self.conv2(Y))
            if self.conv3 is not None:
                X = self.conv3(X)
            return torch.relu(Y + X)

    def _torch_layer(b: Any) -> Any:
        nn, kind = torch.nn, _kind(b)
        if kind == "Sequential":
            return nn.Sequential(*(_torch_layer(c) for c in b))
        if kind == "Residual":
            return Residual(b)
        if kind == "Conv2d":
            return nn.Conv2d(b.in_channels, b.out_channels, b.kernel_size, b.stride, b.padding)
        if kind == "BatchNorm2d":
            return nn.BatchNorm2d(b.num_features, b.eps, b.momentum)
        if kind == "Linear":
            return nn.Linear(b.in_features, b.out_features)
        if kind == "MaxPool2d":
            return nn.MaxPool2d(b.kernel_size, b.stride, b.padding)
        if kind == "AvgPool2d":
            return nn.AvgPool2d(b.kernel_size, b.stride, b.padding)
        if kind == "AdaptiveAvgPool2d":
            return nn.AdaptiveAvgPool2d(b.output_size)
        return {"ReLU": nn.ReLU, "Sigmoid": nn.Sigmoid, "Flatten": nn.Flatten}[kind]()

    model = _torch_layer(block)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in _weights(block).items()})
    return model


def _torch_step(block: Any, X: np.ndarray, y: np.ndarray) -> Callable[[], Any]:
    import torch

    model = _torch_model(block).train()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x, t = torch.from_numpy(X), torch.from_numpy(y)
    cross_entropy = torch.nn.functional.cross_entropy

    def step():
        loss = cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


# ---------------------------------------------------------------- tensorflow


def _keras_net(
    block: Any, side_len: int, relu: Callable, sigmoid: Callable
) -> tuple[Callable[[Any], Any], list[Any]]:
    """The Keras layers (NHWC) of a multidev model, its weights copied, as a function of the
    input and the list of layers made. Torch-style symmetric padding is a ``ZeroPadding2D``
    before a ``valid`` convolution or pooling (every max-pool here follows a ReLU, so zeros
    pad it as -inf would); BatchNorm is called in training mode."""
    import keras

    L = keras.layers
    made: list[Any] = []

    def keep(layer: Any) -> Any:
        made.append(layer)
        return layer

    def padded(pad: Any, layer: Any) -> Callable[[Any], Any]:
        pad = tuple(pad) if isinstance(pad, (tuple, list)) else (pad, pad)
        if pad == (0, 0):
            return layer
        zero = keep(L.ZeroPadding2D(pad))
        return lambda h: layer(zero(h))

    def conv(b: Any, w: State, prefix: str) -> Callable[[Any], Any]:
        layer = keep(L.Conv2D(b.out_channels, b.kernel_size, b.stride, "valid"))
        layer.build((None, None, None, b.in_channels))
        layer.kernel.assign(w[prefix + "weight"].transpose(2, 3, 1, 0))
        layer.bias.assign(w[prefix + "bias"])
        return padded(b.padding, layer)

    def batch_norm(b: Any, w: State, prefix: str) -> Callable[[Any], Any]:
        layer = keep(L.BatchNormalization(momentum=1 - b.momentum, epsilon=b.eps))
        layer.build((None, None, None, b.num_features))
        layer.gamma.assign(w[prefix + "weight"])
        layer.beta.assign(w[prefix + "bias"])
        layer.moving_mean.assign(w[prefix + "running_mean"])
        layer.moving_variance.assign(w[prefix + "running_var"])
        return lambda h: layer(h, training=True)

    def dense(b: Any, w: State, prefix: str, chw: tuple[int, ...] | None) -> Callable:
        layer = keep(L.Dense(b.out_features))
        layer.build((None, b.in_features))
        weight = w[prefix + "weight"]
        if chw is not None:  # rows in NHWC flattening order
            weight = weight.reshape(-1, *chw).transpose(0, 2, 3, 1).reshape(weight.shape[0], -1)
        layer.kernel.assign(weight.T)
        layer.bias.assign(w[prefix + "bias"])
        return layer

    def translate(b: Any, w: State, prefix: str, chw: tuple[int, ...] | None) -> Callable:
        kind = _kind(b)
        if kind == "Sequential":
            kinds = ["", *(_kind(c) for c in b)]  # a Linear after a Flatten takes chw
            parts = [
                translate(c, w, f"{prefix}{i}.", chw if kinds[i] == "Flatten" else None)
                for i, c in enumerate(b)
            ]

            def run(h):
                for part in parts:
                    h = part(h)
                return h

            return run
        if kind == "Residual":
            c1, c2 = conv(b.conv1, w, prefix + "conv1."), conv(b.conv2, w, prefix + "conv2.")
            n1, n2 = batch_norm(b.bn1, w, prefix + "bn1."), batch_norm(b.bn2, w, prefix + "bn2.")
            c3 = None if b.conv3 is None else conv(b.conv3, w, prefix + "conv3.")

            def residual(X):
                Y = n2(c2(relu(n1(c1(X)))))
                return relu(Y + (X if c3 is None else c3(X)))

            return residual
        if kind == "Conv2d":
            return conv(b, w, prefix)
        if kind == "BatchNorm2d":
            return batch_norm(b, w, prefix)
        if kind == "Linear":
            return dense(b, w, prefix, chw)
        if kind == "MaxPool2d":
            return padded(b.padding, keep(L.MaxPooling2D(b.kernel_size, b.stride)))
        if kind == "AvgPool2d":
            return padded(b.padding, keep(L.AveragePooling2D(b.kernel_size, b.stride)))
        if kind == "AdaptiveAvgPool2d":
            return keep(L.GlobalAveragePooling2D())
        return {"ReLU": relu, "Sigmoid": sigmoid, "Flatten": keep(L.Flatten())}[kind]

    chw = (16, 5, 5) if side_len == 28 else None  # LeNet's flattened (C, H, W)
    return translate(block, _weights(block), "", chw), made


def keras_model(block: Any, side_len: int) -> Any:
    """The same network as a functional ``keras.Model`` on NHWC input of ``side_len``
    (Keras 3's ops, so it runs on whichever backend Keras was loaded with)."""
    import keras

    net, _ = _keras_net(block, side_len, keras.ops.relu, keras.ops.sigmoid)
    inputs = keras.Input((side_len, side_len, 1))
    return keras.Model(inputs, net(inputs))


def _tf_step(block: Any, X: np.ndarray, y: np.ndarray) -> Callable[[], Any]:
    """Keras layers in NHWC called in training mode (``_keras_net``), a GradientTape and
    TensorFlow's fused SGD kernel (what multidev's optimiser runs)."""
    import tensorflow as tf

    model, made = _keras_net(block, X.shape[-1], tf.nn.relu, tf.nn.sigmoid)
    variables = [v for layer in made for v in layer.trainable_variables]
    x, t = tf.constant(X.transpose(0, 2, 3, 1)), tf.constant(y)
    alpha = tf.constant(LR, tf.float32)
    xent = tf.nn.sparse_softmax_cross_entropy_with_logits

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(xent(labels=t, logits=model(x)))
        grads = tape.gradient(loss, variables)
        for v, g in zip(variables, grads, strict=True):
            tf.raw_ops.ResourceApplyGradientDescent(var=v.handle, alpha=alpha, delta=g)
        return loss

    return step


# ---------------------------------------------------------------- paddle


def _paddle_step(
    block: Any, X: np.ndarray, y: np.ndarray, to_static: bool = False
) -> Callable[[], Any]:
    """``paddle.nn`` layers; gradients dropped after each step as multidev's ``zero_grad()``;
    with ``to_static``, the model through ``paddle.jit.to_static`` (the step stays eager)."""
    import paddle

    nn = paddle.nn
    w = _weights(block)

    class Residual(nn.Layer):
        def __init__(self, src: Any, prefix: str) -> None:
            super().__init__()
            self.conv1 = translate(src.conv1, prefix + "conv1.")
            self.conv2 = translate(src.conv2, prefix + "conv2.")
            self.conv3 = None if src.conv3 is None else translate(src.conv3, prefix + "conv3.")
            self.bn1 = translate(src.bn1, prefix + "bn1.")
            self.bn2 = translate(src.bn2, prefix + "bn2.")

        def forward(self, X):
            Y = nn.functional.relu(self.bn1(self.conv1(X)))
            Y = self.bn2(self.conv2(Y))
            if self.conv3 is not None:
                X = self.conv3(X)
            return nn.functional.relu(Y + X)

    def translate(b: Any, prefix: str) -> Any:
        kind = _kind(b)
        if kind == "Sequential":
            return nn.Sequential(*(translate(c, f"{prefix}{i}.") for i, c in enumerate(b)))
        if kind == "Residual":
            return Residual(b, prefix)
        if kind == "Conv2d":
            layer = nn.Conv2D(b.in_channels, b.out_channels, b.kernel_size, b.stride, b.padding)
            layer.weight.set_value(w[prefix + "weight"])
            layer.bias.set_value(w[prefix + "bias"])
            return layer
        if kind == "BatchNorm2d":
            layer = nn.BatchNorm2D(b.num_features, momentum=1 - b.momentum, epsilon=b.eps)
            layer.weight.set_value(w[prefix + "weight"])
            layer.bias.set_value(w[prefix + "bias"])
            layer._mean.set_value(w[prefix + "running_mean"])
            layer._variance.set_value(w[prefix + "running_var"])
            return layer
        if kind == "Linear":
            layer = nn.Linear(b.in_features, b.out_features)
            layer.weight.set_value(np.ascontiguousarray(w[prefix + "weight"].T))
            layer.bias.set_value(w[prefix + "bias"])
            return layer
        if kind == "MaxPool2d":
            return nn.MaxPool2D(b.kernel_size, b.stride, b.padding)
        if kind == "AvgPool2d":
            return nn.AvgPool2D(b.kernel_size, b.stride, b.padding)
        if kind == "AdaptiveAvgPool2d":
            return nn.AdaptiveAvgPool2D(b.output_size)
        return {"ReLU": nn.ReLU, "Sigmoid": nn.Sigmoid, "Flatten": nn.Flatten}[kind]()

    model = translate(block, "")
    model.train()
    opt = paddle.optimizer.SGD(learning_rate=LR, parameters=model.parameters())
    if to_static:
        model = paddle.jit.to_static(model, full_graph=True)
    x, t = paddle.to_tensor(X), paddle.to_tensor(y)
    cross_entropy = nn.functional.cross_entropy

    def step():
        loss = cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        opt.clear_grad(set_to_zero=False)
        return loss

    return step


# ---------------------------------------------------------------- mxnet


def _mxnet_step(
    block: Any, X: np.ndarray, y: np.ndarray, hybrid: bool = False
) -> Callable[[], Any]:
    """Gluon layers (not hybridised, like the multidev model), ``autograd.record`` and a
    ``Trainer`` with plain SGD; with ``hybrid``, hybrid blocks and ``hybridize()``."""
    import mxnet as mx
    from mxnet import autograd, gluon

    nn, npx = gluon.nn, mx.npx
    w = _weights(block)
    copies: list[tuple[Any, np.ndarray]] = []

    class Residual(gluon.HybridBlock if hybrid else gluon.Block):
        def __init__(self, src: Any, prefix: str) -> None:
            super().__init__()
            self.conv1 = translate(src.conv1, prefix + "conv1.")
            self.conv2 = translate(src.conv2, prefix + "conv2.")
            self.conv3 = None if src.conv3 is None else translate(src.conv3, prefix + "conv3.")
            self.bn1 = translate(src.bn1, prefix + "bn1.")
            self.bn2 = translate(src.bn2, prefix + "bn2.")

        def _residual(self, relu: Callable, X):
            Y = relu(self.bn1(self.conv1(X)))
            Y = self.bn2(self.conv2(Y))
            if self.conv3 is not None:
                X = self.conv3(X)
            return relu(Y + X)

        if hybrid:  # MXNet 1.x traces a HybridBlock through hybrid_forward(F, ...)

            def hybrid_forward(self, F, X):
                return self._residual(F.npx.relu, X)

        else:

            def forward(self, X):
                return self._residual(npx.relu, X)

    def translate(b: Any, prefix: str) -> Any:
        kind = _kind(b)
        if kind == "Sequential":
            seq = nn.HybridSequential() if hybrid else nn.Sequential()
            seq.add(*(translate(c, f"{prefix}{i}.") for i, c in enumerate(b)))
            return seq
        if kind == "Residual":
            return Residual(b, prefix)
        if kind == "Conv2d":
            layer = nn.Conv2D(
                b.out_channels, b.kernel_size, b.stride, b.padding, in_channels=b.in_channels
            )
            copies.extend([(layer.weight, w[prefix + "weight"]), (layer.bias, w[prefix + "bias"])])
            return layer
        if kind == "BatchNorm2d":
            layer = nn.BatchNorm(momentum=1 - b.momentum, epsilon=b.eps, in_channels=b.num_features)
            copies.extend(
                [
                    (layer.gamma, w[prefix + "weight"]),
                    (layer.beta, w[prefix + "bias"]),
                    (layer.running_mean, w[prefix + "running_mean"]),
                    (layer.running_var, w[prefix + "running_var"]),
                ]
            )
            return layer
        if kind == "Linear":
            layer = nn.Dense(b.out_features, in_units=b.in_features)
            copies.extend([(layer.weight, w[prefix + "weight"]), (layer.bias, w[prefix + "bias"])])
            return layer
        if kind == "MaxPool2d":
            return nn.MaxPool2D(b.kernel_size, b.stride, b.padding)
        if kind == "AvgPool2d":
            return nn.AvgPool2D(b.kernel_size, b.stride, b.padding)
        if kind == "AdaptiveAvgPool2d":
            return nn.GlobalAvgPool2D()
        if kind == "Flatten":
            return nn.Flatten()
        return nn.Activation({"ReLU": "relu", "Sigmoid": "sigmoid"}[kind])

    model = translate(block, "")
    model.initialize()
    for param, value in copies:
        param.set_data(mx.np.array(value))
    if hybrid:
        model.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(model.collect_params(), "sgd", {"learning_rate": LR})
    x, t = mx.np.array(X), mx.np.array(y)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(model(x), t).mean()
        loss.backward()
        trainer.step(1)
        return loss

    return step


# ---------------------------------------------------------------- jax


def _jax_forward(block: Any) -> Callable[[State, State, Any], Any]:
    """The network as a pure function ``(params, buffers, x) -> logits`` of ``jax.lax``
    kernels in NCHW, keyed by the multidev state-dict names. BatchNorm runs in training mode
    and writes its new running statistics into ``buffers`` (a dict the caller owns)."""
    import jax
    from jax import lax

    def pair(v: Any) -> tuple[int, int]:
        return tuple(v) if isinstance(v, (tuple, list)) else (v, v)  # type: ignore[return-value]

    def pool(b: Any, init: float, op: Callable, scale: float) -> Callable:
        (kh, kw), (sh, sw), (ph, pw) = pair(b.kernel_size), pair(b.stride), pair(b.padding)
        padding = ((0, 0), (0, 0), (ph, ph), (pw, pw))
        return lambda p, s, h: (
            lax.reduce_window(h, init, op, (1, 1, kh, kw), (1, 1, sh, sw), padding)
            * (scale / (kh * kw) if scale else 1.0)
        )

    def translate(b: Any, prefix: str) -> Callable:
        kind = _kind(b)
        if kind == "Sequential":
            parts = [translate(c, f"{prefix}{i}.") for i, c in enumerate(b)]

            def run(p, s, h):
                for part in parts:
                    h = part(p, s, h)
                return h

            return run
        if kind == "Residual":
            c1, c2, n1, n2 = (translate(getattr(b, n), f"{prefix}{n}.") for n in
                              ("conv1", "conv2", "bn1", "bn2"))  # fmt: skip
            c3 = None if b.conv3 is None else translate(b.conv3, prefix + "conv3.")

            def residual(p, s, X):
                Y = n2(p, s, c2(p, s, jax.nn.relu(n1(p, s, c1(p, s, X)))))
                return jax.nn.relu(Y + (X if c3 is None else c3(p, s, X)))

            return residual
        if kind == "Conv2d":
            stride, (ph, pw) = pair(b.stride), pair(b.padding)

            def conv(p, s, h):
                y = lax.conv_general_dilated(
                    h, p[prefix + "weight"], stride, ((ph, ph), (pw, pw)),
                    dimension_numbers=("NCHW", "OIHW", "NCHW"),
                )  # fmt: skip
                return y + p[prefix + "bias"][:, None, None]

            return conv
        if kind == "BatchNorm2d":
            momentum, eps = b.momentum, b.eps

            def batch_norm(p, s, h):
                mean, var = h.mean((0, 2, 3)), h.var((0, 2, 3))
                n = h.size // h.shape[1]
                for key, new in (("running_mean", mean), ("running_var", var * n / (n - 1))):
                    old = s[prefix + key]
                    s[prefix + key] = (1 - momentum) * old + momentum * lax.stop_gradient(new)
                s[prefix + "num_batches_tracked"] = s[prefix + "num_batches_tracked"] + 1
                scale = p[prefix + "weight"] * lax.rsqrt(var + eps)
                return (h - mean[:, None, None]) * scale[:, None, None] + p[prefix + "bias"][
                    :, None, None
                ]

            return batch_norm
        if kind == "Linear":
            return lambda p, s, h: h @ p[prefix + "weight"].T + p[prefix + "bias"]
        if kind == "MaxPool2d":
            return pool(b, -float("inf"), lax.max, 0.0)
        if kind == "AvgPool2d":  # torch's default counts the padding in the mean
            return pool(b, 0.0, lax.add, 1.0)
        if kind == "AdaptiveAvgPool2d":
            return lambda p, s, h: h.mean((2, 3), keepdims=True)
        if kind == "Flatten":
            return lambda p, s, h: h.reshape(h.shape[0], -1)
        act = {"ReLU": jax.nn.relu, "Sigmoid": jax.nn.sigmoid}[kind]
        return lambda p, s, h: act(h)

    return translate(block, "")


def _jax_step(block: Any, X: np.ndarray, y: np.ndarray, jit: bool = False) -> Callable[[], Any]:
    """A hand-written JAX step: ``_jax_forward``, ``jax.value_and_grad`` and ``optax.sgd``;
    with ``jit``, the whole update through ``jax.jit`` with the state donated."""
    import jax
    import jax.numpy as jnp
    import optax

    forward = _jax_forward(block)
    names = {k for k, _ in block.named_parameters()}
    w = {k: jnp.asarray(v) for k, v in _weights(block).items()}
    params = {k: v for k, v in w.items() if k in names}
    buffers = {k: v for k, v in w.items() if k not in names}
    opt = optax.sgd(LR)

    def loss_fn(p, s, x, t):
        s = dict(s)
        logits = forward(p, s, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, t).mean(), s

    def update(p, s, o, x, t):
        (loss, s), g = jax.value_and_grad(loss_fn, has_aux=True)(p, s, x, t)
        updates, o = opt.update(g, o, p)
        return optax.apply_updates(p, updates), s, o, loss

    if jit:
        update = jax.jit(update, donate_argnums=(0, 1, 2))
    state = [params, buffers, opt.init(params)]
    x, t = jnp.asarray(X), jnp.asarray(y)

    def step():
        state[0], state[1], state[2], loss = update(*state, x, t)
        return loss

    return step


NATIVE_STEPS = {
    "torch": _torch_step,
    "tensorflow": _tf_step,
    "paddle": _paddle_step,
    "mxnet": _mxnet_step,
    "jax": _jax_step,
}


def cnn_data(batch: int, side_len: int) -> tuple[np.ndarray, np.ndarray]:
    """A case's batch: NCHW one-channel images and integer labels in [0, 10)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((batch, 1, side_len, side_len), dtype=np.float32)
    return X, rng.integers(0, 10, size=batch)


def _cnn_case(ctx: Context, name: str, build: Callable[[Any], Any], batch: int, side_len: int,
              repeats: int) -> Case:  # fmt: skip
    md, nat = ctx.md, ctx.nat
    X, y = cnn_data(batch, side_len)
    with side("multidev"):
        from multidev.examples import modern_cnns

        md.manual_seed(0)
        net = build(modern_cnns)
        net.train()
        opt = md.optim.SGD(net.parameters(), lr=LR)
        x, t = md.asarray(X), md.asarray(y)
        cross_entropy, record = md.nn.functional.cross_entropy, md.autograd.record
        net_copy = build(modern_cnns)
        net_copy.load_state_dict(net.state_dict())

        def md_step():
            with record():
                loss = cross_entropy(net(x), t)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        md_loss = float(md_step().item())
        nat.sync()
    with side("native"):
        nat_step = NATIVE_STEPS[ctx.backend](net_copy, X, y)
        nat_loss = nat.loss_value(nat_step())
        nat.sync()
    rel = abs(md_loss - nat_loss) / max(abs(nat_loss), 1e-30)
    check = "same first loss" if rel < 1e-4 else f"first losses differ: {md_loss} vs {nat_loss}"
    return Case(
        name,
        {"md": md_step, "native": nat_step},
        [Row("native", f"{nat.name} (own layers + SGD)", Target("ratio", 1.10))],
        repeats=repeats,
        warmup=2,
        number=1,
        budget_s=0.2,
        note=check,
        extra={"first_loss": {"md": md_loss, "native": nat_loss}},
    )


def lenet_step_case(ctx: Context) -> list[Case]:
    return [
        _cnn_case(
            ctx, "lenet_step (LeNet, batch 64, 28×28)", lambda m: m.lenet(), 64, 28,
            5 if ctx.quick else 15,
        )
    ]  # fmt: skip


def resnet18_step_case(ctx: Context) -> list[Case]:
    return [
        _cnn_case(
            ctx, "resnet18_step (ResNet-18, batch 16, 64×64)",
            lambda m: m.resnet18(small_inputs=False), 16, 64, 3 if ctx.quick else 7,
        )
    ]  # fmt: skip
