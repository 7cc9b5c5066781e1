"""The d2l convolutional chapters written once: LeNet, a small VGG, NiN, a GoogLeNet Inception
block, ResNet-18 (small inputs) and a DenseNet block, each trained a few SGD steps on
synthetic data with one seed: a fresh batch every step, each image its class's fixed pattern
plus noise, so the loss can only fall by learning the classes (not by memorising one batch).
The same code runs on every backend with autograd, in float32 or (``train(..., dtype=)``)
float64; the ``cnn-training`` nox session checks that the float64 per-step losses agree across
backends and that ResNet-18's loss after 20 steps is below its loss at step 0 in both dtypes
(``multidev.testing.cnn_compare`` says why the agreement is checked in float64).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import multidev as md
from multidev import nn
from multidev.dtypes import as_dtype
from multidev.nn import functional as F

__all__ = ["MODELS", "NOISE", "batches", "main", "train", "train_all"]


def lenet() -> nn.Block:
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(), nn.AvgPool2d(2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(), nn.AvgPool2d(2, stride=2),
        nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(),
        nn.Linear(84, 10),
    )  # fmt: skip


def _vgg_block(num_convs: int, in_channels: int, out_channels: int) -> nn.Block:
    layers: list[nn.Block] = []
    for _ in range(num_convs):
        layers += [nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1), nn.ReLU()]
        in_channels = out_channels
    return nn.Sequential(*layers, nn.MaxPool2d(kernel_size=2, stride=2))


def vgg() -> nn.Block:
    return nn.Sequential(
        _vgg_block(1, 1, 8), _vgg_block(2, 8, 16), nn.Flatten(),
        nn.Linear(16 * 7 * 7, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 10),
    )  # fmt: skip


def _nin_block(in_channels: int, out_channels: int, kernel_size: int, stride: int,
               padding: int) -> nn.Block:  # fmt: skip
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding), nn.ReLU(),
        nn.Conv2d(out_channels, out_channels, kernel_size=1), nn.ReLU(),
        nn.Conv2d(out_channels, out_channels, kernel_size=1), nn.ReLU(),
    )  # fmt: skip


def nin() -> nn.Block:
    return nn.Sequential(
        _nin_block(1, 16, kernel_size=5, stride=1, padding=2), nn.MaxPool2d(3, stride=2),
        _nin_block(16, 10, kernel_size=3, stride=1, padding=1),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
    )  # fmt: skip


class Inception(nn.Block):
    """GoogLeNet's block: four parallel paths concatenated on the channel dimension."""

    def __init__(self, in_channels: int, c1: int, c2: tuple[int, int], c3: tuple[int, int],
                 c4: int) -> None:  # fmt: skip
        super().__init__()
        self.p1_1 = nn.Conv2d(in_channels, c1, kernel_size=1)
        self.p2_1 = nn.Conv2d(in_channels, c2[0], kernel_size=1)
        self.p2_2 = nn.Conv2d(c2[0], c2[1], kernel_size=3, padding=1)
        self.p3_1 = nn.Conv2d(in_channels, c3[0], kernel_size=1)
        self.p3_2 = nn.Conv2d(c3[0], c3[1], kernel_size=5, padding=2)
        self.p4_1 = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
        self.p4_2 = nn.Conv2d(in_channels, c4, kernel_size=1)

    def forward(self, x: Any) -> md.Tensor:
        p1 = F.relu(self.p1_1(x))
        p2 = F.relu(self.p2_2(F.relu(self.p2_1(x))))
        p3 = F.relu(self.p3_2(F.relu(self.p3_1(x))))
        p4 = F.relu(self.p4_2(self.p4_1(x)))
        return md.concat([p1, p2, p3, p4], axis=1)


def googlenet_block() -> nn.Block:
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        Inception(16, 8, (8, 16), (4, 8), 8), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
        nn.Linear(40, 10),
    )  # fmt: skip


class Residual(nn.Block):
    """ResNet's basic block: two 3x3 convolutions with BatchNorm and a (1x1) shortcut."""

    def __init__(self, in_channels: int, num_channels: int, use_1x1conv: bool = False,
                 strides: int = 1) -> None:  # fmt: skip
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, num_channels, 3, padding=1, stride=strides)
        self.conv2 = nn.Conv2d(num_channels, num_channels, 3, padding=1)
        self.conv3 = (
            nn.Conv2d(in_channels, num_channels, 1, stride=strides) if use_1x1conv else None
        )
        self.bn1 = nn.BatchNorm2d(num_channels)
        self.bn2 = nn.BatchNorm2d(num_channels)

    def forward(self, X: Any) -> md.Tensor:
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3 is not None:
            X = self.conv3(X)
        return F.relu(Y + X)


def _resnet_stage(in_channels: int, num_channels: int, first: bool = False) -> nn.Block:
    if first:
        return nn.Sequential(
            Residual(in_channels, num_channels), Residual(num_channels, num_channels)
        )
    return nn.Sequential(
        Residual(in_channels, num_channels, use_1x1conv=True, strides=2),
        Residual(num_channels, num_channels),
    )


def resnet18(num_classes: int = 10, in_channels: int = 1, small_inputs: bool = True,
             width: int = 64) -> nn.Block:  # fmt: skip
    """d2l's ResNet-18: four stages of two residual blocks after a stem that is a 3x3
    convolution for small inputs (``small_inputs=True``, the feature maps keep the input's
    size) or d2l's 7x7/2 convolution and 3x3/2 max-pool (a quarter of the input's side).
    ``width`` is the stem's channel count; the stages have 1, 2, 4 and 8 times as many (d2l's
    64 gives 64 to 512; a small width gives the same architecture with small weights files)."""
    w = width
    if small_inputs:
        stem = [nn.Conv2d(in_channels, w, kernel_size=3, stride=1, padding=1), nn.BatchNorm2d(w),
                nn.ReLU()]  # fmt: skip
    else:
        stem = [nn.Conv2d(in_channels, w, kernel_size=7, stride=2, padding=3), nn.BatchNorm2d(w),
                nn.ReLU(), nn.MaxPool2d(kernel_size=3, stride=2, padding=1)]  # fmt: skip
    return nn.Sequential(
        *stem,
        _resnet_stage(w, w, first=True), _resnet_stage(w, 2 * w), _resnet_stage(2 * w, 4 * w),
        _resnet_stage(4 * w, 8 * w), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
        nn.Linear(8 * w, num_classes),
    )  # fmt: skip


def _conv_block(in_channels: int, num_channels: int) -> nn.Block:
    return nn.Sequential(
        nn.BatchNorm2d(in_channels), nn.ReLU(),
        nn.Conv2d(in_channels, num_channels, kernel_size=3, padding=1),
    )  # fmt: skip


class DenseBlock(nn.Block):
    """DenseNet's block: each convolution sees every earlier output (channel concatenation)."""

    def __init__(self, num_convs: int, in_channels: int, num_channels: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            *(_conv_block(num_channels * i + in_channels, num_channels) for i in range(num_convs))
        )

    def forward(self, X: Any) -> md.Tensor:
        for blk in self.net:
            X = md.concat([X, blk(X)], axis=1)
        return X


def densenet_block() -> nn.Block:
    return nn.Sequential(
        nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        DenseBlock(2, 8, 4), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 8, kernel_size=1), nn.AvgPool2d(2, stride=2),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(8, 10),
    )  # fmt: skip


#: name -> (builder, input side, batch size, steps, learning rate)
MODELS: dict[str, tuple[Callable[[], nn.Block], int, int, int, float]] = {
    "lenet": (lenet, 28, 16, 5, 0.5),
    "vgg": (vgg, 28, 16, 5, 0.05),
    "nin": (nin, 28, 16, 5, 0.05),
    "googlenet_block": (googlenet_block, 28, 16, 5, 0.05),
    "resnet18": (resnet18, 16, 8, 20, 0.01),
    "densenet_block": (densenet_block, 28, 16, 5, 0.05),
}


#: standard deviation of the noise added to each class's pattern (the patterns are N(0, 1))
NOISE = 1.0


def batches(
    side: int, batch: int, steps: int, seed: int = 0, dtype: Any = md.float32
) -> list[tuple[Any, Any]]:
    """``steps`` seeded batches ``(X, y)``: ``X`` (batch, 1, side, side) of the floating-point
    ``dtype`` is the pattern of class ``y`` (one N(0, 1) image per class, fixed by ``seed``)
    plus N(0, ``NOISE``) noise, ``y`` (batch,) int64 in [0, 10). Drawn on the host with NumPy,
    so every backend sees the same data."""
    np_dtype = as_dtype(dtype).numpy
    rng = np.random.default_rng(seed)
    patterns = rng.standard_normal((10, 1, side, side)).astype(np_dtype)
    out = []
    for _ in range(steps):
        y = rng.integers(0, 10, size=batch)
        noise = rng.standard_normal((batch, 1, side, side)).astype(np_dtype)
        out.append((md.asarray(patterns[y] + np_dtype.type(NOISE) * noise), md.asarray(y)))
    return out


def train(
    name: str, seed: int = 0, log: Callable[[str], None] = print, dtype: Any = md.float32
) -> list[float]:
    """Train model ``name`` with SGD on a fresh synthetic batch each step (``batches``), its
    parameters, buffers and batches in the floating-point ``dtype``; the loss at each step (on
    that step's batch, before the step's update)."""
    build, side, batch, steps, lr = MODELS[name]
    md.manual_seed(seed)
    net = build().to(dtype)
    opt = md.optim.SGD(net.parameters(), lr=lr)
    losses = []
    net.train()
    for step, (X, y) in enumerate(batches(side, batch, steps, seed, dtype)):
        with md.autograd.record():
            loss = F.cross_entropy(net(X), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        log(f"{name} step {step}, loss {losses[-1]:.6f}")
    return losses


def train_all(
    seed: int = 0, log: Callable[[str], None] = print, dtype: Any = md.float32
) -> dict[str, list[float]]:
    return {name: train(name, seed, log, dtype) for name in MODELS}


def main(seed: int = 0) -> int:
    """Train every model; returns 0 if ResNet-18's last loss is below its first, else 1."""
    losses = train_all(seed)
    ok = losses["resnet18"][-1] < losses["resnet18"][0]
    print(f"resnet18 loss {losses['resnet18'][0]:.4f} -> {losses['resnet18'][-1]:.4f}: "
          f"{'ok' if ok else 'FAILED'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
