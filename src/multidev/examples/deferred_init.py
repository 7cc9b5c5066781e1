"""Deferred initialisation: layers that learn their input size from the first batch."""

from __future__ import annotations

import multidev as md
from multidev import nn


def init_normal(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, mean=0, std=0.01)
        nn.init.zeros_(m.bias)


def main(seed: int = 0) -> None:
    md.manual_seed(seed)

    net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
    # the input size is unknown: the weights have no shape yet
    print(net[0].weight)
    print(net)

    # an initialiser applied now is recorded and runs once the shapes are known
    net[2].apply(init_normal)

    X = md.rand(2, 20)
    print(net(X))
    print(net[0].weight.shape)
    print(net[2].weight.shape, net[2].bias.data.abs().sum())
    print(net)


if __name__ == "__main__":
    main()
