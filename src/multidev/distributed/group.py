"""The process group an engine module returns: rank, size, device and the engine's collectives."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from ..device import Device

__all__ = ["DistributedError", "ExitAtOnce", "Group", "Job", "LocalGroup", "Watchdog"]


@dataclass(frozen=True)
class Job:
    """What ``multidev_<backend>.distributed.start(job)`` is given: this worker's rank among
    ``world_size``, its rank on this machine, the rank-0 address and port, the engine the
    user asked for (None: the framework's default), the rendezvous timeout in seconds, and
    every rank's ``host:port`` where the launcher listed them (``TF_CONFIG``, Paddle's
    launcher; None: the engine derives them from the rank-0 address), and the number of
    processes on this machine where the launcher says (None where it does not)."""

    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    backend: str | None
    timeout: float
    endpoints: tuple[str, ...] | None = None
    local_world_size: int | None = None

    def default_engine(self, gpus: int) -> str:
        """NCCL when every process on this machine has a GPU of its own, else gloo. Every
        rank must reach the same answer: with 2 processes on 1 GPU, rank 0 choosing NCCL and
        rank 1 gloo hangs the start-up. Where the launcher gives no count of processes per
        machine, the world size stands in (so several machines then get gloo)."""
        per_machine = self.local_world_size or self.world_size
        return "nccl" if 0 < per_machine <= gpus else "gloo"

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

    def stopped(self, e: BaseException) -> DistributedError:
        """The error for a collective that failed because a worker stopped or was too slow."""
        return DistributedError(
            f"Expected all {self.world_size} workers to take part in the all-reduce. "
            f"Received: {type(e).__name__} on rank {self.rank} (a worker stopped or is too "
            "slow). Check the other workers' output."
        )

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


class ExitAtOnce:
    """For engines whose clean shutdown waits for every other worker (MXNet's kvstore, JAX's
    coordination service), which wait for this one: a process that fails ends at once with
    its own exit status, so that the launcher sees it first and names it. An uncaught
    exception is reported as before (``sys.excepthook``), then the process ends with code 1.
    ``sys.exit(status)`` with a failure status ends it with that status where the
    interpreter's shutdown begins (an ``atexit`` handler registered after the engine's, so
    it runs first); a status of 0 or None shuts down as usual, waiting for the others. Only
    calls of ``sys.exit`` are seen (Python has no hook for ``SystemExit``), and one that a
    script catches and survives still counts. ``remove`` restores everything."""

    def __init__(self) -> None:
        self.previous_hook = sys.excepthook
        self.previous_exit = sys.exit
        self.status: Any = None
        sys.excepthook = self.hook
        sys.exit = self.exit
        atexit.register(self.at_exit)

    def hook(self, kind: Any, value: Any, tb: Any) -> None:
        self.previous_hook(kind, value, tb)
        self._end(1)

    def exit(self, status: Any = None) -> NoReturn:
        self.status = status
        self.previous_exit(status)

    def at_exit(self) -> None:
        status = self.status
        if status is None or status == 0:
            return
        # a message (``sys.exit("...")``) was printed by the interpreter; its code is 1
        self._end(status if isinstance(status, int) else 1)

    @staticmethod
    def _end(code: int) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(code)

    def remove(self) -> None:
        atexit.unregister(self.at_exit)
        if sys.excepthook == self.hook:
            sys.excepthook = self.previous_hook
        if sys.exit == self.exit:
            sys.exit = self.previous_exit


class Watchdog:
    """Ends this worker (exit code 1, after a message naming its rank and the bound) when a
    wait for the other workers has lasted more than ``timeout`` seconds, for engines whose
    collectives have no timeout of their own (MXNet's kvstore) or a much longer one (gloo
    under JAX). A call that waits marks itself with ``blocking``; a daemon thread checks a
    few times a second how long the oldest wait has lasted. The waits are in the engines' C
    code, which releases the GIL."""

    def __init__(self, rank: int, timeout: float, engine: str) -> None:
        self.rank = rank
        self.timeout = timeout
        self.engine = engine
        #: what is being waited for -> (its name, since when)
        self._waits: dict[object, tuple[str, float]] = {}
        threading.Thread(target=self._check, name="multidev-watchdog", daemon=True).start()

    @contextmanager
    def blocking(self, what: str) -> Iterator[None]:
        """Count the time the calling thread spends inside the block against the timeout."""
        token = object()
        self._waits[token] = (what, time.monotonic())
        try:
            yield
        finally:
            del self._waits[token]

    def _check(self) -> None:
        while True:
            time.sleep(min(0.5, self.timeout / 4))
            now = time.monotonic()
            late = [w for w in list(self._waits.values()) if now - w[1] > self.timeout]
            if late:
                self._fail(late[0][0])

    def _fail(self, what: str) -> None:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        os.write(2, timeout_message(self.engine, what, self.timeout, self.rank).encode())
        os._exit(1)


def timeout_message(engine: str, what: str, timeout: float, rank: int) -> str:
    """The line a worker writes as it ends because a wait for the others passed the bound."""
    return (
        f"multidev.distributed.DistributedError: Expected every worker to take part in the "
        f"{engine}'s {what} within {timeout:g} s. Received: no result after {timeout:g} s on "
        f"rank {rank} (another worker stopped or hangs). Ending this worker. If a rank may "
        "wait longer for the others (writing a checkpoint), raise the bound: "
        "init_process_group(timeout=...) or MULTIDEV_DIST_TIMEOUT.\n"
    )


#: the least time workers wait for each other to start (seconds): the others may still be
#: importing their framework
STARTUP_BOUND = 30.0
#: the watcher of ``bounded_start``: after the bound, the message and SIGKILL for the worker,
#: if it is still this process's parent
_WATCHER = """
import os, signal, sys, time
pid, timeout, message = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
time.sleep(timeout)
if os.getppid() == pid:
    os.write(2, message.encode())
    os.kill(pid, signal.SIGKILL)
"""


@contextmanager
def bounded_start(engine: str, rank: int, timeout: float) -> Iterator[None]:
    """End this worker (SIGKILL, after a message naming the bound) if the engine's start-up
    (the workers meeting) lasts more than the collective timeout, and at least
    ``STARTUP_BOUND``. Paddle's, MXNet's and TensorFlow's start-up waits for every worker
    without a bound, TensorFlow's holding the GIL (no thread of this process can step in):
    a worker that hung before init_process_group would hang the others with it. A small
    process of its own watches instead."""
    bound = max(timeout, STARTUP_BOUND)
    message = timeout_message(engine, "start-up (init_process_group)", bound, rank)
    watcher = subprocess.Popen(
        [sys.executable, "-c", _WATCHER, str(os.getpid()), str(bound), message],
        stdin=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        watcher.kill()
        watcher.wait()
