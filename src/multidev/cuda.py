"""PyTorch's ``torch.cuda`` queries, answered for the active backend's GPUs."""

from __future__ import annotations

from .device import num_gpus

__all__ = ["device_count", "is_available"]


def device_count() -> int:
    """Number of GPUs the active backend can use (``md.num_gpus()``)."""
    return num_gpus()


def is_available() -> bool:
    """True when the active backend can use at least one GPU."""
    return num_gpus() > 0
