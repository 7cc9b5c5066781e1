"""``Embedding``: a lookup table of learnable vectors, as ``torch.nn.Embedding``."""

from __future__ import annotations

from typing import Any

from ..creation import asarray
from ..random import host_normal
from ..tensors import Tensor
from . import sequence_functional as SF
from .module import Block
from .parameter import Parameter

__all__ = ["Embedding"]


class Embedding(Block):
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by integer indices.

    Initialised as in PyTorch: ``weight`` from N(0, 1) (multidev's host generator), the row at
    ``padding_idx`` zero and without gradient. ``max_norm`` and ``sparse`` are not supported.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Any = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for name, v in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Expected a positive int for {name}. Received: {v!r}")
        if max_norm is not None or sparse or scale_grad_by_freq:
            raise NotImplementedError(
                "Expected max_norm=None, sparse=False and scale_grad_by_freq=False: multidev's "
                "Embedding has dense gradients only. Received: "
                f"max_norm={max_norm}, sparse={sparse}, scale_grad_by_freq={scale_grad_by_freq}"
            )
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(
                    f"Expected padding_idx in [-{num_embeddings}, {num_embeddings}). "
                    f"Received: {padding_idx}"
                )
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            w = host_normal((num_embeddings, embedding_dim))
            if padding_idx is not None:
                w[padding_idx] = 0.0
            self.weight = Parameter(asarray(w, dtype=dtype, device=device), not _freeze)
        else:
            self.weight = Parameter(asarray(_weight, dtype=dtype, device=device), not _freeze)

    def forward(self, input: Any) -> Tensor:
        return SF.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
