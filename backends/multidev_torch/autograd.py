"""Autograd and native modules for the PyTorch adapter.

PyTorch records eagerly, so ``record()`` only re-enables recording (``torch.enable_grad``)
and ``backward`` is ``torch.autograd.backward``: gradients accumulate in each
``torch.nn.Parameter``'s ``.grad``, where torch's own optimisers find them too.
``native_module(block)`` is a ``torch.nn.Module`` whose parameters are the Block's
``torch.nn.Parameter`` objects.
"""

from __future__ import annotations

from typing import Any

import torch

from multidev.contract import EagerAutograd
from multidev.nn.native import NativeBlockMixin

__all__ = ["Autograd", "NativeBlock"]


class NativeBlock(NativeBlockMixin, torch.nn.Module):
    """A ``torch.nn.Module`` view of a multidev Block: the same sub-block tree and names, the
    Block's own ``torch.nn.Parameter`` objects (no copies); ``forward`` runs the Block on torch
    tensors. ``train()``/``eval()`` switch the Block's mode too (``Dropout``)."""

    _md_register = ("register_parameter", "add_module")

    def __init__(self, block: Any, memo: dict[int, NativeBlock] | None = None) -> None:
        super().__init__()
        self._md_mirror(block, memo)

    def train(self, mode: bool = True) -> NativeBlock:
        super().train(mode)
        self._md_block.training = mode
        return self

    def _get_name(self) -> str:
        return type(self._md_block).__name__

    def extra_repr(self) -> str:
        return self._md_block.extra_repr()


class Autograd(EagerAutograd):
    """The ``contract.Autograd`` primitives on PyTorch."""

    grad_modes = (torch.enable_grad, torch.no_grad)
    native_block = NativeBlock

    def backward(self, loss, gradient, recording, retain_graph: bool) -> bool:
        if not loss.requires_grad:
            return False
        torch.autograd.backward(loss, gradient, retain_graph=retain_graph)
        return True
