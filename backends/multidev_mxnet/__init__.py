"""The MXNet backend of multidev (selected with ``MULTIDEV_BACKEND=mxnet``)."""

from .backend import Backend

__all__ = ["Backend"]
