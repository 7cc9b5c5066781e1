"""Autograd and native modules for the PyTorch adapter.

PyTorch records eagerly, so ``record()`` only re-enables recording (``torch.enable_grad``)
and ``backward`` is ``torch.autograd.backward``: gradients accumulate in each
``torch.nn.Parameter``'s ``.grad``, where torch's own optimisers find them too.
``native_module(block)`` is a ``torch.nn.Module`` whose parameters are the Block's
``torch.nn.Parameter`` objects.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch

from multidev.contract import EagerAutograd
from multidev.nn.native import NativeBlockMixin, TrainModeMixin

__all__ = ["Autograd", "NativeBlock"]


class NativeBlock(TrainModeMixin, NativeBlockMixin, torch.nn.Module):
    """A ``torch.nn.Module`` view of a multidev Block: the same sub-block tree and names, the
    Block's own ``torch.nn.Parameter`` objects (no copies); ``forward`` runs the Block on torch
    tensors. ``train()``/``eval()`` switch the Block's mode too (``Dropout``)."""

    _md_register = ("register_parameter", "add_module")

    def _get_name(self) -> str:
        return type(self._md_block).__name__

    def extra_repr(self) -> str:
        return self._md_block.extra_repr()


class _GradMode:
    """Recording on or off (``torch.set_grad_enabled``) until exit, then the mode from
    before. Calls, not torch's grad-mode context managers: multidev enters these explicitly
    (``record``, ``ExitStack``), which torch.compile traces only as calls (no graph break)."""

    __slots__ = ("_before", "_enabled")

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled

    def __enter__(self) -> _GradMode:
        self._before = torch.is_grad_enabled()
        torch.set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc: Any) -> None:
        torch.set_grad_enabled(self._before)


class Autograd(EagerAutograd):
    """The ``contract.Autograd`` primitives on PyTorch."""

    grad_modes = (partial(_GradMode, True), partial(_GradMode, False))
    native_block = NativeBlock
    recorded = staticmethod(lambda loss: loss.requires_grad)
