"""Whether a trace-once compiler (``tf.function``, ``paddle.jit.to_static``) is running the
Python of a function ``md.jit`` compiles, and how code that such a trace would bake in as a
constant stops it. A leaf module: ``random``, ``autograd`` and ``jit`` stand on it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Untraceable", "inside", "last_reason", "tracing", "untraceable"]

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
