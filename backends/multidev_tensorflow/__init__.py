"""The TensorFlow backend of multidev (selected with ``MULTIDEV_BACKEND=tensorflow``)."""

from multidev.contract import Framework, lazy_backend

__all__ = ["FRAMEWORK", "Backend"]

FRAMEWORK = Framework("tensorflow", ("tensorflow", "tensorflow-cpu"), extra="tensorflow")
__getattr__ = lazy_backend(__name__)
