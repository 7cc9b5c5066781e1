"""Autograd and native modules for the TensorFlow adapter.

``record()`` is a persistent ``tf.GradientTape`` that watches the trainable variables the
recorded operations read; the core keeps it so that ``loss.backward()`` after the ``with``
block finds it. ``backward`` asks the tape for the gradients of those variables and adds
them to a gradient slot this adapter keeps on each ``tf.Variable`` (TensorFlow has none), on
the variable's own device. ``native_module(block)`` is a ``tf.Module`` holding the Block's
``tf.Variable`` objects, so ``trainable_variables`` hands them to Keras optimisers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import tensorflow as tf

from multidev.contract import AutogradHooks
from multidev.nn.native import NativeBlockMixin

__all__ = ["Autograd", "NativeBlock", "Recording"]

#: the attribute of a tf.Variable that holds its accumulated gradient
_GRAD = "_multidev_grad"


class Recording(tf.GradientTape):
    """A persistent GradientTape and the losses already differentiated without
    ``retain_graph`` (not again, as in PyTorch)."""

    def __init__(self) -> None:
        super().__init__(persistent=True)
        self.done: list[Any] = []
        #: whether its with block ended
        self.closed = False

    def pause(self) -> contextlib.AbstractContextManager:
        """No recording until exit (``no_grad``, ``backward``). The tape records right now
        only inside its ``with`` block and outside every pause (a pause inside a pause leaves
        the tape as it is)."""
        return self._stopped() if self._recording else contextlib.nullcontext()

    @contextlib.contextmanager
    def _stopped(self) -> Iterator[None]:
        """``stop_recording``, except that a tape whose ``with`` block ended during the pause
        (an implicit recording ended by ``record()`` or ``zero_grad``) stays ended."""
        self._pop_tape()
        try:
            yield
        finally:
            if not self.closed:
                self._push_tape()

    def __exit__(self, *exc: Any) -> None:
        self.closed = True
        super().__exit__(*exc)


class NativeBlock(NativeBlockMixin, tf.Module):
    """A ``tf.Module`` view of a multidev Block: sub-blocks and variables as attributes under
    the Block's names (no copies); calling it runs the Block on TensorFlow tensors."""

    _md_framework_class = "tf.Module"

    def __init__(self, block: Any, memo: dict[int, NativeBlock] | None = None) -> None:
        tf.Module.__init__(self, name=type(block).__name__.lower())
        self._md_mirror(block, memo)

    __call__ = NativeBlockMixin.forward


class Autograd(AutogradHooks):
    """The ``contract.Autograd`` primitives on TensorFlow."""

    record = Recording
    #: backward() without record() uses an implicit Recording (multidev.autograd)
    implicit_record = True
    native_module = NativeBlock
    grad = staticmethod(lambda var: getattr(var, _GRAD, None))
    set_grad = staticmethod(lambda var, value: setattr(var, _GRAD, value))

    @contextlib.contextmanager
    def no_grad(self, recordings: Sequence[Recording]) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for rec in recordings:
                stack.enter_context(rec.pause())
            yield

    def backward(self, loss, gradient, recording: Recording | None, retain_graph: bool) -> bool:
        if recording is None or any(x is loss for x in recording.done):
            return False
        variables = recording.watched_variables()
        if not variables:
            return False
        with recording.pause(), tf.device(loss.device):
            grads = recording.gradient(loss, variables, output_gradients=gradient)
        found = False
        for var, g in zip(variables, grads, strict=True):
            if g is None:
                continue
            found = True
            if isinstance(g, tf.IndexedSlices):
                g = tf.convert_to_tensor(g)
            with tf.device(var.device):
                if g.device != var.device:
                    g = tf.identity(g)
                old = getattr(var, _GRAD, None)
                setattr(var, _GRAD, g if old is None else old + g)
        if found and not retain_graph:
            recording.done.append(loss)
        return found
