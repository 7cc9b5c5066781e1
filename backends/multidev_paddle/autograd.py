"""Autograd and native modules for the Paddle adapter.

Paddle records eagerly, so ``record()`` only re-enables recording (``paddle.enable_grad``)
and ``backward`` is the loss's own ``backward``: gradients accumulate in each parameter's
``.grad``, where Paddle's own optimisers find them too. ``native_module(block)`` is a
``paddle.nn.Layer`` whose parameters are the Block's Paddle parameters.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

import paddle

from multidev.nn.native import NativeBlockMixin

from .jit import as_ast, positional, static_call, static_signature

__all__ = ["Autograd", "NativeBlock"]


@paddle.jit.marker.unified
class NativeBlock(NativeBlockMixin, paddle.nn.Layer):
    """A ``paddle.nn.Layer`` view of a multidev Block: the same sub-block tree and names, the
    Block's own Paddle parameters (no copies); ``forward`` runs the Block on Paddle tensors.
    ``train()``/``eval()`` switch the Block's mode too (``Dropout``)."""

    def __init__(self, block: Any, memo: dict[int, NativeBlock] | None = None) -> None:
        super().__init__()
        self._md_mirror(block, memo)
        names = static_signature(block.forward)
        if names is not None:  # to_static reads the parameter names of forward
            bound = types.MethodType(positional(NativeBlock.forward, ["self", *names]), self)
            object.__setattr__(self, "forward", bound)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "forward":  # paddle.jit.to_static(net.native) assigns the compiled forward
            value = as_ast(value)
        super().__setattr__(name, value)

    def _md_add_parameter(self, name: str, var: Any) -> None:
        self.add_parameter(name, var)

    def _md_add_child(self, name: str, sub: Any) -> None:
        self.add_sublayer(name, sub)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if paddle.in_dynamic_mode():
            return self._md_call(*args, **kwargs)
        return static_call(self._md_block, args, kwargs)

    def train(self, mode: bool = True) -> NativeBlock:
        super().train(mode)
        self._md_block.train(mode)
        return self

    def eval(self) -> NativeBlock:
        super().eval()
        self._md_block.train(False)
        return self


class Autograd:
    """The ``contract.Autograd`` primitives on Paddle."""

    def record(self):
        return paddle.enable_grad()

    def no_grad(self, recordings: Sequence[Any]):
        return paddle.no_grad()

    def backward(self, loss, gradient, recording, retain_graph: bool) -> bool:
        if loss.stop_gradient:
            return False
        loss.backward(grad_tensor=gradient, retain_graph=retain_graph)
        return True

    def grad(self, var):
        return var.grad

    def set_grad(self, var, value) -> None:
        var.grad = value

    def native_module(self, block: Any) -> NativeBlock:
        return NativeBlock(block)
