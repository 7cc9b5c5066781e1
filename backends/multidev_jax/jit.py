"""Compilation on JAX: ``jax.jit`` of the whole step, with the Variables' arrays passed in
and out functionally.

``md.jit`` hands the adapter ``body`` (``jit_traces_once``: gradients, optimiser state and
buffers are inputs and outputs of ``body``, as for ``tf.function``). JAX also needs the
parameters themselves as inputs: a ``jax.jit`` function may not read or write Python state.
md.jit gives ``jit_compile`` the Variables of the parameters the step reaches
(``jit_takes_variables``); the compiled function takes their arrays as an extra input, puts
them into the Variables while it traces, and returns their new arrays (an optimiser step
rebinds them), which are written back after each call. Other Variables the step reads are
constants of the trace; a write to one is refused (the trace then runs eagerly, with
md.jit's warning).
New shapes or dtypes retrace (``jax.jit``'s own rule). Nothing is donated: on the CPU
``np.asarray`` of a parameter (``p.numpy()``, a user's ``np.asarray(p)``) can be a view of the
array's buffer, and a donated buffer is reused by the next call's results, so such a view
would change under its holder.

``md.export`` writes ``jax.export``'s serialization of the block's forward, traced the same
way with its parameters and buffers as constants.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from multidev.contract import ExportHooks, JitHooks
from multidev.device import Device
from multidev.errors import UnsupportedOperationError
from multidev.jit import write_whole
from multidev.tracing import untraceable

from .autograd import STATE, Variable, watching

__all__ = ["Jit"]


class _Compiled:
    """``body`` compiled with ``jax.jit`` over (the Variables' arrays, the inputs)."""

    def __init__(self, body: Any, variables: list[Variable]) -> None:
        self.body = body
        self.variables = variables
        self.jitted = jax.jit(self._pure)

    def _pure(self, values: list[Any], *inputs: Any) -> tuple[Any, list[Any]]:
        variables = self.variables
        saved = [v.value for v in variables]
        outer, STATE.current = STATE.current, None  # the caller's tape records the whole call
        for v, n in zip(variables, values, strict=True):
            v.value = n
        seen: dict[int, tuple[Variable, Any, Any]] = {}
        try:
            with watching(seen, writes=True):
                out = self.body(*inputs)
            return out, [v.value for v in variables]
        finally:
            STATE.current = outer
            for v, n in zip(variables, saved, strict=True):
                v.value = n
            known = {id(v) for v in variables}
            for k, (var, value, grad) in seen.items():
                if k not in known:  # written inside the trace: its tracer must not stay
                    var.value, var.grad = value, grad
            unknown = [var for k, (var, _, _) in seen.items() if k not in known]
            if unknown:
                raise UnsupportedOperationError(
                    f"Expected md.jit to write only the parameters of the Blocks and "
                    f"optimisers the function reaches. Received: a write to {len(unknown)} "
                    "other variable(s), which a jax.jit function cannot hold."
                )

    def __call__(self, *inputs: Any) -> Any:
        rec = STATE.current
        if rec is not None:  # a compiled forward inside record(): one op of the tape
            out, values = rec.run(self.jitted, (self.variables, *inputs))
        else:
            out, values = self.jitted([v.value for v in self.variables], *inputs)
        for v, n in zip(self.variables, values, strict=True):
            v.value = n
        return out


class Jit(JitHooks, ExportHooks):
    """The compilation hooks of the JAX adapter."""

    jit_traces_once = True
    #: md.jit passes the parameters' Variables to ``jit_compile``
    jit_takes_variables = True
    export_unsupported = (
        "JAX has no ONNX exporter here: export with format='native' (jax.export), or export "
        "the same model code and weights to ONNX from the torch or tensorflow backend."
    )

    def jit_compile(self, body: Any, variables: list[Variable]) -> Any:
        """``body`` (flat native tensors in and out) as a ``jax.jit`` function that also takes
        and returns the arrays of ``variables``."""
        return _Compiled(body, variables)

    def synchronize(self, dev: Device | None) -> None:
        """Wait for the work queued on ``dev`` (every device when None): JAX dispatches
        asynchronously and runs a device's computations in order, so the end of one more
        computation there is the end of the work queued before it."""
        natives = jax.local_devices() if dev is None else [self.native_device(dev)]  # type: ignore[attr-defined]
        for d in natives:
            (jnp.zeros((), device=d) + 1).block_until_ready()

    def export(self, block: Any, path: Path, inputs: tuple) -> Path:
        """``jax.export`` of a ``jax.jit`` of the block's forward on arrays of the example
        inputs' shapes and dtypes, its parameters and buffers baked in as constants,
        serialized (``Exported.serialize()``) to the file ``path``, written whole or not at
        all. A forward that writes its buffers (BatchNorm's running statistics in training
        mode) stops the export (``untraceable``: call ``block.eval()``)."""
        if importlib.util.find_spec("flatbuffers") is None:
            raise ImportError(
                "md.export on JAX needs flatbuffers (jax.export's serialization): "
                "pip install 'multidev[jax]'"
            )
        forward = _Compiled(block.native, [])
        specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in inputs]
        kept = [(b, b._native) for b in block.buffers()]
        try:
            exported = jax.export.export(jax.jit(lambda *xs: forward._pure([], *xs)[0]))(*specs)
        finally:  # a buffer written inside the trace holds a tracer: put the array back
            written = any(b._native is not n for b, n in kept)
            for b, n in kept:
                b._native = n
        if written:
            untraceable(
                "it writes its buffers (BatchNorm's running statistics in training mode), "
                "which a serving graph would not keep"
            )
        data = exported.serialize()
        return write_whole(path, lambda tmp: tmp.write_bytes(data))
