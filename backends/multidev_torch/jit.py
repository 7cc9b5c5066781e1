"""Compilation on PyTorch: ``torch.compile``, ``torch.export``, CUDA synchronisation.

``torch.compile`` follows Python faithfully (its bytecode tracer guards on the Python state
it reads and replays side effects), so ``md.jit`` hands it the function as it is. The
compiler backend is ``MULTIDEV_TORCH_COMPILE_BACKEND`` (default ``inductor``, which
generates C++/Triton code; ``aot_eager`` traces forward and backward the same way without
code generation, seconds instead of tens of seconds on a small CPU machine).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from multidev.device import Device

__all__ = ["COMPILE_BACKEND_ENV", "Jit"]

COMPILE_BACKEND_ENV = "MULTIDEV_TORCH_COMPILE_BACKEND"


class Jit:
    """The compilation hooks of the PyTorch adapter."""

    jit_traces_once = False
    #: whether torch.compile is tracing the calling code (multidev skips bookkeeping there)
    jit_compiling = staticmethod(torch.compiler.is_compiling)

    def jit_compile(self, body: Any) -> Any:
        """``body`` under ``torch.compile``, traced with ``trace_autograd_ops`` on: a training
        step's ``backward()`` then joins the step's graph instead of breaking it (a step that
        returns its loss undetached still breaks there, as the same native step does)."""
        compiled = torch.compile(body, backend=os.environ.get(COMPILE_BACKEND_ENV, "inductor"))

        def run(*natives: Any) -> Any:
            with torch._dynamo.config.patch(trace_autograd_ops=True):
                return compiled(*natives)

        return run

    def synchronize(self, dev: Device | None) -> None:
        if not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return
        if dev is None:
            for i in range(torch.cuda.device_count()):
                torch.cuda.synchronize(i)
        elif dev.type == "gpu":
            torch.cuda.synchronize(dev.index)

    def export(self, block: Any, path: Path, inputs: tuple) -> Path:
        """A ``torch.export`` program of the block's forward, saved as ``.pt2``."""
        program = torch.export.export(block.native, inputs, strict=False)
        torch.export.save(program, str(path))
        return path
