"""The PaddlePaddle backend of multidev (selected with ``MULTIDEV_BACKEND=paddle``)."""

from .backend import Backend

__all__ = ["Backend"]
