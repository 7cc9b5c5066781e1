"""Gradients recorded as in PyTorch on MXNet: ``loss.backward()`` without ``record()``.

MXNet records by one switch per thread, not a tape: while it is on, every MXNet call is
recorded, and an in-place write into an array of a graph (a gluon ``Parameter``'s data among
them) is refused ("Assigning to NDArrays that are already in a computational graph"). A
switch left on from a forward to ``backward()`` would therefore also catch Gluon's own writes
between them (``Parameter.set_data``, ``gluon.Trainer.step``). So each multidev operation turns
it on for its own call only: the adapter's op tables and the methods that compute
(``recorded``, through ``wrapped_table`` and ``Extension.wrapped``) switch recording on around the framework call and back to what it was, while
gradients are enabled and no ``record()`` or pause of multidev's is open (``AUTO``). MXNet
then records an operation exactly where an input is part of a graph (a parameter, or a
result of recorded operations), as PyTorch does; code outside multidev runs unrecorded.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Callable, Iterator
from typing import Any

import mxnet as mx
from mxnet.base import _LIB, check_call

__all__ = ["AUTO", "auto_off", "recorded", "unrecorded"]

#: [whether multidev's operations switch recording on themselves]: False inside ``record()``
#: (recording already) and inside pauses (``md.no_grad``, optimiser updates)
AUTO = [True]
_SET = _LIB.MXAutogradSetIsRecording
_ON, _OFF = ctypes.c_int(1), ctypes.c_int(0)


def recorded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with MXNet's recording on for its call while ``AUTO`` holds (the state from
    before restored after it, also where it raises). NumPy's own functions, which MXNet runs on
    the host for the ops it lacks (``linalg.matrix_power``), run with recording paused
    instead: MXNet refuses them while recording, and they pass no gradient."""
    if (getattr(fn, "__module__", None) or "").split(".")[0] == "numpy":
        return unrecorded(fn)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not AUTO[0]:
            return fn(*args, **kwargs)
        before = ctypes.c_int()
        check_call(_SET(_ON, ctypes.byref(before)))
        if before.value:  # recording already (a native record(), or an outer op)
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        finally:
            _SET(_OFF, ctypes.byref(before))

    plain = getattr(fn, "plain", None)
    if plain is not None:  # the op without the adapter's checks (dispatch's fast path)
        call.plain = recorded(plain)  # type: ignore[attr-defined]
        call.plain_dtypes = fn.plain_dtypes  # type: ignore[attr-defined]
    return call


def unrecorded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with MXNet's recording paused for its call."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with mx.autograd.pause():
            return fn(*args, **kwargs)

    return call


@contextlib.contextmanager
def auto_off() -> Iterator[None]:
    """Inside: multidev's operations leave the switch alone (``record()`` has it on, a pause
    off)."""
    before = AUTO[0]
    AUTO[0] = False
    try:
        yield
    finally:
        AUTO[0] = before
