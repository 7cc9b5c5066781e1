"""The process group an engine module returns: rank, size, device and the engine's collectives."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from ..device import Device

__all__ = ["DistributedError", "Group", "Job", "LocalGroup", "exit_on_error"]


@dataclass(frozen=True)
class Job:
    """What ``multidev_<backend>.distributed.start(job)`` is given: this worker's rank among
    ``world_size``, its rank on this machine, the rank-0 address and port, the engine the
    user asked for (None: the framework's default), the rendezvous timeout in seconds, and
    every rank's ``host:port`` where the launcher listed them (``TF_CONFIG``, Paddle's
    launcher; None: the engine derives them from the rank-0 address)."""

    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    backend: str | None
    timeout: float
    endpoints: tuple[str, ...] | None = None

    def meeting_error(self, cause: BaseException) -> DistributedError:
        """The error for ranks that did not all meet at the rank-0 address in time."""
        return DistributedError(
            f"Expected all {self.world_size} ranks to meet at {self.master_addr}:"
            f"{self.master_port} within {self.timeout:g} s. Received: {cause}. Check that every "
            "worker was started with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE."
        )


class DistributedError(RuntimeError):
    """A process group that cannot start, ranks that disagree, or a rank that stopped."""


class Group:
    """What ``multidev_<backend>.distributed.start`` returns. Subclasses define
    ``all_reduce`` (sum) and ``barrier``, and ``average`` where the engine reduces a list of
    arrays in one call; ``broadcast`` defaults to a sum in which every rank
    but ``src`` contributes zeros (exact), for engines without a native broadcast."""

    engine = "none"
    #: whether the collectives may run inside a trace-once compiled function (``md.jit`` on
    #: TensorFlow): each traced collective then pairs with the same one on every rank
    traceable = False

    def __init__(self, rank: int, world_size: int, local_rank: int, device: Device) -> None:
        self.rank = rank
        self.world_size = world_size
        self.local_rank = local_rank
        self.device = device

    def all_reduce(self, x: Any) -> Any:
        """The elementwise sum of native ``x`` over every rank (written into ``x`` where the
        framework's tensors are mutable)."""
        raise NotImplementedError

    def broadcast(self, x: Any, src: int) -> Any:
        """Rank ``src``'s values of native ``x``."""
        return self.all_reduce(x if self.rank == src else x * 0)

    def average(self, xs: list[Any], bucket: int = 0) -> list[Any] | None:
        """The mean over every rank of each native array of ``xs``, by one engine call for
        the whole list: written into the arrays of ``xs`` themselves where the framework's
        arrays are mutable (and those returned), new arrays otherwise; None where the engine
        has no such call (the caller then all-reduces a flattened copy). ``bucket`` numbers
        the caller's lists (``DistributedDataParallel``'s bucket index), so that an engine
        that keys its collectives gives each list keys of its own."""
        return None

    def barrier(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release the engine's resources."""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(engine={self.engine!r}, rank={self.rank}, "
            f"world_size={self.world_size}, device={self.device})"
        )


class LocalGroup(Group):
    """A process started without a launcher: rank 0 of 1; collectives return their input."""

    engine = "local"

    def __init__(self) -> None:
        from .. import registry

        super().__init__(0, 1, 0, registry.current().default_device())

    def all_reduce(self, x: Any) -> Any:
        return x

    def broadcast(self, x: Any, src: int) -> Any:
        return x

    def barrier(self) -> None:
        return None


def exit_on_error(previous: Any) -> Any:
    """A ``sys.excepthook`` that reports the exception as ``previous`` does, then ends the
    process with exit code 1 at once, for engines whose clean shutdown waits for every other
    worker (which wait for this one): MXNet's kvstore, JAX's coordination service."""

    def hook(kind: Any, value: Any, tb: Any) -> None:
        previous(kind, value, tb)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(1)

    return hook
