"""``MULTIDEV_BACKEND=B python benchmarks/implicit_grad.py``: what recording gradients as
PyTorch does costs. One eager MLP training step (zero_grad, forward, cross-entropy,
backward, SGD step) with ``loss.backward()`` and no ``record()`` (implicit) is timed against
the same step inside ``with md.autograd.record():`` (explicit), interleaved in one process by
``harness.measure``. Writes this backend's row into ``results/implicit_grad.json`` and the
table of every backend run so far into ``results/implicit_grad.md``. The target is a ratio
of at most 1.05. A backend without implicit recording is reported as skipped.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402
from run import machine  # noqa: E402

import multidev as md  # noqa: E402

TARGET = 1.05
OUT = HERE / "results"


def _measure() -> dict:
    md.manual_seed(0)
    rng = np.random.default_rng(0)
    net = md.nn.Sequential(
        md.nn.Linear(256, 512), md.nn.ReLU(), md.nn.Linear(512, 512), md.nn.ReLU(),
        md.nn.Linear(512, 10),
    )  # fmt: skip
    opt = md.optim.SGD(net.parameters(), lr=0.01)
    x = md.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    y = md.asarray(rng.integers(0, 10, 64))
    loss_fn = md.nn.functional.cross_entropy

    def explicit() -> None:
        opt.zero_grad()
        with md.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()

    def implicit() -> None:
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()

    t = harness.measure({"implicit": implicit, "explicit": explicit}, md.synchronize, repeats=21)
    ratio = t["implicit"].median / t["explicit"].median
    return {
        "implicit_s": t["implicit"].median,
        "explicit_s": t["explicit"].median,
        "implicit_spread": t["implicit"].spread,
        "explicit_spread": t["explicit"].spread,
        "ratio": ratio,
        "met": ratio <= TARGET,
    }


def _table(rows: dict[str, dict]) -> str:
    lines = [
        "# What recording gradients without record() costs",
        "",
        "One eager training step of an MLP (256 → 512 → 512 → 10, batch 64, cross-entropy, SGD): "
        "`loss.backward()` with no `record()` (implicit) against the same step inside "
        "`with md.autograd.record():` (explicit), interleaved in one process, medians of 21 "
        f"repeats. Ratio: implicit ÷ explicit, target ≤ {TARGET:g}. "
        "Re-run with `MULTIDEV_BACKEND=<backend> python benchmarks/implicit_grad.py`.",
        "",
        "| backend | machine | run | explicit | implicit | ratio | spread (implicit / explicit) "
        "| met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in sorted(rows):
        r = rows[name]
        if "skipped" in r:
            lines.append(f"| {name} | {r['machine']} | {r['date']} | — | — | — | — | "
                         f"skipped: {r['skipped']} |")  # fmt: skip
            continue
        lines.append(
            f"| {name} | {r['machine']} | {r['date']} | {harness.fmt_time(r['explicit_s'])} | "
            f"{harness.fmt_time(r['implicit_s'])} | {r['ratio']:.3f} | "
            f"{r['implicit_spread']:.1%} / {r['explicit_spread']:.1%} | "
            f"{'✓' if r['met'] else '✗'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    name = os.environ.get("MULTIDEV_BACKEND", md.get_backend())
    caps = md.registry.current().capabilities
    if "autograd" not in caps:
        raise SystemExit(f"Expected a backend with autograd. Received: {name}.")
    if "implicit_grad" not in caps:
        row: dict = {"skipped": "backward() needs record() on this backend"}
    else:
        row = _measure()
    row["machine"] = machine()
    row["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    path = OUT / "implicit_grad.json"
    rows = json.loads(path.read_text()) if path.exists() else {}
    rows[name] = row
    path.write_text(json.dumps(rows, indent=2, sort_keys=True) + "\n")
    (OUT / "implicit_grad.md").write_text(_table(rows))
    print(f"{name}: {json.dumps(row)}")


if __name__ == "__main__":
    main()
