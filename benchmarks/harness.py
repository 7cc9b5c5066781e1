"""Timing harness: multidev and native code for the same work, interleaved in one process.

Each case gives two zero-argument callables (multidev, native) and a ``sync`` that waits for
the framework's queued work. A repeat runs one callable ``number`` times and syncs once; repeats
alternate between the two sides so that drift hits both equally. The ratio is
median(multidev) / median(native); the spread is the interquartile range over the median.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Result:
    case: str
    backend: str
    md_s: float  # median seconds per call, multidev
    native_s: float  # median seconds per call, native code
    md_spread: float
    native_spread: float
    target: str = ""
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.md_s / self.native_s


def _calibrate(fn: Callable[[], object], sync: Callable[[], None], budget_s: float) -> int:
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        dt = time.perf_counter() - t0
        if dt >= budget_s or n >= 1 << 20:
            return n
        n = max(n * 2, int(n * budget_s / max(dt, 1e-9)))


def _spread(xs: list[float]) -> float:
    if len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def measure(
    md_fn: Callable[[], object],
    native_fn: Callable[[], object],
    sync: Callable[[], None],
    *,
    repeats: int = 15,
    budget_s: float = 0.05,
    warmup: int = 3,
) -> tuple[float, float, float, float]:
    """Median seconds per call of each side, and their relative spreads."""
    for _ in range(warmup):
        md_fn()
        native_fn()
    sync()
    number = max(_calibrate(md_fn, sync, budget_s), _calibrate(native_fn, sync, budget_s))
    times: dict[str, list[float]] = {"md": [], "native": []}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for i in range(repeats):
            order = (("md", md_fn), ("native", native_fn))
            for name, fn in order if i % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                sync()
                times[name].append((time.perf_counter() - t0) / number)
    finally:
        if gc_was:
            gc.enable()
    return (
        statistics.median(times["md"]),
        statistics.median(times["native"]),
        _spread(times["md"]),
        _spread(times["native"]),
    )


def fmt_time(s: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def to_markdown(results: list[Result], machine: str) -> str:
    lines = [
        f"Machine: {machine}",
        "",
        "| backend | case | multidev | native | ratio | spread (md / native) | target | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.backend} | {r.case} | {fmt_time(r.md_s)} | {fmt_time(r.native_s)} | "
            f"{r.ratio:.3f} | {r.md_spread:.1%} / {r.native_spread:.1%} | {r.target} | {r.note} |"
        )
    return "\n".join(lines) + "\n"
