"""The optional hooks of an adapter, grouped by concern, each declared with its default.

The core reads every hook as a plain attribute (``bk.jit_compile``); ``AdapterBase`` inherits
the defaults from these protocols, so an adapter sets only the hooks its framework needs. The
default is what the core does without the hook (written in each hook's comment). An adapter
that does not inherit ``AdapterBase`` declares every hook itself (``missing_members`` names the
ones it lacks), None where it has none.

A hook whose default is None is a callable the adapter supplies (a method, a staticmethod or a
function stored on the class); None means the backend lacks that feature.

An adapter package's ``distributed`` module (the engine) has hooks too; ``DistributedEngine``
declares them with their defaults and ``Engine`` reads a module through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from ..device import Device
    from ..distributed.group import Group, Job

__all__ = [
    "AutogradHooks",
    "DistributedEngine",
    "Engine",
    "ExportHooks",
    "JitHooks",
    "UpdateHooks",
]


class AutogradHooks(Protocol):
    """The ``Autograd`` primitives (``contract.Autograd`` documents each) and the recording
    hooks around them. All default to None: the backend has no autograd (NumPy), and
    ``backward()`` raises ``AutogradError``. An adapter declaring the ``"autograd"``
    capability must supply the six ``Autograd`` ones."""

    #: ``record() -> context manager`` that records operations (``Autograd.record``)
    record: Callable[[], AbstractContextManager] | None = None
    #: ``no_grad(recordings) -> context manager`` inside which nothing is recorded
    no_grad: Callable[[Sequence[Any]], AbstractContextManager] | None = None
    #: ``backward(loss, gradient, recording, retain_graph) -> bool`` (``Autograd.backward``)
    backward: Callable[[Any, Any, Any, bool], bool] | None = None
    #: ``grad(var)``: the variable's accumulated native gradient or None. Without it a
    #: Parameter keeps its gradient itself (``p.grad = …`` on NumPy)
    grad: Callable[[Any], Any] | None = None
    #: ``set_grad(var, value or None)``: replace or drop the variable's gradient
    set_grad: Callable[[Any, Any], None] | None = None
    #: ``native_module(block)``: a native module holding the block's variables
    #: (``net.native``); None: ``net.native`` raises TypeError
    native_module: Callable[[Any], Any] | None = None
    #: how ``loss.backward()`` works without ``record()`` (capability ``"implicit_grad"``):
    #: None where the framework records by itself (torch, Paddle), the adapter's ops record
    #: themselves (MXNet), or the backend has no implicit recording; True: a Block call opens
    #: ``record()``; or a callable returning the context manager to open instead
    implicit_record: bool | Callable[[], AbstractContextManager] | None = None
    #: ``clear_grads(variables)``: drop many variables' gradients at once (``zero_grad``);
    #: None: ``set_grad(var, None)`` for each
    clear_grads: Callable[[Sequence[Any]], None] | None = None


class JitHooks(Protocol):
    """What ``md.jit`` and ``md.synchronize`` ask of an adapter (DESIGN §12). With the
    defaults the backend has no compiler: ``md.jit`` warns once and runs the function
    eagerly."""

    #: ``jit_compile(body) -> compiled``: the framework's compiler of a function of native
    #: tensors (``torch.compile``, ``tf.function``), ``jit_compile(body, variables)`` with
    #: ``jit_takes_variables``; None: no compiler
    jit_compile: Callable[..., Any] | None = None
    #: ``jit_run(jitted, blocks, opts, args, kwargs)``: the adapter compiles and runs the
    #: whole call itself (MXNet's hybridized forwards); None: ``jit_compile`` is used
    jit_run: Callable[[Any, list, list, tuple, dict], Any] | None = None
    #: whether the compiler traces the function once into a graph (``tf.function``,
    #: ``paddle.jit.to_static``: state goes in and out functionally) rather than following
    #: Python (``torch.compile``, False)
    jit_traces_once: bool = False
    #: whether ``jit_compile`` also takes the parameters' variables,
    #: ``jit_compile(body, variables)``: a compiler of pure functions (``jax.jit``) cannot
    #: capture mutable variables and passes their values in and out itself
    jit_takes_variables: bool = False
    #: ``jit_compiling() -> bool``: whether a compiler that follows Python is tracing the
    #: calling code (the core skips its bookkeeping there); None: never
    jit_compiling: Callable[[], bool] | None = None
    #: ``jit_variable(var)``: the value of a variable inside a trace (Paddle's static
    #: variable); None: the variable's native tensor as it is
    jit_variable: Callable[[Any], Any] | None = None
    #: why the backend has no compiler, for md.jit's warning; None: a generic reason
    jit_unsupported: str | None = None
    #: why a compiled function cannot call ``backward()``; None: it can
    jit_backward_unsupported: str | None = None
    #: ``synchronize(device or None)``: wait for queued work (``md.synchronize``); None:
    #: the backend runs synchronously
    synchronize: Callable[[Device | None], None] | None = None


class ExportHooks(Protocol):
    """What ``md.export`` asks of an adapter. Defaults: none (``md.export`` raises
    TypeError, adding ``export_unsupported``)."""

    #: ``export(block, path, inputs) -> path``: the framework's serving format
    export: Callable[[Any, Path, tuple], Path] | None = None
    #: ``export_onnx(block, path, inputs, opset, dynamic_batch) -> path``: an ONNX file
    export_onnx: Callable[[Any, Path, tuple, int, bool], Path] | None = None
    #: what to use instead where the backend has no exporter, for the error message
    export_unsupported: str = ""


class UpdateHooks(Protocol):
    """The optimisers' in-place updates (``AdapterBase`` implements both from ``setitem``
    and the op table; adapters override them with fused kernels)."""

    def add_scaled_(self, x: Any, y: Any, alpha: float) -> Any:
        """``x += alpha * y`` in place; returns x, or its replacement where the framework's
        tensors are immutable."""
        ...

    def add_scaled_many_(self, xs: Sequence[Any], ys: Sequence[Any], alpha: float) -> list[Any]:
        """``add_scaled_`` for each pair (a parameter group: one device and dtype); a
        multi-tensor kernel where the framework has one."""
        ...


class DistributedEngine(Protocol):
    """What an adapter package's ``distributed`` module provides to ``md.distributed``,
    ``multidev launch`` and ``md.parallel``. Only ``start`` is required; every other hook
    defaults to None (the core's own way, said per hook)."""

    def start(self, job: Job) -> Group:
        """Join the job's process group (the launcher's rank, world size and rendezvous)."""
        ...

    #: ``gradient_reducer(natives, group, bucket_cap_mb, find_unused)``: hooks that average
    #: gradients during backward (torch); None: DDP all-reduces after backward
    gradient_reducer: Callable[..., Any] | None = None
    #: ``data_parallel(native_module, group, bucket_cap_mb, find_unused)``: the framework's
    #: own data-parallel module (Paddle); None: multidev's
    data_parallel: Callable[..., Any] | None = None
    #: ``framework_launcher(nproc_per_node=, nnodes=, node_rank=, master_addr=,
    #: master_port=, log_dir=, argv=, restarts=) -> command``: start the workers through
    #: the framework's launcher (torchrun), which restarts them itself ``restarts`` times
    #: (given on one node only); None: ``multidev launch`` starts them itself
    framework_launcher: Callable[..., list[str]] | None = None
    #: ``worker_envs(nproc_per_node=, nnodes=, node_rank=, master_addr=, master_port=)``:
    #: extra environment per local worker (TF_CONFIG); None: none
    worker_envs: Callable[..., list[dict[str, str]]] | None = None
    #: ``helper_processes(nnodes=, node_rank=, world_size=, master_addr=, master_port=)``:
    #: processes to start beside the workers (MXNet's scheduler and servers); None: none
    helper_processes: Callable[..., list[Any]] | None = None
    #: ``recorded_all_reduce(group, native)``: the sum over the ranks, recorded by the
    #: framework's autograd (``md.distributed.recorded_sum``, ``nn.SyncBatchNorm``); None:
    #: recorded_sum raises BackendError
    recorded_all_reduce: Callable[[Any, Any], Any] | None = None
    #: ``device_allreduce(natives, devices)``: sum tensors across one process's devices in
    #: one engine call (``md.parallel.allreduce``); None: copies and adds
    device_allreduce: Callable[[list[Any], list[Any]], list[Any]] | None = None
    #: ``recorded_copy(x, native_device)``: a copy the framework's autograd records
    #: (``md.parallel`` broadcasts); None: ``to_device``
    recorded_copy: Callable[[Any, Any], Any] | None = None


_ENGINE_HOOKS = tuple(
    name for name in vars(DistributedEngine).get("__annotations__", {}) if name != "start"
)


class Engine(DistributedEngine):
    """An adapter's ``distributed`` module read through ``DistributedEngine``: each hook the
    module lacks is its declared default; every other name is the module's own."""

    def __init__(self, module: Any) -> None:
        self.module = module
        for name in _ENGINE_HOOKS:
            if hasattr(module, name):
                setattr(self, name, getattr(module, name))

    def start(self, job: Job) -> Group:
        return cast("Group", self.module.start(job))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.module, name)

    def __repr__(self) -> str:
        return f"Engine({self.module.__name__})"
