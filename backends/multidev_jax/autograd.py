"""Variables, autograd and native modules for the JAX adapter.

JAX arrays are immutable and JAX has no tape: it differentiates functions (``jax.vjp``). So
this adapter keeps

- ``Variable``: a Parameter's storage, a mutable holder of the current ``jax.Array``; an
  in-place write (``p.data[0] = 1``, an optimiser step) rebinds ``value`` to a new array, so
  every user of the Parameter sees it. Ops read the current array (``values``).
- ``Recording`` (what ``record()`` returns): a tape of the ops run inside it on tensors that
  depend on a trainable Variable. Each such op runs through ``jax.vjp``, which gives its result
  and the function that maps the result's cotangent to its inputs'. ``backward`` walks the tape
  from the loss back to the Variables and adds their gradients to ``Variable.grad``.

Tensors on the tape are known by identity (``id``); the tape holds every array it names, so no
id is reused while it lives. An op whose result is one of its own inputs (a reshape to the
same shape) gets a fresh array, so that every tape entry has results distinct from its inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from multidev.contract import AutogradHooks
from multidev.nn.native import NativeBlockMixin

__all__ = [
    *("Autograd", "NativeBlock", "Recording", "Variable", "recorded", "values", "watch"),
    *("STATE", "watching"),
]

_Array = jax.Array
_FLOAT0 = jax.dtypes.float0


class Variable:
    """A trainable variable on JAX: ``value`` is the current array (rebound by in-place writes),
    ``grad`` the accumulated gradient (an array or None)."""

    __slots__ = ("__weakref__", "grad", "trainable", "value")

    def __init__(self, value: Any, trainable: bool = True) -> None:
        self.value = value
        self.grad: Any = None
        self.trainable = trainable

    # what the core reads of a native tensor
    shape = property(lambda self: self.value.shape)
    dtype = property(lambda self: self.value.dtype)
    ndim = property(lambda self: self.value.ndim)
    size = property(lambda self: self.value.size)
    device = property(lambda self: self.value.device)

    def __jax_array__(self) -> Any:
        return self.value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.value, dtype=dtype)

    def __repr__(self) -> str:
        return f"Variable({self.value!r})"


def _inexact(x: Any) -> bool:
    return jnp.issubdtype(x.dtype, jnp.inexact)


class _State:
    """The recording that records right now (None: none, or paused), and where ``md.jit``
    notes the Variables a traced step uses (``watching``)."""

    current: Recording | None = None
    watch: dict[int, tuple[Variable, Any, Any]] | None = None
    #: the recording that ended last: ``zero_grad`` ends the implicit recording of a forward,
    #: and a ``loss.backward()`` after it (PyTorch's order in d2l) still finds the loss there
    ended: Recording | None = None
    writes = False


STATE = _State()


class Recording:
    """The tape of one ``md.autograd.record()`` block: ``(vjp, input keys, result keys,
    result tree)`` per recorded op, the arrays it names (``nodes``) and the Variables read
    (``leaves``); ``done``: losses already differentiated without ``retain_graph``."""

    def __init__(self) -> None:
        self.entries: list[tuple[Any, list[int], list[int | None], Any, list[Any]]] = []
        self.nodes: dict[int, Any] = {}
        self.leaves: dict[int, Variable] = {}
        self.done: list[Any] = []
        self._before: list[Recording | None] = []

    def __enter__(self) -> Recording:
        self._before.append(STATE.current)
        STATE.current = self
        return self

    def __exit__(self, *exc: Any) -> None:
        STATE.current = self._before.pop() if self._before else None
        STATE.ended = self

    def key(self, a: Any) -> int | None:
        """The tape's key of a native operand that carries a gradient path, else None."""
        if type(a) is Variable:
            if a.trainable and _inexact(a.value):
                self.leaves[id(a)] = a
                return id(a)
            return None
        if id(a) in self.nodes and self.nodes[id(a)] is a:
            return id(a)
        return None

    def run(self, fn: Any, args: tuple) -> Any:
        """``fn(*args)``, recorded when one of its operands (also inside a list or tuple
        operand) has a gradient path."""
        tracked: list[tuple[int, int, int]] = []  # (arg position, item position or -1, key)
        plain = list(args)
        for i, a in enumerate(args):
            if type(a) in (list, tuple):
                items = list(a)
                for j, b in enumerate(items):
                    k = self.key(b) if isinstance(b, (_Array, Variable)) else None
                    if k is not None:
                        tracked.append((i, j, k))
                    if type(b) is Variable:
                        items[j] = b.value
                plain[i] = type(a)(items)
            elif isinstance(a, (_Array, Variable)):
                k = self.key(a)
                if k is not None:
                    tracked.append((i, -1, k))
                if type(a) is Variable:
                    plain[i] = a.value
        if not tracked:
            return fn(*plain)

        def pure(*vals: Any) -> Any:
            call = list(plain)
            for (i, j, _), v in zip(tracked, vals, strict=True):
                if j < 0:
                    call[i] = v
                else:
                    items = list(call[i])
                    items[j] = v
                    call[i] = type(plain[i])(items)
            return fn(*call)

        primals = [plain[i] if j < 0 else plain[i][j] for i, j, _ in tracked]
        out, vjp = jax.vjp(pure, *primals)
        leaves, tree = jax.tree_util.tree_flatten(out)
        inputs = {id(p) for p in primals}
        keys: list[int | None] = []
        changed = False
        for n, o in enumerate(leaves):
            if not isinstance(o, _Array) or not _inexact(o):
                keys.append(None)
                continue
            if id(o) in inputs or id(o) in self.nodes:  # a result that is an operand: a new array
                o = leaves[n] = jnp.array(o, copy=True)
                changed = True
            self.nodes[id(o)] = o
            keys.append(id(o))
        if all(k is None for k in keys):
            return out
        self.entries.append((vjp, [k for *_, k in tracked], keys, tree, leaves))
        return jax.tree_util.tree_unflatten(tree, leaves) if changed else out

    def backward(self, loss: Any, gradient: Any) -> bool:
        """Add d(sum(loss * gradient))/d(var) to each Variable's ``grad``; False where ``loss``
        is not on this tape."""
        if self.nodes.get(id(loss)) is not loss or any(d is loss for d in self.done):
            return False
        cts: dict[int, Any] = {id(loss): jnp.ones_like(loss) if gradient is None else gradient}
        for vjp, ins, outs, tree, leaves in reversed(self.entries):
            got = [None if k is None else cts.pop(k, None) for k in outs]
            if all(g is None for g in got):
                continue
            full = [
                g if g is not None else _zero_cotangent(o) for g, o in zip(got, leaves, strict=True)
            ]
            grads = vjp(jax.tree_util.tree_unflatten(tree, full))
            for k, g in zip(ins, grads, strict=True):
                if g is None or g.dtype == _FLOAT0:
                    continue
                cts[k] = g if k not in cts else cts[k] + g
        found = False
        for k, var in self.leaves.items():
            g = cts.get(k)
            if g is None:
                continue
            found = True
            if g.dtype != var.value.dtype:
                g = g.astype(var.value.dtype)
            var.grad = g if var.grad is None else var.grad + g
        return found


def _zero_cotangent(o: Any) -> Any:
    if isinstance(o, _Array) and _inexact(o):
        return jnp.zeros_like(o)
    return np.zeros(np.shape(o), dtype=_FLOAT0)


@contextmanager
def watching(seen: dict[int, tuple[Variable, Any, Any]], writes: bool = False) -> Iterator[None]:
    """Note in ``seen`` each Variable a write changes (with ``writes``; also each an op reads
    otherwise) until exit, with its array and gradient when first seen (``id(var)``:
    ``(var, value, grad)``)."""
    before = STATE.watch, STATE.writes
    STATE.watch, STATE.writes = seen, writes
    try:
        yield
    finally:
        STATE.watch, STATE.writes = before


def watch(args: tuple) -> None:
    """Note the Variables among ``args`` (also inside list and tuple operands), if watching."""
    seen = STATE.watch
    if seen is None:
        return
    for a in args:
        for b in a if type(a) in (list, tuple) else (a,):
            if type(b) is Variable and id(b) not in seen:
                seen[id(b)] = (b, b.value, b.grad)


def values(args: tuple) -> tuple:
    """``args`` with every Variable (also inside a list or tuple operand) as its current array."""
    out = list(args)
    for i, a in enumerate(args):
        if type(a) is Variable:
            out[i] = a.value
        elif type(a) in (list, tuple) and any(type(b) is Variable for b in a):
            out[i] = type(a)(b.value if type(b) is Variable else b for b in a)
    return tuple(out)


def recorded(fn: Any) -> Any:
    """The op ``fn`` on native operands: Variables read as their current arrays, and the call
    put on the tape of the recording that records now, if any."""

    def op(*args: Any, **kwargs: Any) -> Any:
        if kwargs:  # md.linalg's options (mode=, offset=): Python values
            return recorded(partial(fn, **kwargs))(*args)
        if STATE.watch is not None and not STATE.writes:
            watch(args)
        rec = STATE.current
        if rec is not None:
            return rec.run(fn, args)
        for a in args:
            if type(a) is Variable or (type(a) in (list, tuple) and a and type(a[0]) is Variable):
                return fn(*values(args))
        return fn(*args)

    op.__name__ = getattr(fn, "__name__", None) or "op"
    op.__wrapped__ = fn  # type: ignore[attr-defined]
    return op


class _Module:
    """JAX has no module class: ``net.native`` is a plain object holding the Block's Variables
    and child modules as attributes, called on JAX arrays."""

    def parameters(self) -> list[Variable]:
        """The Variables of this module and its children, each once, in registration order."""
        seen: dict[int, Variable] = {}
        for v in vars(self).values():
            if type(v) is Variable:
                seen.setdefault(id(v), v)
            elif isinstance(v, _Module):
                for p in v.parameters():
                    seen.setdefault(id(p), p)
        return list(seen.values())


class NativeBlock(NativeBlockMixin, _Module):
    """A plain-object view of a multidev Block for JAX code: its Variables and child modules as
    attributes under the Block's names (no copies); calling it runs the Block on JAX arrays."""

    _md_framework_class = "the JAX native module"

    __call__ = NativeBlockMixin.forward


class Autograd(AutogradHooks):
    """The ``contract.Autograd`` primitives on JAX (see the module docstring)."""

    record = Recording
    #: backward() without record() uses an implicit Recording (multidev.autograd), as in PyTorch
    implicit_record = True
    native_module = NativeBlock
    grad = staticmethod(lambda var: var.grad if type(var) is Variable else None)

    @staticmethod
    def set_grad(var: Any, value: Any) -> None:
        if type(var) is Variable:
            var.grad = value

    @contextmanager
    def no_grad(self, recordings: Sequence[Recording]) -> Iterator[None]:
        before = STATE.current
        STATE.current = None
        try:
            yield
        finally:
            STATE.current = before

    def backward(self, loss, gradient, recording: Recording | None, retain_graph: bool) -> bool:
        if not isinstance(loss, _Array):
            return False
        if recording is None or recording.nodes.get(id(loss)) is not loss:
            recording = STATE.ended
        if recording is None:
            return False
        before = STATE.current
        STATE.current = None
        try:
            found = recording.backward(loss, gradient)
        finally:
            STATE.current = before
        if found and not retain_graph:
            recording.done.append(loss)
        return found
