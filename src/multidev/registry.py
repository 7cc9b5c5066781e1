"""Backend discovery (entry points), selection (env var, process-wide, context-local)."""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

from .errors import BackendError

if TYPE_CHECKING:
    from .contract import Adapter

__all__ = [
    "Framework",
    "available_backends",
    "framework",
    "get_backend",
    "install_hint",
    "set_backend",
    "use_backend",
]

GROUP = "multidev.backends"
ENV = "MULTIDEV_BACKEND"
DEFAULT = "numpy"

_lock = threading.RLock()
_entry_points: dict[str, metadata.EntryPoint] | None = None
_adapters: dict[str, Adapter] = {}
_global: Adapter | None = None
_chosen_by = "default"
_context: contextvars.ContextVar[Adapter | None] = contextvars.ContextVar(
    "multidev_backend", default=None
)
#: use_backend scopes entered and not left, in any thread: while none is, current() reads no
#: ContextVar (a plain global read, which torch.compile traces without a graph break)
_scopes = 0


@dataclass(frozen=True)
class Framework:
    """What multidev needs to know of a framework without importing it: its import name, the
    distributions that install it (the first one is the one to install), and the extra of
    multidev that pulls it in. An adapter package exposes one as ``FRAMEWORK`` next to its
    lazily imported ``Backend``."""

    name: str
    distributions: tuple[str, ...] = ()
    extra: str | None = None
    #: called only when the framework is imported in this process: why ``fork`` would be
    #: unsafe now (its runtime has started threads or a device context a child cannot use),
    #: or None when forking is safe. None (the default): imported means unsafe.
    fork_unsafe: Callable[[], str | None] | None = None

    def fork_hazard(self) -> str | None:
        """Why forking this process is unsafe because of this framework, or None."""
        if self.name not in sys.modules:
            return None
        if self.fork_unsafe is None:
            return (
                f"{self.name} is imported in this process, and its runtime threads do not "
                "survive fork"
            )
        return self.fork_unsafe()

    def install_hint(self) -> str:
        """The command that installs the framework: ``pip install 'multidev[torch]'``."""
        if self.extra:
            return f"pip install 'multidev[{self.extra}]'"
        return f"pip install {(self.distributions or (self.name,))[0]}"


def _discover() -> dict[str, metadata.EntryPoint]:
    global _entry_points
    if _entry_points is None:
        eps = {ep.name: ep for ep in metadata.entry_points(group=GROUP)}
        if DEFAULT not in eps:  # running from a source tree without installed metadata
            eps[DEFAULT] = metadata.EntryPoint(DEFAULT, "multidev_numpy:Backend", GROUP)
        _entry_points = dict(sorted(eps.items()))
    return _entry_points


def registered_backends() -> list[str]:
    """Every adapter registered in the ``multidev.backends`` group, installed or not."""
    return list(_discover())


def adapter_package(name: str) -> str | None:
    """The package the adapter registered as ``name`` comes from (its entry point's module),
    where its parts live (``distributed``, ``reference``, …); None for an unregistered name."""
    ep = _discover().get(name)
    return None if ep is None else ep.module


def framework_installed(name: str) -> bool:
    """Whether the framework called ``name`` can be imported, found without importing it."""
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def available_backends() -> list[str]:
    """Registered adapters whose framework is installed (found without importing it)."""
    return [n for n in _discover() if framework_installed(framework(n).name)]


def framework(name: str) -> Framework:
    """What the adapter registered as ``name`` says of its framework (import name,
    distributions, install extra), read from its package without importing the framework."""
    ep = _discover().get(name)
    if ep is not None:
        try:
            found = getattr(importlib.import_module(ep.module), "FRAMEWORK", None)
        except ImportError:
            found = None
        if isinstance(found, Framework):
            return found
    return Framework(name, (name,))


def install_hint(name: str) -> str:
    """The command that installs the framework of backend ``name``."""
    return framework(name).install_hint()


def load(name: str) -> Adapter:
    """The adapter called ``name``, imported (and its framework with it) on first use."""
    try:
        return _adapters[name]
    except KeyError:
        pass
    with _lock:
        if name in _adapters:
            return _adapters[name]
        eps = _discover()
        if name not in eps:
            raise BackendError(
                f"Expected one of the installed backends {available_backends()}. "
                f"Received: {name!r}. Set {ENV} or call md.set_backend() with one of those."
            )
        if not framework_installed(framework(name).name):
            raise ImportError(
                f"The {name} backend needs the {name} framework, which is not installed. "
                f"Install it with: {install_hint(name)}"
            )
        try:
            cls = eps[name].load()
        except ImportError as e:
            raise ImportError(
                f"The {name} backend could not be imported ({e}). "
                f"Install it with: {install_hint(name)}"
            ) from e
        adapter = cls()
        _adapters[name] = adapter
        return adapter


def _from_env() -> Adapter:
    global _global, _chosen_by
    with _lock:
        if _global is None:
            name = os.environ.get(ENV, "").strip()
            if name:
                _chosen_by = f"environment variable {ENV}={name}"
            else:
                name, _chosen_by = DEFAULT, f"default ({ENV} is not set)"
            _global = load(name)
        return _global


def current() -> Adapter:
    """The active adapter: ``use_backend`` scope, else ``set_backend``, else the environment."""
    if _scopes:
        bk = _context.get()
        if bk is not None:
            return bk
    return _global if _global is not None else _from_env()


def get_backend() -> str:
    """Name of the active backend: the name its adapter is registered under (one of
    ``registered_backends()``: 'numpy', 'torch', …)."""
    return current().name


def chosen_by() -> str:
    """How the active backend was chosen, in words."""
    if _scopes and _context.get() is not None:
        return "md.use_backend() scope"
    current()
    return _chosen_by


def set_backend(name: str) -> None:
    """Select the backend for the whole process."""
    global _global, _chosen_by
    bk = load(name)
    with _lock:
        _global = bk
        _chosen_by = f"md.set_backend({name!r})"


@contextlib.contextmanager
def use_backend(name: str) -> Iterator[str]:
    """Select the backend inside a ``with`` block (context-local: threads and tasks see their own)."""
    global _scopes
    token = _context.set(load(name))
    with _lock:
        _scopes += 1
    try:
        yield name
    finally:
        _context.reset(token)
        with _lock:
            _scopes -= 1
