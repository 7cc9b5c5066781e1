"""Autograd and native modules for the Paddle adapter.

Paddle records eagerly, so ``record()`` only re-enables recording (``paddle.enable_grad``)
and ``backward`` is the loss's own ``backward``: gradients accumulate in each parameter's
``.grad``, where Paddle's own optimisers find them too. ``native_module(block)`` is a
``paddle.nn.Layer`` whose parameters are the Block's Paddle parameters.
"""

from __future__ import annotations

import types
from typing import Any

import paddle

from multidev.contract import EagerAutograd
from multidev.nn.native import NativeBlockMixin, TrainModeMixin

from .jit import as_ast, positional, static_call, static_signature

__all__ = ["Autograd", "NativeBlock"]


@paddle.jit.marker.unified
class NativeBlock(TrainModeMixin, NativeBlockMixin, paddle.nn.Layer):
    """A ``paddle.nn.Layer`` view of a multidev Block: the same sub-block tree and names, the
    Block's own Paddle parameters (no copies); ``forward`` runs the Block on Paddle tensors.
    ``train()``/``eval()`` switch the Block's mode too (``Dropout``)."""

    _md_register = ("add_parameter", "add_sublayer")

    def __init__(self, block: Any, memo: dict[int, NativeBlock] | None = None) -> None:
        super().__init__(block, memo)
        names = static_signature(block.forward)
        if names is not None:  # to_static reads the parameter names of forward
            bound = types.MethodType(positional(NativeBlock.forward, ["self", *names]), self)
            object.__setattr__(self, "forward", bound)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "forward":  # paddle.jit.to_static(net.native) assigns the compiled forward
            value = as_ast(value)
        super().__setattr__(name, value)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if paddle.in_dynamic_mode():
            return NativeBlockMixin.forward(self, *args, **kwargs)
        return static_call(self._md_block, args, kwargs)


class Autograd(EagerAutograd):
    """The ``contract.Autograd`` primitives on Paddle."""

    grad_modes = (paddle.enable_grad, paddle.no_grad)
    native_block = NativeBlock
    recorded = staticmethod(lambda loss: not loss.stop_gradient)
