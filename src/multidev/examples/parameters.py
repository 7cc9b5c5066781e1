"""Parameter management: access by index and by name, nested blocks, built-in and custom
initialisation, direct writes, and parameters tied between layers."""

from __future__ import annotations

import multidev as md
from multidev import nn


def block1():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU())


def block2():
    net = nn.Sequential()
    for i in range(4):
        # nest blocks under any name
        net.add_module(f"block {i}", block1())
    return net


def init_normal(m):
    if type(m) is nn.Linear:
        nn.init.normal_(m.weight, mean=0, std=0.01)
        nn.init.zeros_(m.bias)


def init_constant(m):
    if type(m) is nn.Linear:
        nn.init.constant_(m.weight, 1)
        nn.init.zeros_(m.bias)


def init_xavier(m):
    if type(m) is nn.Linear:
        nn.init.xavier_uniform_(m.weight)


def init_42(m):
    if type(m) is nn.Linear:
        nn.init.constant_(m.weight, 42)


def my_init(m):
    """w ~ U(5, 10) with probability 1/4, 0 with probability 1/2, U(-10, -5) with 1/4."""
    if type(m) is nn.Linear:
        name, param = next(m.named_parameters())
        print("Init", name, param.shape)
        nn.init.uniform_(m.weight, -10, 10)
        m.weight.data *= m.weight.data.abs() >= 5


def main(seed: int = 0) -> None:
    md.manual_seed(seed)

    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    X = md.rand(2, 4)
    print(net(X))

    # parameter access
    print(net[2].state_dict())
    print(type(net[2].bias))
    print(net[2].bias)
    print(net[2].bias.data)
    print(net[2].weight.grad is None)

    # all parameters at once
    print(*[(name, param.shape) for name, param in net[0].named_parameters()])
    print(*[(name, param.shape) for name, param in net.named_parameters()])
    print(net.state_dict()["2.bias"])

    # parameters of nested blocks
    rgnet = nn.Sequential(block2(), nn.Linear(4, 1))
    print(rgnet(X))
    print(rgnet)
    print(rgnet[0][1][0].bias.data)

    # built-in initialisation
    net.apply(init_normal)
    print(net[0].weight.data[0], net[0].bias.data[0])
    net.apply(init_constant)
    print(net[0].weight.data[0], net[0].bias.data[0])
    net[0].apply(init_xavier)
    net[2].apply(init_42)
    print(net[0].weight.data[0])
    print(net[2].weight.data)

    # custom initialisation
    net.apply(my_init)
    print(net[0].weight[:2])

    # setting parameters directly
    net[0].weight.data[:] += 1
    net[0].weight.data[0, 0] = 42
    print(net[0].weight.data[0])

    # tied parameters: the shared layer is one object, used twice
    shared = nn.Linear(8, 8)
    net = nn.Sequential(
        nn.Linear(4, 8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(8, 1)
    )
    print(net(X))
    print(net[2].weight.data[0] == net[4].weight.data[0])
    net[2].weight.data[0, 0] = 100
    # they are the same object, not just equal values
    print(net[2].weight.data[0] == net[4].weight.data[0])
    print(net[2].weight is net[4].weight)


if __name__ == "__main__":
    main()
