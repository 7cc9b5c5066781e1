"""``nn.Block`` (alias ``nn.Module``) and ``nn.Sequential``: the tree of layers and parameters.

Blocks and Parameters assigned as attributes register in assignment order, so parameter
names (``"0.block 1.2.weight"``), ``state_dict`` keys and ``print(net)`` are PyTorch's. A
block that is used in two places is one object: ``named_parameters`` yields its parameters
once, ``state_dict`` lists them under every name (mapping to the same Tensor).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, TypeVar

import numpy as np

from .. import dtypes as _dt
from ..autograd import begin_implicit as _begin_implicit
from ..autograd import no_grad as _no_grad
from ..device import as_device, check_available
from ..dispatch import as_tensor as _as_tensor
from ..dispatch import new_tensor as _new_tensor
from ..errors import StateDictError
from ..jit import Jitted
from ..tensors import Tensor
from .parameter import Parameter, UninitializedParameter
from .parameter import same_backend as _same_backend

__all__ = [
    "Block",
    "IncompatibleKeys",
    "Module",
    "ModuleDict",
    "ModuleList",
    "ParameterDict",
    "ParameterList",
    "Sequential",
]

_B = TypeVar("_B", bound="Block")


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(..., strict=False)`` skipped."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


def _shape_of(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    if shape is None:
        shape = np.shape(value)
    return tuple(int(s) for s in shape)


#: bumped whenever a plain (not parameter, buffer or sub-block) attribute of any Block is set
#: or deleted, or a Block is made: md.jit compares it at each call instead of every block's
#: attributes
ATTRIBUTES_VERSION = [0]


class Block:
    """Base class of layers and models: define ``__init__`` (call ``super().__init__()`` first,
    then assign sub-blocks and Parameters as attributes) and ``forward``; call the block to run
    it.

    A lazy block (``_lazy = True``) defines ``initialize_parameters(*inputs)``; its first call
    runs that once, with the inputs, to infer the shapes of its parameters, then runs any
    initialisers recorded for them, and the block becomes ``cls_to_become`` if it names one.
    """

    _lazy = False
    training: bool

    def __init__(self) -> None:
        ATTRIBUTES_VERSION[0] += 1
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers"] = set()
        d["_modules"] = {}

    # ------------------------------------------------------------ calling
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"Expected {type(self).__name__} to define forward(). Received: a Block subclass "
            "without one. Define `def forward(self, X): ...` returning the block's output."
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _begin_implicit()
        if self._lazy:
            self._maybe_build(args, kwargs)
        return self.forward(*args, **kwargs)

    def _maybe_build(self, args: tuple, kwargs: dict) -> None:
        """Infer the shapes of a lazy block's parameters from its first inputs, in one place."""
        self.initialize_parameters(*args, **kwargs)
        cls = getattr(self, "cls_to_become", None)
        if cls is not None:
            self.__class__ = cls
        else:
            self.__dict__["_lazy"] = False
        ATTRIBUTES_VERSION[0] += 1

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"Expected the lazy block {type(self).__name__} to define initialize_parameters(). "
            "Received: none. Define it to materialise the parameters from the first inputs."
        )

    # ------------------------------------------------------------ registration
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError(
                    "Expected Block.__init__() to run before a Parameter is assigned. "
                    f"Received: {name!r} assigned first. Call super().__init__() first."
                )
            self._forget(name, keep="_parameters")
            params[name] = value
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"Expected an nn.Parameter or None for parameter {name!r}. "
                    f"Received: {type(value).__name__}. Wrap it: nn.Parameter(value)."
                )
            params[name] = None
            return
        modules = d.get("_modules")
        if isinstance(value, Block):
            if modules is None:
                raise AttributeError(
                    "Expected Block.__init__() to run before a sub-block is assigned. "
                    f"Received: {name!r} assigned first. Call super().__init__() first."
                )
            self._forget(name, keep="_modules")
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"Expected a Block or None for sub-block {name!r}. "
                    f"Received: {type(value).__name__}"
                )
            modules[name] = None
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"Expected a Tensor or None for buffer {name!r}. "
                    f"Received: {type(value).__name__}"
                )
            buffers[name] = value
            return
        ATTRIBUTES_VERSION[0] += 1
        object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str = "") -> None:
        """Drop ``name`` from every registry but ``keep`` (so a re-assignment keeps its place)."""
        d = self.__dict__
        d.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            if store != keep:
                d[store].pop(name, None)
        d["_non_persistent_buffers"].discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            items = d.get(store)
            if items is not None and name in items:
                return items[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            items = d.get(store)
            if items is not None and name in items:
                del items[name]
                d["_non_persistent_buffers"].discard(name)
                return
        ATTRIBUTES_VERSION[0] += 1
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        for store in ("_parameters", "_buffers", "_modules"):
            names.update(self.__dict__.get(store, ()))
        return sorted(names)

    def _check_name(self, name: Any, kind: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"Expected Block.__init__() to run before a {kind} is registered. "
                "Call super().__init__() first."
            )
        if not isinstance(name, str):
            raise TypeError(f"Expected a string as {kind} name. Received: {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f"Expected a non-empty {kind} name without '.'. Received: {name!r}")
        d = self.__dict__
        if name in d or (hasattr(type(self), name) and name not in d[f"_{kind}s"]):
            raise KeyError(
                f"Expected a new {kind} name. Received: {name!r}, which is already an "
                f"attribute of {type(self).__name__}"
            )

    def add_module(self, name: str, module: Block | None) -> None:
        """Register ``module`` as a sub-block called ``name`` (any string without '.')."""
        if module is not None and not isinstance(module, Block):
            raise TypeError(f"Expected a Block or None. Received: {type(module).__name__}")
        self._check_name(name, "module")
        self._forget(name, keep="_modules")
        self.__dict__["_modules"][name] = module

    register_module = add_module

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (or None, for an absent optional parameter) as ``name``."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"Expected an nn.Parameter or None. Received: {type(param).__name__}. "
                "Wrap it: nn.Parameter(value)."
            )
        self._check_name(name, "parameter")
        self._forget(name, keep="_parameters")
        self.__dict__["_parameters"][name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register a non-trainable tensor that moves with ``to()`` and, if ``persistent``,
        is saved in ``state_dict``."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"Expected an md.Tensor or None. Received: {type(tensor).__name__}")
        self._check_name(name, "buffer")
        self._forget(name, keep="_buffers")
        self.__dict__["_buffers"][name] = tensor
        if not persistent:
            self.__dict__["_non_persistent_buffers"].add(name)

    # ------------------------------------------------------------ traversal
    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Block]]:
        """This block and every block below it, depth first, each once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Block]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Block]]:
        memo: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self) -> Iterator[Block]:
        for _, m in self.named_children():
            yield m

    def _named_members(
        self, store: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Any]]:
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        memo: set[int] = set()
        for mod_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in memo:
                        continue
                    memo.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """(name, parameter) pairs with PyTorch's names; a shared parameter comes once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop the gradient of every parameter (PyTorch's ``Module.zero_grad``);
        ``set_to_none=False`` sets the existing ones to zeros instead."""
        from ..creation import zeros_like
        from .parameter import clear_grads

        params = list(self.parameters())
        if set_to_none:
            clear_grads(params)
            return
        for p in params:
            if p.grad is not None:
                p.grad = zeros_like(p.grad)

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self: _B, fn: Callable[[Block], Any]) -> _B:
        """Call ``fn`` on every sub-block (children first, recursively), then on this block."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ native interop
    @property
    def native(self) -> Any:
        """This block as the framework's own module (torch ``nn.Module``, ``tf.Module``,
        ``paddle.nn.Layer``, gluon ``Block``): its parameters are this block's very variables
        (no copies), so native optimisers train this block, and calling it with native tensors
        runs ``forward`` and returns native tensors."""
        from .native import native_module

        return native_module(self)

    # ------------------------------------------------------------ copying
    def __deepcopy__(self, memo: dict[int, Any]) -> Block:
        """An independent block: the same tree (tied blocks and parameters stay tied within the
        copy), new parameters holding copies of the values, the same training flag; lazy
        blocks stay uninitialised. Built through the adapter, never by pickling."""
        new = object.__new__(type(self))
        ATTRIBUTES_VERSION[0] += 1
        memo[id(self)] = new
        d = new.__dict__
        for key, value in self.__dict__.items():
            if key != "_native_module":  # a view of this block's variables, rebuilt on demand
                d[key] = copy.deepcopy(value, memo)
        return new

    # ------------------------------------------------------------ compilation
    def hybridize(self, active: bool = True) -> Block:
        """Compile this block's forward in place with the framework's compiler (d2l's
        name; ``md.jit`` of the forward): later calls run the compiled forward.
        ``active=False`` goes back to eager. Returns the block."""
        d = self.__dict__
        d.pop("forward", None)
        if active:
            d["forward"] = Jitted(type(self).forward.__get__(self))
        return self

    # ------------------------------------------------------------ state
    def train(self: _B, mode: bool = True) -> _B:
        """Set training mode (``Dropout`` active) on this block and every block below it."""
        if not isinstance(mode, bool):
            raise TypeError(f"Expected a bool for train(mode). Received: {type(mode).__name__}")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self: _B) -> _B:
        """Set evaluation mode: ``train(False)``."""
        return self.train(False)

    def to(self: _B, device: Any = None, dtype: Any = None) -> _B:
        """Move every parameter and buffer to ``device`` and/or cast the floating-point ones to
        the floating-point ``dtype`` (``net.to(md.float64)`` passes a dtype as the first
        argument). Parameters keep their identity; their storage moves (a cast drops their
        gradients). Integer buffers (``num_batches_tracked``) keep their dtype. Returns the
        block itself. Raises TypeError for a dtype that is not floating-point."""
        if isinstance(device, _dt.DType) and dtype is None:
            device, dtype = None, device
        if dtype is not None:
            dtype = _dt.as_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(
                    f"Expected a floating-point dtype for Block.to. Received: {dtype}. Cast "
                    "integer tensors one by one with x.astype(dtype)."
                )
        params = list(self.parameters())
        dev = None if device is None else as_device(device)
        if dev is not None:
            for p in params:
                check_available(p._bk, dev)
        for p in params:
            if dev is not None:
                p._move(dev)
            if dtype is not None and p._dtype.is_floating_point:
                p._cast(dtype)
        for module in self.modules():
            bufs = module._buffers
            for name, buf in bufs.items():
                if buf is None:
                    continue
                if dev is not None:
                    buf = buf.to(dev)
                if dtype is not None and buf.dtype.is_floating_point:
                    buf = buf.astype(dtype)
                bufs[name] = buf
            if module._lazy:
                module._defer_to(dev, dtype)
        return self

    def _defer_to(self, device: Any, dtype: _dt.DType | None) -> None:
        """Record a move (``device``) or floating-point cast (``dtype``) made before a lazy
        block's first call, for what it creates then other than its UninitializedParameters
        (which record their own). None leaves that side as it was. Nothing by default."""

    def double(self: _B) -> _B:
        """Cast the floating-point parameters and buffers to float64: ``to(md.float64)``."""
        return self.to(dtype=_dt.float64)

    def float(self: _B) -> _B:
        """Cast the floating-point parameters and buffers to float32: ``to(md.float32)``."""
        return self.to(dtype=_dt.float32)

    def state_dict(self, *, prefix: str = "", keep_vars: bool = False) -> OrderedDict[str, Any]:
        """Every parameter and persistent buffer by name (ordered as ``named_parameters``).

        Values are Tensors sharing the parameters' storage; a parameter used under several
        names maps to the same Tensor object. ``keep_vars=True`` gives the Parameters.
        """
        out: OrderedDict[str, Any] = OrderedDict()
        views: dict[int, Any] = {}
        self._save_to(out, prefix, keep_vars, views)
        return out

    def _save_to(self, out: dict, prefix: str, keep_vars: bool, views: dict[int, Any]) -> None:
        for name, p in self._parameters.items():
            if p is None:
                continue
            if keep_vars or not p.initialized:
                out[prefix + name] = p
            else:
                view = views.get(id(p))
                if view is None:
                    view = views[id(p)] = p.data
                out[prefix + name] = view
        skip = self._non_persistent_buffers
        for name, b in self._buffers.items():
            if b is not None and name not in skip:
                out[prefix + name] = b
        for name, module in self._modules.items():
            if module is not None:
                module._save_to(out, prefix + name + ".", keep_vars, views)

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into this block's parameters and buffers, in place
        (they keep their identity and device; values are converted to their dtype).

        All or nothing: every value is checked (shape, numeric values) and converted before
        the first parameter changes. A lazy layer's uninitialised parameters take the loaded
        shapes if the layer accepts them (``LazyLinear(3)`` wants a ``(3, in_features)``
        weight and a ``(3,)`` bias). Raises one ``md.StateDictError`` listing every missing
        key, unexpected key (both only when ``strict``), shape mismatch, value that is not
        numeric (strings, None), value the cast to the target's dtype would change beyond
        rounding (complex into real; NaN, infinite, fractional or out-of-range into integers;
        finite values overflowing to inf, as float32 into float16) and tied parameter given
        two different values (these in ``mismatched_keys`` with the shape mismatches); the
        block is unchanged then. Convert values first where such a loss is meant.
        """
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(
                f"Expected a mapping of names to tensors. Received: {type(state_dict).__name__}"
            )
        if hasattr(state_dict, "for_model"):  # md.load_native's: layouts only the model knows
            state_dict = state_dict.for_model(self)
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        wanted = self._lazy_shapes(state_dict)
        lines: list[str] = []
        mismatched: list[str] = []
        converted: dict[str, Tensor] = {}
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            want = target.shape if getattr(target, "initialized", True) else wanted.get(key)
            got = _value_shape(value)
            if got is not None and want is not None and not _shape_fits(got, want):
                lines.append(
                    f"  shape mismatch for {key!r}: expected {_fmt_shape(want)}, received {got}"
                )
                mismatched.append(key)
                continue
            try:
                converted[key] = _converted(target, value)
            except (TypeError, ValueError, OverflowError) as e:
                lines.append(f"  value for {key!r} cannot become {target.dtype.name}: {e}")
                mismatched.append(key)
        lines += _tied_conflicts(own, state_dict, converted, mismatched)
        if strict:
            lines = (
                [f"  missing key {k!r}" for k in missing]
                + [f"  unexpected key {k!r}" for k in unexpected]
                + lines
            )
        if lines:
            raise StateDictError(
                f"Expected a state dict matching {type(self).__name__}'s parameters and buffers. "
                f"Received one with {len(lines)} problem(s):\n"
                + "\n".join(lines)
                + "\nNothing was loaded. Load a state dict of numeric tensors saved from the same "
                "architecture"
                + (
                    ", or pass strict=False to skip missing and unexpected keys." if strict else "."
                ),
                missing=missing if strict else (),
                unexpected=unexpected if strict else (),
                mismatched=mismatched,
            )
        for key, value in converted.items():
            target = own[key]
            if isinstance(target, UninitializedParameter):
                target._materialize(value, replay=False)
            else:
                with _no_grad():  # a copy outside autograd, as PyTorch's
                    target[...] = value
        return IncompatibleKeys(missing, unexpected)

    def _lazy_shapes(self, state_dict: Any) -> dict[str, tuple[int | str, ...]]:
        """The shapes that each lazy block below this one accepts for its uninitialised
        parameters, by state-dict key, given the shapes ``state_dict`` holds."""
        out: dict[str, tuple[int | str, ...]] = {}
        for prefix, module in self.named_modules(remove_duplicate=False):
            lazy = [n for n, p in module._parameters.items() if p is not None and not p.initialized]
            if not lazy:
                continue
            pre = prefix + "." if prefix else ""
            loaded = {}
            for name in module._parameters:
                if pre + name in state_dict:
                    shape = _value_shape(state_dict[pre + name])
                    if shape is not None:
                        loaded[name] = shape
            for name, accepted in module.lazy_parameter_shapes(loaded).items():
                if name in lazy:
                    out[pre + name] = accepted
        return out

    def lazy_parameter_shapes(
        self, loaded: dict[str, tuple[int, ...]]
    ) -> dict[str, tuple[int | str, ...]]:
        """For a lazy block: the shape each uninitialised parameter must have when it is
        loaded, given the shapes being loaded (``loaded``, by parameter name); a string
        stands for a size not fixed yet (``(3, "in_features")``). By default, none."""
        return {}

    # ------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The text inside the parentheses of this block's line in ``print(net)``."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): " + _addindent(repr(module), 2) for name, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


Module = Block


def _tied_conflicts(
    own: dict[str, Any], state_dict: Any, converted: dict[str, Tensor], mismatched: list[str]
) -> list[str]:
    """One line per name of a tied parameter (or buffer) that ``state_dict`` gives a value
    other than the one its first name gets: writing both would let the later one win."""
    names: dict[int, list[str]] = {}
    for key, target in own.items():
        if key in converted:
            names.setdefault(id(target), []).append(key)
    lines = []
    for keys in names.values():
        first = keys[0]
        for other in keys[1:]:
            if state_dict[other] is state_dict[first]:
                continue
            a, b = converted[first].numpy(), converted[other].numpy()
            if a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
                lines.append(
                    f"  different values for {first!r} and {other!r}, names of one tied "
                    "parameter: give both the same value"
                )
                mismatched.append(other)
    return lines


def _value_shape(value: Any) -> tuple[int, ...] | None:
    """The shape of a state-dict value, or None where it has none (checked on conversion)."""
    try:
        return _shape_of(value)
    except (TypeError, ValueError):
        return None


def _shape_fits(got: tuple[int, ...], want: tuple[int | str, ...]) -> bool:
    if len(got) != len(want):
        return False
    return all(isinstance(w, str) or g == w for g, w in zip(got, want, strict=True))


def _fmt_shape(shape: tuple[int | str, ...]) -> str:
    inner = ", ".join(str(s) for s in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def _numeric(value: Any) -> Any:
    """``value`` itself if it is a Tensor or native tensor, else as a NumPy array of numbers;
    ``TypeError`` for strings, None and other objects (NumPy would take None as NaN)."""
    if isinstance(value, Tensor):
        return value
    arr = np.asarray(value)
    if arr.dtype.kind not in "biufc" and arr.dtype != _dt.bfloat16.numpy:
        raise TypeError(
            f"expected numbers, received {type(value).__name__} of NumPy dtype {arr.dtype}"
        )
    return arr


def _check_lossless(target: Tensor, value: Any) -> None:
    """``ValueError`` where writing ``value`` (a Tensor, native tensor or NumPy array) into
    ``target``'s dtype would change its values beyond rounding: complex into real, NaN,
    infinite, fractional or out-of-range values into integers or bool, finite values that
    overflow to infinity (float32 into float16). Free when the dtypes already match."""
    want = target._dtype
    if isinstance(value, np.ndarray):
        if value.dtype == want.numpy:
            return
        arr = value
    else:
        t = value
        if not isinstance(t, Tensor):
            bk = target._bk
            t = _new_tensor(value, bk, bk.device_of(value), bk.dtype_of(value))
        if t._dtype is want:
            return
        arr = t.numpy()
    if arr.dtype == _dt.bfloat16.numpy:
        arr = arr.astype(np.float32)  # exact; NumPy's ufuncs know float32
    kind = arr.dtype.kind
    if kind == "c" and want.kind != "c":
        raise ValueError(
            f"expected numbers with no imaginary part, received {arr.dtype} values; "
            "load md.real(value) if dropping the imaginary parts is meant"
        )
    if not arr.size:
        return
    if want.kind in "iub" and kind in "fc":
        if not np.isfinite(arr).all():
            raise ValueError(f"NaN or infinite values ({arr.dtype}) have no {want.name} value")
        if (arr != np.round(arr)).any():
            raise ValueError(
                f"fractional values ({arr.dtype}) would be truncated; round them first if "
                "that is meant"
            )
    if want.kind == "b" and kind != "b":
        if not np.isin(arr, (0, 1)).all():
            raise ValueError(f"values other than 0 and 1 ({arr.dtype}) would all become True")
    elif want.kind in "iu" and kind != "b":
        info = np.iinfo(want.numpy)
        low, high = arr.real.min(), arr.real.max()
        if low < info.min or high > info.max:
            raise ValueError(
                f"values from {low} to {high} lie outside {want.name}'s range "
                f"[{info.min}, {info.max}]"
            )
    elif want.kind in "fc" and kind in "iuf":
        with np.errstate(over="ignore"):
            cast = arr.astype(want.numpy)
        if (np.isinf(cast) & np.isfinite(arr)).any():
            raise ValueError(
                f"finite values up to {np.abs(arr[np.isfinite(arr)]).max()} would become "
                f"infinite in {want.name}; scale or clip them first if that is meant"
            )


def _converted(target: Tensor, value: Any) -> Tensor:
    """``value`` as a Tensor ready to be written into ``target`` (its backend, device and
    dtype), without touching ``target``."""
    bk = target._bk
    native = bk.tensor_types and isinstance(value, bk.tensor_types)
    if not native or isinstance(value, np.ndarray):
        value = _numeric(value)
    if isinstance(target, UninitializedParameter):
        return _same_backend(target, value)
    _check_lossless(target, value)
    if isinstance(target, Parameter):
        return _same_backend(target, value).to(target._dev)
    return _as_like(target, value)


def _as_like(target: Tensor, value: Any) -> Tensor:
    """``value`` as a Tensor with ``target``'s backend, device and dtype."""
    bk = target._bk
    if isinstance(value, Tensor):
        t = value if value._bk is bk else value.to_backend(bk.name)
        t = t.to(target._dev)
        return t if t._dtype is target._dtype else t.astype(target._dtype)
    arr = np.ascontiguousarray(np.asarray(value), dtype=target._dtype.numpy)
    return _new_tensor(bk.from_numpy(arr, target._dev), bk, target._dev, target._dtype)


class Sequential(Block):
    """Blocks run one after the other: ``nn.Sequential(nn.Linear(4, 8), nn.ReLU())``.

    Sub-blocks are named "0", "1", … (or by the keys of an OrderedDict passed alone).
    Supports ``net[i]``, ``net[a:b]`` (a Sequential), ``len(net)``, iteration and ``append``.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _index(self, idx: int) -> str:
        n = len(self._modules)
        if not isinstance(idx, (int, np.integer)) or isinstance(idx, bool):
            raise TypeError(
                f"Expected an int or a slice to index a Sequential. Received: {type(idx).__name__}"
            )
        if not -n <= idx < n:
            raise IndexError(
                f"Expected an index in [{-n}, {n}) for a Sequential of {n} blocks. Received: {idx}"
            )
        return list(self._modules)[int(idx) % n]

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._index(idx)]

    def __setitem__(self, idx: int, module: Block) -> None:
        if not isinstance(module, Block):
            raise TypeError(f"Expected a Block. Received: {type(module).__name__}")
        self._modules[self._index(idx)] = module

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [self._index(idx)]:
            del self._modules[key]
        items = list(self._modules.values())
        self._modules.clear()
        for i, module in enumerate(items):
            self._modules[str(i)] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Block]:
        return iter(self._modules.values())

    def append(self, module: Block) -> Sequential:
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def forward(self, X: Any) -> Any:
        for module in self._modules.values():
            X = module(X)
        return X


class ModuleList(Sequential):
    """Blocks held in a list, as ``torch.nn.ModuleList``: registered (their parameters are
    the owner's), indexed, iterated, ``append``/``extend``/``insert``; not callable, since
    the owner's ``forward`` decides how they run."""

    def __init__(self, modules: Iterable[Block] | None = None) -> None:
        if isinstance(modules, OrderedDict):  # a slice (Sequential's __getitem__)
            super().__init__(modules)
        else:
            super().__init__(*(modules or ()))

    def extend(self, modules: Iterable[Block]) -> ModuleList:
        """Add each of ``modules`` at the end."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Block) -> None:
        """Put ``module`` before position ``index``."""
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def __repr__(self) -> str:
        """As PyTorch prints a ModuleList: a run of blocks that print alike is one entry,
        ``(0-5): 6 x TransformerEncoderLayer(...)``."""
        runs: list[list[Any]] = []  # [first index, last index, text]
        for i, module in enumerate(self._modules.values()):
            text = repr(module)
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        if not runs:
            return self._get_name() + "()"
        lines = [
            _addindent(f"({a}): {t}" if a == b else f"({a}-{b}): {b - a + 1} x {t}", 2)
            for a, b, t in runs
        ]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError(
            "Expected the owner's forward to call the blocks of a ModuleList. Received: a call "
            "of the ModuleList itself. Iterate over it (for block in self.blocks: X = "
            "block(X)), or use nn.Sequential to run them in order."
        )


class ModuleDict(Block):
    """Blocks held by name, as ``torch.nn.ModuleDict``: registered, ``d[name]``,
    ``d[name] = block``, ``in``, ``len``, ``keys``/``values``/``items``, ``update``."""

    def __init__(self, modules: Mapping[str, Block] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, name: str) -> Block:
        return self._modules[name]

    def __setitem__(self, name: str, module: Block) -> None:
        self.add_module(name, module)

    def __delitem__(self, name: str) -> None:
        del self._modules[name]

    def __contains__(self, name: object) -> bool:
        return name in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def values(self) -> Iterable[Block]:
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Block]]:
        return self._modules.items()

    def update(self, modules: Mapping[str, Block] | Iterable[tuple[str, Block]]) -> None:
        """Add (or replace) the blocks of ``modules``, a mapping or (name, block) pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for name, module in pairs:
            self.add_module(name, module)

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError(
            "Expected the owner's forward to call the blocks of a ModuleDict. Received: a call "
            "of the ModuleDict itself. Call a block by name (self.heads[name](X))."
        )


def _as_parameter(value: Any) -> Any:
    """A Parameter as it is; any other tensor (or array) as a new Parameter of its values."""
    return value if isinstance(value, Parameter) else Parameter(_as_tensor(value))


def _parameter_lines(parameters: Mapping[str, Any]) -> str:
    """A parameter container's entries, one line each, as PyTorch prints them."""
    return "\n".join(
        f"({name}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
        for name, p in parameters.items()
    )


class ParameterList(Block):
    """Parameters held in a list, as ``torch.nn.ParameterList``: registered (the owner's
    ``parameters()`` and ``state_dict`` hold them, under ``0``, ``1``, ...), indexed,
    iterated, ``append``/``extend``; a tensor that is not a Parameter becomes one."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self.extend(values or ())

    def __getitem__(self, index: int) -> Any:
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"Expected an index in [-{n}, {n}). Received: {index}")
        return self._parameters[str(index % n)]

    def __setitem__(self, index: int, value: Any) -> None:
        self[index]  # the bounds check
        self.register_parameter(str(index % len(self)), _as_parameter(value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._parameters.values()))

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end."""
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Add each of ``values`` at the end."""
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return _parameter_lines(self._parameters)

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError(
            "Expected the owner's forward to use the parameters of a ParameterList. Received: "
            "a call of the ParameterList itself."
        )


class ParameterDict(Block):
    """Parameters held by name, as ``torch.nn.ParameterDict``: registered, ``d[name]``,
    ``d[name] = value``, ``in``, ``len``, ``keys``/``values``/``items``, ``update``."""

    def __init__(self, parameters: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, name: str) -> Any:
        return self._parameters[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self.register_parameter(name, _as_parameter(value))

    def __delitem__(self, name: str) -> None:
        del self._parameters[name]

    def __contains__(self, name: object) -> bool:
        return name in self._parameters

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._parameters))

    def keys(self) -> Iterable[str]:
        return self._parameters.keys()

    def values(self) -> Iterable[Any]:
        return self._parameters.values()

    def items(self) -> Iterable[tuple[str, Any]]:
        return self._parameters.items()

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        """Add (or replace) the parameters of ``parameters``, a mapping or (name, value)
        pairs."""
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for name, value in pairs:
            self[name] = value

    def extra_repr(self) -> str:
        return _parameter_lines(self._parameters)

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError(
            "Expected the owner's forward to use the parameters of a ParameterDict. Received: "
            "a call of the ParameterDict itself."
        )
