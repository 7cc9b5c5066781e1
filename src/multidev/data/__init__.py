"""Data loading: ``Dataset``, ``TensorDataset``, ``Subset``, ``random_split`` and ``DataLoader``,
with PyTorch's names and arguments. Batches are Tensors on the default device (or
``device=``); a seeded shuffle gives the same batches on every backend; the loader's position
is in its ``state_dict()`` so that a run resumes mid-epoch."""

from ..distributed.sampler import DistributedSampler
from . import datasets
from .dataset import Dataset, Subset, TensorDataset, random_split
from .loader import DataLoader, default_collate

__all__ = [
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "Subset",
    "TensorDataset",
    "datasets",
    "default_collate",
    "random_split",
]
