"""Compilation: ``md.jit``, ``md.synchronize`` and ``md.export`` (``Block.hybridize`` is
``md.jit`` of the block's forward).

``md.jit(fn)`` hands a function of Tensors and Blocks (a forward pass, or a whole training
step: ``record``, ``backward``, ``opt.step()``, ``opt.zero_grad()``) to the framework's
compiler, through the adapter's ``jit_compile(body)``: ``body`` takes and returns flat lists
of native tensors and runs ``fn`` on them as Tensors. Parameters stay the Block's very
variables. The rules written once here:

- Compilers that run the Python function once and replay a graph (``tf.function``,
  ``jit_traces_once = True``) see Python state as constants. The gradients and the Tensor
  state of the optimisers ``fn`` reaches are therefore passed in and returned by the
  compiled function and written back after each call, and so is the learning rate of the
  optimisers whose rule uses it only as a step size (``TracedScalar``); ``state_key`` (the
  blocks, parameters and optimisers reached, by identity; the blocks' plain attributes,
  ``training`` among them; the other hyperparameters and the Python values ``fn`` reads, by
  value) and the structure of that state are part of the cache key, so ``train()``/``eval()``,
  a replaced layer, a new momentum, a new gradient or a new optimiser buffer retrace. A trace that changes other Python state of
  an optimiser (Adam's step counter) would replay it as a constant: that function runs
  eagerly instead.
- A compiler of pure functions (``jax.jit``; the adapter sets ``jit_takes_variables``) is
  also given the variables of those parameters, ``compile_(body, variables)``, since it
  cannot capture mutable state: it passes their values in and out itself.
- Compilers that follow Python faithfully (``torch.compile``'s bytecode tracer) get ``fn``
  as it is.
- An adapter with ``jit_run(jitted, blocks, optimisers, args, kwargs)`` runs ``fn`` itself
  (MXNet: ``fn`` or the forwards of its Blocks as ``CachedOp`` graphs, Gluon's way).
- New shapes or dtypes retrace (the framework's own rule, dtypes also in the key here).
- What cannot be compiled (multidev's host random generator under a tracer, reading values
  back to Python, a backend without compiler) runs eagerly, with exactly one
  ``md.JitWarning`` per jitted function saying why: never silently wrong.

What ``fn`` reaches is found in its arguments, its default values, its closure, the globals
it names and, for a bound method, its ``self``: Blocks, optimisers, and lists, tuples and
dicts of them.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import registry
from .autograd import end_implicit, keep_last_recording
from .device import as_device
from .distributed.group import DistributedError
from .dtypes import float64
from .errors import JitWarning, UnsupportedOperationError
from .optim import Optimizer
from .tensors import Tensor
from .tracing import TracedScalar, Untraceable, inside, last_reason, tracing, untraceable

if TYPE_CHECKING:
    from .nn.module import Block

__all__ = ["Jitted", "export", "jit", "synchronize", "tracing", "untraceable"]


class _Eager:
    """The cache entry of a structure that runs eagerly."""


_EAGER = _Eager()


# ---------------------------------------------------------------- what fn reaches
def _walk(obj: Any, visit: Callable[[Any], bool], depth: int = 0) -> None:
    """``visit`` each object of ``obj`` and of the lists, tuples and dicts in it (two levels
    deep) until ``visit`` says it took the object (returns True)."""
    if visit(obj):
        return
    if depth < 2 and isinstance(obj, (list, tuple)):
        for v in obj:
            _walk(v, visit, depth + 1)
    elif depth < 2 and isinstance(obj, dict):
        for v in obj.values():
            _walk(v, visit, depth + 1)


def _around(fn: Any) -> Iterator[Any]:
    """What ``fn`` reaches besides its arguments: its default values, the contents of its
    closure and the globals it names."""
    func = getattr(fn, "__func__", fn)
    yield getattr(func, "__defaults__", None) or ()
    yield getattr(func, "__kwdefaults__", None) or {}
    for cell in getattr(func, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue
    code = getattr(func, "__code__", None)
    if code is not None:
        glb = getattr(func, "__globals__", {})
        yield from (glb[name] for name in code.co_names if name in glb)


def _block_type() -> type[Block]:
    """``nn.Block``, from the loaded package (``nn`` stands on this module)."""
    return sys.modules["multidev.nn.module"].Block


def _reachable(fn: Any, args: tuple, kwargs: dict) -> tuple[list, list]:
    """The Blocks (every sub-block) and optimisers ``fn`` can reach."""
    blocks: dict[int, Any] = {}
    opts: dict[int, Any] = {}
    block_type = _block_type()

    def visit(obj: Any) -> bool:
        if isinstance(obj, block_type):
            for m in obj.modules():
                blocks.setdefault(id(m), m)
            return True
        if isinstance(obj, Optimizer):
            opts.setdefault(id(obj), obj)
            return True
        return False

    owner = getattr(fn, "__self__", None)
    for obj in (args, kwargs, owner, *_around(fn)):
        _walk(obj, visit)
    return list(blocks.values()), list(opts.values())


#: the Python values a trace bakes in as constants, tracked between calls by value
_SCALARS = (bool, int, float, complex, str, type(None))


def _scalar(v: Any) -> bool:
    t = type(v)
    return t in _SCALARS or (t is tuple and all(type(x) in _SCALARS for x in v))


def python_values(fn: Any) -> tuple:
    """The plain Python values (numbers, strings, flags and tuples of them) ``fn`` reads from
    its default values, its closure and the globals it names: a trace bakes them in, so
    they are part of the cache key. Not those inside lists and dicts, which are most often
    what a step writes (a counter, a log of losses): keyed, they would retrace every call."""
    return tuple(v for v in _around(fn) if _scalar(v))


def _block_attributes(blocks: list, memo: list | None) -> tuple:
    """Each block's id and plain Python attributes; ``memo`` (a list the caller keeps) holds
    the last answer with the blocks and ``ATTRIBUTES_VERSION`` it was made for, reused while
    no block attribute changed anywhere (an identity check of the blocks)."""
    version = sys.modules["multidev.nn.module"].ATTRIBUTES_VERSION[0]
    if (
        memo
        and memo[0] == version
        and len(memo[1]) == len(blocks)
        and all(a is b for a, b in zip(memo[1], blocks, strict=True))
    ):
        return memo[2]
    value = tuple(
        (id(m), tuple((k, v) for k, v in m.__dict__.items() if _scalar(v))) for m in blocks
    )
    if memo is not None:
        memo[:] = [version, list(blocks), value]
    return value


def state_key(
    blocks: list, params: list, opts: list, fn: Any, fed: tuple = (), memo: list | None = None
) -> tuple:
    """What a compiled function reads besides its tensors, compared at each call: the
    identities of the blocks, of the parameters and their framework variables and of the
    optimisers; each block's plain Python attributes (``training``, ``p``, ``eps``, a
    replaced sub-block's settings); each optimiser's hyperparameters by value (but ``lr`` of
    the optimisers in ``fed``, an input of the compiled function); the plain Python values
    ``fn`` reads (``python_values``). A change retraces. ``memo``: see
    ``_block_attributes``."""
    return (
        _block_attributes(blocks, memo),
        tuple((id(p), id(getattr(p, "_var", None))) for p in params),
        tuple(
            (
                id(opt),
                tuple(
                    tuple(
                        (k, v)
                        for k, v in g.items()
                        if k != "params" and _scalar(v) and not (k == "lr" and opt in fed)
                    )
                    for g in opt.param_groups
                ),
            )
            for opt in opts
        ),
        python_values(fn),
    )


def captured(fn: Any) -> list[Tensor]:
    """The Tensors (Parameters aside) ``fn`` reaches without taking them as arguments: in its
    default values, its closure and the globals it names (a constant mask, class weights, a
    learning rate). Compilers that trace get them as inputs of the compiled function, so
    each call reads their current values: a trace would otherwise hold eager values that
    its graph cannot use, or keep the values of the first call."""
    found: dict[int, Tensor] = {}
    parameter = sys.modules["multidev.nn.parameter"].Parameter

    def visit(obj: Any) -> bool:
        if isinstance(obj, Tensor):
            if not isinstance(obj, parameter):
                found.setdefault(id(obj), obj)
            return True
        return False

    for obj in _around(fn):
        _walk(obj, visit)
    return list(found.values())


# ---------------------------------------------------------------- flattening
def flatten(obj: Any, leaves: list) -> Any:
    """The structure of ``obj`` with each Tensor replaced by its position in ``leaves``."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return (_Leaf, len(leaves) - 1, obj._dtype, obj._dev)
    if isinstance(obj, (list, tuple)):
        return (type(obj), tuple(flatten(v, leaves) for v in obj))
    if isinstance(obj, dict):
        return (dict, tuple((k, flatten(v, leaves)) for k, v in obj.items()))
    return (None, obj)


class _Leaf:
    pass


def build(spec: Any, values: list, make: Callable[[Any, Any, Any], Any]) -> Any:
    """The structure ``flatten`` described, with leaf ``i`` made by ``make(values[i], dtype,
    device)`` (adapters that compile use these three helpers too)."""
    kind = spec[0]
    if kind is _Leaf:
        return make(values[spec[1]], spec[2], spec[3])
    if kind is None:
        return spec[1]
    if kind is dict:
        return {k: build(v, values, make) for k, v in spec[1]}
    items = [build(v, values, make) for v in spec[1]]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def hashable(spec: Any) -> Any:
    """``spec`` as a cache key: Python values that are not hashable count by identity."""
    try:
        hash(spec)
        return spec
    except TypeError:
        pass
    if isinstance(spec, tuple):
        return tuple(hashable(v) for v in spec)
    return ("id", id(spec))


# ---------------------------------------------------------------- the compiled function
def _adapter_of(blocks: list) -> Any:
    """The backend of the first parameter found, else the active one."""
    for m in blocks:
        for p in m._parameters.values():
            if p is not None:
                return p._bk
    return registry.current()


class Jitted:
    """A function compiled by the active backend's compiler: call it like the function."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"Expected a function to compile. Received: {type(fn).__name__}")
        self.fn = fn
        self._cache: dict[Any, Any] = {}
        self._scalars: dict[tuple, Any] = {}
        self._attributes: list = []
        self._warned = False
        functools.update_wrapper(self, fn)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def _scalar_input(self, bk: Any, value: float, dev: Any) -> Any:
        """A 0-d float64 tensor of ``value`` on ``dev`` (a learning rate passed to a trace),
        kept for the next calls: a schedule changes it at most once a step."""
        key = (id(bk), value, dev)
        native = self._scalars.get(key)
        if native is None:
            if len(self._scalars) > 64:
                self._scalars.clear()
            native = self._scalars[key] = bk.full((), value, float64, dev)
        return native

    def _warn(self, why: str) -> None:
        if not self._warned:
            self._warned = True
            name = getattr(self.fn, "__qualname__", repr(self.fn))
            warnings.warn(
                f"md.jit: {name} runs eagerly (not compiled): {why}",
                JitWarning,
                stacklevel=3,
            )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if tracing():  # inside another compiled function: part of it
            return self.fn(*args, **kwargs)
        leaves: list[Tensor] = []
        spec = flatten((args, kwargs), leaves)
        reach = None
        if leaves:
            bk = leaves[0]._bk
        else:
            reach = _reachable(self.fn, args, kwargs)
            bk = _adapter_of(reach[0])
        # a compiled function records (and differentiates) on its own: an implicit recording
        # left open by eager code would record the whole call as one more op
        end_implicit(bk)
        run = bk.jit_run
        if run is not None:  # the adapter compiles and runs it (MXNet's hybridized forwards)
            blocks, opts = reach or _reachable(self.fn, args, kwargs)
            return run(self, blocks, opts, args, kwargs)
        compile_ = bk.jit_compile
        if compile_ is None:
            self._warn(
                bk.jit_unsupported
                or f"the {bk.name} backend has no compiler (it runs each op as it comes)"
            )
            return self.fn(*args, **kwargs)
        if bk.jit_traces_once:
            blocks, opts = reach or _reachable(self.fn, args, kwargs)
            return self._call_traced(bk, compile_, blocks, opts, args, kwargs, leaves, spec)
        return self._call_direct(bk, compile_, leaves, spec, reach, args, kwargs)

    # a compiler that follows Python (torch.compile): fn as it is, on native tensors
    def _call_direct(
        self,
        bk: Any,
        compile_: Any,
        leaves: list,
        spec: Any,
        reach: tuple[list, list] | None,
        args: tuple,
        kwargs: dict,
    ) -> Any:
        key = (id(bk), hashable(spec))
        entry = self._cache.get(key)
        if entry is _EAGER:
            return self.fn(*args, **kwargs)
        holder: dict[str, Any] = {}
        if entry is None:
            blocks, _ = reach or _reachable(self.fn, args, kwargs)
            why = next(filter(None, (getattr(m, "jit_blocker", None) for m in blocks)), None)
            if why is not None:
                self._cache[key] = _EAGER
                self._warn(why)
                return self.fn(*args, **kwargs)
            fn = self.fn

            def body(*natives: Any) -> Any:
                a, kw = build(spec, list(natives), lambda n, dt, dev: Tensor(n, bk, dev, dt))
                out_leaves: list[Tensor] = []
                holder["out"] = flatten(fn(*a, **kw), out_leaves)
                return tuple(t._native for t in out_leaves)

            entry = self._cache[key] = (compile_(body), holder)
        compiled, holder = entry
        natives = compiled(*(t._native for t in leaves))
        return build(holder["out"], list(natives), lambda n, dt, dev: Tensor(n, bk, dev, dt))

    # a compiler that traces once (tf.function): Python state in and out explicitly
    def _call_traced(
        self,
        bk: Any,
        compile_: Any,
        blocks: list,
        opts: list,
        args: tuple,
        kwargs: dict,
        leaves: list,
        spec: Any,
    ) -> Any:
        params = _params(blocks, opts)
        grads = [bk.grad(p._var) for p in params]
        state_spec, state_vals = _opt_state(opts)
        buffers = _buffers(blocks)
        held = captured(self.fn)
        fed = tuple(opt for opt in opts if opt._lr_is_step_size())
        lrs = [
            (opt, i, float(g["lr"]), g["params"][0]._dev)
            for opt in fed
            for i, g in enumerate(opt.param_groups)
            if g["params"]
        ]
        key = (
            id(bk),
            hashable(spec),
            state_key(blocks, params, opts, self.fn, fed, self._attributes),
            tuple(g is None for g in grads),
            state_spec,
            tuple((id(m), name, b._dtype) for m, name, b in buffers),
            tuple((id(t), t._dtype) for t in held),
        )
        entry = self._cache.get(key)
        if entry is _EAGER:
            return self.fn(*args, **kwargs)
        values = None
        if entry is None:
            # this call traces, and a compiler such as tf.function runs the traced graph in
            # the same call: the parameters' values, for a trace that then runs eagerly
            values = [(p, p.data.to(p.device, copy=True)) for p in params]
            slots = [(m, name) for m, name, _ in buffers]
            lr_slots = [(opt, i, dev) for opt, i, _, dev in lrs]
            entry = self._cache[key] = self._trace(
                bk, compile_, spec, params, opts, state_spec, slots, held, lr_slots
            )
        compiled, holder = entry
        natives = [t._native for t in leaves]
        inputs = [
            *natives,
            *(g for g in grads if g is not None),
            *(v._native for v in state_vals),
            *(b._native for _, _, b in buffers),
            *(t._native for t in held),
            *(self._scalar_input(bk, lr, dev) for _, _, lr, dev in lrs),
        ]
        traced_before = holder["traces"]
        snapshot = _snapshot(params, opts, bk)
        try:
            out = compiled(*inputs)
        except Exception as e:
            if holder["traces"] == traced_before or isinstance(e, DistributedError):
                raise
            _restore(snapshot, bk, values)
            self._cache[key] = _EAGER
            reason = last_reason()
            lines = [line.strip() for line in str(e).splitlines() if line.strip()]
            self._warn(
                reason or f"tracing it failed ({type(e).__name__}: {lines[-1] if lines else ''})"
            )
            return self.fn(*args, **kwargs)
        if holder["traces"] != traced_before and holder.get("python_state_changed"):
            _restore(snapshot, bk, values)  # the graph ran the step once already
            self._cache[key] = _EAGER
            self._warn(
                "it changes Python values of an optimiser's state (e.g. Adam's step "
                "counter), which a traced graph would replay as constants"
            )
            return self.fn(*args, **kwargs)
        n_out, n_grad, n_state = holder["n_out"], len(params), len(holder["state_out"])
        out = list(out)
        out_natives = out[:n_out]
        grad_natives = out[n_out : n_out + n_grad]
        state_natives = out[n_out + n_grad : n_out + n_grad + n_state]
        for p, g in zip(params, grad_natives, strict=True):
            bk.set_grad(p._var, g)
        _write_state(holder["state_out"], state_natives, opts, params, bk)
        n_buf = len(buffers)
        rest = out[n_out + n_grad + n_state :]
        for (m, name, b), n in zip(buffers, rest[:n_buf], strict=True):
            m._buffers[name] = Tensor(n, bk, b._dev, b._dtype)
        for i, n in zip(holder["written"], rest[n_buf:], strict=True):
            held[i]._native = n
        return build(
            holder["out"], out_natives, lambda n, dt, dev: Tensor(n, bk, bk.device_of(n), dt)
        )

    def _trace(
        self,
        bk: Any,
        compile_: Any,
        spec: Any,
        params: list,
        opts: list,
        state_spec: Any,
        slots: list[tuple[Any, str]],
        held: list[Tensor],
        lr_slots: list[tuple[Any, int, Any]],
    ) -> tuple[Any, dict]:
        """``fn`` as the compiler's function of (inputs, gradients, optimiser state, buffers,
        captured tensors, learning rates: ``lr_slots`` (optimiser, group, device)) returning (outputs, gradients, optimiser state, buffers, the
        captured tensors it wrote): the Python objects hold traced values only while it
        traces, and their own values again after."""
        holder: dict[str, Any] = {"traces": 0}
        fn = self.fn

        def body(*args_in: Any) -> Any:
            holder["traces"] += 1
            inputs = list(args_in)
            n_leaves = _count_leaves(spec)
            args, kwargs = build(spec, inputs[:n_leaves], lambda n, dt, dev: Tensor(n, bk, dev, dt))
            rest = inputs[n_leaves:]
            grads_now = [bk.grad(p._var) for p in params]
            k = 0
            for p, g in zip(params, grads_now, strict=True):
                if g is not None:
                    bk.set_grad(p._var, rest[k])
                    k += 1
            n_state = len(state_spec)
            _write_state(state_spec, rest[k : k + n_state], opts, params, bk)
            python_before = _python_state(opts)
            convert = bk.jit_variable
            saved = [(p, p._native) for p in params]
            if convert is not None:
                for p in params:
                    p._native = convert(p._var)
            kept = [m._buffers[name] for m, name in slots]
            buffers_in = rest[k + n_state : k + n_state + len(slots)]
            for (m, name), b, n in zip(slots, kept, buffers_in, strict=True):
                m._buffers[name] = Tensor(n, bk, b._dev, b._dtype)
            held_in = rest[k + n_state + len(slots) : k + n_state + len(slots) + len(held)]
            lrs_in = rest[k + n_state + len(slots) + len(held) :]
            own = [t._native for t in held]
            groups = [opt.param_groups[i] for opt, i, _ in lr_slots]
            own_lrs = [g["lr"] for g in groups]
            for g, (_, _, dev), n in zip(groups, lr_slots, lrs_in, strict=True):
                g["lr"] = TracedScalar(g["lr"], n, bk, dev)
            for t, n in zip(held, held_in, strict=True):
                t._native = n
            try:
                end_implicit(bk)  # eager code before the trace is not part of it
                with keep_last_recording(), inside():
                    out = fn(*args, **kwargs)
                out_buffers = [m._buffers[name]._native for m, name in slots]
                holder["written"] = [
                    i
                    for i, (t, n) in enumerate(zip(held, held_in, strict=True))
                    if t._native is not n
                ]
                out_held = [held[i]._native for i in holder["written"]]
            finally:
                for p, n in saved:
                    p._native = n
                for (m, name), b in zip(slots, kept, strict=True):
                    m._buffers[name] = b
                for t, n in zip(held, own, strict=True):
                    t._native = n
                for g, lr in zip(groups, own_lrs, strict=True):
                    g["lr"] = lr
            holder["python_state_changed"] = _python_state(opts) != python_before
            out_leaves: list[Tensor] = []
            holder["out"] = flatten(out, out_leaves)
            holder["n_out"] = len(out_leaves)
            out_grads = [bk.grad(p._var) for p in params]
            out_spec, out_vals = _opt_state(opts)
            holder["state_out"] = out_spec
            return (
                *(t._native for t in out_leaves),
                *out_grads,
                *(t._native for t in out_vals),
                *out_buffers,
                *out_held,
            )

        if bk.jit_takes_variables:
            # a compiler of pure functions (jax.jit) cannot capture mutable variables: it gets
            # them, and passes their values in and out itself
            return compile_(body, [p._var for p in params]), holder
        return compile_(body), holder


def _count_leaves(spec: Any) -> int:
    kind = spec[0]
    if kind is _Leaf:
        return 1
    if kind is None:
        return 0
    if kind is dict:
        return sum(_count_leaves(v) for _, v in spec[1])
    return sum(_count_leaves(v) for v in spec[1])


def _params(blocks: list, opts: list) -> list:
    seen: dict[int, Any] = {}
    for m in blocks:
        for p in m._parameters.values():
            if p is not None and p.initialized and p.requires_grad:
                seen.setdefault(id(p), p)
    for opt in opts:
        for group in opt.param_groups:
            for p in group["params"]:
                seen.setdefault(id(p), p)
    return list(seen.values())


def _buffers(blocks: list) -> list[tuple[Any, str, Tensor]]:
    """Each (block, name, tensor) of the blocks' buffers that hold a tensor."""
    return [(m, k, b) for m in blocks for k, b in m._buffers.items() if b is not None]


def _opt_state(opts: list) -> tuple[tuple, list[Tensor]]:
    """The structure (hashable) and the Tensor values of the optimisers' state."""
    spec = []
    vals: list[Tensor] = []
    for opt in opts:
        for p, st in opt.state.items():
            for k in sorted(st):
                v = st[k]
                if isinstance(v, Tensor):
                    spec.append((id(opt), id(p), k, v._dtype))
                    vals.append(v)
    return tuple(spec), vals


def _python_state(opts: list) -> list:
    return [
        (id(opt), id(p), k, v)
        for opt in opts
        for p, st in opt.state.items()
        for k, v in sorted(st.items())
        if not isinstance(v, Tensor)
    ]


def _write_state(spec: tuple, natives: list, opts: list, params: list, bk: Any) -> None:
    by_id = {id(opt): opt for opt in opts}
    pids = {id(p): p for p in params}
    for (oid, pid, k, dt), n in zip(spec, natives, strict=True):
        p = pids[pid]
        by_id[oid].state.setdefault(p, {})[k] = Tensor(n, bk, p._dev, dt)


def _snapshot(params: list, opts: list, bk: Any) -> tuple:
    return (
        [(p, bk.grad(p._var)) for p in params],
        [(opt, {p: dict(st) for p, st in opt.state.items()}) for opt in opts],
        [(t, t._native) for t in _opt_state(opts)[1]],
    )


def _restore(snapshot: tuple, bk: Any, values: list | None) -> None:
    """Put back what a call that falls back to eager may have changed: gradients, optimiser
    state and, where the call traced (``values``), the parameters' values."""
    grads, states, natives = snapshot
    for p, v in values or ():
        p.data = v
    for p, g in grads:
        bk.set_grad(p._var, g)
    for opt, st in states:
        opt.state.clear()
        opt.state.update(st)
    for t, n in natives:
        t._native = n


# ---------------------------------------------------------------- public functions
def jit(fn: Callable[..., Any]) -> Jitted:
    """``fn`` compiled by the backend's compiler (``tf.function``, ``torch.compile``,
    ``paddle.jit.to_static``, MXNet's ``CachedOp``); use as ``step = md.jit(step)`` or ``@md.jit``.

    It gives eager's results within float32 tolerance and trains the very same parameters
    and optimiser state. New shapes, dtypes, ``train()``/``eval()``, replaced blocks,
    parameters or optimisers and changed Python values it reads retrace (see
    docs/guide/compilation.md); a new learning rate does not. What cannot be
    compiled runs eagerly with one ``md.JitWarning`` saying why. Raises TypeError for a
    non-callable."""
    return Jitted(fn)


def synchronize(device: Any = None) -> None:
    """Wait until the work queued on ``device`` (default: every device of the active
    backend) has finished: MXNet and GPUs run asynchronously, so time around this."""
    bk = registry.current()
    dev = None if device is None else as_device(device)
    sync = bk.synchronize
    if sync is not None:
        sync(dev)


#: the ONNX opset md.export writes: supported by every exporter used (torch.onnx, tf2onnx,
#: paddle2onnx) and by onnxruntime releases of the last years
ONNX_OPSET = 18
EXPORT_FORMATS = ("native", "onnx")


def export(
    block: Any,
    path: str | Path,
    example_inputs: Any,
    format: str = "native",
    *,
    dynamic_batch: bool = True,
    opset: int = ONNX_OPSET,
) -> Path:
    """Write ``block`` for serving without multidev.

    ``format="native"``: the framework's own serving format at ``path``: a SavedModel
    folder (TensorFlow; call ``.serve(x)`` on ``tf.saved_model.load``), a ``torch.export``
    program (``.pt2``; ``torch.export.load(path).module()(x)``), a ``paddle.jit.save``
    prefix (``paddle.jit.load(path)(x)``), MXNet's ``path-symbol.json`` and
    ``path-0000.params`` (``gluon.SymbolBlock.imports``, input ``data``), or ``jax.export``'s
    serialization in the file ``path`` as named (JAX: for the example inputs' shapes, batch
    size included; ``jax.export.deserialize(open(path, "rb").read()).call(x)``, which needs
    ``flatbuffers``), written whole or not at all.

    ``format="onnx"``: an ONNX file (opset ``opset``; MXNet's exporter writes opset 13)
    written by the framework's own exporter (``torch.onnx``, ``tf2onnx``, ``paddle2onnx``,
    ``mxnet.onnx``; ``pip install 'multidev[onnx-torch]'``, ``[onnx-tensorflow]``,
    ``[onnx-paddle]`` or ``[onnx-mxnet]``) that
    onnxruntime runs; inputs are named ``input0``, ``input1``…, and with ``dynamic_batch``
    their first dimension is free. The file appears whole or not at all: a failed export
    leaves ``path`` as it was.

    ``example_inputs`` is a Tensor or a tuple of Tensors with the shapes and dtypes to
    serve. Returns the path written. Raises ValueError for an unknown format or a block in
    training mode that draws random values (``Dropout``) or, on JAX, updates its buffers
    (BatchNorm's running statistics): call ``block.eval()`` first;
    TypeError on a backend without that exporter, UnsupportedOperationError where the
    framework's exporter cannot express the model (the message says what and why)."""
    if format not in EXPORT_FORMATS:
        raise ValueError(f"Expected format one of {EXPORT_FORMATS}. Received: {format!r}")
    inputs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    for x in inputs:
        if not isinstance(x, Tensor):
            raise TypeError(
                f"Expected md.Tensor example inputs. Received: {type(x).__name__}. "
                "Wrap it with md.asarray first."
            )
    bk = inputs[0]._bk if inputs else registry.current()
    write: Any = bk.export if format == "native" else bk.export_onnx
    if write is None:
        what = "a serving format" if format == "native" else "an ONNX exporter"
        raise TypeError(
            f"Expected a backend with {what} for md.export. Received: a Block of "
            f"the {bk.name} backend, which has none. "
            + (
                bk.export_unsupported
                or "Use a backend whose framework has one (docs/guide/checkpoints.md lists them)."
            )
        )
    natives = tuple(x._native for x in inputs)
    try:
        with inside():
            if format == "native":
                return Path(write(block, Path(path), natives))
            return write_whole(
                Path(path), lambda tmp: _onnx(write, block, tmp, natives, opset, dynamic_batch)
            )
    except Untraceable:
        raise ValueError(
            f"Expected a block that a serving graph can hold. Received: {type(block).__name__} "
            f"in a mode where {last_reason()}. Call block.eval() before md.export."
        ) from None


def _onnx(write: Any, block: Any, tmp: Path, natives: tuple, opset: int, dynamic: bool) -> None:
    """The adapter's ONNX export to ``tmp``, checked: the graph's inputs must be exactly the
    example inputs (an exporter may leave captured tensors as extra inputs), and with
    ``dynamic`` each one's first dimension must have come out free (an exporter specialises
    it silently when the model reads the batch size as a Python number). An exporter's own
    failure becomes UnsupportedOperationError naming it."""
    try:
        write(block, tmp, natives, opset, dynamic)
    except (UnsupportedOperationError, ImportError, Untraceable):
        raise
    except Exception as e:
        raise UnsupportedOperationError(
            f"Expected {type(block).__name__} to export to ONNX. Received: the framework's "
            f"exporter failed with {type(e).__name__}: {e}. Nothing was written; export from "
            "another backend (the same model code and weights), or with format='native'."
        ) from e
    import onnx

    model = onnx.load(str(tmp), load_external_data=False)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise UnsupportedOperationError(
            f"Expected a valid ONNX model of {type(block).__name__}. Received: a file the ONNX "
            f"checker refuses ({str(e).splitlines()[0][:300]}): the exporter emitted an "
            "operator ONNX lacks. Nothing was written; export from another backend."
        ) from e
    graph = model.graph
    names = [i.name for i in graph.input]
    if len(names) != len(natives):
        raise UnsupportedOperationError(
            f"Expected an ONNX graph with the {len(natives)} example inputs. Received: "
            f"{len(names)} inputs ({names[:6]}…): the exporter kept tensors the forward reads "
            f"(such as BatchNorm's running statistics) as inputs instead of constants. "
            "Nothing was written; export from another backend or with format='native'."
        )
    fixed = [
        i.name
        for i in graph.input
        if not i.type.tensor_type.shape.dim or not i.type.tensor_type.shape.dim[0].dim_param
    ]
    if dynamic and fixed:
        raise UnsupportedOperationError(
            f"Expected a free batch dimension in the ONNX inputs. Received: {fixed} fixed to "
            f"the example's batch size: {type(block).__name__}'s forward reads the batch size "
            "as a number (x.shape[0]) where the exporter needs it symbolic. Export with "
            "dynamic_batch=False (one file per batch size)."
        )


def write_whole(path: Path, write: Callable[[Path], Any]) -> Path:
    """``write(tmp)`` to a temporary file beside ``path``, then renamed to ``path``; the
    temporary file is removed if ``write`` fails. Also for adapters whose serving format is
    one file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
