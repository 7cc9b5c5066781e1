"""Autograd and native modules for the Paddle adapter.

Paddle records eagerly, so ``record()`` only re-enables recording (``paddle.enable_grad``)
and ``backward`` is the loss's own ``backward``: gradients accumulate in each parameter's
``.grad``, where Paddle's own optimisers find them too. ``native_module(block)`` is a
``paddle.nn.Layer`` whose parameters are the Block's Paddle parameters.
"""

from __future__ import annotations

from typing import Any

import paddle

from multidev.contract import EagerAutograd
from multidev.nn.native import NativeBlockMixin

__all__ = ["Autograd", "NativeBlock"]


class NativeBlock(NativeBlockMixin, paddle.nn.Layer):
    """A ``paddle.nn.Layer`` view of a multidev Block: the same sub-block tree and names, the
    Block's own Paddle parameters (no copies); ``forward`` runs the Block on Paddle tensors.
    ``train()``/``eval()`` switch the Block's mode too (``Dropout``)."""

    _md_register = ("add_parameter", "add_sublayer")

    def __init__(self, block: Any, memo: dict[int, NativeBlock] | None = None) -> None:
        super().__init__()
        self._md_mirror(block, memo)

    def train(self, mode: bool = True) -> NativeBlock:
        super().train(mode)
        self._md_block.train(mode)
        return self

    def eval(self) -> NativeBlock:
        super().eval()
        self._md_block.train(False)
        return self


class Autograd(EagerAutograd):
    """The ``contract.Autograd`` primitives on Paddle."""

    grad_modes = (paddle.enable_grad, paddle.no_grad)
    native_block = NativeBlock

    def backward(self, loss, gradient, recording, retain_graph: bool) -> bool:
        if loss.stop_gradient:
            return False
        loss.backward(grad_tensor=gradient, retain_graph=retain_graph)
        return True
