"""GPUs: finding devices, placing tensors, copying between devices, a model on a device.

On a machine without a GPU, ``try_gpu`` falls back to the CPU, so the same code runs (and
prints the same) everywhere.
"""

from __future__ import annotations

import multidev as md
from multidev import nn


def main(seed: int = 0) -> None:
    md.manual_seed(seed)
    print(md.cpu(), md.gpu(), md.gpu(1))
    print(md.num_gpus())
    print(md.try_gpu(), md.try_gpu(10), md.try_all_gpus())

    x = md.asarray([1, 2, 3])
    print(x.device)

    X = md.ones((2, 3), device=md.try_gpu())
    print(X)
    Y = md.rand(2, 3, device=md.try_gpu(1))
    print(Y)

    Z = X.to(md.try_gpu(1))
    print(X)
    print(Z)
    print(Y + Z)
    print(Z.to(md.try_gpu(1)) is Z)

    net = nn.Sequential(nn.Linear(3, 1))
    net = net.to(device=md.try_gpu())
    print(net(X))
    print(net[0].weight.data.device)


if __name__ == "__main__":
    main()
