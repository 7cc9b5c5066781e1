"""Train the examples on several backends and check that they agree.

``python -m multidev.testing.train_compare run --out FILE.json`` trains every training example
(``TRAINING_EXAMPLES``) with one seed on the active backend and records its per-epoch losses
and its loss threshold. ``python -m multidev.testing.train_compare check A.json B.json …``
fails unless, for each example, the per-epoch losses of all the files agree within ``--rtol``
(default 1e-4) relative, every loss of every epoch is finite (a NaN or infinity in any epoch
fails, even where all backends have it) and each file's final loss is below the example's
threshold; it prints the largest relative difference either way.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from .. import registry

__all__ = ["TRAINING_EXAMPLES", "check", "main", "run"]

#: modules of multidev.examples with ``train(seed, log) -> per-epoch losses`` and ``THRESHOLD``
TRAINING_EXAMPLES = ("linear_regression", "mlp_classifier")


def run(seed: int = 0, quiet: bool = False) -> dict[str, Any]:
    """Train every example on the active backend; their losses and thresholds."""
    result: dict[str, Any] = {"backend": registry.get_backend(), "seed": seed, "examples": {}}
    for name in TRAINING_EXAMPLES:
        mod = importlib.import_module(f"multidev.examples.{name}")
        if not quiet:
            print(f"== {name} on {result['backend']}")
        losses = mod.train(seed, log=(lambda _: None) if quiet else print)
        result["examples"][name] = {"losses": losses, "threshold": mod.THRESHOLD}
    return result


def _relative(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0.0 else abs(a - b) / scale


def _finite(value: Any) -> bool:
    """Whether a recorded loss is a finite number (JSON may hold NaN, Infinity or null)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check(results: list[dict[str, Any]], rtol: float = 1e-4) -> tuple[list[str], list[str]]:
    """(problems, report lines) for the results of several backends."""
    problems: list[str] = []
    lines: list[str] = []
    names = sorted({n for r in results for n in r["examples"]})
    for name in names:
        runs = [(r["backend"], r["examples"].get(name)) for r in results]
        missing = [b for b, ex in runs if ex is None]
        if missing:
            problems.append(f"{name}: no results from {', '.join(missing)}")
            runs = [(b, ex) for b, ex in runs if ex is not None]
        finite = []
        for backend, ex in runs:
            bad = [(e, v) for e, v in enumerate(ex["losses"], 1) if not _finite(v)]
            if bad or not ex["losses"]:
                where_bad = ", ".join(f"epoch {e}: {v!r}" for e, v in bad) or "no epochs"
                problems.append(f"{name}: {backend} has non-finite losses ({where_bad})")
            else:
                finite.append((backend, ex))
        runs = finite
        if not runs:
            continue
        ref_backend, ref = runs[0]
        worst, where = 0.0, ""
        for backend, ex in runs:
            if len(ex["losses"]) != len(ref["losses"]):
                problems.append(
                    f"{name}: {backend} has {len(ex['losses'])} epochs, "
                    f"{ref_backend} has {len(ref['losses'])}"
                )
                continue
            for epoch, (a, b) in enumerate(zip(ref["losses"], ex["losses"], strict=True), 1):
                rel = _relative(a, b)
                if rel > worst or where == "":
                    worst, where = rel, f"epoch {epoch}, {ref_backend} {a:.8g} vs {backend} {b:.8g}"
            final = ex["losses"][-1]
            if not final < ex["threshold"]:
                problems.append(
                    f"{name}: final loss {final:.6g} on {backend} is not below the threshold "
                    f"{ex['threshold']}"
                )
        if worst > rtol:
            problems.append(f"{name}: losses differ by {worst:.3g} relative (> {rtol}) at {where}")
        finals = ", ".join(f"{b} {ex['losses'][-1]:.6g}" for b, ex in runs)
        lines.append(f"{name}: largest relative difference {worst:.3g} ({where}); final {finals}")
        lines.append(f"{name}: threshold {ref['threshold']}, rtol {rtol}")
    return problems, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multidev.testing.train_compare")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="train the examples on the active backend")
    p_run.add_argument("--out", required=True, type=Path, help="JSON file to write")
    p_run.add_argument("--seed", type=int, default=0)
    p_run.add_argument("--quiet", action="store_true", help="do not print the training logs")
    p_check = sub.add_parser("check", help="compare the results of several backends")
    p_check.add_argument("files", nargs="+", type=Path)
    p_check.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args(argv)

    if args.command == "run":
        result = run(args.seed, args.quiet)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
        print(f"wrote {args.out}")
        return 0

    results = [json.loads(f.read_text()) for f in args.files]
    problems, lines = check(results, args.rtol)
    backends = ", ".join(r["backend"] for r in results)
    print(f"training examples on {backends}")
    for line in lines:
        print("  " + line)
    if problems:
        print("FAILED:")
        for p in problems:
            print("  " + p)
        return 1
    print("ok: per-epoch losses agree and every final loss is below its threshold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
