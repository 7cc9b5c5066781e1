"""One host-side random stream for every backend, so seeded code gives identical values.

Random values are drawn with NumPy's PCG64 generator on the host (float32 uniform and
ziggurat normal, streams that NumPy keeps stable across releases) and then placed on the
device. The same seed therefore gives bit-identical float32 numbers on every backend.
"""

from __future__ import annotations

import numpy as np

from .tracing import untraceable

__all__ = ["host_normal", "host_uniform", "manual_seed"]

_generator = np.random.Generator(np.random.PCG64())
_seed: int | None = None


def manual_seed(seed: int) -> None:
    """Seed multidev's generator and the loaded frameworks' own generators."""
    global _generator, _seed
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"Expected an integer seed. Received: {seed!r}")
    _seed = int(seed)
    _generator = np.random.Generator(np.random.PCG64(_seed))
    from . import registry

    for bk in list(registry._adapters.values()):
        bk.seed(_seed)


def generator() -> np.random.Generator:
    return _generator


def host_uniform(shape: tuple[int, ...], low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """float32 values uniform in [low, high), computed on the host in float32."""
    _not_in_trace()
    u = _generator.random(shape, dtype=np.float32)
    if low == 0.0 and high == 1.0:
        return u
    u *= np.float32(high - low)
    u += np.float32(low)
    return u


def host_normal(shape: tuple[int, ...], mean: float = 0.0, std: float = 1.0) -> np.ndarray:
    """float32 values from N(mean, std**2), computed on the host in float32."""
    _not_in_trace()
    z = _generator.standard_normal(shape, dtype=np.float32)
    if std != 1.0:
        z *= np.float32(std)
    if mean != 0.0:
        z += np.float32(mean)
    return z


def _not_in_trace() -> None:
    """A traced graph would replay host random values as constants: compile eagerly instead."""
    untraceable(
        "it draws random values (dropout, md.rand) from multidev's host generator, which a "
        "traced graph would replay as the same constants on every call"
    )
