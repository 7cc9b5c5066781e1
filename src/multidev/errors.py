"""The exceptions multidev raises. Each names what was expected, what was received and what to do."""

from __future__ import annotations

__all__ = [
    "AutogradError",
    "BackendError",
    "CheckpointError",
    "DataLoaderError",
    "DeferredInitializationError",
    "DeviceError",
    "DeviceMismatchError",
    "JitWarning",
    "ShapeError",
    "StateDictError",
    "UnsupportedOperationError",
]


class BackendError(ValueError):
    """An unknown backend name, or two backends mixed in one operation."""


class DeviceError(ValueError):
    """A well-formed device that the active backend does not have."""


class DeviceMismatchError(ValueError):
    """An operation whose tensors live on different devices."""


class ShapeError(ValueError):
    """Operands whose shapes do not fit an operation: shapes that do not broadcast, a matrix
    product whose inner dimensions differ, tensors of different shapes to concatenate or
    stack, a value that does not fit where it is written. ``op`` names the operation and
    ``shapes`` holds the operands' shapes, in order; the message says what to change."""

    def __init__(self, message: str, op: str = "", shapes: tuple[tuple[int, ...], ...] = ()):
        super().__init__(message)
        self.op = op
        self.shapes = tuple(shapes)


class UnsupportedOperationError(NotImplementedError):
    """A function the active backend's framework has no kernel for (e.g. ``md.fft`` on MXNet)."""


class AutogradError(RuntimeError):
    """``backward()`` on a tensor that was not recorded, or on a backend without autograd."""


class DeferredInitializationError(RuntimeError):
    """A lazily-shaped parameter read before the first forward pass gave it a shape."""


class StateDictError(KeyError):
    """``load_state_dict`` found missing keys, unexpected keys or shape mismatches."""

    def __init__(self, message: str, missing=(), unexpected=(), mismatched=()):
        super().__init__(message)
        self.message = message
        self.missing_keys = list(missing)
        self.unexpected_keys = list(unexpected)
        self.mismatched_keys = list(mismatched)

    def __str__(self) -> str:
        return self.message


class CheckpointError(ValueError):
    """A checkpoint file that is truncated, corrupted, foreign, or holds what cannot be loaded."""

    def __init__(self, path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class DataLoaderError(RuntimeError):
    """A ``DataLoader`` with ``num_workers > 0`` cannot deliver a batch: a worker died, failed,
    produced a batch that does not pickle, or gave nothing within ``timeout`` seconds; or
    worker processes cannot be started safely (a script without the
    ``if __name__ == "__main__":`` guard). ``worker`` is the worker's index (None when no
    worker is concerned) and ``cause`` a short name of the cause."""

    def __init__(self, message: str, worker: int | None = None, cause: str = "") -> None:
        super().__init__(message)
        self.worker = worker
        self.cause = cause


class JitWarning(UserWarning):
    """``md.jit`` runs a function eagerly because the backend cannot compile it (the message
    says why); given once per jitted function."""
