"""The same work written in each framework's own code: the benchmarks' native side.

Each ``Native`` makes framework tensors on the CPU from NumPy arrays, gives a ``sync`` that
waits for queued work (MXNet's engine is asynchronous; the others run eagerly on the CPU),
and writes the cases the way a user of that framework would: its own layers and optimiser
for the MLP, its own save/load for checkpoints.

``mlp_step(weights, X, Y, lr)`` builds the MLP from ``weights`` (a list of (W, b) NumPy pairs,
W of shape (out, in)) with ReLU between layers and returns a function doing one
forward + mean-squared-error + backward + SGD step, which returns the loss (a native tensor).
"""

from __future__ import annotations

import numpy as np

Weights = list[tuple[np.ndarray, np.ndarray]]


class Native:
    """Plain NumPy: the baseline of the NumPy backend (op cases only). The op cases use
    Python operators (``a + b``, ``a @ b``) on the tensors ``tensor`` makes."""

    name = "numpy"
    #: what the checkpoint cases call the framework's own save and load
    save_label = load_label = ""

    def tensor(self, arr: np.ndarray):
        return arr

    def to_numpy(self, x) -> np.ndarray:
        return np.asarray(x)

    def sync(self) -> None:
        return None

    def touch(self, x) -> float:
        """Read every element (a sum, brought to the host)."""
        return float(np.sum(x))

    def loss_value(self, loss) -> float:
        return float(self.to_numpy(loss))

    def mlp_step(self, weights: Weights, X: np.ndarray, Y: np.ndarray, lr: float):
        raise NotImplementedError(f"Expected a framework with autograd. Received: {self.name}")

    def save(self, state: dict, path: str) -> None:
        raise NotImplementedError(f"Expected a framework with its own save. Received: {self.name}")

    def load(self, path: str, like: dict) -> dict:
        raise NotImplementedError(f"Expected a framework with its own load. Received: {self.name}")


class Torch(Native):
    name = "torch"
    save_label, load_label = "torch.save", "torch.load"

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self._cuda = torch.cuda.is_available()

    def tensor(self, arr):
        return self.torch.from_numpy(np.ascontiguousarray(arr))

    def to_numpy(self, x):
        return x.detach().numpy()

    def sync(self) -> None:
        if self._cuda and self.torch.cuda.is_initialized():
            self.torch.cuda.synchronize()

    def touch(self, x) -> float:
        return float(x.sum())

    def loss_value(self, loss) -> float:
        return loss.item()

    def mlp_step(self, weights, X, Y, lr):
        torch = self.torch
        layers = []
        for i, (w, b) in enumerate(weights):
            lin = torch.nn.Linear(w.shape[1], w.shape[0])
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(w))
                lin.bias.copy_(torch.from_numpy(b))
            layers.append(lin)
            if i < len(weights) - 1:
                layers.append(torch.nn.ReLU())
        model = torch.nn.Sequential(*layers)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        x, y = self.tensor(X), self.tensor(Y)
        mse = torch.nn.functional.mse_loss

        def step():
            loss = mse(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return step

    def save(self, state, path):
        self.torch.save(state, path)

    def load(self, path, like):
        return self.torch.load(path, weights_only=True)


class TensorFlow(Native):
    name = "tensorflow"
    save_label, load_label = "tf.train.Checkpoint.write", "tf.train.Checkpoint.read"

    def __init__(self) -> None:
        import tensorflow as tf

        self.tf = tf

    def tensor(self, arr):
        return self.tf.convert_to_tensor(arr)

    def to_numpy(self, x):
        return x.numpy()

    def touch(self, x) -> float:
        return float(self.tf.reduce_sum(x))

    def loss_value(self, loss) -> float:
        return float(loss)

    def mlp_step(self, weights, X, Y, lr):
        """Keras ``Dense`` layout (kernel of shape (in, out)), a GradientTape and TensorFlow's
        fused SGD kernel (``ResourceApplyGradientDescent``, what Keras' SGD and multidev's
        optimiser run), so that both sides do the same work per parameter."""
        tf = self.tf
        layers = [(tf.Variable(np.ascontiguousarray(w.T)), tf.Variable(b)) for w, b in weights]
        variables = [v for pair in layers for v in pair]
        last = len(layers) - 1
        x, y = self.tensor(X), self.tensor(Y)
        alpha = tf.constant(lr, tf.float32)

        def step():
            with tf.GradientTape() as tape:
                h = x
                for i, (k, b) in enumerate(layers):
                    h = tf.nn.bias_add(tf.linalg.matmul(h, k), b)
                    if i < last:
                        h = tf.nn.relu(h)
                loss = tf.reduce_mean(tf.square(h - y))
            grads = tape.gradient(loss, variables)
            for v, g in zip(variables, grads, strict=True):
                tf.raw_ops.ResourceApplyGradientDescent(var=v.handle, alpha=alpha, delta=g)
            return loss

        return step

    def _checkpoint(self, variables: dict):
        return self.tf.train.Checkpoint(params=variables)

    def variables(self, state: dict) -> dict:
        """Checkpoints hold variables: the saving side turns tensors into variables once."""
        return {k: self.tf.Variable(v) for k, v in state.items()}

    def save(self, state, path):
        self._checkpoint(state).write(path)

    def load(self, path, like):
        """Restores into existing variables of the right shapes, as TensorFlow requires."""
        self._checkpoint(like).read(path).assert_consumed()
        return like


class Paddle(Native):
    name = "paddle"
    save_label, load_label = "paddle.save", "paddle.load"

    def __init__(self) -> None:
        import paddle

        self.paddle = paddle
        self._place = paddle.CPUPlace()
        self._gpu = paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0

    def tensor(self, arr):
        return self.paddle.to_tensor(arr, place=self._place)

    def to_numpy(self, x):
        return x.numpy()

    def sync(self) -> None:
        if self._gpu:
            self.paddle.device.synchronize()

    def touch(self, x) -> float:
        return float(x.sum())

    def loss_value(self, loss) -> float:
        return float(loss)

    def mlp_step(self, weights, X, Y, lr):
        """``paddle.nn.Linear`` stores its weight as (in, out). Gradients are dropped after
        each step (``clear_grad(set_to_zero=False)``), as multidev's ``zero_grad()`` does,
        rather than zero-filled."""
        paddle = self.paddle
        layers = []
        for i, (w, b) in enumerate(weights):
            lin = paddle.nn.Linear(w.shape[1], w.shape[0])
            lin.weight.set_value(np.ascontiguousarray(w.T))
            lin.bias.set_value(b)
            layers.append(lin)
            if i < len(weights) - 1:
                layers.append(paddle.nn.ReLU())
        model = paddle.nn.Sequential(*layers)
        opt = paddle.optimizer.SGD(learning_rate=lr, parameters=model.parameters())
        x, y = self.tensor(X), self.tensor(Y)
        mse = paddle.nn.functional.mse_loss

        def step():
            loss = mse(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad(set_to_zero=False)
            return loss

        return step

    def save(self, state, path):
        self.paddle.save(state, path)

    def load(self, path, like):
        return self.paddle.load(path)


class MXNet(Native):
    name = "mxnet"
    save_label, load_label = "mx.nd.save", "mx.nd.load"

    def __init__(self) -> None:
        import mxnet as mx
        from mxnet import npx

        npx.set_np()  # gluon on mxnet.numpy arrays, as d2l (and the multidev adapter) use it
        self.mx = mx
        self._ctx = mx.cpu()

    def tensor(self, arr):
        return self.mx.np.array(arr, ctx=self._ctx)

    def to_numpy(self, x):
        return x.asnumpy()

    def sync(self) -> None:
        self.mx.nd.waitall()

    def touch(self, x) -> float:
        return float(x.sum().asnumpy())

    def loss_value(self, loss) -> float:
        return float(loss.asnumpy())

    def mlp_step(self, weights, X, Y, lr):
        """gluon ``Dense`` layers (not hybridised, like the multidev model), ``autograd.record``
        and a ``Trainer`` with plain SGD."""
        mx = self.mx
        from mxnet import autograd, gluon

        net = gluon.nn.Sequential()
        last = len(weights) - 1
        for i, (w, _) in enumerate(weights):
            net.add(
                gluon.nn.Dense(
                    w.shape[0], in_units=w.shape[1], activation="relu" if i < last else None
                )
            )
        net.initialize(ctx=self._ctx)
        for dense, (w, b) in zip(net, weights, strict=True):
            dense.weight.set_data(mx.np.array(w, ctx=self._ctx))
            dense.bias.set_data(mx.np.array(b, ctx=self._ctx))
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
        x, y = self.tensor(X), self.tensor(Y)

        def step():
            with autograd.record():
                loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            trainer.step(1)
            return loss

        return step

    def save(self, state, path):
        self.mx.nd.save(path, {k: v.as_nd_ndarray() for k, v in state.items()})

    def load(self, path, like):
        return self.mx.nd.load(path)


def for_backend(name: str) -> Native:
    try:
        cls = {
            "numpy": Native,
            "torch": Torch,
            "tensorflow": TensorFlow,
            "paddle": Paddle,
            "mxnet": MXNet,
        }[name]
    except KeyError:
        raise ValueError(
            f"Expected a backend with native benchmark code (numpy, torch, tensorflow, paddle, "
            f"mxnet). Received: {name!r}"
        ) from None
    return cls()
