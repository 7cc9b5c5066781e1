"""What differs on MXNet for ``md.distributed`` and ``md.parallel``: the ``dist_sync``
kvstore (its scheduler and server processes started by ``multidev launch`` from the
``DMLC_*`` variables), and the ``device`` kvstore for sums across one process's contexts.

The kvstore (ps-lite) waits forever: for a push that a stopped or hung worker never sends,
and, when the kvstore is freed at exit, at a barrier of every worker, so that a worker whose
script raised never exited while the others waited for it. Here a worker whose script raises
ends at once (exit code 1, after its traceback), a collective that has not completed within
the group's timeout ends the worker with exit code 1 and a message (``_Watchdog``), and the
kvstore is freed before the interpreter shuts down, under the same watchdog."""

from __future__ import annotations

import atexit
import collections
import ctypes
import os
import sys
import threading
import weakref
from typing import Any

import mxnet as mx

from multidev.device import Device
from multidev.distributed.group import DistributedError, ExitAtOnce, Group, Job, Watchdog
from multidev.distributed.launch import Proc

from .recording import recorded
from .updates import invoke, op_handle

__all__ = [
    "MXNetGroup",
    "device_allreduce",
    "helper_processes",
    "recorded_all_reduce",
    "start",
]


class _Keys:
    """One kvstore key per (shape, dtype, slot), initialised the first time it is used (a
    collective on ``dist_sync``: every rank uses the same shapes in the same order). Arrays
    pushed together in one call take slots 0, 1, … so that no two share a key, and a DDP
    bucket's slots are (bucket, 0), (bucket, 1), … so that two buckets share none either. Keys are
    integers from ``FIRST`` on: a program's own integer keys below it (a gluon ``Trainer``
    numbers its parameters from 0) share the kvstore with them.

    The server sums the pushes of a key in the order they come, so a rank's push on a key
    must not overtake the other ranks' previous pull through it. Pushing the array that the
    previous pull wrote (a DDP bucket's gradient buffers, step after step) is ordered by
    MXNet's engine: the push reads what the pull writes. A different array on a key in use
    (two same-shaped buckets of one step, or two all-reduces of same-shaped arrays) first
    waits until the previous pull has arrived, else ranks would swap sums."""

    #: the first key multidev uses
    FIRST = 1 << 20

    def __init__(self, kv: Any) -> None:
        self.kv = kv
        self.keys: dict[tuple, int] = {}
        self.pulling: dict[int, Any] = {}

    def __call__(self, x: Any, slot: Any = 0) -> int:
        """The key for pushing ``x`` and pulling into it (``x`` is the pull's target)."""
        sig = (tuple(x.shape), str(x.dtype), slot)
        key = self.keys.get(sig)
        if key is None:
            key = self.keys[sig] = self.FIRST + len(self.keys)
            self.kv.init(key, mx.nd.zeros(x.shape, ctx=x.ctx, dtype=x.dtype))
        else:
            last = self.pulling[key]
            if last is not x:
                last.wait_to_read()
        self.pulling[key] = x
        return key

    def again(self, keys: list[int], xs: list[Any]) -> None:
        """What ``__call__`` checks, for keys already given to these arrays."""
        pulling = self.pulling
        for key, x in zip(keys, xs, strict=True):
            last = pulling[key]
            if last is not x:
                last.wait_to_read()
                pulling[key] = x


class _PushPull:
    """One ``pushpull`` of a list of arrays (a DDP bucket's gradient buffers, step after
    step): the keys and the C arrays of keys and handles made once. It refers to the arrays
    weakly and applies only while they are still the same arrays."""

    __slots__ = ("ckeys", "handles", "keys", "refs")

    def __init__(self, xs: list[Any], keys: list[int]) -> None:
        self.refs = [weakref.ref(x) for x in xs]
        self.keys = keys
        self.ckeys = (ctypes.c_int * len(keys))(*keys)
        self.handles = (ctypes.c_void_p * len(xs))(*[x.handle.value for x in xs])

    def fits(self, xs: list[Any]) -> bool:
        return all(r() is x for r, x in zip(self.refs, xs, strict=True))


_MUL_SCALAR = op_handle("_mul_scalar")
_SCALAR = ["scalar"]
#: lists of arrays whose ``_PushPull`` is kept (a model's buckets)
_PUSHES_KEPT = 64


def _arrays(out: Any) -> list[Any]:
    """The arrays of a kvstore output: an array, or (nested) lists of them."""
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in _arrays(o)]
    return [out]


class _Watchdog(Watchdog):
    """The group's ``Watchdog``, which also times the kvstore's collectives that return
    before their result arrives: a thread of its own waits for each result in turn (the
    array its pull writes, ``watch``) inside ``blocking``."""

    def __init__(self, rank: int, timeout: float) -> None:
        super().__init__(rank, timeout, "kvstore")
        self._cv = threading.Condition()
        self._results: collections.deque[tuple[str, Any]] = collections.deque()
        threading.Thread(
            target=self._wait_results, name="multidev-kvstore-watchdog", daemon=True
        ).start()

    def watch(self, what: str, x: Any) -> None:
        """Count the wait for ``x`` (an array a collective writes) against the timeout."""
        with self._cv:
            self._results.append((what, x))
            self._cv.notify()

    def _wait_results(self) -> None:
        while True:
            with self._cv:
                while not self._results:
                    self._cv.wait()
                what, x = self._results.popleft()
            with self.blocking(what):
                try:
                    x.wait_to_read()
                except mx.base.MXNetError:  # raised again where the program reads the array
                    pass
            del x


class _DistKVStore(mx.kvstore.KVStore):
    """MXNet's ``dist_sync`` kvstore (``group().kv``), whose waits for the other workers are
    bounded by the group's ``_Watchdog`` (``_watchdog``), and whose ``broadcast`` returns once
    its pull has arrived.

    A gluon ``Trainer`` broadcasts its parameters through the kvstore at its first step (init,
    then pull, keys 0, 1, …) and, with ``update_on_kvstore=False``, then pushes and pulls the
    gradients on those same keys: the server keeps each key's summed gradients in place of
    its value. The engine orders the parameters' pull and the gradients' push independently
    (different arrays), so a rank's pull could reach the server after every rank's gradients
    had been summed into the key: that rank started from the summed gradients instead of the
    parameters (seen in 4 of 10 two-worker runs, with or without multidev's own keys in use).
    Waiting for the pull before the Trainer pushes makes each rank read the parameters: the
    server replaces them only once every rank has pushed."""

    _watchdog: _Watchdog
    handle: Any

    def _watch(self, what: str, out: Any) -> None:
        arrays = _arrays(out)
        if arrays:  # the last written: the others arrive with it or before
            self._watchdog.watch(what, arrays[-1])

    def init(self, key: Any, value: Any) -> None:
        with self._watchdog.blocking("init"):  # a dist kvstore's init waits for every worker
            super().init(key, value)

    def pull(self, key: Any, out: Any = None, priority: int = 0, ignore_sparse: bool = True):
        super().pull(key, out, priority, ignore_sparse)
        self._watch("pull", out)

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        super().pushpull(key, value, out, priority)
        self._watch("pushpull", value if out is None else out)

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        with self._watchdog.blocking("broadcast"):
            super().broadcast(key, value, out, priority)
            for a in _arrays(out):
                a.wait_to_read()

    def _barrier(self) -> None:
        with self._watchdog.blocking("barrier"):
            super()._barrier()

    def release(self) -> None:
        """Free the C kvstore now, under the watchdog (a worker waits there for every other
        worker), instead of when the interpreter shuts down, where no Python thread runs."""
        if not self.handle:
            return
        with self._watchdog.blocking("barrier at exit"):
            mx.base.check_call(mx.base._LIB.MXKVStoreFree(self.handle))
        self.handle = mx.base.KVStoreHandle()  # freed: ``__del__`` frees a null handle


class MXNetGroup(Group):
    """A ``dist_sync`` kvstore: an all-reduce is a push (the server sums every worker's
    value) then a pull into the same array. Ranks are the launcher's (``RANK``), which name
    the workers in its output and its summary: the kvstore numbers its workers in the order
    they reach the scheduler (``kv.rank``), which only decides whose value ``kv.init`` keeps."""

    def __init__(self, kv: _DistKVStore, rank: int, local_rank: int) -> None:
        gpu = local_rank < mx.context.num_gpus()
        device = Device("gpu", local_rank) if gpu else Device("cpu", 0)
        super().__init__(rank, kv.num_workers, local_rank, device)
        self.engine = kv.type
        self.kv = kv
        self._key = _Keys(kv)
        self._pushes: dict[tuple, _PushPull] = {}
        atexit.register(self.close)
        # the interpreter's shutdown would free the kvstore, which waits for every other worker
        # (registered after ``close``, so that its handler runs first)
        self._exit = ExitAtOnce()

    def all_reduce(self, x: Any) -> Any:
        """The sum over the workers, pulled into ``x``. The kvstore's server sums floating-point
        arrays only (an integer array aborts it: BatchNorm's ``num_batches_tracked``, which
        ``DistributedDataParallel`` broadcasts), so an integer or boolean array travels as
        float64 (exact up to 2**53) and is cast back into ``x``."""
        if x.dtype.kind != "f":
            wide = x.astype("float64")
            self.all_reduce(wide)
            x[() if x.ndim == 0 else ...] = wide.astype(x.dtype)
            return x
        key = self._key(x)
        nd = x.as_nd_ndarray()
        self.kv.pushpull(key, nd, out=nd)
        return x

    def average(self, xs: list[Any], bucket: int = 0) -> list[Any]:
        """One ``pushpull`` of the whole list (a key per array: no concatenation, no copy
        back), the server's sums pulled straight into ``xs``, then each multiplied in place
        by ``1/world_size`` (MXNet's ``_mul_scalar``, an operation per array: the grouped
        update kernel walks its largest array's size for every array, which for a model's
        gradients took about twice as long). The same list again (a DDP bucket, every step)
        reuses its keys and C arrays; bucket ``bucket`` has keys of its own."""
        plan = self._pushes.get(tuple(map(id, xs)))
        if plan is not None and plan.fits(xs):
            self._key.again(plan.keys, xs)
        else:
            if len(self._pushes) >= _PUSHES_KEPT:
                self._pushes.clear()
            plan = _PushPull(xs, [self._key(x, (bucket, i)) for i, x in enumerate(xs)])
            self._pushes[tuple(map(id, xs))] = plan
        n = ctypes.c_uint(len(xs))
        mx.base.check_call(
            mx.base._LIB.MXKVStorePushPull(
                self.kv.handle, n, plan.ckeys, n, plan.ckeys, plan.handles, plan.handles, 0
            )
        )
        self.kv._watch("pushpull", xs)
        scale = [repr(1.0 / self.world_size)]
        for x in xs:
            invoke(_MUL_SCALAR, [x], _SCALAR, scale, x)
        return xs

    def barrier(self) -> None:
        self.kv._barrier()

    def close(self) -> None:
        """Leave the job: free the kvstore (a barrier of every worker, bounded by the
        timeout); an exception after it ends the process as usual. Runs at exit too."""
        atexit.unregister(self.close)
        self._exit.remove()
        self.kv.release()


class _RecordedSum(mx.autograd.Function):
    """The sum over the ranks, whose backward is the sum over the ranks of the incoming
    gradient (the gradient of the sum of every rank's loss)."""

    def __init__(self, group: MXNetGroup) -> None:
        super().__init__()
        self.group = group

    def forward(self, x: Any) -> Any:
        return self.group.all_reduce(x.copy())

    def backward(self, dy: Any) -> Any:
        # the gradient may come as a legacy NDArray: reduced as an mxnet.numpy array, given
        # back in the type it came in
        legacy = not isinstance(dy, mx.np.ndarray)
        summed = self.group.all_reduce((dy.as_np_ndarray() if legacy else dy).copy())
        return summed.as_nd_ndarray() if legacy else summed


def recorded_all_reduce(group: MXNetGroup, x: Any) -> Any:
    """The sum of native ``x`` over every rank, recorded by ``mx.autograd`` (an
    ``autograd.Function``): its gradient is the sum over the ranks of the gradient that
    reaches it (``nn.SyncBatchNorm``'s statistics)."""
    return recorded(_RecordedSum(group))(x)  # recorded without record() too, as the ops are


def _dmlc(master_addr: str, master_port: int, world_size: int) -> dict[str, str]:
    return {
        "DMLC_PS_ROOT_URI": master_addr,
        "DMLC_PS_ROOT_PORT": str(master_port),
        "DMLC_NUM_SERVER": "1",
        "DMLC_NUM_WORKER": str(world_size),
    }


def start(job: Job) -> MXNetGroup:
    """Join the job as a ``dist_sync`` kvstore worker (the scheduler at
    ``master_addr:master_port`` and one server must be running: ``multidev launch`` starts
    them)."""
    kind = job.backend or "dist_sync"
    if kind not in ("dist_sync", "dist_sync_device"):
        raise ValueError(
            f"Expected backend 'dist_sync' or 'dist_sync_device' on MXNet. Received: {kind!r}"
        )
    os.environ.update(_dmlc(job.master_addr, job.master_port, job.world_size), DMLC_ROLE="worker")
    try:
        kv = mx.kv.create(kind)
    except mx.base.MXNetError as e:
        raise DistributedError(
            f"Expected MXNet's scheduler at {job.master_addr}:{job.master_port}. Received: {e}. "
            "Start the workers with `multidev launch`, which starts the scheduler and the server."
        ) from e
    kv.__class__ = _DistKVStore  # the same C kvstore; see _DistKVStore
    kv._watchdog = _Watchdog(job.rank, job.timeout)
    if kv.num_workers != job.world_size:
        raise DistributedError(
            f"Expected {job.world_size} workers. Received: a kvstore with {kv.num_workers}. Give "
            "every worker the same WORLD_SIZE."
        )
    return MXNetGroup(kv, job.rank, job.local_rank)


def helper_processes(
    *, nnodes: int, node_rank: int, world_size: int, master_addr: str, master_port: int
) -> list[Proc]:
    """The scheduler and the server, on node 0 (a process that imports MXNet with
    ``DMLC_ROLE`` scheduler or server runs that role until the workers finish)."""
    if node_rank != 0:
        return []
    env = _dmlc(master_addr, master_port, world_size)
    cmd = [sys.executable, "-c", "import mxnet"]
    return [
        Proc("[scheduler] ", cmd, {**env, "DMLC_ROLE": "scheduler"}, worker=False),
        Proc("[server] ", cmd, {**env, "DMLC_ROLE": "server"}, worker=False),
    ]


_device_keys: _Keys | None = None


def device_allreduce(natives: list[Any], devices: list[Device]) -> list[Any]:
    """Sum arrays on several contexts of this process into each of them, with the
    ``device`` kvstore (MXNet's own reduce and broadcast across contexts)."""
    global _device_keys
    if _device_keys is None:
        _device_keys = _Keys(mx.kv.create("device"))
    key = _device_keys(natives[0])
    nds = [x.as_nd_ndarray() for x in natives]
    _device_keys.kv.pushpull(key, nds, out=nds)
    return natives
