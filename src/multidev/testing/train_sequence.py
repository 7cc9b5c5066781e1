"""Train the sequence examples (language models, Transformer classifier) on the active backend
and write their per-step losses in ``train_compare``'s JSON format, so that
``python -m multidev.testing.train_compare check A.json B.json …`` compares backends (within
1e-4 relative by default) and prints the largest difference.

``python -m multidev.testing.train_sequence --out FILE.json [--seed 0] [--quiet]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import registry
from ..examples import rnn_language_model, transformer_classifier

__all__ = ["SEQUENCE_EXAMPLES", "main", "run"]

#: example name -> (module, keyword arguments of its ``train``)
SEQUENCE_EXAMPLES = {
    **{
        f"rnn_language_model[{cell}]": (rnn_language_model, {"cell": cell})
        for cell in rnn_language_model.CELLS
    },
    "transformer_classifier": (transformer_classifier, {}),
}


def run(seed: int = 0, quiet: bool = False) -> dict[str, Any]:
    """Train every sequence example on the active backend; per-step losses and thresholds."""
    result: dict[str, Any] = {"backend": registry.get_backend(), "seed": seed, "examples": {}}
    for name, (mod, kwargs) in SEQUENCE_EXAMPLES.items():
        if not quiet:
            print(f"== {name} on {result['backend']}")
        losses = mod.train(seed, log=(lambda _: None) if quiet else print, **kwargs)
        result["examples"][name] = {"losses": losses, "threshold": mod.THRESHOLD}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multidev.testing.train_sequence")
    parser.add_argument("--out", required=True, type=Path, help="JSON file to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="do not print the training logs")
    args = parser.parse_args(argv)
    result = run(args.seed, args.quiet)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
