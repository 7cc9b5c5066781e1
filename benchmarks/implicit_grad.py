"""``MULTIDEV_BACKEND=B python benchmarks/implicit_grad.py [steps] [rounds]``: what recording
gradients as PyTorch does costs. One eager MLP training step (zero_grad, forward, loss,
backward, SGD step) is timed with ``loss.backward()`` after ``with md.autograd.record():``
(explicit) and without it (implicit), in the same process, in alternating rounds; prints the
median time of each and the ratio implicit / explicit. Nothing is written.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

import multidev as md


def _step(net, opt, x, y, explicit: bool) -> None:
    opt.zero_grad()
    if explicit:
        with md.autograd.record():
            loss = md.nn.functional.cross_entropy(net(x), y)
    else:
        loss = md.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()


def main(steps: int = 50, rounds: int = 7) -> None:
    md.manual_seed(0)
    rng = np.random.default_rng(0)
    net = md.nn.Sequential(
        md.nn.Linear(256, 512), md.nn.ReLU(), md.nn.Linear(512, 512), md.nn.ReLU(),
        md.nn.Linear(512, 10),
    )  # fmt: skip
    opt = md.optim.SGD(net.parameters(), lr=0.01)
    x = md.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    y = md.asarray(rng.integers(0, 10, 64))
    times: dict[bool, list[float]] = {True: [], False: []}
    for explicit in (True, False):  # warm up both
        for _ in range(5):
            _step(net, opt, x, y, explicit)
    for _ in range(rounds):
        for explicit in (True, False):
            md.synchronize()
            t0 = time.perf_counter()
            for _ in range(steps):
                _step(net, opt, x, y, explicit)
            md.synchronize()
            times[explicit].append((time.perf_counter() - t0) / steps)
    e, i = statistics.median(times[True]), statistics.median(times[False])
    name = os.environ.get("MULTIDEV_BACKEND", md.get_backend())
    print(f"{name}: explicit record() {e * 1e6:.0f} us/step, implicit {i * 1e6:.0f} us/step, "
          f"ratio {i / e:.3f}")  # fmt: skip


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
