"""The PyTorch backend of multidev (selected with ``MULTIDEV_BACKEND=torch``)."""

from .backend import Backend

__all__ = ["Backend"]
