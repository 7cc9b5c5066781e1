"""Compilation on Paddle: ``paddle.jit.to_static``, ``paddle.jit.save``, synchronisation.

``to_static`` reads the names of a function's positional parameters from its signature and
refuses ``*args``; ``positional`` gives a function an explicit one (also used for the
``forward`` of ``net.native``, so that ``paddle.jit.to_static(net.native)`` works).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import tempfile
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import paddle
from paddle.base.dygraph.base import _convert_into_variable
from paddle.jit.dy2static.program_translator import SymbolicStaticFunction

from multidev import registry
from multidev.contract import ExportHooks, JitHooks
from multidev.device import Device
from multidev.nn.native import _unwrap
from multidev.tensors import Tensor

__all__ = [
    "Jit",
    "as_ast",
    "owned",
    "positional",
    "static_call",
    "static_parameters",
    "static_signature",
]

_POS = inspect.Parameter.POSITIONAL_OR_KEYWORD


def positional(fn: Callable[..., Any], names: list[str]) -> Callable[..., Any]:
    """``fn`` (taking ``*args``) with the signature ``(names...)`` as to_static reads it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    call.__name__ = getattr(fn, "__name__", "call")
    paddle.jit.marker.unified(call)  # traced as plain Python: its paddle ops build the program
    call.__signature__ = inspect.Signature([inspect.Parameter(n, _POS) for n in names])  # type: ignore[attr-defined]
    return call


def static_signature(forward: Callable[..., Any]) -> list[str] | None:
    """The names of ``forward``'s positional parameters, or None where it takes ``*args``."""
    names = []
    for p in inspect.signature(forward).parameters.values():
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return None
        if p.kind in (_POS, inspect.Parameter.POSITIONAL_ONLY):
            names.append(p.name)
    return names


@contextlib.contextmanager
def static_parameters(block: Any) -> Iterator[None]:
    """Inside a to_static trace, the block's parameters read as the program's parameters."""
    if paddle.in_dynamic_mode():
        yield
        return
    params = list(block.parameters())
    saved = [(p, p._native) for p in params]
    try:
        for p in params:
            p._native = _convert_into_variable(p._var)
        yield
    finally:
        for p, native in saved:
            p._native = native


def as_ast(fn: Any) -> Any:
    """A forward compiled by the symbolic (bytecode) translator, compiled by the AST one
    instead: SOT cannot simulate multidev's Tensor, while the AST translator runs a Block's
    Python as it is (its paddle ops build the program)."""
    if not isinstance(fn, SymbolicStaticFunction):
        return fn
    spec = fn._function_spec
    original = fn._dygraph_function
    owner = spec._class_instance() if spec._class_instance is not None else None
    if owner is not None:
        original = types.MethodType(original, owner)
    return paddle.jit.to_static(original, input_spec=spec._input_spec, full_graph=True)


def static_call(block: Any, args: tuple, kwargs: dict) -> Any:
    """Run ``block`` inside a to_static trace: program values in and out."""
    params = list(block.parameters())
    bk = params[0]._bk if params else registry.current()
    dev = bk.default_device()

    def wrap(x: Any) -> Any:
        if isinstance(x, paddle.pir.Value):
            return Tensor(x, bk, dev, bk.dtype_of(x))
        return x

    with static_parameters(block):
        out = block(*(wrap(a) for a in args), **{k: wrap(v) for k, v in kwargs.items()})
    return _unwrap(out)


def owned(x: Any) -> Any:
    """``x`` in memory that Paddle allocated: a copy of a CPU tensor, which may share a
    NumPy array's memory (``md.asarray`` imports NumPy arrays through DLPack).

    A to_static program's executor frees the variables it holds on a worker thread. Freeing
    the last reference to DLPack-imported memory runs NumPy's deleter, which takes the GIL,
    inside Paddle's deleter lock; the main thread, holding the GIL, takes that same lock
    whenever it frees another imported tensor. The two wait for each other forever (or
    crash): Paddle's program must therefore never own the last reference to imported
    memory. GPU tensors are always Paddle's own (``from_numpy`` copies to a GPU)."""
    if x.place.is_cpu_place():
        return x.clone()
    return x


@contextlib.contextmanager
def native_buffers(block: Any) -> Iterator[None]:
    """The multidev block's buffers (BatchNorm's running statistics) registered, for the
    duration, on the Paddle layers of ``block.native`` that mirror their blocks:
    ``paddle.jit.save`` saves the tensors a traced program reads from the layers' state, and a
    buffer it does not find there is a KeyError on its temporary name."""
    native = block.native
    added = []
    try:
        for name, sub in block.named_modules():
            layer = native
            for part in name.split(".") if name else ():
                layer = layer._sub_layers[part]
            for bname, buf in sub.named_buffers(recurse=False):
                if buf is not None and bname not in layer._buffers:
                    layer.register_buffer(bname, buf._native, persistable=True)
                    added.append((layer, bname))
        yield
    finally:
        for layer, bname in added:
            del layer._buffers[bname]


class Jit(JitHooks, ExportHooks):
    """The compilation hooks of the Paddle adapter."""

    jit_traces_once = True
    ops: Any  # the adapter's op table (backend.py)
    jit_backward_unsupported = (
        "it calls backward(), and a to_static program differentiates through "
        "paddle.static.gradients, which multidev's Paddle autograd does not drive yet"
    )

    def to_static_compile(self, body: Any) -> Any:
        """``body`` compiled by ``paddle.jit.to_static``, once per number of inputs. The
        program runs on copies of the CPU inputs (see ``owned``)."""
        by_arity: dict[int, Any] = {}

        def run(*natives: Any) -> Any:
            fn = by_arity.get(len(natives))
            if fn is None:
                names = [f"x{i}" for i in range(len(natives))]
                fn = by_arity[len(natives)] = paddle.jit.to_static(
                    positional(body, names), full_graph=True
                )
            return fn(*(owned(x) for x in natives))

        return run

    #: md.jit's compile hook; None (an adapter's override) runs md.jit eagerly
    jit_compile = to_static_compile

    def jit_variable(self, var: Any) -> Any:
        """The static-graph value of an eager parameter, inside a to_static trace."""
        return _convert_into_variable(var)

    def synchronize(self, dev: Device | None) -> None:
        if paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count():
            paddle.device.synchronize()

    def export(self, block: Any, path: Path, inputs: tuple) -> Path:
        """``paddle.jit.save`` of the block's forward at the prefix ``path`` (it writes
        ``path.json``/``.pdmodel`` and ``path.pdiparams``)."""
        specs = [paddle.static.InputSpec(x.shape, x.dtype) for x in inputs]
        with native_buffers(block):
            paddle.jit.save(block.native, str(path), input_spec=specs)
        return path

    def export_onnx(
        self, block: Any, path: Path, inputs: tuple, opset: int, dynamic_batch: bool
    ) -> Path:
        """An ONNX file from ``paddle2onnx`` of a ``paddle.jit.save`` of the block's forward.
        ReLU is traced as Paddle's own ``relu`` there: the op table's NaN-keeping
        ``hardtanh(x, 0, inf)`` comes out of paddle2onnx as ``Clip(-1, 1)``."""
        try:
            import paddle2onnx
        except ImportError:
            raise ImportError(
                "md.export(..., format='onnx') on Paddle needs paddle2onnx: "
                "pip install 'multidev[onnx-paddle]'"
            ) from None
        specs = [
            paddle.static.InputSpec(
                [None if dynamic_batch else x.shape[0], *x.shape[1:]], x.dtype, name=f"input{i}"
            )
            for i, x in enumerate(inputs)
        ]
        ops = self.ops
        relu = ops.relu
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, "model")
            ops.relu = paddle.nn.functional.relu
            try:
                with native_buffers(block):
                    paddle.jit.save(block.native, prefix, input_spec=specs)
            finally:
                ops.relu = relu
            program = prefix + (".json" if os.path.exists(prefix + ".json") else ".pdmodel")
            paddle2onnx.export(
                program, prefix + ".pdiparams", str(path), opset_version=opset, verbose=False
            )
        return path
