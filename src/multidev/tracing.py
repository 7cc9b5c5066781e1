"""Whether a trace-once compiler (``tf.function``, ``paddle.jit.to_static``) is running the
Python of a function ``md.jit`` compiles, and how code that such a trace would bake in as a
constant stops it. A leaf module: ``random``, ``autograd`` and ``jit`` stand on it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["TracedScalar", "Untraceable", "inside", "last_reason", "tracing", "untraceable"]

_local = threading.local()


class Untraceable(Exception):
    """Raised inside a trace by what a tracing compiler would bake in as a constant."""


def tracing() -> bool:
    """Whether a trace-once compiler is running a jitted function's Python right now."""
    return getattr(_local, "depth", 0) > 0


@contextmanager
def inside() -> Iterator[None]:
    """Mark the code run inside as traced once (``untraceable`` raises there)."""
    _local.depth = getattr(_local, "depth", 0) + 1
    _local.reason = None
    try:
        yield
    finally:
        _local.depth -= 1


def last_reason() -> str | None:
    """The reason given by the last ``untraceable`` that stopped a trace in this thread
    (compilers may rewrap the exception and its message)."""
    return getattr(_local, "reason", None)


def untraceable(reason: str) -> None:
    """Stop a trace-once compilation (the function then runs eagerly, with a JitWarning
    giving ``reason``); does nothing outside such a trace."""
    if getattr(_local, "depth", 0) > 0:
        _local.reason = reason
        raise Untraceable(reason)


class TracedScalar(float):
    """A Python number that a trace-once compile takes as an input (an optimiser's learning
    rate): its float value is the one of the call that traced, ``native`` the traced 0-d
    float64 tensor of the backend ``bk`` on ``dev``. Arithmetic with Python numbers keeps it
    an input (``-lr``, ``lr / (1 - beta1**t)``); the optimisers' update multiplies by
    ``native`` (``optim.optimizer._Updates``), so a graph traced once follows each call's
    value."""

    native: Any
    bk: Any
    dev: Any

    def __new__(cls, value: float, native: Any, bk: Any, dev: Any) -> TracedScalar:
        out = super().__new__(cls, value)
        out.native, out.bk, out.dev = native, bk, dev
        return out

    def _native_of(self, other: float) -> Any:
        if isinstance(other, TracedScalar):
            return other.native
        from .dtypes import float64  # (a leaf module: dtypes is imported when used)

        return self.bk.full((), float(other), float64, self.dev)

    def __neg__(self) -> TracedScalar:
        return TracedScalar(-float(self), self.bk.ops.negative(self.native), self.bk, self.dev)

    def __pos__(self) -> TracedScalar:
        return self


def _traced_binary(name: str, op: str, reflected: bool) -> Any:
    plain = getattr(float, f"__{'r' if reflected else ''}{name}__")

    def method(self: TracedScalar, other: Any) -> Any:
        if not isinstance(other, (int, float)) or isinstance(other, bool):
            return NotImplemented
        a, b = self.native, self._native_of(other)
        native = getattr(self.bk.ops, op)(*((b, a) if reflected else (a, b)))
        return TracedScalar(plain(float(self), float(other)), native, self.bk, self.dev)

    return method


for _name, _op in (
    ("add", "add"),
    ("sub", "subtract"),
    ("mul", "multiply"),
    ("truediv", "divide"),
    ("pow", "pow"),
):
    setattr(TracedScalar, f"__{_name}__", _traced_binary(_name, _op, False))
    setattr(TracedScalar, f"__r{_name}__", _traced_binary(_name, _op, True))
