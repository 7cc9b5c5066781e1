"""Autograd and native modules for the MXNet adapter.

``record()`` is ``mx.autograd.record()`` and ``backward`` MXNet's own: gradients land in
each gluon ``Parameter``'s gradient buffer, which ``make_variable`` creates with
``grad_req="add"`` so that they add up across backward calls until ``zero_grad``, as in
PyTorch. (A gluon ``Trainer`` over these parameters therefore needs the gradients zeroed
between steps too: ``opt.zero_grad()``, or ``zero_grad()`` on each parameter.) A buffer
counts as holding a gradient once a backward wrote it (``_fresh_grad``), until it is zeroed.
``native_module(block)`` is a gluon ``Block`` holding the Block's gluon Parameters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import mxnet as mx
from mxnet import gluon

from multidev.nn.native import NativeBlockMixin

__all__ = ["Autograd", "NativeBlock"]

#: set on a gluon Parameter while its gradient buffer holds a gradient
_HAS_GRAD = "_multidev_has_grad"
_RESERVED = frozenset(dir(gluon.Block))
_NOT_RECORDED = "not in a computational graph"


class NativeBlock(NativeBlockMixin, gluon.Block):
    """A gluon ``Block`` view of a multidev Block: sub-blocks and Parameters under the Block's
    names (no copies); ``collect_params()`` keys them by their multidev names (``"0.weight"``);
    calling it runs the Block on ``mxnet.numpy`` arrays."""

    _md_framework_class = "gluon.Block"
    _md_reserved = _RESERVED

    def __init__(self, block: Any, memo: dict[int, NativeBlock] | None = None) -> None:
        super().__init__()
        self._md_mirror(block, memo)

    def collect_params(self, select: str | None = None) -> gluon.ParameterDict:
        """The Block's gluon Parameters by multidev name, those matching ``select`` (a regular
        expression) if given."""
        pattern = re.compile(select) if select else None
        ret = gluon.ParameterDict()
        ret.update(
            {
                name: p.native
                for name, p in self._md_block.named_parameters()
                if pattern is None or pattern.match(name)
            }
        )
        return ret


def _data(var):
    return var.data(var.list_ctx()[0])


class Autograd:
    """The ``contract.Autograd`` primitives on MXNet."""

    def record(self):
        return mx.autograd.record()

    def no_grad(self, recordings: Sequence[Any]):
        return mx.autograd.pause()

    def backward(self, loss, gradient, recording, retain_graph: bool) -> bool:
        try:
            loss.backward(out_grad=gradient, retain_graph=retain_graph)
        except mx.base.MXNetError as e:
            if _NOT_RECORDED in str(e):
                return False
            raise
        return True

    def grad(self, var):
        if var.grad_req == "null":
            return None
        if _data(var)._fresh_grad:
            setattr(var, _HAS_GRAD, True)
        elif not getattr(var, _HAS_GRAD, False):
            return None
        return var.grad(var.list_ctx()[0])

    def set_grad(self, var, value) -> None:
        if var.grad_req == "null":
            if value is None:
                return
            raise TypeError(
                "Expected a floating-point parameter to hold a gradient. Received: a gluon "
                "Parameter with grad_req='null' (integer or bool values)."
            )
        if value is None:
            for g in var.list_grad():
                if g.size:
                    legacy = g.as_nd_ndarray()  # same memory; the legacy op is the fast fill
                    mx.nd.zeros_like(legacy, out=legacy)
            _data(var)._fresh_grad = False
            setattr(var, _HAS_GRAD, False)
            return
        var.grad(var.list_ctx()[0])[...] = value
        setattr(var, _HAS_GRAD, True)

    def native_module(self, block: Any) -> NativeBlock:
        return NativeBlock(block)
