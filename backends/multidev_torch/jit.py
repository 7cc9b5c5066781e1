"""Compilation on PyTorch: ``torch.compile``, ``torch.export``, CUDA synchronisation.

``torch.compile`` follows Python faithfully (its bytecode tracer guards on the Python state
it reads and replays side effects), so ``md.jit`` hands it the function as it is. The
compiler backend is ``MULTIDEV_TORCH_COMPILE_BACKEND`` (default ``inductor``, which
generates C++/Triton code; ``aot_eager`` traces forward and backward the same way without
code generation, seconds instead of tens of seconds on a small CPU machine).
"""

from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Any

import torch
from torch._dynamo.exc import FailOnRecompileLimitHit, Unsupported

from multidev.contract import AutogradHooks, ExportHooks, JitHooks
from multidev.device import Device

__all__ = ["COMPILE_BACKEND_ENV", "Jit"]

COMPILE_BACKEND_ENV = "MULTIDEV_TORCH_COMPILE_BACKEND"

#: whether the function being traced called a ``backward()`` that freed its recording
_FREED = [False]


class Jit(AutogradHooks, JitHooks, ExportHooks):
    """The compilation hooks of the PyTorch adapter."""

    jit_traces_once = False
    #: whether torch.compile is tracing the calling code (multidev skips bookkeeping there)
    jit_compiling = staticmethod(torch.compiler.is_compiling)

    def jit_compile(self, body: Any) -> Any:
        """``body`` under ``torch.compile``, traced with ``trace_autograd_ops`` on: a training
        step's ``backward()`` joins the step's graph instead of breaking it. A function
        that calls ``backward()`` without ``retain_graph`` returns its tensors detached (Dynamo
        will not return tensors whose graph the backward consumed; in eager a second backward
        through them fails too), so a step that returns its loss is one graph.

        Dynamo keeps its compiled graphs on the code object, with the guards of each; every
        ``md.jit`` function gets a code object of its own, so one function's call checks its
        own graphs' guards only and no function shares another's recompile limit."""

        def step(*natives: Any) -> tuple:
            _FREED[0] = False
            outs = body(*natives)
            if _FREED[0]:
                outs = tuple(o.detach() for o in outs)
            return outs

        compiler = os.environ.get(COMPILE_BACKEND_ENV, "inductor")
        # one graph: the step's backward traced with its forward (fullgraph: a graph break
        # raises instead of splitting the step into frames compiled one by one, where a
        # backward traced apart from the forward that recorded its loss loses its gradients)
        whole = torch.compile(_own_code(step), backend=compiler, fullgraph=True)
        patch = torch._dynamo.config.patch(trace_autograd_ops=True)
        mode = ["whole"]
        split: list[Any] = []

        def run(*natives: Any) -> Any:
            if mode[0] == "whole":
                try:
                    with patch:
                        return whole(*natives)
                except Unsupported:
                    # Dynamo raised while tracing, before anything ran: the same call again,
                    # compiled torch's usual way (graphs between the breaks, backward()
                    # run by autograd through their compiled backward graphs)
                    mode[0] = "split"
                    split.append(torch.compile(_own_code(step), backend=compiler))
                except FailOnRecompileLimitHit:
                    # Python state that changes at every call (Adam's step counter) made
                    # Dynamo recompile each time: eager from now on, as torch.compile does
                    mode[0] = "eager"
            if mode[0] == "eager":
                return step(*natives)
            return split[0](*natives)

        return run

    def backward(self, loss: Any, gradient: Any, recording: Any, retain_graph: bool) -> bool:
        """The adapter's ``backward``, noting for ``jit_compile`` a traced one that freed its
        recording."""
        found: bool = super().backward(loss, gradient, recording, retain_graph)  # type: ignore[misc]
        if found and not retain_graph and torch.compiler.is_compiling():
            _FREED[0] = True
        return found

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

    def export_onnx(
        self, block: Any, path: Path, inputs: tuple, opset: int, dynamic_batch: bool
    ) -> Path:
        """An ONNX file from ``torch.onnx.export`` (the ``torch.export``-based exporter)."""
        _needs("onnxscript")
        dynamic = None
        if dynamic_batch:
            # torch.export fixes a dimension of size 1: trace a batch of two
            inputs = tuple(torch.cat([x, x]) if x.shape[0] == 1 else x for x in inputs)
            batch = torch.export.Dim("batch")
            dynamic = (tuple({0: batch} for _ in inputs),)
        names = [f"input{i}" for i in range(len(inputs))]
        torch.onnx.export(
            block.native,
            inputs,
            str(path),
            dynamo=True,
            dynamic_shapes=dynamic,
            opset_version=opset,
            input_names=names,
            external_data=False,
            verbose=False,
        )
        return path


def _own_code(fn: Any) -> Any:
    """``fn`` with a code object of its own: Dynamo keeps compiled graphs, guards and the
    recompile count on the code object."""
    return types.FunctionType(
        fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )


def _needs(module: str) -> None:
    """ImportError with the install hint when the ONNX exporter's package is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ImportError(
            f"md.export(..., format='onnx') on torch needs {module}: pip install 'multidev[onnx-torch]'"
        )
