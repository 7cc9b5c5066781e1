"""The TensorFlow backend of multidev (``MULTIDEV_BACKEND=tensorflow``).

Importing this package imports TensorFlow; multidev's registry does so only when the
backend is selected.
"""

from .backend import Backend

__all__ = ["Backend"]
