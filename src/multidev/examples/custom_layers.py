"""Custom layers: one without parameters (CenteredLayer) and one with (MyLinear)."""

from __future__ import annotations

import multidev as md
from multidev import nn
from multidev.nn import functional as F


class CenteredLayer(nn.Block):
    def __init__(self):
        super().__init__()

    def forward(self, X):
        return X - X.mean()


class MyLinear(nn.Block):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(md.randn(in_units, units))
        self.bias = nn.Parameter(md.randn(units))

    def forward(self, X):
        linear = md.matmul(X, self.weight.data) + self.bias.data
        return F.relu(linear)


def main(seed: int = 0) -> None:
    md.manual_seed(seed)

    layer = CenteredLayer()
    print(layer(md.asarray([1.0, 2, 3, 4, 5])))

    net = nn.Sequential(nn.Linear(8, 128), CenteredLayer())
    Y = net(md.rand(4, 8))
    print(Y.mean())

    linear = MyLinear(5, 3)
    print(linear.weight)
    print(linear(md.rand(2, 5)))

    net = nn.Sequential(MyLinear(64, 8), MyLinear(8, 1))
    print(net(md.rand(2, 64)))


if __name__ == "__main__":
    main()
