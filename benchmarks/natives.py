"""The same work written in each framework's own code, for the benchmark's native side.

Each ``Native`` turns NumPy arrays into framework tensors on the CPU and gives a ``sync`` that
waits for queued work (MXNet's engine is asynchronous; the others run eagerly on the CPU).
"""

from __future__ import annotations

import numpy as np


class Native:
    name = "numpy"

    def tensor(self, arr: np.ndarray):
        return arr

    def sync(self) -> None:
        return None

    def add(self, a, b):
        return a + b

    def matmul(self, a, b):
        return a @ b


class Torch(Native):
    name = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch

    def tensor(self, arr):
        return self.torch.from_numpy(np.ascontiguousarray(arr))

    def sync(self) -> None:
        if self.torch.cuda.is_available() and self.torch.cuda.is_initialized():
            self.torch.cuda.synchronize()


class TensorFlow(Native):
    name = "tensorflow"

    def __init__(self) -> None:
        import tensorflow as tf

        self.tf = tf

    def tensor(self, arr):
        return self.tf.convert_to_tensor(arr)


class Paddle(Native):
    name = "paddle"

    def __init__(self) -> None:
        import paddle

        self.paddle = paddle

    def tensor(self, arr):
        return self.paddle.to_tensor(arr, place=self.paddle.CPUPlace())

    def sync(self) -> None:
        self.paddle.device.synchronize()


class MXNet(Native):
    name = "mxnet"

    def __init__(self) -> None:
        import mxnet as mx

        self.mx = mx

    def tensor(self, arr):
        return self.mx.np.array(arr, ctx=self.mx.cpu())

    def sync(self) -> None:
        self.mx.nd.waitall()

    def matmul(self, a, b):
        return self.mx.np.matmul(a, b)


def for_backend(name: str) -> Native:
    return {
        "numpy": Native,
        "torch": Torch,
        "tensorflow": TensorFlow,
        "paddle": Paddle,
        "mxnet": MXNet,
    }[name]()
