"""``python benchmarks/run.py --backend torch``: multidev ÷ native ratios for one backend.

Writes benchmarks/results/<backend>.json and .md, then regenerates the combined table and chart
from every backend's JSON found there (see report.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from harness import Result, fmt_time, measure, to_markdown  # noqa: E402
from natives import for_backend  # noqa: E402


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def op_cases(md, nat, quick: bool):
    rng = np.random.default_rng(0)
    out = []
    for n in (1, 1000):
        a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        x, y = md.asarray(a), md.asarray(b)
        na, nb = nat.tensor(a), nat.tensor(b)
        out.append((f"op_tiny ({n})", lambda x=x, y=y: x + y, lambda na=na, nb=nb: nat.add(na, nb)))
    n = 1_000_000
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x, y = md.asarray(a), md.asarray(b)
    na, nb = nat.tensor(a), nat.tensor(b)
    out.append(("op_large (1e6 add)", lambda: x + y, lambda: nat.add(na, nb)))
    m = rng.standard_normal((512, 512)).astype(np.float32)
    xm, nm = md.asarray(m), nat.tensor(m)
    out.append(("op_large (512² matmul)", lambda: xm @ xm, lambda: nat.matmul(nm, nm)))
    return out


TARGETS = {
    "op_tiny": lambda b: "≤ 1.3" if b == "torch" else "≤ 1.1",
    "op_large": lambda b: "≤ 1.03",
    "to_device_noop": lambda b: "≤ 1 µs",
    "mlp_small": lambda b: "≤ 1.10",
    "mlp_large": lambda b: "≤ 1.03",
    "ckpt_save": lambda b: "≥ 0.9× safetensors",
    "ckpt_load": lambda b: "≥ 0.9× safetensors",
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backend", default=os.environ.get("MULTIDEV_BACKEND", "numpy"))
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--quick", action="store_true", help="fewer repeats (smoke run)")
    args = p.parse_args(argv)
    os.environ["MULTIDEV_BACKEND"] = args.backend
    import multidev as md

    md.set_backend(args.backend)
    nat = for_backend(args.backend)
    repeats = 5 if args.quick else 15
    results: list[Result] = []
    for name, md_fn, nat_fn in op_cases(md, nat, args.quick):
        r = Result(name, args.backend, *measure(md_fn, nat_fn, nat.sync, repeats=repeats))
        r.target = TARGETS[name.split(" ")[0]](args.backend)
        results.append(r)
        print(
            f"{args.backend:<11} {name:<28} ratio {r.ratio:6.3f}  ({fmt_time(r.md_s)} vs {fmt_time(r.native_s)})",
            flush=True,
        )
    x = md.ones(8)
    same = x.device
    r = Result(
        "to_device_noop",
        args.backend,
        *measure(lambda: x.to(same), lambda: None, nat.sync, repeats=repeats),
    )
    r.target = TARGETS["to_device_noop"](args.backend)
    r.note = f"absolute {fmt_time(r.md_s)} per call; native side is an empty call"
    results.append(r)
    print(
        f"{args.backend:<11} to_device_noop               {fmt_time(r.md_s)} per call", flush=True
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.backend}.json").write_text(
        json.dumps({"machine": machine(), "results": [asdict(r) for r in results]}, indent=2)
    )
    (args.out / f"{args.backend}.md").write_text(to_markdown(results, machine()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
