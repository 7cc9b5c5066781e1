"""``net.native``: a Block as the framework's own module.

The adapter builds the native module (``native_module(block)``: a torch ``nn.Module``, a
``tf.Module``, a ``paddle.nn.Layer``, a gluon ``Block``) mirroring the Block tree, with the
Block's very variables as its parameters, so that native optimisers and tools train the
Block. Its call runs the Block through ``call`` below: native tensors in, native tensors out.
"""

from __future__ import annotations

from typing import Any

from .. import registry
from ..dispatch import new_tensor as _new_tensor
from ..tensors import Tensor

__all__ = [
    "NativeBlockMixin",
    "TrainModeMixin",
    "adapter_of",
    "call",
    "call_native",
    "mirror",
    "native_module",
]


def adapter_of(block: Any) -> Any:
    """The adapter of ``block``'s parameters (the current backend's for a Block without any)."""
    for p in block.parameters():
        return p._bk
    return registry.current()


def _key(block: Any) -> tuple:
    """What the native module depends on: the tree's blocks and their variables."""
    return tuple(
        (id(m), tuple((n, id(p._var)) for n, p in m._parameters.items() if p is not None))
        for _, m in block.named_modules()
    )


def native_module(block: Any) -> Any:
    """The native module for ``block``, built by its backend's adapter and reused while the
    Block's tree and variables stay the same."""
    uninitialised = [n for n, p in block.named_parameters() if not p.initialized]
    if uninitialised:
        raise RuntimeError(
            f"Expected initialised parameters for net.native. Received: {type(block).__name__} "
            f"with uninitialised parameters {uninitialised} (lazy layers). Run a forward pass "
            "first (e.g. net(X)) so that their shapes are known."
        )
    bk = adapter_of(block)
    build = bk.native_module
    if build is None:
        raise TypeError(
            f"Expected a backend with native modules for net.native. Received: a Block of the "
            f"{bk.name} backend, which has none (its arrays are plain NumPy arrays). Use a "
            "framework backend, e.g. MULTIDEV_BACKEND=torch."
        )
    key = _key(block)
    cached = block.__dict__.get("_native_module")
    if cached is not None and cached[0] == key:
        return cached[1]
    module = build(block)
    block.__dict__["_native_module"] = (key, module)
    return module


def mirror(native: Any, block: Any, memo: dict[int, Any] | None) -> tuple[list, list]:
    """What an adapter's native module registers for ``block``: ``(name, variable)`` of its own
    parameters and ``(name, native sub-module)`` of its children, each child built once
    (``type(native)(child, memo)``) however often it is used (tied blocks stay one object)."""
    memo = {} if memo is None else memo
    memo[id(block)] = native
    params = [(n, p.native) for n, p in block._parameters.items() if p is not None]
    children = []
    for name, child in block._modules.items():
        if child is not None:
            sub = memo.get(id(child))
            children.append((name, sub if sub is not None else type(native)(child, memo)))
    return params, children


class NativeBlockMixin:
    """What every adapter's native module class shares; the adapter subclasses it together
    with the framework's module class and says how that class registers parameters and
    children. ``__init__(block, memo)`` runs the framework class's ``__init__()``, then
    ``_md_mirror(block, memo)``, which registers the Block's own variables and a native
    module per child; ``forward`` runs the Block on native tensors."""

    #: the framework's module class, named in the error for a reserved attribute name
    _md_framework_class = "the native module"
    #: attribute names the framework's module class (the adapter class's last base) uses
    #: itself, where an assignment would clash; set for each adapter class
    _md_reserved: frozenset[str] = frozenset()
    #: the framework's methods that register a parameter and a child module by name (torch
    #: ``register_parameter``, ``add_module``); None: plain attributes, checked by ``_md_put``
    _md_register: tuple[str, str] | None = None
    _md_block: Any

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._md_reserved = frozenset(dir(cls.__bases__[-1]))

    def __init__(self, block: Any, memo: dict[int, Any] | None = None) -> None:
        super().__init__()
        self._md_mirror(block, memo)

    def _md_mirror(self, block: Any, memo: dict[int, Any] | None) -> None:
        object.__setattr__(self, "_md_block", block)
        params, children = mirror(self, block, memo)
        for name, var in params:
            self._md_add_parameter(name, var)
        for name, sub in children:
            self._md_add_child(name, sub)

    def _md_put(self, name: str, value: Any) -> None:
        """Set ``value`` as attribute ``name``, refusing names the framework's class uses."""
        if name in self._md_reserved or name.startswith("_"):
            raise ValueError(
                f"Expected parameter and sub-block names that {self._md_framework_class} does "
                f"not use. Received: {name!r} in {type(self._md_block).__name__}. Rename that "
                "attribute of the Block to use it through net.native on this backend."
            )
        setattr(self, name, value)

    def _md_add_parameter(self, name: str, var: Any) -> None:
        if self._md_register is None:
            self._md_put(name, var)
        else:
            getattr(self, self._md_register[0])(name, var)

    def _md_add_child(self, name: str, sub: Any) -> None:
        if self._md_register is None:
            self._md_put(name, sub)
        else:
            getattr(self, self._md_register[1])(name, sub)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the Block on native tensors; native tensors out."""
        return call(self._md_block, args, kwargs)


class TrainModeMixin:
    """``train()``/``eval()`` for a native module class whose framework class has them (torch
    ``nn.Module``, ``paddle.nn.Layer``): the framework's mode, then the Block's (``Dropout``).
    Placed before ``NativeBlockMixin`` in the adapter's bases."""

    _md_block: Any

    def train(self, mode: bool = True) -> Any:
        super().train(mode)  # type: ignore[misc]
        self._md_block.train(mode)
        return self

    def eval(self) -> Any:
        return self.train(False)


def _wrap(bk: Any, x: Any) -> Any:
    if isinstance(x, bk.tensor_types):
        return _new_tensor(x, bk, bk.device_of(x), bk.dtype_of(x))
    if isinstance(x, (list, tuple)):
        items = [_wrap(bk, v) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    if isinstance(x, dict):
        return type(x)((k, _wrap(bk, v)) for k, v in x.items())
    return x


def _unwrap(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x._native
    if isinstance(x, (list, tuple)):
        items = [_unwrap(v) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    if isinstance(x, dict):
        return type(x)((k, _unwrap(v)) for k, v in x.items())
    return x


def call(block: Any, args: tuple, kwargs: dict) -> Any:
    """Run ``block`` on native tensors (also inside lists, tuples and dicts) and return
    native tensors in the same structure as its output."""
    bk = adapter_of(block)
    return _unwrap(block(*_wrap(bk, args), **_wrap(bk, kwargs)))


def call_native(fn: Any, bk: Any, args: tuple, kwargs: dict) -> Any:
    """Run the native callable ``fn`` (a framework module: torch's ``DistributedDataParallel``
    around ``net.native``) on multidev tensors of adapter ``bk``; multidev tensors out."""
    return _wrap(bk, fn(*_unwrap(args), **_unwrap(kwargs)))
