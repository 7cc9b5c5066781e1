"""The PyTorch backend of multidev (selected with ``MULTIDEV_BACKEND=torch``)."""

from multidev.contract import Framework, lazy_backend

__all__ = ["FRAMEWORK", "Backend"]


def _fork_unsafe() -> str | None:
    """PyTorch's own rule (its DataLoader forks on Linux): forking is safe until CUDA is
    initialised; its CPU thread pools are reset in the child by torch's fork handlers."""
    import sys

    torch = sys.modules["torch"]
    if torch.cuda.is_initialized():
        return "CUDA is initialised in this process (torch), and a forked child cannot use it"
    return None


FRAMEWORK = Framework("torch", ("torch",), extra="torch", fork_unsafe=_fork_unsafe)
__getattr__ = lazy_backend(__name__)
