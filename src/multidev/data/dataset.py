"""Datasets: ``Dataset``, ``TensorDataset``, ``Subset`` and ``random_split`` (PyTorch's names).

A dataset is anything with ``__getitem__(i)`` and ``__len__()``. ``TensorDataset`` keeps a
host (NumPy) copy of its tensors, so the ``DataLoader`` builds a whole batch with one
indexing operation on the host and places it on the device once, and worker processes never
touch a framework.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import random as _random
from ..tensors import Tensor

__all__ = ["Dataset", "Subset", "TensorDataset", "random_split"]


class Dataset:
    """Base class of map-style datasets: subclasses define ``__getitem__(index)`` and
    ``__len__()``. Samples may be Tensors, NumPy arrays, numbers, or tuples/lists/dicts of
    them; the default collation stacks them into batches."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index)")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__()")


def _host_array(x: Any) -> np.ndarray:
    if isinstance(x, Tensor):
        return np.asarray(x.numpy())
    return np.asarray(x)


class TensorDataset(Dataset):
    """Rows of tensors that share their first dimension: ``TensorDataset(X, y)[i]`` is
    ``(X[i], y[i])``. Accepts Tensors, NumPy arrays or nested lists; raises ``ValueError`` if
    the first dimensions differ."""

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueError("Expected at least one tensor. Received: none")
        arrays = [_host_array(t) for t in tensors]
        sizes = [a.shape[0] if a.ndim else None for a in arrays]
        if None in sizes or len(set(sizes)) != 1:
            raise ValueError(
                "Expected tensors with the same first dimension (one row per sample). "
                f"Received: shapes {[a.shape for a in arrays]}"
            )
        self._arrays = arrays

    def __len__(self) -> int:
        return int(self._arrays[0].shape[0])

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        from ..creation import asarray

        return tuple(asarray(a[index]) for a in self._arrays)

    def _host_batch(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        """The rows ``indices`` of every tensor, as NumPy arrays (the loader's fast path)."""
        return tuple(a[indices] for a in self._arrays)


class Subset(Dataset):
    """The samples ``indices`` of ``dataset``, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = np.asarray(indices, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[int(self.indices[index])]

    @property
    def _host_batch(self) -> Any:
        """The loader's fast path, where the underlying dataset has one (else None)."""
        inner = getattr(self.dataset, "_host_batch", None)
        if inner is None:
            return None
        return lambda indices: inner(self.indices[indices])


def _lengths(n: int, lengths: Sequence[float]) -> list[int]:
    lengths = list(lengths)
    if lengths and all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1):
        out = [math.floor(n * f) for f in lengths]
        for i in range(n - sum(out)):
            out[i % len(out)] += 1
        return out
    if not lengths or any(not isinstance(x, (int, np.integer)) or x < 0 for x in lengths):
        raise ValueError(
            "Expected lengths: non-negative ints summing to the dataset's length, or fractions "
            f"summing to 1. Received: {lengths}"
        )
    if sum(lengths) != n:
        raise ValueError(
            f"Expected lengths summing to the dataset's length {n}. Received: {lengths} "
            f"(sum {sum(lengths)})"
        )
    return [int(x) for x in lengths]


def random_split(
    dataset: Any, lengths: Sequence[float], generator: int | np.random.Generator | None = None
) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random ``Subset``s of the given lengths (ints, or
    fractions summing to 1, the remainder spread one by one from the first). ``generator``: a
    seed or NumPy generator; default multidev's generator (``md.manual_seed``). The split is
    the same on every backend."""
    sizes = _lengths(len(dataset), lengths)
    seed = generator if isinstance(generator, (int, np.integer)) else _random.draw_seed(generator)
    perm = _random.host_permutation(len(dataset), int(seed))
    out, start = [], 0
    for size in sizes:
        out.append(Subset(dataset, perm[start : start + size]))
        start += size
    return out
