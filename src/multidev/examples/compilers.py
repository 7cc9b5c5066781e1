"""Compilers and interpreters (d2l "hybrid programming"): the same ``Sequential`` run eagerly
and compiled in place with ``net.hybridize()``, timed, then exported to the framework's
serving format.

On torch, tensorflow, paddle and MXNet ``hybridize`` compiles with ``torch.compile``,
``tf.function``, ``paddle.jit.to_static`` and Gluon's ``hybridize`` (a ``CachedOp``); on
NumPy the block stays eager and an ``md.JitWarning`` says why. Both sides are warmed up with
``WARMUP`` calls before they are timed (the compiled side's include compilation:
``torch.compile`` compiles again on a later call), so the times compare steady states. Times
are printed, never checked: every compiled output must equal the eager one within float32
tolerance.
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
#: untimed calls of each side before its timed ones
WARMUP = 3


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
    for _ in range(WARMUP - 1):
        net(x)
    with Benchmark(f"eager, {RUNS} calls"):
        for _ in range(RUNS):
            net(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", md.JitWarning)
        net.hybridize()
        with Benchmark(f"hybridized, {WARMUP} warm-up calls (compilation included)"):
            compiled = [net(x).numpy() for _ in range(WARMUP)]
    for w in caught:
        print(f"note: {w.message}")
    with Benchmark(f"hybridized, {RUNS} calls"):
        for _ in range(RUNS):
            net(x)
    compiled.append(net(x).numpy())
    same = all(np.allclose(c, eager, rtol=1e-5, atol=1e-6) for c in compiled)
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
