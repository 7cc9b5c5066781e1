"""PyTorch spellings on multidev: the names PyTorch code reaches for (``md.tensor``, ``md.mm``,
``md.cat``, ``x.view``, ``x.cuda(1)``, ``x.sum(dim=1)``, …), each written once on top of
multidev's own functions, so every backend runs them with its own kernels.

The functions are exported by ``multidev``; the Tensor methods are attached here, in one
place, when multidev is imported. Where PyTorch and the Python Array API disagree on a name,
the Array API meaning stands: ``x.size`` is the number of elements (an int), so PyTorch's
``x.size()`` raises ``TypeError: 'int' object is not callable``; use ``x.shape`` or
``x.numel()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes as _dt
from . import ops, registry
from . import random as _random
from .creation import arange as _arange
from .creation import as_leaf, asarray, normalize_shape, zeros
from .creation import full_like as _full_like
from .creation import zeros_like as _zeros_like
from .device import Device, as_device, cpu, gpu
from .dispatch import as_tensor, check_same, device_for, from_host, new_tensor
from .tensors import Tensor

__all__ = [
    "FloatTensor",
    "allclose",
    "cat",
    "device",
    "mm",
    "randint",
    "randperm",
    "tensor",
]


def tensor(
    data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays, tensors).

    Python floats give float32 and ints int64, as in PyTorch. ``requires_grad=True`` gives an
    ``md.nn.Parameter`` (floating point only; TypeError otherwise).
    """
    return as_leaf(asarray(data, dtype=dtype, device=device, copy=True), requires_grad)


def device(type: Any, index: int | None = None) -> Device:
    """PyTorch's ``torch.device``: ``device("cuda:1")``, ``device("cuda", 1)``, ``device("cpu")``.

    Only names a device; using one the backend lacks raises ``md.DeviceError`` then.
    Raises ValueError for a malformed name.
    """
    if index is None:
        return as_device(type)
    return Device(type, index)


class _TensorType(type):
    dtype: _dt.DType

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype


class FloatTensor(metaclass=_TensorType):
    """PyTorch's legacy constructor: ``FloatTensor([1, 2])`` is a float32 tensor of those values,
    ``FloatTensor(2, 3)`` a float32 tensor of shape (2, 3) (zeros here). ``isinstance(x,
    md.FloatTensor)`` is true for float32 tensors."""

    dtype = _dt.float32

    def __new__(cls, *args: Any, device: Any = None) -> Tensor:  # type: ignore[misc]
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            return zeros(*args, dtype=cls.dtype, device=device)
        if len(args) == 1:
            return tensor(args[0], dtype=cls.dtype, device=device)
        raise TypeError(
            f"Expected FloatTensor(data) or FloatTensor(*sizes). Received: {len(args)} "
            f"arguments {args!r}"
        )


def mm(input: Any, mat2: Any) -> Tensor:
    """Matrix product of two 2-D tensors (``md.matmul`` for other ranks)."""
    a, b = as_tensor(input), as_tensor(mat2, like=as_tensor(input))
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(
            f"Expected two 2-D tensors for mm. Received: shapes {a.shape} and {b.shape}. "
            "Use md.matmul for batched or 1-D operands."
        )
    return ops.matmul(a, b)


def cat(tensors: Sequence[Any], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors along ``dim`` (PyTorch's name for ``md.concat``)."""
    return ops.concat(tensors, axis=dim if axis is None else axis)


def allclose(
    input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """True when ``|input - other| <= atol + rtol * |other|`` everywhere (broadcasting); equal
    infinities are close, NaNs only with ``equal_nan``. Computed on the tensors' device."""
    a = as_tensor(input)
    b = as_tensor(other, like=a)
    check_same(a, b)
    dt = _dt.result_type(a.dtype, b.dtype)
    dt = dt if dt.kind == "f" else _dt.float32
    a, b = ops.astype(a, dt, copy=False), ops.astype(b, dt, copy=False)
    inf = float("inf")
    finite = (abs(a) < inf) & (abs(b) < inf)
    fa, fb = ops.where(finite, a, 0.0), ops.where(finite, b, 0.0)  # no inf - inf below
    close = (a == b) | (finite & (abs(fa - fb) <= atol + rtol * abs(fb)))
    if equal_nan:
        close = close | ((a != a) & (b != b))
    if close.size == 0:
        return True
    return bool(ops.min(ops.astype(close, _dt.int32)).item())


def _int_tensor(host: np.ndarray, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    dt = _dt.int64 if dtype is None else _dt.as_dtype(dtype)
    bk = registry.current()
    return as_leaf(from_host(bk, host.astype(dt.numpy), dt, device_for(bk, device)), requires_grad)


def randint(
    low: int,
    high: Any = None,
    size: Any = None,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers uniform in [low, high), int64 by default: ``randint(10, (2, 3))``,
    ``randint(5, 10, (2, 3))`` or ``randint(10, size=(2, 3))``.

    Drawn by multidev's seeded generator, so identical on every backend for one
    ``md.manual_seed``. Raises ValueError when ``high <= low``.
    """
    if size is None and high is not None and not isinstance(high, (int, np.integer)):
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("Expected a size for randint, e.g. md.randint(10, (2, 3)). Received none")
    if int(high) <= int(low):
        raise ValueError(f"Expected low < high for randint. Received: low={low}, high={high}")
    host = _random.generator().integers(
        int(low), int(high), size=normalize_shape(size), dtype=np.int64
    )
    return _int_tensor(host, dtype, device, requires_grad)


def randperm(
    n: int, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A random permutation of ``0 … n-1`` (int64 by default), drawn by multidev's seeded
    generator (``random.host_permutation``, the same on every NumPy release), so identical
    on every backend for one ``md.manual_seed``."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"Expected a non-negative int for randperm. Received: {n!r}")
    host = _random.host_permutation(int(n), _random.draw_seed())
    return _int_tensor(host, dtype, device, requires_grad)


# ---------------------------------------------------------------- Tensor methods


def _cuda(self: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
    """This tensor on a GPU: ``x.cuda()`` (GPU 0), ``x.cuda(1)``; the same object when it is
    already there. Raises ``md.DeviceError`` when the backend lacks that GPU."""
    if device is None:
        dev = gpu(0)
    elif isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        dev = gpu(int(device))
    else:
        dev = as_device(device)
        if dev.type != "gpu":
            raise ValueError(f"Expected a GPU for cuda(). Received: {dev}. Use .to({str(dev)!r})")
    return self.to(dev)


def _cpu(self: Tensor) -> Tensor:
    """This tensor on the CPU; the same object when it is already there."""
    return self.to(cpu())


def _t(self: Tensor) -> Tensor:
    """The transpose of a matrix; a tensor of fewer than two dimensions is returned as it is."""
    if self.ndim < 2:
        return self
    if self.ndim > 2:
        raise ValueError(
            f"Expected a tensor of at most 2 dimensions for t(). Received: shape {self.shape}. "
            "Use md.permute_dims or x.transpose(d0, d1)."
        )
    return ops.permute_dims(self, (1, 0))


def _view(self: Tensor, *shape: Any) -> Tensor:
    """The same values in ``shape`` (``x.view(2, 3)``, ``x.view((2, 3))``, ``x.view(-1)``), as
    ``reshape`` gives them."""
    return ops.reshape(self, shape[0] if len(shape) == 1 else shape)


def _detach(self: Tensor) -> Tensor:
    """A tensor sharing this one's storage, outside gradient recording."""
    bk = self._bk
    return new_tensor(bk.detach(self._native), bk, self._dev, self._dtype)


def _clone(self: Tensor) -> Tensor:
    """A copy of this tensor on the same device."""
    return self.to(self._dev, copy=True)


def _cast(dtype: _dt.DType, name: str):
    def method(self: Tensor) -> Tensor:
        return self if self._dtype is dtype else ops.astype(self, dtype)

    method.__name__ = name
    method.__doc__ = f"This tensor as {dtype.name} (the same object when it already is)."
    return method


def _requires_grad(self: Tensor) -> bool:
    """Whether ``backward`` fills a gradient for this tensor: False except for parameters."""
    return False


def _reduction(fn: Any, name: str):
    def method(
        self: Tensor,
        dim: Any = None,
        keepdim: bool = False,
        *,
        axis: Any = None,
        keepdims: bool | None = None,
    ) -> Tensor:
        if dim is not None and axis is not None:
            raise TypeError(f"Expected dim or axis for {name}(). Received: both")
        keep = keepdim if keepdims is None else keepdims
        return fn(self, axis=dim if axis is None else axis, keepdims=keep)

    method.__name__ = name
    method.__doc__ = (
        f"``md.{name}`` over ``dim`` (PyTorch) or ``axis`` (Array API), with ``keepdim`` or "
        "``keepdims``."
    )
    return method


def tensor_methods() -> dict[str, Any]:
    """The PyTorch-spelled methods of ``md.Tensor`` by name (``multidev.methods`` attaches
    them with the rest)."""
    methods: dict[str, Any] = {
        "cuda": _cuda,
        "cpu": _cpu,
        "t": _t,
        "view": _view,
        "detach": _detach,
        "clone": _clone,
        "float": _cast(_dt.float32, "float"),
        "double": _cast(_dt.float64, "double"),
        "long": _cast(_dt.int64, "long"),
        "int": _cast(_dt.int32, "int"),
        "requires_grad": property(_requires_grad),
        "data": property(_detach, doc="A tensor sharing this one's storage (``x.detach()``)."),
    }
    for name in ("sum", "mean", "prod", "argmax", "argmin"):
        methods[name] = _reduction(getattr(ops, name), name)
    return methods


# ---------------------------------------------------------------- more PyTorch names
# Each is composed of multidev's own ops (one framework kernel a step), so gradients flow
# through them as through those ops.


def _aa() -> Any:
    """``multidev.array_api`` (imported on use: it imports this module's neighbours)."""
    from . import array_api

    return array_api


def _dims(dims: tuple[Any, ...]) -> tuple[int, ...]:
    """``f(0, 2, 1)`` and ``f((0, 2, 1))`` alike."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return tuple(int(d) for d in dims)


def stack(tensors: Sequence[Any], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors along a new ``dim`` (``md.stack(xs, 1)`` as PyTorch; ``axis=`` as the
    Array API)."""
    return ops.stack(tensors, axis=dim if axis is None else axis)


def bmm(input: Any, mat2: Any) -> Tensor:
    """Batched matrix product of two 3-D tensors (b, n, m) @ (b, m, p)."""
    a, b = as_tensor(input), as_tensor(mat2, like=as_tensor(input))
    if a.ndim != 3 or b.ndim != 3:
        raise ValueError(
            f"Expected two 3-D tensors for bmm. Received: shapes {a.shape} and {b.shape}. "
            "Use md.matmul for other ranks."
        )
    return ops.matmul(a, b)


def repeat_interleave(input: Any, repeats: Any, dim: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``dim`` (flattened when None)."""
    from .array_api import repeat

    return repeat(input, repeats, axis=dim)


def unsqueeze(input: Any, dim: int) -> Tensor:
    """A new axis of length 1 at ``dim``."""
    x = as_tensor(input)
    return ops.expand_dims(x, dim if dim >= 0 else dim + x.ndim + 1)


def squeeze(input: Any, dim: Any = None, *, axis: Any = None) -> Tensor:
    """Drop axes of length 1 (all, or ``dim`` when it has length 1, as PyTorch: a ``dim`` of
    another length leaves the tensor as it is; ``axis=`` is the Array API's, which raises)."""
    x = as_tensor(input)
    if axis is not None:
        return ops.squeeze(x, axis)
    if dim is None:
        return ops.squeeze(x)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    keep = tuple(d % x.ndim for d in dims if x.shape[d] == 1) if x.ndim else ()
    return ops.squeeze(x, keep) if keep else x


def permute(input: Any, *dims: Any) -> Tensor:
    """The axes in the order ``dims`` (``md.permute_dims``)."""
    return ops.permute_dims(as_tensor(input), _dims(dims))


def swapaxes(input: Any, axis0: int, axis1: int) -> Tensor:
    """Axes ``axis0`` and ``axis1`` exchanged (``md.transpose``)."""
    return ops.transpose(as_tensor(input), axis0, axis1)


def masked_fill(input: Any, mask: Any, value: Any) -> Tensor:
    """``value`` where ``mask`` is true, ``input`` elsewhere (``mask`` broadcasts)."""
    x = as_tensor(input)
    fill = value if isinstance(value, Tensor) else _full_like(x, value)
    return ops.where(as_tensor(mask, like=x), fill, x)


def index_select(input: Any, dim: int, index: Any) -> Tensor:
    """The slices of ``input`` at the integer positions ``index`` along ``dim``."""
    x = as_tensor(input)
    return _aa().take(x, as_tensor(index, like=x), axis=dim)


def gather(input: Any, dim: int, index: Any) -> Tensor:
    """``out[i][j] = input[i][index[i][j]]`` for ``dim=1`` (``md.take_along_axis``)."""
    x = as_tensor(input)
    return _aa().take_along_axis(x, as_tensor(index, like=x), axis=dim)


def cumsum(input: Any, dim: int) -> Tensor:
    """Running sum along ``dim``."""
    return _aa().cumulative_sum(as_tensor(input), axis=dim)


def clamp(input: Any, min: Any = None, max: Any = None) -> Tensor:
    """Values limited to ``[min, max]`` (``md.clip``)."""
    return ops.clip(as_tensor(input), min, max)


def normal(mean: Any, std: Any, size: Any = None, *, device: Any = None) -> Tensor:
    """Draws from N(mean, std**2): of ``size`` for float ``mean``/``std``, else of their
    broadcast shape (PyTorch's forms); float32 from the seeded generator."""
    from .creation import randn

    if size is not None:
        return randn(size=size, device=device) * std + mean
    like = mean if isinstance(mean, Tensor) else as_tensor(std)
    shape = np.broadcast_shapes(np.shape(mean), np.shape(std))
    return randn(shape, device=like.device) * std + mean


def _nn(name: str):
    def fn(input: Any, *args: Any, **kwargs: Any) -> Tensor:
        from .nn import functional as F

        return getattr(F, name)(input, *args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = f"``md.nn.functional.{name}`` (PyTorch has it at top level too)."
    return fn


sigmoid = _nn("sigmoid")
relu = _nn("relu")
softmax = _nn("softmax")
log_softmax = _nn("log_softmax")


def _type(self: Tensor, dtype: Any = None) -> Any:
    """This tensor as ``dtype`` (``x.type(md.long)``); with no argument, the dtype's name."""
    if dtype is None:
        return self._dtype.name
    dt = _dt.as_dtype(dtype)
    return self if self._dtype is dt else ops.astype(self, dt)


def _split(self: Tensor, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last smaller), or of the listed sizes."""
    n = self.shape[dim]
    if isinstance(split_size, (list, tuple)):
        sizes = [int(s) for s in split_size]
        if sum(sizes) != n:
            raise ValueError(
                f"Expected split sizes summing to {n} (dimension {dim}). Received: {sizes}"
            )
    else:
        k = int(split_size)
        sizes = [k] * (n // k) + ([n % k] if n % k else [])
    out, start = [], 0
    ax = dim % self.ndim
    for s in sizes:
        idx = (slice(None),) * ax + (slice(start, start + s),)
        out.append(self[idx])
        start += s
    return tuple(out)


def split(tensor: Any, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """``tensor`` cut along ``dim`` into pieces of the given size(s)."""
    return _split(as_tensor(tensor), split_size_or_sections, dim)


def chunk(input: Any, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``input`` cut along ``dim`` into ``chunks`` pieces of ceil(n / chunks) (the last
    smaller)."""
    x = as_tensor(input)
    n = x.shape[dim]
    return _split(x, max(1, -(-n // int(chunks))), dim)


def _expand(self: Tensor, *sizes: Any) -> Tensor:
    """This tensor broadcast to ``sizes`` (-1 keeps a dimension)."""
    sizes = _dims(sizes)
    lead = len(sizes) - self.ndim
    shape = tuple(self.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    return _aa().broadcast_to(self, shape)


def _repeat(self: Tensor, *sizes: Any) -> Tensor:
    """This tensor tiled ``sizes`` times along each dimension (``md.tile``)."""
    return _aa().tile(self, _dims(sizes))


def _stat(name: str):
    def method(
        self: Tensor,
        dim: Any = None,
        unbiased: bool = True,
        keepdim: bool = False,
        *,
        correction: Any = None,
    ) -> Tensor:
        c = (1 if unbiased else 0) if correction is None else correction
        return getattr(_aa(), name)(self, axis=dim, correction=c, keepdims=keepdim)

    method.__name__ = name
    method.__doc__ = f"``md.{name}`` with PyTorch's default ``unbiased=True`` (correction 1)."
    return method


def _norm(self: Tensor, p: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The ``p``-norm over ``dim`` (all elements when None) (``md.linalg.vector_norm``)."""
    from .linalg import vector_norm

    return vector_norm(self, axis=dim, keepdims=keepdim, ord=2 if p == "fro" else p)


def _min_max(fn: Any, arg: Any, name: str):
    def method(
        self: Tensor,
        dim: Any = None,
        keepdim: bool = False,
        *,
        axis: Any = None,
        keepdims: bool = False,
    ) -> Any:
        if dim is None:  # the Array API's form: one tensor
            return fn(self, axis=axis, keepdims=keepdims)
        return (fn(self, axis=dim, keepdims=keepdim), arg(self, axis=dim, keepdims=keepdim))

    method.__name__ = name
    method.__doc__ = (
        f"The {name} of all elements (or over ``axis=``), or ``(values, indices)`` along a "
        "``dim`` as PyTorch."
    )
    return method


def _in_place(fn: Any, name: str):
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        self[...] = fn(self, *args, **kwargs)
        return self

    method.__name__ = name
    method.__doc__ = f"``{name[:-1]}`` written into this tensor; returns it."
    return method


def topk(
    input: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) values along ``dim`` and their int64 indices, largest
    first (``sorted`` is accepted; the result is always sorted)."""
    x = as_tensor(input)
    a = _aa()
    order = a.argsort(x, axis=dim, descending=largest, stable=True)
    ax = dim % x.ndim
    idx = order[(slice(None),) * ax + (slice(0, int(k)),)]
    return a.take_along_axis(x, idx, axis=dim), idx


def scatter(input: Any, dim: int, index: Any, src: Any) -> Tensor:
    """A copy of ``input`` with ``out[i][index[i][j]] = src[i][j]`` for ``dim=1`` (any
    ``dim`` alike); ``src`` may be a number. ``index`` must have ``input``'s shape except
    along ``dim``; a position written twice gets the sum of its values (PyTorch leaves that
    case unspecified). Composed of a one-hot comparison, a sum and a ``where``."""
    x = as_tensor(input)
    ind = as_tensor(index, like=x)
    ax = dim % x.ndim
    if ind.ndim != x.ndim or any(ind.shape[d] != x.shape[d] for d in range(x.ndim) if d != ax):
        raise ValueError(
            f"Expected an index of shape {x.shape} except along dim {dim}. Received: "
            f"{ind.shape}. Index a narrower block with x[...] first."
        )
    hot = ops.equal(
        ops.expand_dims(ind, -1), _arange(x.shape[ax], dtype=ind.dtype, device=x.device)
    )
    written = _aa().moveaxis(_aa().any(hot, axis=ax), -1, ax)
    s = src if isinstance(src, Tensor) else _full_like(ind, src, dtype=x.dtype)
    values = ops.sum(ops.astype(hot, x.dtype) * ops.expand_dims(s, -1), axis=ax)
    return ops.where(written, _aa().moveaxis(values, -1, ax), x)


def multinomial(input: Any, num_samples: int, replacement: bool = False) -> Tensor:
    """int64 indices drawn from the rows of ``input`` (non-negative weights), from the seeded
    generator: with replacement by inverse CDF, without by the Gumbel top-k trick."""
    p = as_tensor(input)
    a = _aa()
    from .creation import rand

    n = int(num_samples)
    if not replacement and n > p.shape[-1]:
        raise ValueError(
            f"Expected num_samples <= {p.shape[-1]} without replacement. Received: {n}. "
            "Pass replacement=True."
        )
    lead = tuple(p.shape[:-1])
    if replacement:
        cdf = a.cumulative_sum(p, axis=-1)
        cdf = cdf / cdf[..., -1:]
        u = ops.astype(rand((*lead, n, 1), device=p.device), p.dtype)
        below = ops.astype(_aa().less_equal(ops.expand_dims(cdf, -2), u), _dt.int64)
        k = p.shape[-1] - 1
        return ops.minimum(ops.sum(below, axis=-1), _full_like(below[..., 0], k))
    u = ops.astype(rand((*lead, p.shape[-1]), device=p.device), p.dtype)
    g = ops.log(p) - ops.log(-ops.log(u))
    return topk(g, n, -1)[1]


def norm(input: Any, p: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``input`` over ``dim`` (all elements when None); ``"fro"`` is 2."""
    return _norm(as_tensor(input), p, dim, keepdim)


def more_tensor_methods() -> dict[str, Any]:
    """The PyTorch tensor methods added on top of ``tensor_methods``."""
    m: dict[str, Any] = {
        "type": _type,
        "dim": lambda self: self.ndim,
        "permute": permute,
        "transpose": lambda self, dim0, dim1: ops.transpose(self, dim0, dim1),
        "swapaxes": swapaxes,
        "unsqueeze": unsqueeze,
        "squeeze": squeeze,
        "flatten": lambda self, start_dim=0, end_dim=-1: ops.flatten(self, start_dim, end_dim),
        "contiguous": lambda self: self,
        "expand": _expand,
        "repeat": _repeat,
        "repeat_interleave": repeat_interleave,
        "masked_fill": masked_fill,
        "index_select": index_select,
        "gather": gather,
        "cumsum": cumsum,
        "clamp": clamp,
        "clip": clamp,
        "tril": lambda self, diagonal=0: _aa().tril(self, k=diagonal),
        "triu": lambda self, diagonal=0: _aa().triu(self, k=diagonal),
        "std": _stat("std"),
        "var": _stat("var"),
        "norm": _norm,
        "topk": topk,
        "scatter": scatter,
        "multinomial": multinomial,
        "split": _split,
        "chunk": chunk,
        "max": _min_max(ops.max, ops.argmax, "max"),
        "min": _min_max(ops.min, ops.argmin, "min"),
        "matmul": lambda self, other: ops.matmul(self, other),
        "bmm": bmm,
        "sqrt": lambda self: ops.sqrt(self),
        "log": lambda self: ops.log(self),
        "pow": lambda self, exponent: self**exponent,
        "sigmoid": sigmoid,
        "relu": relu,
        "tanh": lambda self: ops.tanh(self),
        "softmax": softmax,
        "log_softmax": log_softmax,
        "half": _cast(_dt.float16, "half"),
        "bool": _cast(_dt.bool, "bool"),
    }
    for name in ("masked_fill", "clamp", "scatter"):
        m[name + "_"] = _in_place(m[name], name + "_")
    m["zero_"] = _in_place(lambda self: _zeros_like(self), "zero_")
    m["fill_"] = _in_place(lambda self, value: _full_like(self, value), "fill_")
    m["add_"] = _in_place(lambda self, other, alpha=1: self + other * alpha, "add_")
    m["sub_"] = _in_place(lambda self, other, alpha=1: self - other * alpha, "sub_")
    m["mul_"] = _in_place(lambda self, other: self * other, "mul_")
    m["div_"] = _in_place(lambda self, other: self / other, "div_")
    m["copy_"] = _in_place(
        lambda self, src: _aa().broadcast_to(as_tensor(src, like=self), self.shape), "copy_"
    )
    return m
