"""Layers and blocks: Sequential, a custom MLP, MySequential, a block with fixed weights and
Python control flow (FixedHiddenMLP), and blocks nested in blocks (NestMLP, chimera)."""

from __future__ import annotations

import multidev as md
from multidev import nn
from multidev.nn import functional as F


class MLP(nn.Block):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(20, 256)  # hidden layer
        self.out = nn.Linear(256, 10)  # output layer

    def forward(self, X):
        return self.out(F.relu(self.hidden(X)))


class MySequential(nn.Block):
    def __init__(self, *args):
        super().__init__()
        for idx, module in enumerate(args):
            # _modules keeps the blocks in insertion order and registers their parameters
            self._modules[str(idx)] = module

    def forward(self, X):
        for block in self._modules.values():
            X = block(X)
        return X


class FixedHiddenMLP(nn.Block):
    def __init__(self):
        super().__init__()
        # a constant: a plain tensor attribute is not a parameter and is never trained
        self.rand_weight = md.rand(20, 20)
        self.linear = nn.Linear(20, 20)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(md.matmul(X, self.rand_weight) + 1)
        # reusing the same layer: both uses share its parameters
        X = self.linear(X)
        # Python control flow on tensor values
        while X.abs().sum() > 1:
            X /= 2
        return X.sum()


class NestMLP(nn.Block):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.linear = nn.Linear(32, 16)

    def forward(self, X):
        return self.linear(self.net(X))


def main(seed: int = 0) -> None:
    md.manual_seed(seed)

    net: nn.Block = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 10))
    X = md.rand(2, 20)
    print(net(X))

    net = MLP()
    print(net(X))

    net = MySequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 10))
    print(net(X))

    net = FixedHiddenMLP()
    print(net(X))

    chimera = nn.Sequential(NestMLP(), nn.Linear(16, 20), FixedHiddenMLP())
    print(chimera(X))
    print(chimera)


if __name__ == "__main__":
    main()
