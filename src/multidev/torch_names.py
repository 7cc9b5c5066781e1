"""More PyTorch names on multidev (``md.bmm``, ``md.topk``, ``x.permute(2, 0, 1)``,
``x.masked_fill_(m, 0)``, …), each composed of multidev's own ops (one framework kernel a
step), so every backend runs them with its own kernels and gradients flow through them as
through those ops. ``multidev`` exports the functions and, on import, attaches the Tensor
methods (after ``multidev.methods``, whose ``compat.tensor_methods`` they extend).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import array_api, ops
from . import dtypes as _dt
from .compat import matmul_of_rank
from .creation import arange as _arange
from .creation import full_like as _full_like
from .creation import rand, randn
from .creation import zeros_like as _zeros_like
from .dispatch import as_tensor, write_in_place
from .errors import ShapeError
from .linalg import vector_norm
from .nn import functional as F
from .tensors import Tensor

# Each is composed of multidev's own ops (one framework kernel a step), so gradients flow
# through them as through those ops.


def _dims(dims: tuple[Any, ...]) -> tuple[int, ...]:
    """``f(0, 2, 1)`` and ``f((0, 2, 1))`` alike."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return tuple(int(d) for d in dims)


def stack(tensors: Sequence[Any], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors along a new ``dim`` (``md.stack(xs, 1)`` as PyTorch; ``axis=`` as the
    Array API)."""
    return ops.stack(tensors, axis=dim if axis is None else axis)


def flip(input: Any, dims: Any = None, *, axis: Any = None) -> Tensor:
    """The elements in reverse order along ``dims`` (``md.flip(x, 0)``, ``md.flip(x, (0, 1))``
    as PyTorch; ``axis=`` as the Array API; every axis when neither is given)."""
    if axis is None and dims is not None:
        axis = dims if isinstance(dims, int) else tuple(dims)
    return array_api.flip(input, axis=axis)


def bmm(input: Any, mat2: Any) -> Tensor:
    """Batched matrix product of two 3-D tensors (b, n, m) @ (b, m, p)."""
    return matmul_of_rank("bmm", 3, input, mat2)


def dot(input: Any, tensor: Any) -> Tensor:
    """The inner product of two 1-D tensors of one length (a 0-d tensor), as ``torch.dot``;
    no broadcasting (``md.vecdot`` or ``md.matmul`` for other shapes)."""
    a, b = as_tensor(input), as_tensor(tensor, like=as_tensor(input))
    if a.ndim != 1 or a.shape != b.shape:
        raise ShapeError(
            f"Expected two 1-D tensors of one length for dot. Received: shapes {a.shape} and "
            f"{b.shape}. Use md.vecdot or md.matmul for other shapes.",
            op="dot",
            shapes=(a.shape, b.shape),
        )
    return ops.matmul(a, b)


def mv(input: Any, vec: Any) -> Tensor:
    """The product of an (n, m) matrix and a length-m vector (length n), as ``torch.mv``."""
    a, v = as_tensor(input), as_tensor(vec, like=as_tensor(input))
    if a.ndim != 2 or v.ndim != 1 or a.shape[1] != v.shape[0]:
        raise ShapeError(
            f"Expected an (n, m) matrix and a vector of length m for mv. Received: shapes "
            f"{a.shape} and {v.shape}. Use md.matmul for other shapes.",
            op="mv",
            shapes=(a.shape, v.shape),
        )
    return ops.matmul(a, v)


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
    return array_api.take(x, as_tensor(index, like=x), axis=dim)


def gather(input: Any, dim: int, index: Any) -> Tensor:
    """``out[i][j] = input[i][index[i][j]]`` for ``dim=1`` (``md.take_along_axis``)."""
    x = as_tensor(input)
    return array_api.take_along_axis(x, as_tensor(index, like=x), axis=dim)


def cumsum(input: Any, dim: int) -> Tensor:
    """Running sum along ``dim``."""
    return array_api.cumulative_sum(as_tensor(input), axis=dim)


def clamp(input: Any, min: Any = None, max: Any = None) -> Tensor:
    """Values limited to ``[min, max]`` (``md.clip``)."""
    return ops.clip(as_tensor(input), min, max)


def normal(mean: Any, std: Any, size: Any = None, *, device: Any = None) -> Tensor:
    """Draws from N(mean, std**2): of ``size`` for float ``mean``/``std``, else of their
    broadcast shape (PyTorch's forms); float32 from the seeded generator."""
    if size is not None:
        return randn(size=size, device=device) * std + mean
    like = mean if isinstance(mean, Tensor) else as_tensor(std)
    shape = np.broadcast_shapes(np.shape(mean), np.shape(std))
    return randn(shape, device=like.device) * std + mean


def sigmoid(input: Any) -> Tensor:
    """1 / (1 + exp(-input)) (``md.nn.functional.sigmoid``)."""
    return F.sigmoid(input)


def relu(input: Any) -> Tensor:
    """max(input, 0) (``md.nn.functional.relu``)."""
    return F.relu(input)


def softmax(input: Any, dim: int = -1) -> Tensor:
    """exp(input) normalised to sum 1 along ``dim`` (``md.nn.functional.softmax``)."""
    return F.softmax(input, dim)


def log_softmax(input: Any, dim: int = -1) -> Tensor:
    """log(softmax(input, dim)), computed stably (``md.nn.functional.log_softmax``)."""
    return F.log_softmax(input, dim)


def _cast(dtype: _dt.DType, name: str):
    def method(self: Tensor) -> Tensor:
        return self if self._dtype is dtype else ops.astype(self, dtype)

    method.__name__ = name
    method.__doc__ = f"This tensor as {dtype.name} (the same object when it already is)."
    return method


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
        if k < 1:
            raise ValueError(f"Expected a positive split size. Received: {split_size!r}")
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
    if int(chunks) < 1:
        raise ValueError(f"Expected a positive number of chunks. Received: {chunks!r}")
    n = x.shape[dim]
    return _split(x, max(1, -(-n // int(chunks))), dim)


def _expand(self: Tensor, *sizes: Any) -> Tensor:
    """This tensor broadcast to ``sizes`` (-1 keeps a dimension)."""
    sizes = _dims(sizes)
    lead = len(sizes) - self.ndim
    shape = tuple(self.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    return array_api.broadcast_to(self, shape)


def _repeat(self: Tensor, *sizes: Any) -> Tensor:
    """This tensor tiled ``sizes`` times along each dimension (``md.tile``)."""
    return array_api.tile(self, _dims(sizes))


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
        return getattr(array_api, name)(self, axis=dim, correction=c, keepdims=keepdim)

    method.__name__ = name
    method.__doc__ = f"``md.{name}`` with PyTorch's default ``unbiased=True`` (correction 1)."
    return method


def _norm(self: Tensor, p: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The ``p``-norm over ``dim`` (all elements when None) (``md.linalg.vector_norm``)."""
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
        if isinstance(dim, Tensor):  # x.max(other): the elementwise maximum
            return fn(self, dim)
        return (fn(self, axis=dim, keepdims=keepdim), arg(self, axis=dim, keepdims=keepdim))

    method.__name__ = name
    method.__doc__ = (
        f"The {name} of all elements (or over ``axis=``), ``(values, indices)`` along a "
        f"``dim``, or the elementwise {name}imum with a tensor, as PyTorch."
    )
    return method


def _in_place(fn: Any, name: str):
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return write_in_place(self, fn(self, *args, **kwargs), name, args[0] if args else None)

    method.__name__ = name
    method.__doc__ = f"``{name[:-1]}`` written into this tensor; returns it."
    return method


def topk(
    input: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) values along ``dim`` and their int64 indices, largest
    first (``sorted`` is accepted; the result is always sorted)."""
    x = as_tensor(input)
    a = array_api
    ax = ops._axis(x, dim)
    n = x.shape[ax] if x.ndim else 1
    if not 0 <= int(k) <= n:  # slicing would give fewer than k silently
        raise ValueError(
            f"Expected k in [0, {n}] for topk along dim {dim} of a tensor of shape {x.shape}. "
            f"Received: k={k}"
        )
    order = a.argsort(x, axis=dim, descending=largest, stable=True)
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
    written = array_api.moveaxis(array_api.any(hot, axis=ax), -1, ax)
    s = src if isinstance(src, Tensor) else _full_like(ind, src, dtype=x.dtype)
    values = ops.sum(ops.astype(hot, x.dtype) * ops.expand_dims(s, -1), axis=ax)
    return ops.where(written, array_api.moveaxis(values, -1, ax), x)


def multinomial(input: Any, num_samples: int, replacement: bool = False) -> Tensor:
    """int64 indices drawn from the rows of ``input`` (non-negative weights), from the seeded
    generator: with replacement by inverse CDF, without by the Gumbel top-k trick."""
    p = as_tensor(input)
    a = array_api
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
        below = ops.astype(array_api.less_equal(ops.expand_dims(cdf, -2), u), _dt.int64)
        k = p.shape[-1] - 1
        return ops.minimum(ops.sum(below, axis=-1), _full_like(below[..., 0], k))
    u = ops.astype(rand((*lead, p.shape[-1]), device=p.device), p.dtype)
    g = ops.log(p) - ops.log(-ops.log(u))
    return topk(g, n, -1)[1]


def norm(input: Any, p: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``input`` over ``dim`` (all elements when None); ``"fro"`` is 2."""
    return _norm(as_tensor(input), p, dim, keepdim)


def tensor_methods() -> dict[str, Any]:
    """The PyTorch tensor methods added on top of ``compat.tensor_methods``."""
    m: dict[str, Any] = {
        "type": _type,
        "dim": lambda self: self.ndim,
        "permute": permute,
        "transpose": lambda self, dim0, dim1: ops.transpose(self, dim0, dim1),
        "swapaxes": swapaxes,
        "flip": lambda self, *dims: flip(self, _dims(dims) if dims else None),
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
        "tril": lambda self, diagonal=0: array_api.tril(self, k=diagonal),
        "triu": lambda self, diagonal=0: array_api.triu(self, k=diagonal),
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
        "dot": dot,
        "mv": mv,
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
        lambda self, src: array_api.broadcast_to(as_tensor(src, like=self), self.shape), "copy_"
    )
    return m


for _name, _fn in tensor_methods().items():
    setattr(Tensor, _name, _fn)
