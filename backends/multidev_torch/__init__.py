"""The PyTorch backend of multidev (selected with ``MULTIDEV_BACKEND=torch``)."""

from multidev.contract import Framework, lazy_backend

__all__ = ["FRAMEWORK", "Backend"]

FRAMEWORK = Framework("torch", ("torch",), extra="torch")
__getattr__ = lazy_backend(__name__)
