"""The NumPy reference backend of multidev: always installed, CPU only, no autograd."""

from multidev.contract import Framework, lazy_backend

__all__ = ["FRAMEWORK", "Backend"]

FRAMEWORK = Framework("numpy", ("numpy",))
__getattr__ = lazy_backend(__name__)
