"""Timing harness: multidev and native code for the same work, interleaved in one process.

A case gives zero-argument callables, one per side (``md`` first, then its baselines), and a
``sync`` that waits for the framework's queued work. After a warm-up, one repeat runs a side's
callable ``number`` times and syncs once; the sides take turns within each repeat, in an order
that changes from one repeat to the next (``turn_order``: every side runs first, and last,
equally often over ``2 × sides`` repeats, two sides included), so that drift (other processes,
frequency scaling, page cache) and the cost of running after another side hit every side alike. Each side's time is the median over the repeats; its
spread is the interquartile range over that median. Ratios are medians divided by medians.
The garbage collector is off while a repeat runs and collected between repeats.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Fn = Callable[[], Any]


@dataclass(frozen=True)
class Target:
    """What a result must meet: ``ratio`` (md ÷ baseline time at most ``value``),
    ``absolute`` (md seconds per call at most ``value``) or ``throughput`` (md throughput at
    least ``value`` times the baseline's, i.e. baseline ÷ md time at least ``value``)."""

    kind: str
    value: float

    def describe(self) -> str:
        if self.kind == "ratio":
            return f"≤ {self.value:g}"
        if self.kind == "absolute":
            return f"≤ {fmt_time(self.value)}"
        return f"≥ {self.value:g}× throughput"

    def met(self, r: Result) -> bool:
        if self.kind == "ratio":
            return r.ratio <= self.value
        if self.kind == "absolute":
            return r.md_s <= self.value
        return r.throughput_ratio >= self.value


@dataclass
class Result:
    """One row: multidev against one baseline, or a case that could not run (``skipped``)."""

    case: str
    backend: str
    baseline: str  # what the multidev side is compared with
    vs: str = ""  # the baseline's side in its case: "native", "safetensors", …
    md_s: float = float("nan")  # median seconds per call, multidev
    base_s: float = float("nan")  # median seconds per call, baseline
    md_spread: float = 0.0
    base_spread: float = 0.0
    target: str = ""
    goal: dict[str, Any] = field(default_factory=dict)  # the target as {"kind", "value"}
    met: bool | None = None
    skipped: str = ""  # why the case did not run
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """multidev time ÷ baseline time (lower is better; 1.0 means no overhead)."""
        return self.md_s / self.base_s

    @property
    def throughput_ratio(self) -> float:
        """multidev throughput ÷ baseline throughput (higher is better)."""
        return self.base_s / self.md_s

    def judge(self, target: Target | None) -> Result:
        if target is not None:
            self.target = target.describe()
            self.goal = {"kind": target.kind, "value": target.value}
            self.met = target.met(self)
        return self


@dataclass(frozen=True)
class Timing:
    median: float
    spread: float
    samples: tuple[float, ...]


def _calibrate(fn: Fn, sync: Callable[[], None], budget_s: float) -> int:
    """How many calls fill about ``budget_s`` seconds (at least one)."""
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
        return (max(xs) - min(xs)) / statistics.median(xs) if len(xs) > 1 else 0.0
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def turn_order(names: list[str], i: int) -> list[str]:
    """The order of the sides in repeat ``i``: rotated by ``i // 2``, reversed when ``i`` is
    odd. Each side leads ``2 / len(names)`` of any ``2 × len(names)`` consecutive repeats."""
    k = (i // 2) % len(names)
    order = names[k:] + names[:k]
    return order[::-1] if i % 2 else order


def measure(
    sides: dict[str, Fn],
    sync: Callable[[], None],
    *,
    repeats: int = 15,
    budget_s: float = 0.05,
    warmup: int = 3,
    number: int | None = None,
) -> dict[str, Timing]:
    """Median seconds per call of each side, interleaved.

    ``number`` calls per repeat; None calibrates it so that the slowest side's repeat lasts
    about ``budget_s``. Slow cases pass ``number=1`` and few repeats.
    """
    names = list(sides)
    for _ in range(warmup):
        for fn in sides.values():
            fn()
            sync()
    if number is None:
        number = max(_calibrate(fn, sync, budget_s) for fn in sides.values())
    times: dict[str, list[float]] = {name: [] for name in names}
    gc_was = gc.isenabled()
    try:
        for i in range(repeats):
            for name in turn_order(names, i):
                fn = sides[name]
                gc.collect()
                gc.disable()
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                sync()
                times[name].append((time.perf_counter() - t0) / number)
                gc.enable()
    finally:
        if gc_was:
            gc.enable()
        else:
            gc.disable()
    return {
        name: Timing(statistics.median(ts), _spread(ts), tuple(ts)) for name, ts in times.items()
    }


def fmt_time(s: float) -> str:
    if s != s:  # NaN
        return "—"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def verdict(r: Result) -> str:
    if r.met is None:
        return ""
    return "✓" if r.met else "✗"


def to_markdown(results: list[Result], machine: str, title: str) -> str:
    lines = [
        f"# {title}",
        "",
        f"Machine: {machine}",
        "",
        "Ratio: multidev time ÷ baseline time, medians (lower is better). "
        "Spread: interquartile range ÷ median.",
        "",
        "| case | baseline | multidev | baseline time | ratio | spread (md / base) | target | met | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if r.skipped:
            lines.append(
                f"| {r.case} | {r.baseline} | — | — | — | — | {r.target} | skipped | {r.skipped} |"
            )
            continue
        lines.append(
            f"| {r.case} | {r.baseline} | {fmt_time(r.md_s)} | {fmt_time(r.base_s)} | "
            f"{r.ratio:.3f} | {r.md_spread:.1%} / {r.base_spread:.1%} | {r.target} | "
            f"{verdict(r)} | {r.note} |"
        )
    return "\n".join(lines) + "\n"
