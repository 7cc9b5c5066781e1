"""The JAX backend of multidev (selected with ``MULTIDEV_BACKEND=jax``)."""

from multidev.contract import Framework, lazy_backend

__all__ = ["FRAMEWORK", "Backend"]

FRAMEWORK = Framework("jax", ("jax", "jaxlib"), extra="jax")
__getattr__ = lazy_backend(__name__)
