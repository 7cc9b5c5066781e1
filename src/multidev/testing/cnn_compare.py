"""Train the modern-CNN examples on several backends and check that they agree.

``python -m multidev.testing.cnn_compare run --out FILE.json [--models a,b]`` trains the models
of ``multidev.examples.modern_cnns`` with one seed on the active backend and records their
per-step losses; ResNet-18's threshold is its step-0 loss (it must fall), the others have
none. ``python -m multidev.testing.cnn_compare check A.json B.json …`` applies
``train_compare.check``: per-step losses agree within ``--rtol`` (default 1e-4) relative, and
it prints the largest difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import registry
from .train_compare import check

__all__ = ["main", "run"]


def run(models: list[str], seed: int = 0) -> dict[str, Any]:
    from ..examples import modern_cnns

    result: dict[str, Any] = {"backend": registry.get_backend(), "seed": seed, "examples": {}}
    for name in models:
        losses = modern_cnns.train(name, seed, log=lambda _: None)
        threshold = losses[0] if name == "resnet18" else float("inf")
        result["examples"][name] = {"losses": losses, "threshold": threshold}
    return result


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
    print(f"modern CNNs on {', '.join(r['backend'] for r in results)}")
    for line in lines:
        print("  " + line)
    for p in problems:
        print("FAILED: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
