"""The MXNet backend of multidev (selected with ``MULTIDEV_BACKEND=mxnet``)."""

from multidev.contract import Framework, lazy_backend

__all__ = ["FRAMEWORK", "Backend"]

FRAMEWORK = Framework("mxnet", ("mxnet", "mxnet-cu112", "mxnet-cu117"), extra="mxnet")
__getattr__ = lazy_backend(__name__)
