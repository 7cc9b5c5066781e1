"""The JAX backend of multidev (selected with ``MULTIDEV_BACKEND=jax``)."""

from multidev.contract import Framework, lazy_backend

__all__ = ["FRAMEWORK", "Backend"]


def _fork_unsafe() -> str | None:
    """Forking is safe until JAX starts its runtime (its thread pools do not survive fork);
    the adapter lists devices without starting it."""
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        return "JAX's runtime has started in this process, and its threads do not survive fork"
    return None


FRAMEWORK = Framework("jax", ("jax", "jaxlib"), extra="jax", fork_unsafe=_fork_unsafe)
__getattr__ = lazy_backend(__name__)
