"""Expected values for the conformance suite, computed with PyTorch's own API (not through
multidev). The entries not written here are torch's functions of the names the
suite uses (``multidev.testing.reference``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from multidev.testing import reference as ref

from . import cnn_reference, sequence_reference

__all__ = ["OPS"]

OPS = ref.native_table(
    ref.bfloat16_bits(torch.from_numpy, lambda t: t.view(torch.bfloat16)),
    ref.bfloat16_numpy(
        lambda t: t.detach().cpu().numpy(),
        lambda t: t.dtype is torch.bfloat16,
        lambda t: t.view(torch.int16),
    ),
    {
        "max_pool2d_indices": F.max_pool2d_with_indices,  # (x, k, s, p, d, ceil)
        "pad": F.pad,  # (x, pad, mode)
        # native interop: what torch's own tools see of net.native
        "native_parameters": lambda module: list(module.parameters()),
        # torch.conj only sets a lazy bit NumPy cannot read
        "conj": torch.conj_physical,
        "native_sgd_step": ref.eager_sgd_step(
            lambda module, lr: torch.optim.SGD(module.parameters(), lr=lr),
            torch.nn.Module.zero_grad,
            F.mse_loss,
        ),
    },
    *(torch, F),
    modules=[sequence_reference, cnn_reference],
    reduce_keywords=("dim", "keepdim"),
    grads=ref.tape_grads(torch.Tensor.requires_grad_),  # gradients by torch.autograd
    losses=(F.mse_loss, F.cross_entropy),
)
