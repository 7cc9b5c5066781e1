"""Train the modern-CNN examples on several backends and check that they agree.

``python -m multidev.testing.cnn_compare run --out FILE.json [--models a,b]`` trains the models
of ``multidev.examples.modern_cnns`` with one seed on the active backend, in float64, and
records their per-step losses (ResNet-18's threshold is its step-0 loss, the others have
none); it also trains ResNet-18 in float32 (``DESCENT``), whose loss must fall too.
``python -m multidev.testing.cnn_compare check A.json B.json …`` applies
``train_compare.check`` to the float64 runs: per-step losses agree within ``--rtol`` (default
1e-4) relative, and it prints the largest difference. The float32 runs must each end below
their step-0 loss; their cross-backend difference is printed, not checked.

Why float64 for the agreement: the examples train on tiny batches (ResNet-18: 8 samples, and
its last stage sees 2x2 maps), where BatchNorm divides by the spread of a handful of values.
In float32 the frameworks' correct kernels differ by rounding (6e-7 relative in ResNet-18's
step-0 loss), and training amplifies that to 1e-5 at step 1, 3e-3 at step 2 and 0.1-0.2 from
step 12: the per-step losses stop agreeing to 1e-4. In float64 the same runs agree within
5e-8 over all 20 steps (measured 30 Nov), so a disagreement beyond 1e-4 there is a real
difference between the backends.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import registry
from .train_compare import check

__all__ = ["DESCENT", "check_descent", "main", "run"]


#: models also trained in float32, each of whose final loss must be below its step-0 loss
DESCENT = ("resnet18",)


def run(models: list[str], seed: int = 0) -> dict[str, Any]:
    """The per-step losses of ``models`` on the active backend: ``examples`` in float64 (with
    thresholds for ``train_compare.check``), ``float32`` for those of them in ``DESCENT``."""
    from .. import float32, float64
    from ..examples import modern_cnns

    result: dict[str, Any] = {
        "backend": registry.get_backend(),
        "seed": seed,
        "examples": {},
        "float32": {},
    }
    for name in models:
        losses = modern_cnns.train(name, seed, log=lambda _: None, dtype=float64)
        threshold = losses[0] if name in DESCENT else float("inf")
        result["examples"][name] = {"losses": losses, "threshold": threshold}
        if name in DESCENT:
            losses32 = modern_cnns.train(name, seed, log=lambda _: None, dtype=float32)
            result["float32"][name] = {"losses": losses32, "threshold": losses32[0]}
    return result


def check_descent(results: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(problems, report lines) for the float32 runs: each backend's losses are finite and its
    final loss is below its step-0 loss; the largest cross-backend difference is reported."""
    problems: list[str] = []
    lines: list[str] = []
    names = sorted(
        {n for r in results for n in r.get("float32", {})}
        | {n for r in results for n in r["examples"] if n in DESCENT}
    )
    for name in names:
        runs = [{**r, "examples": {name: r.get("float32", {}).get(name)}} for r in results]
        missing = [r["backend"] for r in runs if r["examples"][name] is None]
        if missing:
            problems.append(f"{name} (float32): no results from {', '.join(missing)}")
        present = [r for r in runs if r["examples"][name] is not None]
        failed, report = check(present, rtol=float("inf"))
        problems += [f"{p} (float32)" for p in failed]
        falls = ", ".join(
            f"{r['backend']} {r['examples'][name]['losses'][0]:.4g} -> "
            f"{r['examples'][name]['losses'][-1]:.4g}"
            for r in present
        )
        lines.append(f"{name} (float32, must fall; agreement not checked): {falls}")
        lines += [f"{name} (float32): {line.split(': ', 1)[1]}" for line in report[:1]]
    return problems, lines


def main(argv: list[str] | None = None) -> int:
    from ..examples.modern_cnns import MODELS

    parser = argparse.ArgumentParser(prog="python -m multidev.testing.cnn_compare")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="train the models on the active backend")
    p_run.add_argument("--out", required=True, type=Path)
    p_run.add_argument("--seed", type=int, default=0)
    p_run.add_argument("--models", default=",".join(MODELS), help="comma-separated names")
    p_check = sub.add_parser("check", help="compare the results of several backends")
    p_check.add_argument("files", nargs="+", type=Path)
    p_check.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args(argv)
    if args.command == "run":
        models = [m for m in args.models.split(",") if m]
        unknown = sorted(set(models) - set(MODELS))
        if unknown:
            parser.error(f"unknown models {unknown}; expected some of {sorted(MODELS)}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(run(models, args.seed), indent=2))
        return 0
    results = [json.loads(f.read_text()) for f in args.files]
    problems, lines = check(results, args.rtol)
    more_problems, more_lines = check_descent(results)
    problems, lines = problems + more_problems, lines + more_lines
    print(f"modern CNNs on {', '.join(r['backend'] for r in results)} (float64 unless marked)")
    for line in lines:
        print("  " + line)
    for p in problems:
        print("FAILED: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
