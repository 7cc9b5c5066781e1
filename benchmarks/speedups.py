"""``python benchmarks/speedups.py --backend torch``: ``a + b`` on 1 element, multidev ÷ native
CPU time, with the C accelerator ``multidev._speedups`` and without it (``MULTIDEV_SPEEDUPS=0``).

The two settings run in alternating fresh interpreters (an import-time choice), ``--rounds``
of each; inside one interpreter the native and the multidev expression take turns in short
batches, timed with ``time.process_time`` (CPU time, which other jobs on a loaded machine
disturb less than wall-clock time). Prints the median ratio of each setting and its range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = """
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from natives import for_backend
import multidev as md
from multidev import dispatch

md.set_backend(sys.argv[2])
nat = for_backend(sys.argv[2])
arr = np.ones(1, dtype=np.float32)
x, y = md.asarray(arr), md.asarray(arr)
a, b = nat.tensor(arr), nat.tensor(arr)
n, batches = int(sys.argv[3]), int(sys.argv[4])
sides = {"md": lambda: x + y, "native": lambda: a + b}
best = {"md": float("inf"), "native": float("inf")}
for i in range(batches):
    for side in (("md", "native") if i % 2 else ("native", "md")):
        f = sides[side]
        t = time.process_time()
        for _ in range(n):
            f()
        best[side] = min(best[side], (time.process_time() - t) / n)
print(json.dumps({"speedups": dispatch.SPEEDUPS is not None, **best}))
"""


def _one(backend: str, flag: str, n: int, batches: int) -> dict:
    env = {**os.environ, "MULTIDEV_SPEEDUPS": flag, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(HERE), backend, str(n), str(batches)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="numpy")
    p.add_argument("--rounds", type=int, default=5, help="interpreters per setting")
    p.add_argument("--n", type=int, default=20000, help="expressions per batch")
    p.add_argument("--batches", type=int, default=10, help="batches per side per interpreter")
    args = p.parse_args(argv)
    ratios: dict[str, list[float]] = {"1": [], "0": []}
    for _ in range(args.rounds):
        for flag in ("1", "0"):
            r = _one(args.backend, flag, args.n, args.batches)
            if flag == "1" and not r["speedups"]:
                print("multidev._speedups is not built here: nothing to compare", file=sys.stderr)
                return 1
            ratios[flag].append(r["md"] / r["native"])
    for flag, label in (("1", "with multidev._speedups"), ("0", "MULTIDEV_SPEEDUPS=0")):
        rs = ratios[flag]
        print(
            f"{args.backend:<11} op_tiny (1) {label:<24} ratio {statistics.median(rs):.3f} "
            f"(min {min(rs):.3f}, max {max(rs):.3f}, {len(rs)} interpreters)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
