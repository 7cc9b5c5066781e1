"""The interfaces of the backend contract: what an adapter is (``Adapter``, with its op table
``OpTable`` and the hook protocols of ``hooks``), what a capability adds (``Autograd``,
``DLPack``), and ``missing_members``, which checks an adapter against them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

import numpy as np

from .. import errors
from ..device import Device
from ..dtypes import DType
from ..registry import Framework
from .hooks import AutogradHooks, ExportHooks, JitHooks, UpdateHooks

__all__ = [
    "CAPABILITIES",
    "Adapter",
    "ArgReduction",
    "ArrayLimits",
    "Autograd",
    "Binary",
    "DLPack",
    "Extension",
    "Joining",
    "OpTable",
    "Reduction",
    "Unary",
    "missing_members",
]


#: Capabilities an adapter may declare. Conformance tests needing a missing one are skipped.
CAPABILITIES = frozenset(
    {
        "autograd",  # records operations and computes gradients
        "implicit_grad",  # backward() without record(): recorded as in PyTorch
        "gpu",  # written against the framework's CUDA API (GPUs may still be absent)
        "multi_device",  # several devices of one kind (TensorFlow logical CPUs, MXNet cpu(i))
        "bfloat16",
        "float16",
        "float64",
        "complex",  # complex64 and complex128
        "dlpack",  # exchanges tensors zero-copy through DLPack
        "jit",  # compiles functions with the framework's compiler (md.jit, hybridize)
    }
)


#: native op signatures (native tensors in and out; Python scalars where the core passes them)
Unary = Callable[[Any], Any]
Binary = Callable[[Any, Any], Any]
Reduction = Callable[[Any, "tuple[int, ...] | None", bool], Any]
ArgReduction = Callable[[Any, "int | None"], Any]
Joining = Callable[[list, int], Any]


@runtime_checkable
class OpTable(Protocol):
    """Native operations. Every callable takes and returns native tensors."""

    # binary, elementwise (same dtype, same device): Python-operator semantics
    add: Binary
    subtract: Binary
    multiply: Binary
    divide: Binary
    floor_divide: Binary
    remainder: Binary
    pow: Binary
    matmul: Binary
    maximum: Binary
    minimum: Binary
    equal: Binary
    not_equal: Binary
    less: Binary
    less_equal: Binary
    greater: Binary
    greater_equal: Binary
    logical_and: Binary
    logical_or: Binary
    # unary
    negative: Unary
    abs: Unary
    exp: Unary
    log: Unary
    log1p: Unary
    sqrt: Unary
    sin: Unary
    cos: Unary
    tanh: Unary
    sigmoid: Unary
    relu: Unary
    floor: Unary
    logical_not: Unary
    copy: Unary  # a new tensor with equal values
    # ops with arguments
    sum: Reduction  # (x, axis, keepdims); axis None: every axis, (): none
    mean: Reduction
    max: Reduction
    min: Reduction
    prod: Reduction
    argmax: ArgReduction  # (x, axis); axis None: the flattened tensor
    argmin: ArgReduction
    reshape: Callable[[Any, tuple[int, ...]], Any]
    permute_dims: Callable[[Any, tuple[int, ...]], Any]
    concat: Joining  # (xs, axis)
    stack: Joining
    where: Callable[[Any, Any, Any], Any]  # (cond, a, b), cond bool
    clip: Callable[[Any, float | None, float | None], Any]  # (x, min, max)
    softmax: Callable[[Any, int], Any]  # (x, axis)
    log_softmax: Callable[[Any, int], Any]
    getitem: Binary  # (x, key): key holds ints, slices, None, Ellipsis, native tensors
    astype: Callable[[Any, DType], Any]  # (x, dtype)
    # optional: linear(x, weight (out, in), bias or None), the fused op behind nn.Linear
    # sequence ops (multidev.nn.sequence_functional); lowerings in each adapter's sequence_ops.py
    embedding: Binary  # (weight (n, d), int64 indices) -> rows
    one_hot: Callable[[Any, int], Any]  # (int64 indices, num_classes) -> int64
    stop_gradient: Unary  # the same values without a gradient path
    layer_norm: Callable[[Any, Any, Any, float], Any]  # (x, weight, bias, eps), last axis
    gelu: Callable[[Any, bool], Any]  # (x, tanh approximation?)
    # optional, fused kernels (else composed in the core):
    # scaled_dot_product_attention(q, k, v, additive float mask or None, scale) and
    # rnn(mode, x (T, N, I), h0, c0 or None, weights, num_layers, bidirectional) -> (y, h, c)
    # and rnn_projected(...), the same for an LSTM whose weights end with w_hr (h0 smaller than c0)
    # and cross_entropy(logits (N, C), int64 labels (N,), reduction): labels outside [0, C)
    # raise IndexError (eagerly) or the framework's error when the loss is read


class ArrayLimits(NamedTuple):
    """The largest arrays a backend can hold; an adapter declares its own as the class
    attribute ``array_limits`` where they are below NumPy's (the defaults here).

    ``ndim``: most dimensions; ``dim``: largest single dimension; ``elements``: largest
    product of the non-zero dimensions. Loading a checkpoint checks every tensor against
    these (and against NumPy's own byte limit) before reading any data. ``broadcast_ndim``:
    most dimensions an elementwise op of the framework broadcasts over where the core cannot
    step in (MXNet's kernels fail at the next read, not at the call); the Array API's "max
    dimensions" reports the lower of it and ``ndim``."""

    ndim: int = 64
    dim: int = 2**63 - 1
    elements: int = 2**63 - 1
    broadcast_ndim: int = 64


@runtime_checkable
class Adapter(AutogradHooks, JitHooks, ExportHooks, UpdateHooks, Protocol):
    """What a backend provides. Names follow the framework's import name. The optional
    hooks, by concern, are those of the protocols it extends (``hooks``), each with its
    default."""

    name: str
    framework: Framework  # import name, distributions, install extra
    capabilities: frozenset[str]
    ops: OpTable
    #: lowerings of the Array API extensions md.linalg and md.fft
    linalg: Extension
    fft: Extension
    tensor_types: tuple[type, ...]  # native tensor classes, for isinstance checks
    #: module holding the native reference ``OPS`` of the conformance suite, or None
    reference: str | None
    #: known conformance failures: {test name: reason}
    conformance_xfails: Mapping[str, str]
    #: the largest arrays the framework holds (checked when loading checkpoints)
    array_limits: ArrayLimits

    def version(self) -> str: ...

    # devices
    def list_devices(self) -> list[Device]: ...
    def devices(self) -> Sequence[Device]: ...
    def device_set(self) -> frozenset[Device]: ...
    def num_gpus(self) -> int: ...
    def default_device(self) -> Device: ...
    def native_device(self, dev: Device) -> Any: ...
    def parse_native_device(self, obj: Any) -> Device | None: ...
    def device_of(self, x: Any) -> Device: ...
    def scope(self, dev: Device) -> AbstractContextManager: ...

    #: devices whose ops must run inside ``scope(dev)`` to stay there (TensorFlow)
    scoped_devices: frozenset[Device]

    # tensors
    def dtype_of(self, x: Any) -> DType: ...
    def native_dtype(self, dt: DType) -> Any: ...
    def shape_of(self, x: Any) -> tuple[int, ...]: ...
    def from_numpy(self, arr: np.ndarray, dev: Device) -> Any: ...
    def to_numpy(self, x: Any) -> np.ndarray: ...
    def to_device(self, x: Any, dev: Device) -> Any: ...
    def full(self, shape: tuple[int, ...], value: Any, dt: DType, dev: Device) -> Any: ...
    def empty(self, shape: tuple[int, ...], dt: DType, dev: Device) -> Any: ...
    def setitem(self, x: Any, key: Any, value: Any) -> Any: ...
    def seed(self, seed: int) -> None: ...

    # parameters
    def make_variable(self, x: Any) -> Any: ...
    def variable_tensor(self, var: Any) -> Any: ...
    def detach(self, x: Any) -> Any: ...
    def stop_gradient(self, x: Any) -> Any: ...
    def add_scaled_(self, x: Any, y: Any, alpha: float) -> Any: ...
    def is_trainable_variable(self, var: Any) -> bool: ...


@runtime_checkable
class DLPack(Protocol):
    """What an adapter declaring the ``"dlpack"`` capability adds to ``Adapter``."""

    def from_dlpack(self, obj: Any) -> Any:
        """A native tensor sharing the memory of a DLPack-capable object."""
        ...


@runtime_checkable
class Autograd(Protocol):
    """What an adapter declaring the ``"autograd"`` capability adds to ``Adapter``.

    The core keeps the recording objects ``record()`` returns and hands the relevant one
    (the innermost active ``md.autograd.record()`` block of this backend, else the last one
    that ended) to ``backward``. Gradients live with the framework's variables (torch and
    paddle ``.grad``, MXNet's gradient buffers, a slot the TensorFlow adapter keeps), so
    native optimisers see what ``loss.backward()`` computed. An adapter without these
    methods (the NumPy backend) has no autograd and the core says so.
    """

    def record(self) -> AbstractContextManager:
        """A context manager that records operations for ``backward`` while it is entered
        (GradientTape, ``autograd.record()``; ``enable_grad`` where recording is eager)."""
        ...

    def no_grad(self, recordings: Sequence[Any]) -> AbstractContextManager:
        """A context manager inside which nothing is recorded, the active ``recordings``
        included."""
        ...

    def backward(self, loss: Any, gradient: Any, recording: Any, retain_graph: bool) -> bool:
        """Add d(sum(loss * gradient))/d(var) to the gradient of every trainable variable
        that ``loss`` was computed from (``gradient`` None means ones; ``recording`` may be
        None). Returns False, changing nothing, when ``loss`` was not recorded."""
        ...

    def grad(self, var: Any) -> Any:
        """The variable's accumulated gradient (a native tensor), or None."""
        ...

    def set_grad(self, var: Any, value: Any) -> None:
        """Replace the variable's gradient with ``value`` (a native tensor), or drop it (None)."""
        ...

    def native_module(self, block: Any) -> Any:
        """A native module (torch ``nn.Module``, ``tf.Module``, …) holding ``block``'s very
        variables, whose call runs ``block`` on native tensors (``multidev.nn.native.call``)."""
        ...


def _members(protocol: type) -> set[str]:
    """The members a protocol declares, those of the protocols it extends included."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls is object or cls is Protocol or not getattr(cls, "_is_protocol", False):
            continue
        names |= set(vars(cls).get("__annotations__", {}))
        names |= {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}
    return names


def missing_members(adapter: Any) -> list[str]:
    """The members of the contract that ``adapter`` lacks: ``Adapter``'s, its op table's
    (``ops.<name>``), the hooks' (``hooks``; present where ``AdapterBase`` gives the
    defaults), and those of ``Autograd`` and ``DLPack`` where it declares the capability
    (there a hook left at its default None counts as missing)."""
    missing = {n for n in _members(Adapter) if not hasattr(adapter, n)}
    ops = getattr(adapter, "ops", None)
    missing |= {f"ops.{n}" for n in _members(OpTable) if not hasattr(ops, n)}
    caps: frozenset[str] = getattr(adapter, "capabilities", frozenset())
    for cap, protocol in (("autograd", Autograd), ("dlpack", DLPack)):
        if cap in caps:
            missing |= {n for n in _members(protocol) if getattr(adapter, n, None) is None}
    return sorted(missing)


class Extension:
    """The lowerings of one Array API extension (``md.linalg``, ``md.fft``) on one framework.

    ``lowering(name)`` is ``lowerings[name]`` where the framework spells a function differently,
    else the function called ``name`` in the first of ``namespaces`` that has one (e.g.
    ``torch.linalg`` then ``torch``), else None: the framework lacks it. The core calls each
    lowering as its declaration in ``multidev.linalg`` / ``multidev.fft`` says."""

    def __init__(self, *namespaces: Any, **lowerings: Callable[..., Any] | None) -> None:
        self.namespaces = namespaces
        self.lowerings = lowerings

    def lowering(self, name: str) -> Callable[..., Any] | None:
        if name in self.lowerings:
            return self.lowerings[name]
        for namespace in self.namespaces:
            fn = getattr(namespace, name, None)
            if fn is not None:
                return cast(Callable[..., Any], fn)
        return None

    def wrapped(self, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Extension:
        """These lowerings, each passed through ``wrap`` (an adapter's recording wrapper, as
        ``wrapped_table`` gives its op table)."""
        return _WrappedExtension(self, wrap)

    def require(self, extension: str, name: str, backend: str) -> Callable[..., Any]:
        """``lowering(name)``; UnsupportedOperationError naming ``extension.name`` and the
        backend where the framework lacks it."""
        fn = self.lowering(name)
        if fn is None:
            raise errors.UnsupportedOperationError(
                f"Expected a backend whose framework has {extension}.{name}. Received: the "
                f"{backend} backend, whose framework has none. Use another backend for "
                f"md.{extension}.{name}."
            )
        return fn


class _WrappedExtension(Extension):
    def __init__(self, inner: Extension, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]):
        super().__init__()
        self._inner, self._wrap = inner, wrap

    def lowering(self, name: str) -> Callable[..., Any] | None:
        fn = self._inner.lowering(name)
        return None if fn is None else self._wrap(fn)
