"""``DataLoader``: batches of a dataset as Tensors on the default device (or ``device=``).

Batches are built on the host (NumPy) and placed on the device once per batch. The order of
an epoch comes from multidev's host generator (``random.host_permutation`` of a per-epoch
seed), so a seeded shuffle gives the same batches on every backend. ``num_workers > 0``
builds the batches in worker processes (see ``_choose_context`` for the start method) and
yields exactly what ``num_workers=0`` yields, in the same order. A worker that dies, fails, or
builds a batch that does not pickle raises ``DataLoaderError`` naming it; ``timeout`` bounds
the wait for one batch.

The loader's position is part of ``state_dict()`` (epoch, batches already yielded, the
epoch's seed): after ``load_state_dict`` the next ``iter(loader)`` continues the saved epoch
from the next batch, so a run resumes mid-epoch.
"""

from __future__ import annotations

import ast
import math
import multiprocessing
import numbers
import os
import pickle
import queue
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from .. import random as _random
from ..errors import DataLoaderError, StateDictError
from ..tensors import Tensor

__all__ = ["DataLoader", "default_collate"]

#: seconds between checks that the worker processes are still alive
_POLL_S = 1.0


def default_collate(samples: list[Any]) -> Any:
    """Stack a list of samples into one batch, on the host: Tensors and NumPy arrays are
    stacked into a NumPy array with a new first axis, Python ints become int64, floats
    float32 (multidev's defaults) and bools bool; tuples, lists and dicts are collated entry by
    entry; strings stay a list. The loader places the arrays on the device."""
    elem = samples[0]
    if isinstance(elem, Tensor):
        return np.stack([np.asarray(s.numpy()) for s in samples])
    if isinstance(elem, (np.ndarray, np.generic)):
        return np.stack([np.asarray(s) for s in samples])
    if isinstance(elem, bool):
        return np.asarray(samples, dtype=np.bool_)
    if isinstance(elem, numbers.Integral):
        return np.asarray(samples, dtype=np.int64)
    if isinstance(elem, numbers.Real):
        return np.asarray(samples, dtype=np.float32)
    if isinstance(elem, (str, bytes)):
        return list(samples)
    if isinstance(elem, Mapping):
        return {key: default_collate([s[key] for s in samples]) for key in elem}
    if isinstance(elem, (tuple, list)):
        if any(len(s) != len(elem) for s in samples):
            raise ValueError(
                "Expected samples of one length to collate. Received: lengths "
                f"{sorted({len(s) for s in samples})}"
            )
        fields = [default_collate(list(col)) for col in zip(*samples, strict=True)]
        if isinstance(elem, tuple) and hasattr(elem, "_fields"):
            return type(elem)(*fields)
        return tuple(fields) if isinstance(elem, tuple) else fields
    raise TypeError(
        "Expected samples of Tensors, NumPy arrays, numbers, strings, or tuples/lists/dicts of "
        f"them. Received: {type(elem).__name__}. Pass collate_fn= to batch other types."
    )


def _to_host(batch: Any) -> Any:
    """``batch`` with every Tensor replaced by a NumPy array (what crosses process borders)."""
    if isinstance(batch, Tensor):
        return np.asarray(batch.numpy())
    if isinstance(batch, Mapping):
        return {k: _to_host(v) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_to_host(v) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(_to_host(v) for v in batch)
    return batch


def _to_device(batch: Any, device: Any) -> Any:
    """``batch`` with every NumPy array made a Tensor (active backend) on ``device`` (None:
    the default device) and every Tensor moved there."""
    from ..creation import asarray

    if isinstance(batch, np.ndarray):
        return asarray(batch, device=device)
    if isinstance(batch, Tensor):
        return batch if device is None else batch.to(device)
    if isinstance(batch, Mapping):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_to_device(v, device) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch


def _fetch(dataset: Any, indices: np.ndarray, collate_fn: Callable | None) -> Any:
    if collate_fn is None:
        fast = getattr(dataset, "_host_batch", None)
        if fast is not None:
            return fast(indices)
        return default_collate([dataset[int(i)] for i in indices])
    return collate_fn([dataset[int(i)] for i in indices])


def _unpicklable(obj: Any, where: str = "the batch") -> str:
    """Where in ``obj`` the first value that does not pickle is, and its type."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            try:
                pickle.dumps(v)
            except Exception:
                return _unpicklable(v, f"{where}[{k!r}]")
    elif isinstance(obj, (tuple, list)):
        for i, v in enumerate(obj):
            try:
                pickle.dumps(v)
            except Exception:
                return _unpicklable(v, f"{where}[{i}]")
    return f"{where} is a {type(obj).__module__}.{type(obj).__qualname__}"


def _worker_loop(dataset, collate_fn, seed, index_queue, result_queue) -> None:
    """A worker process: fetch the batches it is sent until it gets None. Each batch is
    pickled here, so that one that cannot be is reported (the queue's feeder thread would
    only print the error and drop the batch, leaving the loader waiting for it)."""
    _random.manual_seed(seed)
    while True:
        item = index_queue.get()
        if item is None:
            return
        number, indices = item
        try:
            host = _to_host(_fetch(dataset, indices, collate_fn))
        except Exception:
            result_queue.put((number, "error", traceback.format_exc()))
            continue
        try:
            payload = pickle.dumps(host, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            result_queue.put((number, "unpicklable", f"{_unpicklable(host)} ({e})"))
            continue
        result_queue.put((number, "ok", payload))


def _has_main_guard(path: str) -> bool:
    """Whether the script at ``path`` has an ``if __name__ == "__main__":`` at its top level."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return True  # not a script we can read: nothing of ours re-runs it
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            sides = [node.test.left, *node.test.comparators]
            names = {s.id for s in sides if isinstance(s, ast.Name)}
            consts = {s.value for s in sides if isinstance(s, ast.Constant)}
            if "__name__" in names and "__main__" in consts:
                return True
    return False


#: (script path, modification time) -> whether it has the guard
_GUARDED: dict[tuple[str, float], bool] = {}


def _guarded(path: str, mtime: float) -> bool:
    key = (path, mtime)
    if key not in _GUARDED:
        _GUARDED[key] = _has_main_guard(path)
    return _GUARDED[key]


def _unguarded_main() -> str | None:
    """The path of the main script when it lacks the ``__main__`` guard (a "spawn" or
    "forkserver" worker would re-run its top level), else None (guarded, or no script file:
    an interactive session, ``python -c``)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return None
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    return None if _guarded(path, mtime) else str(path)


def _fork_hazard() -> str | None:
    """Why forking this process is unsafe now, or None: a framework whose runtime cannot
    survive fork is imported (each adapter's ``Framework.fork_unsafe`` says when)."""
    from .. import registry

    if "fork" not in multiprocessing.get_all_start_methods():
        return "this platform has no fork"
    for name in registry.registered_backends():
        reason = registry.framework(name).fork_hazard()
        if reason:
            return reason
    return None


def _choose_context(requested: str | None) -> str:
    """The start method for the workers. With the ``__main__`` guard (or no script): the one
    requested, default "forkserver" where the platform has it, else "spawn" (workers that
    import no framework). Without the guard: "fork" (PyTorch's default on Linux), which
    re-runs nothing, when it is safe; otherwise a DataLoaderError before any worker starts."""
    methods = multiprocessing.get_all_start_methods()
    script = _unguarded_main() if requested != "fork" else None
    if script is None:
        if requested is not None:
            return requested
        return "forkserver" if "forkserver" in methods else "spawn"
    hazard = _fork_hazard()
    if requested is None and hazard is None:
        return "fork"
    why = (
        f"the start method {requested!r} runs the script again in every worker"
        if requested is not None
        else f"fork is unsafe here: {hazard}"
    )
    raise DataLoaderError(
        f"Expected the script {script} to start DataLoader workers from inside an "
        '`if __name__ == "__main__":` block, or a process that can fork. Received: a script '
        f"without that guard, and {why}. Put the training code under the guard, or use "
        "num_workers=0.",
        cause="main guard",
    )


def _check_int(name: str, value: Any, minimum: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"Expected {name} to be an int >= {minimum}. Received: {value!r}")
    return int(value)


class _StateError(StateDictError, ValueError):
    """``DataLoader.load_state_dict`` refused its input (a StateDictError, and a ValueError
    as it always was)."""


#: seeds are drawn in [0, 2**63) (``random.draw_seed``); epochs count in the same range
_STATE_LIMIT = 2**63


def _check_state_int(name: str, value: Any) -> int:
    if (
        not isinstance(value, (int, np.integer))
        or isinstance(value, bool)
        or not 0 <= value < _STATE_LIMIT
    ):
        raise _StateError(
            f"Expected the DataLoader state's {name!r} to be an int in [0, 2**63). Received: "
            f"{value!r} ({type(value).__name__}). Pass the dict loader.state_dict() returned."
        )
    return int(value)


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size``, as PyTorch's ``DataLoader``.

    - ``shuffle``: a new random order every epoch, from ``generator`` (a seed, a NumPy
      generator, or None for multidev's generator, ``md.manual_seed``); identical on every
      backend.
    - ``drop_last``: drop a last batch smaller than ``batch_size``.
    - ``collate_fn(samples) -> batch``: default ``default_collate``; NumPy arrays in its
      result become Tensors on ``device`` (default: the default device at iteration time).
    - ``num_workers``: worker processes that build batches ahead (the dataset and
      ``collate_fn`` must pickle: define them at module level); same batches as 0.
      ``multiprocessing_context``: "forkserver" (default where available), "spawn" or "fork";
      a script without the ``if __name__ == "__main__":`` guard gets "fork" where that is
      safe (no framework runtime started), else a DataLoaderError before any worker starts.
    - ``timeout``: seconds to wait for one batch from the workers before raising
      DataLoaderError (PyTorch's meaning; 0, the default, waits as long as the workers live:
      a worker that dies is noticed within a second either way).
    - ``state_dict()`` / ``load_state_dict()``: the position, to resume mid-epoch.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        num_workers: int = 0,
        generator: int | np.random.Generator | None = None,
        *,
        device: Any = None,
        prefetch_factor: int = 2,
        multiprocessing_context: str | None = None,
        timeout: float = 0,
    ) -> None:
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError(
                "Expected a dataset with __getitem__ and __len__ (e.g. md.data.TensorDataset). "
                f"Received: {type(dataset).__name__}"
            )
        if generator is not None and not isinstance(
            generator, (int, np.integer, np.random.Generator)
        ):
            raise TypeError(
                "Expected generator to be a seed (int), a numpy.random.Generator or None. "
                f"Received: {type(generator).__name__}"
            )
        if (
            not isinstance(timeout, (int, float, np.integer, np.floating))
            or isinstance(timeout, bool)
            or not math.isfinite(timeout)
            or timeout < 0
        ):
            raise ValueError(
                "Expected timeout to be a finite number of seconds >= 0 (0: wait as long as "
                f"the workers live). Received: {timeout!r}"
            )
        if multiprocessing_context is not None and (
            multiprocessing_context not in multiprocessing.get_all_start_methods()
        ):
            raise ValueError(
                f"Expected multiprocessing_context among "
                f"{multiprocessing.get_all_start_methods()}. Received: {multiprocessing_context!r}"
            )
        self.dataset = dataset
        self.batch_size = _check_int("batch_size", batch_size, 1)
        self.num_workers = _check_int("num_workers", num_workers, 0)
        self.prefetch_factor = _check_int("prefetch_factor", prefetch_factor, 1)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.collate_fn = collate_fn
        self.generator = generator
        self.device = device
        self.multiprocessing_context = multiprocessing_context
        self.timeout = float(timeout)
        self._epoch = 0
        self._current: dict[str, Any] | None = None
        self._resume: dict[str, Any] | None = None

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    # ------------------------------------------------------------------ order
    def _epoch_seed(self, epoch: int) -> int:
        g = self.generator
        if isinstance(g, (int, np.integer)):
            return _random.draw_seed(np.random.Generator(np.random.PCG64([int(g), epoch])))
        return _random.draw_seed(g)

    def _batches(self, seed: int) -> list[np.ndarray]:
        n = len(self.dataset)
        order = _random.host_permutation(n, seed) if self.shuffle else np.arange(n, dtype=np.int64)
        bs = self.batch_size
        return [order[i : i + bs] for i in range(0, len(self) * bs, bs)]

    # ------------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[Any]:
        if self._resume is not None:
            cur, self._resume = self._resume, None
        else:
            cur = {"epoch": self._epoch, "batch": 0, "seed": None}
        if cur["seed"] is None:
            cur["seed"] = self._epoch_seed(cur["epoch"])
        self._epoch = cur["epoch"] + 1
        self._current = cur
        batches = self._batches(cur["seed"])[cur["batch"] :]
        if self.num_workers:
            stream = self._worker_stream(batches, cur["seed"])
        else:
            stream = (_fetch(self.dataset, b, self.collate_fn) for b in batches)
        return self._place(stream, cur)

    def _place(self, stream: Iterator[Any], cur: dict[str, Any]) -> Iterator[Any]:
        for host in stream:
            cur["batch"] += 1
            yield _to_device(host, self.device)

    def _worker_stream(self, batches: list[np.ndarray], seed: int) -> Iterator[Any]:
        if not batches:
            return
        method = _choose_context(self.multiprocessing_context)
        ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(["__main__", __name__])
        n = min(self.num_workers, max(len(batches), 1))
        index_queues = [ctx.Queue() for _ in range(n)]
        results = ctx.Queue()
        workers = []
        try:
            for wid, iq in enumerate(index_queues):
                # typeshed's BaseContext (what get_context returns) lacks Process; every
                # concrete context has it
                w = ctx.Process(  # type: ignore[attr-defined]
                    target=_worker_loop,
                    args=(self.dataset, self.collate_fn, (seed + 1 + wid) % 2**63, iq, results),
                    daemon=True,
                )
                try:
                    w.start()
                except (pickle.PicklingError, AttributeError, TypeError) as e:
                    raise TypeError(
                        "Expected a dataset and collate_fn that pickle, to send them to worker "
                        f"processes. Received: {e}. Define them at module level (no lambdas), "
                        "or use num_workers=0."
                    ) from e
                workers.append(w)
            sent = 0
            for _ in range(min(n * self.prefetch_factor, len(batches))):
                index_queues[sent % n].put((sent, batches[sent]))
                sent += 1
            ready: dict[int, tuple[str, Any]] = {}
            for k in range(len(batches)):
                since = time.monotonic()
                while k not in ready:
                    wait = _POLL_S
                    if self.timeout:
                        wait = min(wait, max(0.0, since + self.timeout - time.monotonic()))
                    try:
                        number, status, data = results.get(timeout=wait)
                    except queue.Empty:
                        self._check_workers(workers, k, n, since)
                        continue
                    ready[number] = (status, data)
                status, data = ready.pop(k)
                if status == "error":
                    raise DataLoaderError(
                        f"DataLoader worker {k % n} failed on batch {k}:\n{data}",
                        worker=k % n,
                        cause="exception",
                    )
                if status == "unpicklable":
                    raise DataLoaderError(
                        f"Expected DataLoader worker {k % n} to build a batch that pickles, to "
                        f"send it to this process. Received: batch {k}: {data}. Return NumPy "
                        "arrays, Tensors, numbers or strings from the dataset and collate_fn.",
                        worker=k % n,
                        cause="unpicklable batch",
                    )
                if sent < len(batches):
                    index_queues[sent % n].put((sent, batches[sent]))
                    sent += 1
                yield pickle.loads(data)
        finally:
            for iq, w in zip(index_queues, workers, strict=False):
                if w.is_alive():
                    iq.put(None)
            for w in workers:
                w.join(timeout=5)
                if w.is_alive():
                    w.terminate()
                    w.join()
            for q in (*index_queues, results):
                q.cancel_join_thread()
                q.close()

    def _check_workers(self, workers: list[Any], k: int, n: int, since: float) -> None:
        """The watchdog, between waits for batch ``k``: raise when a worker has died, or when
        ``timeout`` seconds have passed without the batch."""
        dead = [w for w in workers if not w.is_alive()]
        if dead:
            wid = workers.index(dead[0])
            raise DataLoaderError(
                f"Expected DataLoader worker processes to keep running. Received: worker "
                f"{wid} exited with code {dead[0].exitcode}. Run with num_workers=0 to see "
                "the error in this process.",
                worker=wid,
                cause="worker died",
            )
        if self.timeout and time.monotonic() - since >= self.timeout:
            raise DataLoaderError(
                f"Expected DataLoader worker {k % n} to build batch {k} within timeout="
                f"{self.timeout:g} s. Received: nothing (the worker is still running: its "
                "dataset or collate_fn blocks). Raise timeout, or run with num_workers=0 to "
                "see where it waits.",
                worker=k % n,
                cause="timeout",
            )

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The position: ``{"epoch": index of the epoch in progress (or next), "batch":
        batches of it already yielded, "seed": its order's seed (None before it starts)}``."""
        cur = self._current
        if cur is None or cur["batch"] >= len(self):
            return {"epoch": self._epoch, "batch": 0, "seed": None}
        return dict(cur)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (from ``state_dict()``): the next ``iter(loader)`` yields the
        rest of that epoch, then later iterations start the following epochs."""
        if not isinstance(state, dict) or set(state) != {"epoch", "batch", "seed"}:
            raise _StateError(
                "Expected a DataLoader state dict with 'epoch', 'batch' and 'seed'. "
                f"Received: {sorted(state) if isinstance(state, dict) else type(state).__name__}"
            )
        epoch = _check_state_int("epoch", state["epoch"])
        batch = _check_state_int("batch", state["batch"])
        if batch > len(self):
            raise _StateError(
                f"Expected a batch position <= {len(self)} (batches per epoch). Received: {batch}"
            )
        seed = state["seed"]
        if seed is not None:
            seed = _check_state_int("seed", seed)
        elif batch:
            raise _StateError(
                "Expected the seed of the epoch in progress with a batch position > 0. "
                "Received: seed None. Pass the dict loader.state_dict() returned."
            )
        self._current = None
        self._epoch = epoch
        self._resume = {"epoch": epoch, "batch": batch, "seed": seed}
