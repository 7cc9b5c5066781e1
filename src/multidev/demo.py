"""``multidev demo``: the d2l "deep learning computation" chapter on the active backend.

Runs every section of ``multidev.examples`` with the same seed, so the printed output of two
backends agrees within float32 tolerance (``python -m multidev.testing.compare_outputs``).
As in the book, each output follows the code that printed it: a ``>>>`` line with the
statement, its file and line. Framework start-up logs (TensorFlow's absl/oneDNN lines, Paddle's
glog lines) are turned off before the framework loads, unless the environment sets them; the
notes that no setting turns off (TensorFlow's "oneDNN custom operations are on", written from C++
before absl's logging is set up on CPUs where oneDNN is on by default) are dropped from the C++
standard error, every other line of which is kept.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import linecache
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from . import registry
from .examples import SECTIONS

__all__ = ["QUIET_ENVIRONMENT", "main"]

_TITLES = {
    "layers_and_blocks": "Layers and blocks",
    "parameters": "Parameter management",
    "deferred_init": "Deferred initialisation",
    "custom_layers": "Custom layers",
    "file_io": "File I/O",
    "gpu": "GPUs",
}

#: environment defaults that keep the frameworks' C++ start-up logs (INFO and WARNING lines of
#: absl, oneDNN and glog) out of the demo; a value already in the environment wins
QUIET_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "2",  # TensorFlow: errors only (no absl/oneDNN/cpu_feature_guard)
    "GLOG_minloglevel": "2",  # Paddle (and other glog users): errors only
}


#: the C++ start-up notes that no environment setting turns off: absl's preamble and the INFO or
#: WARNING lines about oneDNN and the CPU's instruction sets
_START_UP_NOTES = re.compile(
    r"All log messages before absl::InitializeLog|^[IW]\d{4} .*(oneDNN|cpu_feature_guard)"
)


@contextlib.contextmanager
def _without_start_up_notes() -> Iterator[None]:
    """File descriptor 2 goes to a temporary file while the block runs; afterwards every line
    of it but the start-up notes is written to the real standard error."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            lines = caught.read().decode(errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(x for x in lines if not _START_UP_NOTES.search(x)))
            sys.stderr.flush()


def _labelled_print(section: str) -> Callable[..., None]:
    """A ``print`` for one example module that first shows the statement that called it."""

    def print_(*args: Any, **kwargs: Any) -> None:
        frame = sys._getframe(1)
        code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        builtins.print(f">>> {code}  # {section}.py, line {frame.f_lineno}")
        builtins.print(*args, **kwargs)

    return print_


def main(seed: int = 0) -> int:
    """Print every section's output, each after the statement that printed it; returns 0."""
    for key, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    with _without_start_up_notes():
        _sections(seed)
    return 0


def _sections(seed: int) -> None:
    bk = registry.current()
    print(f"multidev demo on the {bk.name} backend")
    for name in SECTIONS:
        print(f"\n== {_TITLES.get(name, name)} ==")
        # Any: the section module gets a print of its own, an attribute ModuleType lacks
        module: Any = importlib.import_module(f"multidev.examples.{name}")
        module.print = _labelled_print(name)
        try:
            module.main(seed)
        finally:
            del module.print


if __name__ == "__main__":
    raise SystemExit(main())
