"""Compilers and interpreters (d2l "hybrid programming"): the same ``Sequential`` run eagerly
and compiled in place with ``net.hybridize()``, timed, then exported to the framework's
serving format.

On torch, tensorflow and paddle ``hybridize`` compiles with ``torch.compile``,
``tf.function`` and ``paddle.jit.to_static``; on MXNet (and NumPy) the block stays eager and
an ``md.JitWarning`` says why. Times are printed, never checked: the compiled output must
equal the eager one within float32 tolerance.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import multidev as md
from multidev import nn

RUNS = 200


def get_net() -> nn.Sequential:
    """d2l's factory: a 512-256-128-2 MLP."""
    return nn.Sequential(
        nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 2)
    )


class Benchmark:
    """``with Benchmark("eager"):`` prints the seconds the block took, after
    ``md.synchronize()`` (queued asynchronous work counts)."""

    def __init__(self, description: str) -> None:
        self.description = description

    def __enter__(self) -> Benchmark:
        md.synchronize()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        md.synchronize()
        print(f"{self.description}: {time.perf_counter() - self.start:.4f} sec")


def main(seed: int = 0, export_dir: str | None = None) -> int:
    """Run, compile, time and export; returns 0 if the compiled output equals the eager one."""
    md.manual_seed(seed)
    net = get_net().eval()
    x = md.randn(1, 512)
    eager = net(x).numpy()
    with Benchmark(f"eager, {RUNS} calls"):
        for _ in range(RUNS):
            net(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", md.JitWarning)
        net.hybridize()
        compiled = net(x).numpy()  # the first call compiles
    for w in caught:
        print(f"note: {w.message}")
    with Benchmark(f"hybridized, {RUNS} calls"):
        for _ in range(RUNS):
            net(x)
    same = np.allclose(compiled, eager, rtol=1e-5, atol=1e-6)
    print(f"compiled output equals eager: {same}")
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(export_dir or tmp) / "mlp"
        try:
            written = md.export(net, target, x)
            print(f"exported to the framework's serving format: {written.name}")
        except TypeError as e:
            print(f"no export on this backend: {e}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
