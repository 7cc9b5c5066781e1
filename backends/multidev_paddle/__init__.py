"""The PaddlePaddle backend of multidev (selected with ``MULTIDEV_BACKEND=paddle``)."""

from multidev.contract import Framework, lazy_backend

__all__ = ["FRAMEWORK", "Backend"]

FRAMEWORK = Framework("paddle", ("paddlepaddle", "paddlepaddle-gpu"), extra="paddle")
__getattr__ = lazy_backend(__name__)
