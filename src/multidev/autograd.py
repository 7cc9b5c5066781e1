"""Autograd: ``md.autograd.record()``, ``md.no_grad()`` and ``Tensor.backward()``.

``with md.autograd.record():`` records the operations run inside it on the active backend
(a GradientTape on TensorFlow, ``autograd.record()`` on MXNet; PyTorch and Paddle record
eagerly anyway). ``loss.backward()`` then adds the gradient of ``loss`` to ``p.grad`` of
every parameter ``loss`` was computed from; gradients add up across calls and across the
uses of a tied parameter until ``zero_grad``, as in PyTorch. It uses the innermost active
``record()`` block of the loss's backend, else the last one that ended, and frees that
recording unless ``retain_graph=True``.

The per-framework primitives are the adapter's (``contract.Autograd``); a backend without
them (the NumPy reference backend) has no autograd, and ``backward`` says which installed
backends have it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from types import MappingProxyType
from typing import Any, TypeVar

from . import registry
from .dispatch import asarray, to, to_backend
from .errors import AutogradError
from .tensors import Tensor
from .tracing import tracing, untraceable

__all__ = [
    "autograd_backends",
    "backward",
    "begin_implicit",
    "enable_grad",
    "end_implicit",
    "is_grad_enabled",
    "is_recording",
    "keep_last_recording",
    "no_grad",
    "paused",
    "record",
    "register_post_backward_hook",
    "set_grad_enabled",
]

F = TypeVar("F", bound=Callable[..., Any])

#: (adapter, recording) pairs of the record() blocks entered in this context, innermost last
_active: contextvars.ContextVar[tuple[tuple[Any, Any], ...]] = contextvars.ContextVar(
    "multidev_recordings", default=()
)
#: adapter -> the recording of its last record() block that ended in this context
_last: contextvars.ContextVar[MappingProxyType] = contextvars.ContextVar(
    "multidev_last_recording", default=MappingProxyType({})
)

#: adapter -> its implicit recording (see ``begin_implicit``), open until backward()
_implicit: dict[Any, Any] = {}
#: [whether gradients are recorded (md.is_grad_enabled), the pause that disables them or None]
_grad_state: list[Any] = [True, None]

#: id -> hook(adapter) run after every successful backward(), in registration order
_post_backward: dict[int, Callable[[Any], None]] = {}


class _HookHandle:
    __slots__ = ("_key",)

    def __init__(self, key: int) -> None:
        self._key = key

    def remove(self) -> None:
        """Stop calling the hook."""
        _post_backward.pop(self._key, None)


def register_post_backward_hook(hook: Callable[[Any], None]) -> _HookHandle:
    """Call ``hook(adapter)`` after every ``backward()`` that wrote gradients (how
    ``md.distributed.DistributedDataParallel`` averages them across processes). Returns a
    handle whose ``remove()`` unregisters it."""
    key = id(hook)
    while key in _post_backward:
        key += 1
    _post_backward[key] = hook
    return _HookHandle(key)


class record:
    """Record the operations run inside ``with md.autograd.record():`` so that
    ``loss.backward()`` can differentiate them.

    Optional on every backend with autograd (``loss.backward()`` works without it, as in
    PyTorch), and harmless: code written with it trains as before. On a backend without
    autograd (NumPy) it does nothing, and ``backward`` raises ``md.AutogradError``.
    """

    __slots__ = ("_bk", "_enabled", "_rec", "_token")

    def __init__(self) -> None:
        self._enabled = True
        self._bk: Any = None
        self._rec: Any = None
        self._token: Any = None

    def __enter__(self) -> record:
        if self._bk is not None:
            raise RuntimeError(
                "Expected a fresh md.autograd.record() for each with block. Received: one that "
                "is already entered. Write `with md.autograd.record():` again instead."
            )
        bk = registry.current()
        start = bk.record
        self._bk = bk
        if bk in _implicit:  # record() starts its own recording, as before implicit ones
            end_implicit(bk)
        self._enabled = bool(_grad_state[0])
        _set_enabled(True)  # record() inside no_grad() records, as enable_grad()
        if start is not None:
            rec = start()
            rec.__enter__()
            self._rec = rec
            if not _compiling(bk):
                self._token = _active.set((*_active.get(), (bk, rec)))
        return self

    def __exit__(self, *exc: Any) -> None:
        rec, bk = self._rec, self._bk
        self._rec = self._bk = None
        if rec is None:
            _set_enabled(self._enabled)
            return
        token, self._token = self._token, None
        try:
            rec.__exit__(*exc)
        finally:
            if token is not None:
                _active.reset(token)
                _last.set(MappingProxyType({**_last.get(), bk: rec}))
            _set_enabled(self._enabled)


def is_grad_enabled() -> bool:
    """Whether operations are recorded for ``backward()`` here (PyTorch's
    ``torch.is_grad_enabled``): False inside ``md.no_grad()`` or after
    ``md.set_grad_enabled(False)``."""
    return bool(_grad_state[0])


def _set_enabled(mode: bool) -> None:
    """Turn recording on or off on the active backend (its recordings paused while off)."""
    if mode == _grad_state[0]:
        return
    if mode:
        cm, _grad_state[1] = _grad_state[1], None
        _grad_state[0] = True
        if cm is not None:
            cm.__exit__(None, None, None)
        return
    cm = paused(registry.current())
    if cm is not None:
        cm.__enter__()
    _grad_state[0], _grad_state[1] = False, cm


class set_grad_enabled:
    """``md.set_grad_enabled(mode)``: record operations for ``backward()`` (True) or not
    (False), as PyTorch's ``torch.set_grad_enabled``. As a call it switches the mode at once;
    as ``with md.set_grad_enabled(mode):`` or a decorator it restores the mode from before
    on exit."""

    __slots__ = ("_mode", "_stack")

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._stack: list[bool] = [bool(_grad_state[0])]
        _set_enabled(self._mode)

    def __enter__(self) -> set_grad_enabled:
        if not self._stack:  # entered again (a decorator's later call)
            self._stack.append(bool(_grad_state[0]))
            _set_enabled(self._mode)
        return self

    def __exit__(self, *exc: Any) -> None:
        _set_enabled(self._stack.pop())

    def __call__(self, func: F) -> F:
        mode = self._mode
        self.__exit__(None, None, None)  # as a decorator: the mode applies in calls only

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class _GradMode:
    """A context manager and decorator that sets the grad mode until exit."""

    __slots__ = ("_stack",)
    _mode = False

    def __init__(self) -> None:
        self._stack: list[bool] = []

    def __enter__(self) -> Any:
        self._stack.append(bool(_grad_state[0]))
        _set_enabled(self._mode)
        return self

    def __exit__(self, *exc: Any) -> None:
        _set_enabled(self._stack.pop())

    def __call__(self, func: F) -> F:
        cls = type(self)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with cls():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):
    """Run without recording: ``with md.no_grad(): ...`` or as a decorator ``@md.no_grad()``.

    Nothing computed inside can be differentiated, and it costs no recording memory.
    """

    __slots__ = ()
    _mode = False


class enable_grad(_GradMode):
    """Record again inside ``md.no_grad()`` (PyTorch's ``torch.enable_grad``):
    ``with md.enable_grad(): ...`` or ``@md.enable_grad()``."""

    __slots__ = ()
    _mode = True


def begin_implicit() -> None:
    """Open the implicit recording of the active backend where it needs one (the adapter's
    ``implicit_record``: TensorFlow's and JAX's tapes; torch and Paddle record by themselves,
    and each MXNet op records itself) so that ``loss.backward()`` works without
    ``record()``, as in PyTorch. A Block call opens it when gradients are enabled and no
    recording of that backend is open; ``backward()`` and ``record()`` end it (backward()
    opens a fresh one), so it holds the operations since the last of those: one forward in
    a training loop. ``zero_grad`` leaves it open: PyTorch code calls it between the forward
    pass and ``backward()`` too (d2l's Trainer does)."""
    bk = registry.current()
    make = bk.implicit_record
    if bk in _implicit or not _grad_state[0] or not make:
        return
    if tracing() or _compiling(bk) or any(b is bk for b, _ in _active.get()):
        return  # a compiled function's trace records on its own
    start = make if callable(make) else bk.record  # True: the adapter's record()
    if start is None:
        return
    rec = start()
    rec.__enter__()
    _implicit[bk] = rec


def end_implicit(bk: Any) -> None:
    """Close and free the implicit recording of ``bk``, if one is open."""
    rec = _implicit.pop(bk, None)
    if rec is not None:
        rec.__exit__(None, None, None)


@contextlib.contextmanager
def keep_last_recording() -> Iterator[None]:
    """Forget the recordings that end inside (a traced function's tapes are not the
    caller's): the last recording of each backend is the one from before."""
    last = _last.get()
    try:
        yield
    finally:
        _last.set(last)


def _compiling(bk: Any) -> bool:
    """Whether a compiler that follows Python (``torch.compile``, the adapter's
    ``jit_compiling``) is tracing this code. Its recordings need no bookkeeping (the
    framework records eagerly and ``backward`` needs no recording), and skipping the
    ContextVars, which such a tracer cannot follow, keeps the graph in one piece."""
    compiling = bk.jit_compiling
    return compiling is not None and compiling()


def paused(bk: Any) -> Any:
    """A context manager that stops recording on ``bk`` (its active recordings included), or
    None where ``bk`` has no autograd."""
    pause = bk.no_grad
    if pause is None:
        return None
    if _compiling(bk):
        return pause(())
    recs = [r for b, r in _active.get() if b is bk]
    implicit = _implicit.get(bk)
    if implicit is not None:
        recs.append(implicit)
    return pause(recs)


def is_recording() -> bool:
    """Whether a ``record()`` block of the active backend is entered here."""
    bk = registry.current()
    return any(b is bk for b, _ in _active.get())


def autograd_backends() -> list[str]:
    """Installed backends whose adapter declares the ``"autograd"`` capability (this loads
    their frameworks)."""
    names = []
    for name in registry.available_backends():
        try:
            if "autograd" in registry.load(name).capabilities:
                names.append(name)
        except Exception:  # a broken install has no autograd to offer
            continue
    return names


def _no_autograd(bk: Any) -> AutogradError:
    others = [n for n in autograd_backends() if n != bk.name]
    if others:
        where = (
            f"Backends with autograd installed here: {', '.join(others)}. Select one with "
            f"MULTIDEV_BACKEND={others[0]} or md.set_backend({others[0]!r})."
        )
    else:
        where = (
            "No backend with autograd is installed here: install one, e.g. "
            f"{registry.install_hint('torch')}, then select it with MULTIDEV_BACKEND=torch."
        )
    return AutogradError(
        f"Expected a backend with autograd for backward(). Received: a tensor of the "
        f"{bk.name} backend, which has no autograd (it computes values only). {where}"
    )


def _gradient(t: Tensor, gradient: Any) -> Any:
    """The native output gradient for ``backward``: None (ones) for a one-element ``t``."""
    if gradient is None:
        if t.size != 1:
            raise AutogradError(
                f"Expected a one-element tensor for backward() without a gradient. Received: "
                f"shape {t.shape}. Reduce it first (e.g. loss.mean()), or pass gradient= a "
                f"tensor of shape {t.shape}."
            )
        return None
    if not isinstance(gradient, Tensor):
        gradient = asarray(gradient, dtype=t._dtype, device=t._dev)
    if gradient._bk is not t._bk:
        gradient = to_backend(gradient, t._bk.name)
    if gradient.shape != t.shape:
        raise AutogradError(
            f"Expected a gradient of the tensor's shape {t.shape}. Received: shape "
            f"{gradient.shape}."
        )
    return to(gradient, t._dev, t._dtype)._native


def backward(t: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
    """Add the gradient of ``t`` to ``p.grad`` of every parameter it was computed from
    (inside ``md.autograd.record()``); gradients add up until ``zero_grad``. This is
    ``Tensor.backward``.

    ``gradient`` (t's shape) is required unless ``t`` has one element. The recording is
    freed afterwards unless ``retain_graph``. Raises ``md.AutogradError`` on a tensor that
    was not recorded or on a backend without autograd (NumPy).
    """
    bk = t._bk
    if bk.backward is None:
        raise _no_autograd(bk)
    reason = bk.jit_backward_unsupported
    if reason is not None:
        untraceable(reason)
    if t._dtype.kind != "f":
        raise AutogradError(
            f"Expected a floating-point tensor for backward(). Received: {t._dtype}. "
            "Only floating-point results have gradients."
        )
    native_grad = _gradient(t, gradient)
    rec = None
    from_last = False
    if not _compiling(bk):
        for b, r in reversed(_active.get()):
            if b is bk:
                rec = r
                break
        last = _last.get()
        implicit = _implicit.get(bk) if rec is None else None
        from_last = rec is None and implicit is None
        if implicit is not None:
            rec = implicit
        elif from_last:
            rec = last.get(bk)
    found = bk.backward(t._native, native_grad, rec, bool(retain_graph))
    if rec is not None and rec is _implicit.get(bk) and not retain_graph:
        end_implicit(bk)
        begin_implicit()  # the next forward is recorded too, Block or plain ops
    if not found:
        raise AutogradError(
            f"Expected a tensor computed from trainable parameters with gradients enabled. "
            f"Received: a tensor with no recorded computation on the {bk.name} backend "
            "(computed under md.no_grad(), from no Parameter, or from a recording an earlier "
            "backward() already freed). Compute the loss outside md.no_grad(), or pass "
            "retain_graph=True to the earlier backward()."
        )
    if from_last and rec is not None and not retain_graph:
        _last.set(MappingProxyType({b: r for b, r in last.items() if b is not bk}))
    for hook in list(_post_backward.values()):
        hook(bk)
