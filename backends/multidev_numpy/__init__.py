"""The NumPy reference backend of multidev: always installed, CPU only, no autograd."""

from multidev.contract import Framework, lazy_backend

__all__ = ["FRAMEWORK", "Backend"]

# NumPy starts no threads of its own that a fork would break (its BLAS pools reset in the child)
FRAMEWORK = Framework("numpy", ("numpy",), fork_unsafe=lambda: None)
__getattr__ = lazy_backend(__name__)
