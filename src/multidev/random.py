"""One host-side random stream for every backend, so seeded code gives identical values.

Random values are drawn with NumPy's PCG64 generator on the host (float32 uniform and
ziggurat normal, streams that NumPy keeps stable across releases) and then placed on the
device. The same seed therefore gives bit-identical float32 numbers on every backend.

``get_state()`` / ``set_state()`` save and restore that generator as a dict of plain values
(strings and ints), which ``md.save`` stores in a training checkpoint, so a run resumed on
any backend draws the same numbers as the run that was never stopped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tracing import untraceable

__all__ = [
    "draw_seed",
    "dropout_mask",
    "get_state",
    "host_normal",
    "host_permutation",
    "host_uniform",
    "manual_seed",
    "set_state",
]

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


def get_state() -> dict[str, Any]:
    """multidev's generator state: ``{"bit_generator": "PCG64", "state": hex, "inc": hex,
    "has_uint32": int, "uinteger": int}`` (the 128-bit numbers as hexadecimal strings, so the
    dict saves with ``md.save`` and JSON). The frameworks' own generators are not included."""
    st = _generator.bit_generator.state
    return {
        "bit_generator": st["bit_generator"],
        "state": hex(st["state"]["state"]),
        "inc": hex(st["state"]["inc"]),
        "has_uint32": int(st["has_uint32"]),
        "uinteger": int(st["uinteger"]),
    }


def set_state(state: dict[str, Any]) -> None:
    """Restore what ``get_state()`` returned: the next random values are those that followed
    it. Raises ``TypeError``/``ValueError`` naming the entry for anything else."""
    want = "a dict from md.random.get_state()"
    if not isinstance(state, dict):
        raise TypeError(f"Expected {want}. Received: {type(state).__name__}")
    missing = {"bit_generator", "state", "inc", "has_uint32", "uinteger"} - set(state)
    if missing:
        raise ValueError(f"Expected {want}. Received: a dict without {sorted(missing)}")
    if state["bit_generator"] != "PCG64":
        raise ValueError(
            f"Expected the state of a PCG64 generator. Received: {state['bit_generator']!r}"
        )
    try:
        raw = {
            "bit_generator": "PCG64",
            "state": {"state": int(state["state"], 16), "inc": int(state["inc"], 16)},
            "has_uint32": int(state["has_uint32"]),
            "uinteger": int(state["uinteger"]),
        }
    except (TypeError, ValueError) as e:
        raise ValueError(f"Expected {want}: hexadecimal 'state' and 'inc'. Received: {e}") from None
    bit_generator = np.random.PCG64()
    bit_generator.state = raw
    global _generator
    _generator = np.random.Generator(bit_generator)


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


def draw_seed(generator: np.random.Generator | None = None) -> int:
    """A seed in [0, 2**63) taken from ``generator`` (default: multidev's), from its raw
    PCG64 output so that every NumPy release draws the same number."""
    g = _generator if generator is None else generator
    return int(g.bit_generator.random_raw()) >> 1


def host_permutation(n: int, seed: int) -> np.ndarray:
    """A permutation of ``range(n)`` (int64) fixed by ``seed``: the stable argsort of ``n`` raw
    PCG64 outputs, identical on every backend and NumPy release."""
    keys = np.random.PCG64(seed).random_raw(n)
    return np.argsort(keys, kind="stable").astype(np.int64)


def dropout_mask(shape: tuple[int, ...], p: float, dtype: np.dtype) -> np.ndarray:
    """Inverted-dropout multipliers: 0 with probability ``p``, else 1 / (1 - p), drawn from
    the host generator (the same elements on every backend after ``manual_seed``)."""
    keep = host_uniform(shape) >= np.float32(p)
    return np.where(keep, np.float32(1.0 / (1.0 - p)), np.float32(0.0)).astype(dtype)


def _not_in_trace() -> None:
    """A traced graph would replay host random values as constants: compile eagerly instead."""
    untraceable(
        "it draws random values (dropout, md.rand) from multidev's host generator, which a "
        "traced graph would replay as the same constants on every call"
    )
