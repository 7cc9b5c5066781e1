"""Train ``multidev.examples.train_digits`` (md.Trainer, LeNet-style CNN, scikit-learn's
digits) on several backends and check that they agree.

``python -m multidev.testing.digits_compare run --out FILE.json`` (once per backend, in its
own environment) trains it with one seed, in float64 and in float32, and records the
per-epoch training losses, the test accuracy and the seconds per epoch. ``… check A.json
B.json …`` fails unless every backend's float64 per-epoch losses agree with the first file's
within ``--rtol`` (default 1e-4) relative and every test accuracy (float64 and float32) is at
least ``--min-accuracy`` (default ``train_digits.THRESHOLD``). The float32 losses' difference
and the seconds per epoch are printed (never checked).

Why float64 for the agreement: in float32 the backends' correct kernels differ by rounding
(1e-7 relative), and 10 epochs of Adam amplify that: the per-epoch losses agree within 1e-6
for three epochs, then drift apart by 1e-2 (measured: torch and paddle on one side,
TensorFlow and MXNet on the other), while every backend still reaches the same accuracy.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import registry

__all__ = ["check", "main", "run"]


def run(seed: int = 0) -> dict[str, Any]:
    """The active backend's runs in float64 and float32: losses, test accuracy, seconds per
    epoch."""
    from ..examples import train_digits

    out: dict[str, Any] = {"backend": registry.get_backend(), "seed": seed}
    for dtype in ("float64", "float32"):
        result = train_digits.train(seed, progress=False, dtype=dtype)
        history = result["history"]
        out[dtype] = {
            "losses": [h["loss"] for h in history],
            "accuracy": result["test"]["accuracy"],
            "seconds": [h["time_s"] for h in history],
        }
    return out


def _relative(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0.0 else abs(a - b) / scale


def check(
    results: list[dict[str, Any]], rtol: float = 1e-4, min_accuracy: float | None = None
) -> tuple[list[str], list[str]]:
    """(problems, report lines) for the runs of several backends."""
    from ..examples.train_digits import THRESHOLD

    floor = THRESHOLD if min_accuracy is None else min_accuracy
    problems: list[str] = []
    lines: list[str] = []
    if not results:
        return ["no results"], lines
    for dtype, tol in (("float64", rtol), ("float32", float("inf"))):
        runs = [{"backend": r["backend"], **r[dtype]} for r in results]
        p, ls = _check(runs, tol, floor)
        problems += [f"{x} ({dtype})" for x in p]
        lines += [f"{dtype}: {x}" for x in ls]
    return problems, lines


def _check(results: list[dict[str, Any]], rtol: float, floor: float) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    lines: list[str] = []
    ref = results[0]
    for r in results:
        secs = sum(r["seconds"]) / len(r["seconds"])
        worst = 0.0
        if len(r["losses"]) != len(ref["losses"]):
            problems.append(
                f"{r['backend']}: {len(r['losses'])} epochs, {ref['backend']} has {len(ref['losses'])}"
            )
        else:
            worst = max(_relative(a, b) for a, b in zip(ref["losses"], r["losses"], strict=True))
        lines.append(
            f"{r['backend']:>10}: test accuracy {r['accuracy']:.4f}, largest relative loss "
            f"difference from {ref['backend']} {worst:.2e}, {secs:.2f} s/epoch"
        )
        if worst > rtol:
            problems.append(
                f"{r['backend']}: per-epoch losses {r['losses']} differ from {ref['backend']}'s "
                f"{ref['losses']} by {worst:.3g} relative (> {rtol})"
            )
        if r["accuracy"] < floor:
            problems.append(f"{r['backend']}: test accuracy {r['accuracy']:.4f} < {floor}")
    return problems, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multidev.testing.digits_compare")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="train on the active backend")
    p_run.add_argument("--out", required=True, type=Path)
    p_run.add_argument("--seed", type=int, default=0)
    p_check = sub.add_parser("check", help="compare the runs of several backends")
    p_check.add_argument("files", nargs="+", type=Path)
    p_check.add_argument("--rtol", type=float, default=1e-4)
    p_check.add_argument("--min-accuracy", type=float, default=None)
    args = parser.parse_args(argv)
    if args.command == "run":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(run(args.seed), indent=2))
        print(f"wrote {args.out}")
        return 0
    results = [json.loads(f.read_text()) for f in args.files]
    problems, lines = check(results, args.rtol, args.min_accuracy)
    print(f"train_digits with md.Trainer on {', '.join(r['backend'] for r in results)}")
    for line in lines:
        print("  " + line)
    for p in problems:
        print("FAILED: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
