"""Compilation on MXNet: forwards hybridized into ``CachedOp`` graphs, symbol + params export.

MXNet 1.9 compiles a Gluon ``HybridBlock`` into a ``CachedOp``: one graph run by MXNet's
engine, recorded by autograd as a single operation. Its graph comes from running the forward
once: multidev's ops run on ``mxnet.numpy`` arrays, so the trace runs them for real under
``autograd.record()`` with the inputs, parameters and buffers marked as autograd variables,
and ``autograd.get_symbol`` hands back what they computed as a ``Symbol`` (MXNet's own
record of the operations, the graph Gluon would build). Each variable is then an input of
the ``CachedOp``: later calls pass the current inputs, the parameters' very arrays and the
current buffers.

``md.jit(fn)`` (``jit_run``):

- a function that reaches no optimiser is compiled whole: one graph per input signature
  (shapes, dtypes, devices, ``train()``/``eval()`` flags, parameter variables);
- a training step (it reaches an optimiser, or calls ``backward``) is what Gluon compiles:
  the forward of every Block it reaches runs as a ``CachedOp``, and ``backward`` and the
  optimiser step run as they are (the gradients go through the graph into the parameters'
  own gradient buffers);
- a buffer written in place by the trace (BatchNorm's running statistics and batch counter
  in training mode, written whole: ``buf[...] = value``, ``buf += 1``) is an extra output of
  the graph: the trace records the write as the new value, and each run of the graph hands
  the buffer its new array (the buffer stays the same tensor, as an in-place write leaves
  it);
- what a graph cannot hold (reading values back to Python, multidev's random generator,
  writing into another tensor in place, replacing a buffer, a tensor made outside the
  recorded operations) stops the trace: that function or block runs eagerly, with one
  ``md.JitWarning`` per jitted function saying why.

A new trace is checked once against the values it traced before the graph is used.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import mxnet as mx
import numpy as np
from mxnet import np as mnp
from mxnet import npx

from multidev.autograd import keep_last_recording
from multidev.contract import ExportHooks, JitHooks
from multidev.device import Device
from multidev.errors import UnsupportedOperationError
from multidev.jit import build, captured, flatten, hashable, state_key
from multidev.tensors import Tensor
from multidev.tracing import Untraceable, inside, tracing, untraceable

from .recording import recorded

__all__ = ["READS_VALUES", "STEP", "WRITES_IN_PLACE", "Jit", "trace_input", "traced_write"]

#: the reason a whole-function trace stops at ``backward``: a training step
STEP = "it calls backward (a training step: its blocks' forwards are compiled instead)"
READS_VALUES = (
    "it reads tensor values back to Python (.item(), .numpy(), bool(), float()), which a "
    "graph would replay as constants"
)
WRITES_IN_PLACE = "it writes into a tensor in place, which an MXNet graph cannot replay"

_FLAGS = [("static_alloc", True), ("static_shape", True)]
_STEP_MODE = "step"
_EAGER = "eager"


#: the trace running in this thread (``trace_input`` and ``traced_write`` reach it)
_active = threading.local()


class _Trace:
    """The autograd variables of a trace, by name: where each graph input comes from."""

    def __init__(self) -> None:
        self.sources: dict[str, tuple] = {}
        self.swapped: list[tuple[Tensor, Any]] = []
        #: the arrays the trace may write whole (its buffers' marked copies and the values
        #: written into them), by id; and the arrays that ``trace_input`` marked, by id
        self.writable: dict[int, Any] = {}
        self.inputs: dict[int, Any] = {}

    def mark(self, native: Any) -> tuple[Any, str]:
        """A copy of ``native`` marked as an autograd variable, and its name in the graph."""
        copy = native.copy()
        copy.attach_grad(grad_req="null")
        return copy, mx.autograd.get_symbol(copy).name

    def swap(self, t: Tensor, source: tuple) -> None:
        """Let the trace read a marked copy of ``t``'s array, an input from ``source``."""
        copy, name = self.mark(t._native)
        self.swapped.append((t, t._native))
        self.sources[name] = source
        t._native = copy

    def restore(self) -> None:
        for t, native in reversed(self.swapped):
            t._native = native


def trace_input(native: Any) -> Any:
    """Inside a trace, ``native`` as an input of the graph (each run passes that very array:
    an operator may write it, as BatchNorm's backward writes its moving statistics); outside
    one, ``native`` itself."""
    trace = getattr(_active, "trace", None)
    if trace is None:
        return native
    entry = trace.inputs.get(id(native))
    if entry is None:
        copy, name = trace.mark(native)
        trace.sources[name] = ("n", native)
        entry = trace.inputs[id(native)] = (native, copy)
    return entry[1]


def _whole(key: Any, ndim: int) -> bool:
    """Whether ``x[key]`` is all of an ``ndim``-dimensional x."""
    parts = key if isinstance(key, tuple) else (key,)
    full = slice(None)
    return all(k is Ellipsis or k == full for k in parts) and (
        Ellipsis in parts or len(parts) == ndim
    )


def traced_write(x: Any, key: Any, value: Any) -> Any:
    """Inside a trace, the value of buffer ``x`` after ``x[key] = value`` (``key`` all of x;
    ``value`` of x's dtype or a scalar), recorded for the graph, x left as it is; None where
    the trace cannot carry the write (it then stops)."""
    trace = getattr(_active, "trace", None)
    if trace is None or id(x) not in trace.writable or not _whole(key, x.ndim):
        return None
    if isinstance(value, (bool, int, float)):
        new = mnp.full_like(x, value)
    else:
        new = value if value.shape == x.shape else mnp.broadcast_to(value, x.shape)
        if new.dtype != x.dtype:
            return None
        if id(new) in trace.writable or _variable_name(new) is not None:
            new = new.copy()  # its own entry of the graph, not another input's
    trace.writable[id(new)] = new
    return new


def _stop(reason: str) -> NoReturn:
    """Stop a trace with ``reason`` (what ``md.export`` and the JitWarning report)."""
    with inside():
        untraceable(reason)
    raise Untraceable(reason)


def _variable_name(native: Any) -> str | None:
    """The graph name of an array autograd already knows as a variable (a trainable
    Parameter's array), else None."""
    try:
        sym = mx.autograd.get_symbol(native)
    except mx.base.MXNetError:
        return None
    return sym.name if sym.get_children() is None else None


class _Graph:
    """One traced signature: the ``CachedOp``, where its inputs come from, its outputs (the
    function's, then the buffers it writes: ``writes``, (block, name) each)."""

    def __init__(
        self, op: Any, sources: list[tuple], out_spec: Any, out_devs: list, writes: list
    ) -> None:
        self.op = op
        self.sources = sources
        self.out_spec = out_spec
        #: the outputs' devices, fixed by the signature (inputs' devices, parameter variables)
        self.out_devs = out_devs
        self.writes = writes

    def inputs(self, leaves: list[Tensor]) -> list[Any]:
        args = []
        for s in self.sources:
            kind = s[0]
            if kind == "x":
                args.append(leaves[s[1]]._native)
            elif kind in ("p", "c"):  # a parameter, a captured tensor
                args.append(s[1]._native)
            elif kind == "n":  # an array of the adapter's (``trace_input``)
                args.append(s[1])
            else:
                args.append(s[1]._buffers[s[2]]._native)
        return args

    def run(self, leaves: list[Tensor]) -> list[Any]:
        """All the graph's outputs (the buffers' new values last, left unwritten). In
        training mode, as the trace ran (recording leaves MXNet's operators there): the fused
        BatchNorm normalises with the batch's statistics only then."""
        with mx.autograd.train_mode():
            out = _call_recorded(self.op, self.inputs(leaves))
        return out if isinstance(out, list) else [out]

    def __call__(self, leaves: list[Tensor]) -> list[Any]:
        """The function's outputs; the buffers it writes get their new arrays (detached:
        a buffer holds no autograd history, as after an eager in-place update)."""
        out = self.run(leaves)
        if not self.writes:
            return out
        n = len(out) - len(self.writes)
        for (m, key), new in zip(self.writes, out[n:], strict=True):
            buffer = m._buffers.get(key)
            if buffer is not None:  # (one set to None since: nothing to hold the value)
                buffer._native = new.detach()
        return out[:n]


#: a CachedOp's call, recorded as the eager ops are (recording.py)
_call_recorded = recorded(lambda op, args: op(*args))


def _params_and_buffers(blocks: list) -> tuple[list, list]:
    params: dict[int, Any] = {}
    buffers = []
    for m in blocks:
        for p in m._parameters.values():
            if p is not None and p.initialized:
                params.setdefault(id(p), p)
        for name, b in m._buffers.items():
            if b is not None:
                buffers.append((m, name, b))
    return list(params.values()), buffers


def _trace(
    fn: Any, args: tuple, kwargs: dict, leaves: list, spec: Any, blocks: list, held: Sequence = ()
) -> tuple:
    """Run ``fn`` once on marked copies and return ``(symbol, sources, out_spec,
    traced_outputs, writes)``: the symbol's outputs are ``fn``'s, then the new values of the
    buffers it writes (``writes``: (block, name) each), and so are the traced outputs;
    ``held`` are the tensors ``fn`` captures (``multidev.jit.captured``), inputs of the graph
    too. Raises Untraceable (with the reason) for what a graph cannot hold."""
    trace = _Trace()
    params, buffers = _params_and_buffers(blocks)
    inputs = []
    for i, t in enumerate(leaves):
        copy, name = trace.mark(t._native)
        trace.sources[name] = ("x", i)
        inputs.append(Tensor(copy, t._bk, t._dev, t._dtype))
    for p in params:
        known = _variable_name(p._native)
        if known is None:
            trace.swap(p, ("p", p))
        else:
            trace.sources[known] = ("p", p)
    copies = []
    for m, key, b in buffers:
        trace.swap(b, ("b", m, key))
        copies.append(b._native)
        trace.writable[id(b._native)] = b._native
    for t in held:
        trace.swap(t, ("c", t))
    replaced = None
    written: list[tuple[tuple, Any]] = []
    _active.trace = trace
    try:
        a, kw = build(spec, inputs, lambda t, dt, dev: t)
        with keep_last_recording(), inside(), mx.autograd.record():
            out = fn(*a, **kw)
        for (m, key, b), copy in zip(buffers, copies, strict=True):
            if m._buffers.get(key) is b and b._native is not copy:
                written.append(((m, key), b._native))
    finally:
        _active.trace = None
        trace.restore()
        for m, key, b in buffers:  # the eager run that follows a failed trace updates them
            if m._buffers.get(key) is not b:
                m._buffers[key] = b
                replaced = replaced or (m, key)
    if replaced is not None:
        _stop(
            f"it replaces the buffer {replaced[1]!r} of {type(replaced[0]).__name__} (e.g. "
            "BatchNorm's statistics in training mode), which a graph cannot replay"
        )
    out_leaves: list[Tensor] = []
    out_spec = flatten(out, out_leaves)
    if not out_leaves:
        _stop("it returns no tensor, so there is no graph to compile")
    try:
        syms = [mx.autograd.get_symbol(t._native) for t in out_leaves]
    except mx.base.MXNetError:
        _stop("it returns a tensor computed from none of its inputs or parameters")
    try:
        syms += [mx.autograd.get_symbol(new) for _, new in written]
    except mx.base.MXNetError:
        _stop(
            "it writes into a buffer a value computed outside the recorded operations (e.g. "
            "under no_grad)"
        )
    sym = syms[0] if len(syms) == 1 else mx.sym.Group(syms)
    sources = []
    for name in sym.list_inputs():
        source = trace.sources.get(name)
        if source is None:
            _stop(
                "it computes with a tensor that was made outside the recorded operations "
                "(MXNet's graph does not hold its values)"
            )
        sources.append(source)
    traced = [t._native for t in out_leaves] + [new for _, new in written]
    return sym, sources, out_spec, traced, [w for w, _ in written]


def _same(got: list, want: list) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape or g.dtype != w.dtype:
            return False
        a, b = g.asnumpy(), w.asnumpy()
        if not np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
            return False
    return True


def _compile(
    fn: Any, args: tuple, kwargs: dict, leaves: list, spec: Any, blocks: list, held: list
) -> _Graph:
    sym, sources, out_spec, traced, writes = _trace(fn, args, kwargs, leaves, spec, blocks, held)
    data = [i for i, s in enumerate(sources) if s[0] == "x"]
    rest = [i for i, s in enumerate(sources) if s[0] != "x"]
    flags = [*_FLAGS, ("data_indices", data), ("param_indices", rest)]
    bk = leaves[0]._bk if leaves else _backend(blocks)
    devs = [bk.device_of(t) for t in traced[: len(traced) - len(writes)]]
    graph = _Graph(mx.nd.CachedOp(sym.as_np_ndarray(), flags), sources, out_spec, devs, writes)
    with mx.autograd.pause(train_mode=True):
        if not _same(graph.run(leaves), traced):
            _stop(
                "its MXNet graph does not reproduce the traced values (an operation whose "
                "recording differs from what it computed)"
            )
    return graph


class _Compiled:
    """A function compiled into one ``CachedOp`` per input signature; what fails to trace
    is remembered (``_EAGER`` or ``_STEP_MODE``) for that signature."""

    def __init__(self, fn: Any, blocks: list) -> None:
        self.fn = fn
        self.blocks = blocks
        self.cache: dict[Any, Any] = {}
        self.attributes: list = []

    def key(self, spec: Any, leaves: list, held: list) -> Any:
        return (
            hashable(spec),
            tuple(t._native.shape for t in leaves),
            tuple((id(t), t._native.shape, t._dtype) for t in held),
            state_key(self.blocks, self.params(), [], self.fn, memo=self.attributes),
        )

    def params(self) -> list:
        return [p for m in self.blocks for p in m._parameters.values() if p is not None]

    def __call__(self, args: tuple, kwargs: dict, warn: Any) -> Any:
        leaves: list[Tensor] = []
        spec = flatten((args, kwargs), leaves)
        held = captured(self.fn)
        key = self.key(spec, leaves, held)
        entry = self.cache.get(key)
        if entry is None:
            try:
                entry = _compile(self.fn, args, kwargs, leaves, spec, self.blocks, held)
            except Untraceable as e:
                why = str(e)
                entry = _STEP_MODE if why == STEP else _EAGER
                if entry is _EAGER:
                    warn(why)
            except mx.base.MXNetError as e:
                lines = [line.strip() for line in str(e).splitlines() if line.strip()]
                warn(f"MXNet could not build its graph ({lines[-1] if lines else e})")
                entry = _EAGER
            self.cache[key] = entry
        if isinstance(entry, str):
            return entry
        natives = entry(leaves)
        bk = leaves[0]._bk if leaves else _backend(self.blocks)
        pairs = list(zip(natives, entry.out_devs, strict=True))
        return _Done(build(entry.out_spec, pairs, lambda nd, dt, _: Tensor(nd[0], bk, nd[1], dt)))


class _Done:
    """The result of a compiled call (a value, told apart from the mode strings)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _backend(blocks: list) -> Any:
    for m in blocks:
        for p in m._parameters.values():
            if p is not None:
                return p._bk
    _stop("it reaches no tensor")


class _RoutedForward:
    """A Block's forward while a jitted training step runs: its ``CachedOp`` graph, or the
    forward itself inside another graph's trace and where the graph cannot be built."""

    __slots__ = ("block", "compiled", "inner", "warn")

    def __init__(self, block: Any, compiled: _Compiled, inner: Any, warn: Any) -> None:
        self.block = block
        self.compiled = compiled
        self.inner = inner
        self.warn = warn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not tracing():
            done = self.compiled(args, kwargs, self.warn)
            if isinstance(done, _Done):
                return done.value
        if self.inner is not None:
            return self.inner(*args, **kwargs)
        return type(self.block).forward(self.block, *args, **kwargs)


def _roots(blocks: list) -> list:
    """The blocks below no other block in ``blocks``."""
    inner = {id(m) for b in blocks for m in b.modules() if m is not b}
    return [b for b in blocks if id(b) not in inner]


def _same_blocks(blocks: list, now: Any) -> bool:
    """Whether ``now`` (an iterator of blocks) holds the very blocks of ``blocks``, in order:
    a sub-block replaced since compiling makes a new compiled forward."""
    now = list(now)
    return len(now) == len(blocks) and all(a is b for a, b in zip(blocks, now, strict=True))


def _run_step(jitted: Any, blocks: list, args: tuple, kwargs: dict) -> Any:
    """Run ``jitted.fn`` eagerly with the forward of every Block it reaches compiled."""
    cache = jitted._cache
    roots_key = ("roots", tuple(id(b) for b in blocks))
    roots = cache.get(roots_key)
    if roots is None:
        roots = cache[roots_key] = _roots(blocks)
    d_saved = []
    for b in roots:
        compiled = cache.get(("block", id(b)))
        if compiled is None or not _same_blocks(compiled.blocks, b.modules()):
            compiled = cache[("block", id(b))] = _Compiled(
                type(b).forward.__get__(b), list(b.modules())
            )
        d = b.__dict__
        inner = d.get("forward")
        d_saved.append((d, inner))
        d["forward"] = _RoutedForward(b, compiled, inner, jitted._warn)
    try:
        return jitted.fn(*args, **kwargs)
    finally:
        for d, inner in d_saved:
            if inner is None:
                d.pop("forward", None)
            else:
                d["forward"] = inner


class Jit(JitHooks, ExportHooks):
    """The compilation hooks of the MXNet adapter."""

    def jit_run(self, jitted: Any, blocks: list, opts: list, args: tuple, kwargs: dict) -> Any:
        """Run ``jitted.fn`` compiled: whole into a ``CachedOp``, or, for a training step,
        with the forwards of its Blocks compiled (see the module's docstring)."""
        if not opts:
            # by the blocks it reaches: a block replaced since is in the graphs of another
            key = ("whole", tuple(id(m) for m in blocks))
            whole = jitted._cache.get(key)
            if whole is None:
                whole = jitted._cache[key] = _Compiled(jitted.fn, blocks)
            done = whole(args, kwargs, jitted._warn)
            if isinstance(done, _Done):
                return done.value
            if done is _EAGER and not blocks:
                return jitted.fn(*args, **kwargs)
        if not blocks:
            jitted._warn("it is a training step that reaches no Block, so no forward to compile")
        return _run_step(jitted, blocks, args, kwargs)

    def synchronize(self, dev: Device | None) -> None:
        """Wait for MXNet's asynchronous engine (every queued operation)."""
        mx.nd.waitall()

    def export_onnx(
        self, block: Any, path: Path, inputs: tuple, opset: int, dynamic_batch: bool
    ) -> Path:
        """An ONNX file from ``mxnet.onnx`` of the graph ``export`` writes. multidev runs MXNet
        in NumPy mode, and ``mxnet.onnx`` converts only legacy operators: the graph's NumPy-mode
        operators are renamed to the legacy operators that compute the same (``_LEGACY``);
        a graph with any other one is refused, naming it, before anything is written.
        ``mxnet.onnx`` writes its own operator set (its translations go to opset 13)."""
        try:
            import onnx
            from mxnet import onnx as mx_onnx
        except ImportError:
            raise ImportError(
                "md.export(..., format='onnx') on MXNet needs onnx: "
                "pip install 'multidev[onnx-mxnet]'"
            ) from None
        with tempfile.TemporaryDirectory() as tmp:
            prefix = Path(tmp) / "model"
            try:
                self.export(block, prefix, inputs)
            except Untraceable as e:
                raise UnsupportedOperationError(
                    f"Expected a model whose MXNet graph can be traced for mxnet.onnx. "
                    f"Received: {type(block).__name__}, where {e} (the graph cannot hold it). "
                    "Nothing was written; export the same model code and weights from torch, "
                    "tensorflow or paddle (md.load of this backend's checkpoint works there)."
                ) from None
            graph = json.loads(Path(f"{prefix}-symbol.json").read_text())
            params = npx.load(f"{prefix}-0000.params")
        names = {"data": "input0", **{f"data{i}": f"input{i}" for i in range(len(inputs))}}
        unknown = set()
        for node in graph["nodes"]:
            if node["op"] == "null":
                node["name"] = names.get(node["name"], node["name"])
                continue
            if node["op"] in _LEGACY_NAMES:
                continue
            rule = _LEGACY.get(node["op"])
            legacy = rule(node.get("attrs", {})) if rule is not None else None
            if legacy is None:
                unknown.add(node["op"])
            else:
                node["op"], node["attrs"] = legacy
        reshapes = [n["attrs"]["shape"] for n in graph["nodes"] if n["op"] == "Reshape"]
        if dynamic_batch and reshapes:
            raise UnsupportedOperationError(
                f"Expected a free batch dimension. Received: {type(block).__name__}, whose "
                f"MXNet graph reshapes to the example's sizes ({reshapes[0]}): MXNet traces "
                "shapes as numbers. Nothing was written; export with dynamic_batch=False (one "
                "file per batch size)."
            )
        if unknown:
            raise UnsupportedOperationError(
                f"Expected a model whose MXNet graph mxnet.onnx can convert. Received: "
                f"{type(block).__name__}, whose graph holds the NumPy-mode operators "
                f"{sorted(unknown)} that have no legacy equivalent here (multidev runs MXNet "
                "with npx.set_np(); mxnet.onnx converts only legacy operators). Nothing was "
                "written; export the same model code and weights from torch, tensorflow or "
                "paddle (md.load of this backend's checkpoint works there), or use "
                "format='native'."
            )
        graph.get("attrs", {}).pop("is_np_shape", None)
        sym = mx.sym.load_json(json.dumps(graph))
        values = {k.split(":", 1)[-1]: mx.nd.array(v.asnumpy(), dtype=v.dtype) for k, v in
                  params.items()}  # fmt: skip
        shapes = [tuple(x.shape) for x in inputs]
        mx_onnx.export_model(
            sym,
            values,
            in_shapes=shapes,
            in_types=[np.dtype(x.dtype) for x in inputs],
            onnx_file_path=str(path),
            dynamic=dynamic_batch,
            dynamic_input_shapes=[(None, *s[1:]) for s in shapes] if dynamic_batch else None,
        )
        # mxnet.onnx lists the weights (initializers) as graph inputs too, in ONNX's older
        # style: only the model's own inputs stay inputs
        model = onnx.load(str(path))
        weights = {t.name for t in model.graph.initializer}
        kept = [i for i in model.graph.input if i.name not in weights]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        # its translations are opset 13's operators, while it declares the onnx package's
        # newest opset (where ReduceMean's axes became an input): declared as what they are
        for entry in model.opset_import:
            if entry.domain in ("", "ai.onnx"):
                entry.version = _MXNET_ONNX_OPSET
        if dynamic_batch:  # mxnet.onnx leaves the free dimension unnamed: named as a symbol
            for value in (*model.graph.input, *model.graph.output):
                dims = value.type.tensor_type.shape.dim
                if dims and not dims[0].dim_value:
                    dims[0].dim_param = "batch"
        onnx.save(model, str(path))
        return path

    def export(self, block: Any, path: Path, inputs: tuple, epoch: int = 0) -> Path:
        """``path-symbol.json`` and ``path-0000.params`` (``epoch``) as Gluon's
        ``HybridBlock.export`` writes them (inputs ``data``, or ``data0``, ``data1``…;
        parameters and buffers under their multidev names): ``gluon.SymbolBlock.imports``
        loads them without multidev. Returns ``path`` (the prefix)."""
        bk = _backend(list(block.modules()))
        leaves = [Tensor(x, bk, bk.device_of(x), bk.dtype_of(x)) for x in inputs]
        spec = flatten((tuple(leaves), {}), [])
        blocks = list(block.modules())
        sym, sources, _, _, writes = _trace(
            type(block).forward.__get__(block), tuple(leaves), {}, leaves, spec, blocks
        )
        if writes or any(s[0] == "n" for s in sources):
            _stop(
                "it updates buffers (e.g. BatchNorm in training mode): call eval() before exporting"
            )
        names = {id(p): n for n, p in block.named_parameters()}
        buffer_names = {(id(m), k): f"{prefix}.{k}".lstrip(".") for prefix, m in
                        block.named_modules() for k in m._buffers}  # fmt: skip
        rename: dict[str, Any] = {}
        values: dict[str, Any] = {}
        for name, s in zip(sym.list_inputs(), sources, strict=True):
            if s[0] == "x":
                new = "data" if len(leaves) == 1 else f"data{s[1]}"
            else:
                if s[0] == "p":
                    new, value = names[id(s[1])], s[1]._native
                else:
                    new, value = buffer_names[(id(s[1]), s[2])], s[1]._buffers[s[2]]._native
                values[f"arg:{new}"] = value.copyto(mx.cpu())
            rename[name] = mx.sym.var(new)
        renamed = sym(**rename)
        path = Path(path)
        renamed.save(f"{path}-symbol.json")
        npx.save(f"{path}-{epoch:04d}.params", values)
        return path


def _np_reshape(attrs: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    shape = attrs["newshape"]
    if re.search(r"(^|[(,\s])0([,)\s]|$)", shape) or attrs.get("order", "C") != "C":
        return None  # legacy Reshape reads 0 as "keep this dimension": not the same
    return "Reshape", {"shape": shape}


#: the opset of mxnet.onnx's newest operator translations (mx2onnx/_op_translations)
_MXNET_ONNX_OPSET = 13


def _np_mean(attrs: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    if attrs.get("dtype", "None") != "None" or attrs.get("initial", "None") != "None":
        return None
    out = {"keepdims": attrs.get("keepdims", "False")}
    if attrs.get("axis", "None") != "None":
        out["axis"] = attrs["axis"]
    return "mean", out


#: NumPy-mode operator -> (legacy operator, its attributes) computing the same
_LEGACY: dict[str, Callable[[dict[str, Any]], tuple[str, dict[str, Any]] | None]] = {
    "_npx_relu": lambda a: ("relu", {}),
    "_npx_sigmoid": lambda a: ("sigmoid", {}),
    "_npi_add": lambda a: ("broadcast_add", {}),
    "_npi_subtract": lambda a: ("broadcast_sub", {}),
    "_npi_multiply": lambda a: ("broadcast_mul", {}),
    "_np_reshape": _np_reshape,
    "_np_transpose": lambda a: ("transpose", {"axes": a["axes"]}) if "axes" in a else None,
    "_npi_multiply_scalar": lambda a: ("_mul_scalar", {"scalar": a["scalar"]}),
    "_npi_add_scalar": lambda a: ("_plus_scalar", {"scalar": a["scalar"]}),
    "_npi_mean": _np_mean,
    # MXNet's legacy gemm2 is ONNX's MatMul in mxnet.onnx: NumPy's matmul on equal batch dims
    "_npi_matmul": lambda a: ("_linalg_gemm2", {}),
}
#: operators the graph may hold that are legacy operators already (NumPy mode shares them)
_LEGACY_NAMES = frozenset(
    {"FullyConnected", "Convolution", "Pooling", "BatchNorm", "Activation", "Flatten",
     "LeakyReLU", "Dropout", "LayerNorm", "slice", "softmax", "take"}
)  # fmt: skip
