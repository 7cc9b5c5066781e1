"""Autograd and native modules for the MXNet adapter.

``record()`` is ``mx.autograd.record()`` (without it, each multidev op records itself:
``recording.py``) and ``backward`` MXNet's own: gradients land in
each gluon ``Parameter``'s gradient buffer, which ``make_variable`` creates with
``grad_req="add"`` so that they add up across backward calls until ``zero_grad``, as in
PyTorch. (A gluon ``Trainer`` over these parameters therefore needs the gradients zeroed
between steps too: ``opt.zero_grad()``, or ``zero_grad()`` on each parameter.) A buffer
counts as holding a gradient once a backward wrote it (``_fresh_grad``), until it is zeroed.
``native_module(block)`` is ``NativeBlock``, a gluon ``HybridBlock`` (see there).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

import mxnet as mx
from mxnet import gluon

from multidev.contract import AutogradHooks
from multidev.nn.native import NativeBlockMixin, adapter_of, call
from multidev.tracing import untraceable

from .jit import STEP
from .recording import auto_off
from .updates import invoke, op_handle

__all__ = ["Autograd", "NativeBlock"]

#: set on a gluon Parameter while its gradient buffer holds a gradient
_HAS_GRAD = "_multidev_has_grad"
#: set on a gluon Parameter: (its gradient list, the non-empty buffers in it)
_BUFFERS = "_multidev_grad_buffers"
_RESET = op_handle("reset_arrays")


class NativeBlock(NativeBlockMixin, gluon.HybridBlock):
    """A gluon ``HybridBlock`` view of a multidev Block: sub-blocks and Parameters under the
    Block's names (no copies); ``collect_params()`` keys them by their multidev names
    (``"0.weight"``); calling it runs the Block on ``mxnet.numpy`` arrays (legacy
    ``mx.nd.NDArray`` inputs are viewed as such arrays, zero-copy). ``hybridize()`` compiles
    the Block's forward into a ``CachedOp``; ``export(path)`` after a hybridized call writes
    ``path-symbol.json`` and ``path-0000.params``."""

    _md_framework_class = "gluon.HybridBlock"
    #: (shape, dtype, context) of the inputs of the last call of the hybridized Block
    _md_last_inputs: list | None = None

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Compile the Block's forward (``block.hybridize(active)``); Gluon's keyword
        options (``static_alloc``, ``static_shape``) are what multidev uses anyway."""
        self._md_block.hybridize(active)

    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True) -> None:
        """Write ``path-symbol.json`` and ``path-%04d.params`` (epoch) as Gluon does, for
        the input shapes of the last call. Raises RuntimeError before a hybridized call."""
        if self._md_last_inputs is None or "forward" not in self._md_block.__dict__:
            raise RuntimeError(
                "Expected a hybridized block that ran once before export. Received: none yet. "
                "Call net.hybridize() and run a forward pass (net(x)) first."
            )
        inputs = tuple(
            mx.np.zeros(shape, dtype=dtype, ctx=ctx) for shape, dtype, ctx in self._md_last_inputs
        )
        adapter_of(self._md_block).export(self._md_block, path, inputs, epoch)

    def collect_params(self, select: str | None = None) -> gluon.ParameterDict:
        """The Block's gluon Parameters by multidev name, those matching ``select`` (a regular
        expression) if given."""
        ret = gluon.ParameterDict()
        named = self._md_block.named_parameters()
        ret.update({n: p.native for n, p in named if not select or re.match(select, n)})
        return ret

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        args = tuple(_np_array(x) for x in args)
        kwargs = {k: _np_array(x) for k, x in kwargs.items()}
        if "forward" in self._md_block.__dict__ and not kwargs:
            self.__dict__["_md_last_inputs"] = [  # past gluon's __setattr__
                (x.shape, x.dtype, x.ctx) for x in args if isinstance(x, mx.np.ndarray)
            ]
        return call(self._md_block, args, kwargs)


def _np_array(x: Any) -> Any:
    """A legacy ``mx.nd.NDArray`` (Gluon 1.x's input) as the ``mx.np.ndarray`` sharing its
    memory; anything else as it is."""
    if isinstance(x, mx.nd.NDArray) and not isinstance(x, mx.np.ndarray):
        return x.as_np_ndarray()
    return x


class Autograd(AutogradHooks):
    """The ``contract.Autograd`` primitives on MXNet."""

    @staticmethod
    @contextlib.contextmanager
    def record() -> Iterator[None]:
        """MXNet's ``autograd.record()``; multidev's ops leave its switch on inside."""
        with auto_off(), mx.autograd.record():
            yield

    #: None: no recording object to open; each op records itself (recording.py)
    implicit_record = None

    @staticmethod
    @contextlib.contextmanager
    def no_grad(recordings: Sequence[Any]) -> Iterator[None]:
        with auto_off(), mx.autograd.pause():
            yield

    native_module = NativeBlock

    def backward(self, loss, gradient, recording, retain_graph: bool) -> bool:
        untraceable(STEP)  # in a trace of a training step md.jit compiles its forwards only
        try:
            loss.backward(out_grad=gradient, retain_graph=retain_graph)
        except mx.base.MXNetError as e:
            if "not in a computational graph" in str(e):
                return False
            raise
        return True

    def grad(self, var):
        if var._data[0]._fresh_grad:  # the first context's array: list_ctx()[0]
            setattr(var, _HAS_GRAD, True)
        elif not getattr(var, _HAS_GRAD, False):
            return None  # so where grad_req is 'null': no backward writes there, no set_grad
        # the buffer outside the graph, as PyTorch's p.grad: MXNet counts it in (as an output
        # of backward), so computing with it while recording would record, and writing
        # (clipping: g[:] *= c) be refused
        return var._grad[0].detach()

    def set_grad(self, var, value) -> None:
        if value is None:
            self.clear_grads([var])  # nothing to clear where grad_req is 'null'
            return
        if var.grad_req == "null":
            raise TypeError(
                "Expected a floating-point parameter to hold a gradient. Received: a gluon "
                "Parameter with grad_req='null' (integer or bool values)."
            )
        with mx.autograd.pause():  # a gradient write is never part of a recording
            var.grad(var.list_ctx()[0])[...] = value
        setattr(var, _HAS_GRAD, True)

    def clear_grads(self, variables: Sequence[Any]) -> None:
        """Drop the variables' gradients: their buffers are zeroed (the next backward adds
        into them) by one ``reset_arrays`` operation for them all."""
        buffers: list[Any] = []
        for var in variables:
            if var.grad_req == "null":
                continue
            # found once per gradient list (gluon makes a new list when it reallocates them)
            grads, cached = var._grad, getattr(var, _BUFFERS, None)
            if cached is None or cached[0] is not grads:
                cached = (grads, [g for g in grads if g.size])
                setattr(var, _BUFFERS, cached)
            buffers.extend(cached[1])
            var._data[0]._fresh_grad = False
            setattr(var, _HAS_GRAD, False)
        if buffers:
            with mx.autograd.pause():  # recorded (zero_grad inside record()), it crashes MXNet
                invoke(_RESET, buffers, ["num_arrays"], [str(len(buffers))], None)
