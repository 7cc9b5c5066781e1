"""``MULTIDEV_BACKEND=B python benchmarks/implicit_grad.py``: what recording gradients as
PyTorch does costs. One eager MLP training step (zero_grad, forward, cross-entropy,
backward, SGD step) with ``loss.backward()`` and no ``record()`` (implicit) is timed against
the same step inside ``with md.autograd.record():`` (explicit), interleaved in one process by
``harness.measure``. Writes ``results/implicit_grad_<backend>.json``, which the generated
benchmark pages show beside the op benchmarks. The target is a ratio of at most 1.05. A
backend without implicit recording is reported as skipped.
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


def main() -> None:
    name = os.environ.get("MULTIDEV_BACKEND", md.get_backend())
    caps = md.registry.current().capabilities
    if "autograd" not in caps:
        raise SystemExit(f"Expected a backend with autograd. Received: {name}.")
    row: dict = {
        "case": "MLP training step, backward() without record()",
        "vs": "the same step inside record()",
        "target": f"≤ {TARGET:g}",
    }
    if "implicit_grad" not in caps:
        row |= {"skipped": "backward() needs record() on this backend", "met": False}
    else:
        m = _measure()
        row |= {"ratio": m["ratio"], "met": m["met"], "note": _note(m)}
    doc = {
        "backend": f"{name}: backward() without record()",
        "framework_version": md.registry.current().version(),
        "machine": machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "results": [row],
    }
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"implicit_grad_{name}.json"
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    print(f"{path}: {json.dumps(row)}")


def _note(m: dict) -> str:
    return (
        f"implicit {harness.fmt_time(m['implicit_s'])} (spread {m['implicit_spread']:.1%}), "
        f"explicit {harness.fmt_time(m['explicit_s'])} (spread {m['explicit_spread']:.1%})"
    )


if __name__ == "__main__":
    main()
