"""``multidev demo``: the d2l "deep learning computation" chapter on the active backend.

Runs every section of ``multidev.examples`` with the same seed, so the printed output of two
backends agrees within float32 tolerance (``python -m multidev.testing.compare_outputs``).
"""

from __future__ import annotations

import importlib

from . import registry
from .examples import SECTIONS

__all__ = ["main"]

_TITLES = {
    "layers_and_blocks": "Layers and blocks",
    "parameters": "Parameter management",
    "deferred_init": "Deferred initialisation",
    "custom_layers": "Custom layers",
    "file_io": "File I/O",
    "gpu": "GPUs",
}


def main(seed: int = 0) -> int:
    """Print every section's output; returns 0 (the exit status)."""
    bk = registry.current()
    print(f"multidev demo on the {bk.name} backend")
    for name in SECTIONS:
        title = _TITLES.get(name, name)
        print(f"\n== {title} ==")
        importlib.import_module(f"multidev.examples.{name}").main(seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
