"""``python benchmarks/profile_steps.py --backend torch``: where a layer benchmark's step spends
its time, multidev beside the native model, whatever the machine's load.

For each case (``lenet_step``, ``resnet18_step``, ``gru_step`` by default) it builds both sides
exactly as ``run.py`` does, warms each up, then profiles ``--steps`` steps of each:

- with cProfile: the time per step in Python functions of multidev (``src/multidev``,
  ``backends/``), in Python functions of the framework, and in built-in (C) calls, which hold
  the kernels; and the framework's built-in calls that launch ops from Python, counted per step
  (TensorFlow's ``TFE_Py_FastPathExecute`` covers the gradient's ops too, which its tape runs
  from Python);
- with the framework's own profiler where it counts the kernels run from C++ as well (the
  backward pass): ``torch.profiler`` (ATen ops) and ``mx.profiler`` (operators), per step.

The two sides' counts are listed side by side with their difference, so an op that multidev
runs more often than the native model (a transpose, a cast, a copy, a reduction) shows as a
positive difference. Writes ``benchmarks/results/profile_<backend>.txt``.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from cases import BUILDERS, Context  # noqa: E402
from natives import for_backend  # noqa: E402

CASES = ("lenet_step", "resnet18_step", "gru_step")
#: built-in calls through which each framework launches an op from Python
LAUNCHERS = {
    "tensorflow": ("TFE_Py_",),
    "paddle": ("paddle.base.libpaddle",),
    "mxnet": ("_imperative_invoke", "MXImperativeInvoke"),
    "torch": ("torch._C._nn", "torch._C._VariableFunctions", "method 'add_' of", "torch."),
}


def _origin(filename: str) -> str:
    """'multidev', 'framework' or 'other' for a profiled function's file."""
    path = filename.replace("\\", "/")
    if "/src/multidev/" in path or "/backends/multidev_" in path:
        return "multidev"
    if "site-packages/" in path:
        return "framework"
    return "other"


#: launchers whose op shows only as the Python function calling them (TensorFlow's
#: generated ``gen_*_ops`` wrappers): their calls are counted by that caller
BY_CALLER = ("TFE_Py_FastPathExecute", "TFE_Py_Execute")


def profile_side(fn: Callable[[], Any], sync: Callable[[], None], steps: int) -> dict:
    """cProfile ``steps`` calls of ``fn``: seconds per step by origin, built-in call counts."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        fn()
    sync()
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    seconds: collections.Counter = collections.Counter()
    builtins: collections.Counter = collections.Counter()
    builtin_s: collections.Counter = collections.Counter()
    total = 0.0
    for (filename, _line, name), (_cc, ncalls, tottime, _cum, callers) in stats.items():
        total += tottime
        if filename == "~":  # a built-in: the C side, kernels included
            seconds["built-in (C, kernels)"] += tottime
            if any(m in name for m in BY_CALLER):
                for (cfile, _cline, cname), row in callers.items():
                    key = f"{Path(cfile).stem}.{cname} (TFE_Py_*Execute)"
                    builtins[key] += row[1]
                    builtin_s[key] += row[2]
            else:
                builtins[name] += ncalls
                builtin_s[name] += tottime
        else:
            seconds[f"Python in {_origin(filename)}"] += tottime
    return {
        "total": total / steps,
        "seconds": {k: v / steps for k, v in seconds.items()},
        "builtins": {k: v / steps for k, v in builtins.items()},
        "builtin_ms": {k: v / steps * 1e3 for k, v in builtin_s.items()},
    }


def framework_ops(backend: str, fn: Callable[[], Any], sync: Callable[[], None], steps: int):
    """Op counts per step from the framework's own profiler (forward and backward), or None."""
    if backend == "torch":
        import torch.profiler as tp

        with tp.profile(activities=[tp.ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                fn()
        return {e.key: e.count / steps for e in prof.key_averages()}
    if backend == "mxnet":
        import json

        import mxnet as mx

        with tempfile.TemporaryDirectory() as tmp:
            mx.profiler.set_config(
                profile_imperative=True, aggregate_stats=True, filename=f"{tmp}/p.json"
            )
            mx.profiler.set_state("run")
            for _ in range(steps):
                fn()
            sync()
            mx.profiler.set_state("stop")
            table = json.loads(mx.profiler.dumps(reset=True, format="json", sort_by="count"))
        counts: dict[str, float] = {}
        for domain, ops in table.get("Time", {}).items():
            if "operator" not in domain.lower():
                continue
            for name, row in ops.items():
                counts[name] = counts.get(name, 0) + row["Count"] / steps
        return counts
    return None


def _table(md: dict[str, float], nat: dict[str, float], top: int, ms: tuple = ()) -> list[str]:
    """Counts per step side by side (largest first); with ``ms`` (the two sides' milliseconds
    by the same names), the time spent in each too."""
    names = sorted(set(md) | set(nat), key=lambda k: -(md.get(k, 0) + nat.get(k, 0)))
    head = f"    {'md':>8} {'native':>8} {'diff':>8}"
    rows = [head + (f" {'md ms':>8} {'nat ms':>8}" if ms else "") + "  name"]
    for k in names[:top]:
        a, b = md.get(k, 0.0), nat.get(k, 0.0)
        times = f" {ms[0].get(k, 0.0):8.2f} {ms[1].get(k, 0.0):8.2f}" if ms else ""
        rows.append(f"    {a:8.1f} {b:8.1f} {a - b:+8.1f}{times}  {k}")
    return rows


def report_case(backend: str, name: str, sides: dict, sync, steps: int, top: int) -> list[str]:
    for fn in sides.values():  # warm up (first-call caches, allocator)
        fn()
        fn()
    sync()
    prof = {s: profile_side(sides[s], sync, steps) for s in ("md", "native")}
    lines = [f"## {name}", f"  cProfile, per step (mean of {steps} steps):"]
    keys = sorted(set(prof["md"]["seconds"]) | set(prof["native"]["seconds"]))
    lines.append(f"    {'md ms':>9} {'native ms':>9}  where")
    for k in keys:
        a, b = prof["md"]["seconds"].get(k, 0.0), prof["native"]["seconds"].get(k, 0.0)
        lines.append(f"    {a * 1e3:9.2f} {b * 1e3:9.2f}  {k}")
    lines.append(
        f"    {prof['md']['total'] * 1e3:9.2f} {prof['native']['total'] * 1e3:9.2f}  total"
    )
    marks = LAUNCHERS.get(backend, ())
    launch = {
        s: {k: v for k, v in prof[s]["builtins"].items() if any(m in k for m in marks)}
        for s in prof
    }
    lines.append(
        f"  op launches from Python per step: md {sum(launch['md'].values()):.0f}, "
        f"native {sum(launch['native'].values()):.0f}"
    )
    lines += _table(
        launch["md"],
        launch["native"],
        top,
        (prof["md"]["builtin_ms"], prof["native"]["builtin_ms"]),
    )
    ops = {s: framework_ops(backend, sides[s], sync, steps) for s in ("md", "native")}
    if ops["md"] is not None and ops["native"] is not None:
        lines.append(
            f"  {backend} profiler ops per step (forward and backward): "
            f"md {sum(ops['md'].values()):.0f}, native {sum(ops['native'].values()):.0f}"
        )
        lines += _table(ops["md"], ops["native"], top)
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", default=os.environ.get("MULTIDEV_BACKEND", "torch"))
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--top", type=int, default=25, help="rows of each count table")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CASES]
    if unknown:
        p.error(f"Expected cases among {', '.join(CASES)}. Received: {unknown}")
    os.environ["MULTIDEV_BACKEND"] = args.backend
    import multidev as md

    md.set_backend(args.backend)
    nat = for_backend(args.backend)
    load = os.getloadavg()
    lines = [
        f"# profile of the layer benchmarks: {args.backend} "
        f"{md.registry.load(args.backend).version()}",
        f"# load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; `--quick` inputs",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Context(md, nat, args.backend, True, tmp)
        for group in wanted:
            for case in BUILDERS[group](ctx):
                lines += report_case(args.backend, case.name, case.sides, nat.sync,
                                     args.steps, args.top)  # fmt: skip
                lines.append(f"  note: {case.note}")
    text = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"profile_{args.backend}.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
