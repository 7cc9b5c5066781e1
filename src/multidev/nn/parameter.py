"""``nn.Parameter``: a Tensor whose storage is the framework's own trainable variable.

The variable (torch ``nn.Parameter``, ``tf.Variable``, a paddle parameter, a gluon
``Parameter``) is made once by the adapter's ``make_variable``; ops use the native tensor
``variable_tensor`` gives for it, which shares its storage, so an in-place write through
``p.data`` is seen by every user of ``p`` and by the framework itself. ``p.data`` goes through
the adapter's ``detach(native)`` (a native sharing the storage, outside autograd recording:
torch ``x.detach()``; identity elsewhere).

A lazy layer's parameters start as ``UninitializedParameter``: a Parameter without a shape.
Any use of its values raises ``md.DeferredInitializationError``; initialisers applied to it
are recorded and run when the layer's first call gives it a shape.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import numpy as np

from .. import dtypes as _dt
from .. import registry
from ..autograd import begin_implicit, no_grad
from ..device import as_device, check_available
from ..dispatch import asarray
from ..dispatch import device_for as _device
from ..dispatch import new_tensor as _new_tensor
from ..dispatch import on as _on
from ..errors import DeferredInitializationError
from ..tensors import Tensor

__all__ = ["Parameter", "UninitializedParameter"]


class Parameter(Tensor):
    """A trainable tensor of a Block: ``nn.Parameter(md.randn(3, 4))``.

    ``p.data`` is a Tensor sharing the parameter's storage (``p.data[0, 0] = 42`` writes into
    it); ``p.native`` is the framework's trainable variable; ``p.grad`` is the gradient or None.
    Creating a Parameter copies the values into a new variable on the tensor's device.
    """

    __slots__ = ("_grad", "_pending", "_var", "requires_grad")
    _grad: Tensor | None
    #: the initialisers recorded while uninitialised: (fn, args, kwargs)
    _pending: list[tuple[Callable[..., Any], tuple, dict]] | None
    _var: Any
    requires_grad: bool

    #: False only for the uninitialised parameters of a lazy layer.
    initialized = True

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = asarray(np.zeros((0,), dtype=np.float32))
        elif isinstance(data, UninitializedParameter):
            raise TypeError(
                "Expected a tensor with values to make a Parameter. Received: an uninitialised "
                "parameter. Run a forward pass of its lazy layer first."
            )
        t = data if isinstance(data, Tensor) else asarray(data)
        self._bk = t._bk
        self._dev = t._dev
        self._dtype = t._dtype
        self._grad = None
        self.requires_grad = bool(requires_grad)
        self._pending = None
        self._set_variable(_on(t._bk, t._dev, t._bk.make_variable, t._native))
        if self.requires_grad:
            begin_implicit()  # ops on it are recorded for backward(), Block or not

    def _set_variable(self, var: Any) -> None:
        self._var = var
        self._native = self._bk.variable_tensor(var)

    @property
    def native(self) -> Any:
        """The framework's own trainable variable (no copy)."""
        return self._var

    @property
    def data(self) -> Tensor:
        """A Tensor sharing this parameter's storage, outside autograd recording; write into it
        to change the parameter (``p.data[:] += 1``)."""
        bk = self._bk
        return _new_tensor(bk.detach(self._native), bk, self._dev, self._dtype)

    @data.setter
    def data(self, value: Any) -> None:
        t = same_backend(self, value)
        if t.shape == self.shape:
            with no_grad():  # outside autograd, as in PyTorch, implicit recording included
                self[...] = t.to(self._dev)
            return
        t = t.to(self._dev)
        self._dtype = t._dtype
        self._set_variable(_on(self._bk, self._dev, self._bk.make_variable, t._native))

    @property
    def grad(self) -> Tensor | None:
        """The gradient ``loss.backward()`` accumulated (a Tensor of this parameter's shape,
        dtype and device), or None before any backward and after ``zero_grad``.

        On backends with autograd it is the framework's own gradient of the variable
        (``p.native.grad`` on torch and paddle), so native optimisers and tools see it too.
        """
        get = self._bk.grad
        if get is None or self._var is None:
            return self._grad
        native = get(self._var)
        if native is None:
            self._grad = None
            return None
        cached = self._grad
        if cached is not None and cached._native is native and type(cached) is _Gradient:
            return cached
        self._grad = t = _Gradient(native, self._bk, self._dev, self._dtype)
        t._param = self
        return t

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is None:
            t = None
        else:
            t = same_backend(self, value).to(self._dev)
            if t.shape != self.shape:
                raise ValueError(
                    f"Expected a gradient of the parameter's shape {self.shape}. "
                    f"Received: shape {t.shape}"
                )
        put = self._bk.set_grad
        if put is not None and self._var is not None:
            put(self._var, None if t is None else t._native)
        self._grad = t

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        """A new parameter (a new framework variable made by the adapter) with a copy of the
        values and of the gradient; ``copy.deepcopy`` of a Block keeps tied parameters tied."""
        new = object.__new__(type(self))
        memo[id(self)] = new
        bk, dev = self._bk, self._dev
        new._bk, new._dev, new._dtype = bk, dev, self._dtype
        new._grad = None
        new.requires_grad = self.requires_grad
        if not self.initialized:
            new._var = None
            new._pending = copy.deepcopy(self._pending, memo)
            return new
        new._pending = None
        new._set_variable(_on(bk, dev, bk.make_variable, self._native))
        grad = self.grad
        if grad is not None:
            new.grad = copy.deepcopy(grad, memo)
        return new

    def _move(self, dev: Any) -> None:
        """Move the storage to ``dev`` (a new variable there); the Parameter keeps its identity."""
        dev = as_device(dev)
        if dev is self._dev:
            return
        bk = self._bk
        check_available(bk, dev)
        native = bk.to_device(self._native, dev)
        self._dev = dev
        self._set_variable(_on(bk, dev, bk.make_variable, native))

    def _cast(self, dtype: Any) -> None:
        """Store the values as ``dtype`` (a new variable); the Parameter keeps its identity and
        loses its gradient (it belonged to the old variable)."""
        dtype = _dt.as_dtype(dtype)
        if dtype is self._dtype:
            return
        bk, dev = self._bk, self._dev
        native = _on(bk, dev, bk.ops.astype, self._native, dtype)
        self._dtype = dtype
        self._grad = None
        self._set_variable(_on(bk, dev, bk.make_variable, native))


class _Gradient(Tensor):
    """``p.grad`` on a backend with autograd: a write into it (``g[...] = 0``, ``g += 1``)
    changes the gradient the parameter holds, also where the framework's tensors are
    immutable (TensorFlow), so optimisers and later reads of ``p.grad`` see it."""

    __slots__ = ("_param",)
    _param: Parameter

    def __setitem__(self, key: Any, value: Any) -> None:
        before = self._native
        super().__setitem__(key, value)
        p = self._param
        bk = p._bk
        # a write that replaced the tensor: store it, unless the gradient changed meanwhile
        if self._native is not before and p._var is not None and bk.grad(p._var) is before:
            bk.set_grad(p._var, self._native)


def _deferred(*_args: Any) -> NoReturn:
    raise DeferredInitializationError(
        "Expected an initialised parameter. Received: an uninitialised parameter of a lazy "
        "layer, whose shape is unknown until its first call. Run a forward pass first "
        "(e.g. net(X)) so that the shapes can be inferred, then use the parameter."
    )


class UninitializedParameter(Parameter):
    """A parameter of a lazy layer before its first call: it has a backend, device and dtype
    but no shape and no values yet.

    ``initialized`` is False and every use of its values raises
    ``md.DeferredInitializationError``. Initialisers from ``nn.init`` applied to it are
    recorded and run, in order, when the layer materialises it.
    """

    __slots__ = ()

    initialized = False
    _native = property(_deferred, _deferred)
    native = property(_deferred)
    data = property(_deferred, _deferred)

    def __init__(self, dtype: Any = None, device: Any = None, requires_grad: bool = True) -> None:
        bk = registry.current()
        self._bk = bk
        self._dev = _device(bk, device)
        self._dtype = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
        self._var = None
        self._grad = None
        self.requires_grad = bool(requires_grad)
        self._pending = []

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    def _move(self, dev: Any) -> None:
        dev = as_device(dev)
        check_available(self._bk, dev)
        self._dev = dev

    def _cast(self, dtype: Any) -> None:
        self._dtype = _dt.as_dtype(dtype)

    def _defer(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        """Record an initialiser to run when the parameter gets its shape."""
        if self._pending is not None:  # always a list while uninitialised
            self._pending.append((fn, args, kwargs))

    def _materialize(self, values: np.ndarray | Tensor, replay: bool = True) -> None:
        """Give the parameter its shape and values, then run the recorded initialisers."""
        bk, dev = self._bk, self._dev
        if isinstance(values, Tensor):
            t = same_backend(self, values).to(dev)
            native = t._native
            if t._dtype is not self._dtype:
                native = _on(bk, dev, bk.ops.astype, native, self._dtype)
        else:
            arr = np.ascontiguousarray(values, dtype=self._dtype.numpy)
            native = bk.from_numpy(arr, dev)
        pending = self._pending
        # materialising turns this very object (its identity is in the layer and optimisers)
        # into a plain Parameter, which the checker cannot model
        self.__class__ = Parameter  # type: ignore[assignment]
        self._pending = None
        self._set_variable(_on(bk, dev, bk.make_variable, native))
        if replay:
            for fn, args, kwargs in pending or ():
                fn(self, *args, **kwargs)


def same_backend(p: Parameter, value: Any) -> Tensor:
    """``value`` as a Tensor of ``p``'s backend and dtype (converted through host memory if needed)."""
    bk = p._bk
    if isinstance(value, Tensor):
        t = value if value._bk is bk else value.to_backend(bk.name)
    elif bk.tensor_types and isinstance(value, bk.tensor_types):
        native = value
        t = _new_tensor(native, bk, bk.device_of(native), bk.dtype_of(native))
    else:
        arr = np.ascontiguousarray(np.asarray(value), dtype=p._dtype.numpy)
        t = _new_tensor(bk.from_numpy(arr, p._dev), bk, p._dev, p._dtype)
    if t._dtype is not p._dtype:
        t = t.astype(p._dtype)
    return t


def clear_grads(params: Iterable[Parameter]) -> None:
    """``p.grad = None`` for every parameter: one ``clear_grads`` call per adapter that batches
    it (the optional hook: drop the gradients of a list of variables at once), the per-variable
    ``set_grad(var, None)`` elsewhere."""
    batched: dict[int, tuple[Callable[[list[Any]], None], list[Parameter]]] = {}
    params = list(params)
    for p in params:
        hook = p._bk.clear_grads
        if hook is None or p._var is None:
            p.grad = None
        else:
            batched.setdefault(id(p._bk), (hook, []))[1].append(p)
    for hook, ps in batched.values():
        hook([p._var for p in ps])
        for p in ps:
            p._grad = None
