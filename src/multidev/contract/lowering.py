"""Lowering helpers: the pieces adapters compose their ops from where a framework's kernel
differs from NumPy's semantics (reductions' axes, widening for missing dtype kernels, NaN in
argmax, clip bounds, matmul of vectors and integers, index keys)."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..dtypes import DType, uint8
from ..op_specs import SPECS
from .base import dtype_error
from .interfaces import ArgReduction, Reduction

__all__ = [
    "NoKernel",
    "as_tensors",
    "channel_fold",
    "clip_bounds",
    "divisor_signed",
    "key_axes",
    "nan_first",
    "native_astype",
    "reduced_exponents",
    "reduction",
    "summed_matmul",
    "vector_matmul",
    "widening",
]


class NoKernel(NamedTuple):
    """How a framework says that it has no kernel for an operand's dtype, and how to compute in
    a wider dtype instead (``widening``). ``raised(error)``: whether an error the op raised
    means that; ``dtype(t)``: a native tensor's dtype as ``widening``'s ``wider`` keys it
    (default ``t.dtype``); ``is_tensor(a)`` (default: ``a`` has a ``dtype``); ``cast(t,
    dtype)`` to a native dtype (default ``t.astype(dtype)``); ``place(t)``: where given, which
    dtype widens is learned per (dtype, place) on the first failure, and later calls widen
    without trying the op first; ``refuse(t, name)``: the error for a dtype ``wider`` lacks
    (None: the framework's own error is raised again)."""

    raised: Callable[[BaseException], bool]
    dtype: Callable[[Any], Any] = operator.attrgetter("dtype")
    is_tensor: Callable[[Any], bool] = lambda a: hasattr(a, "dtype")
    cast: Callable[[Any, Any], Any] = lambda t, dtype: t.astype(dtype)
    place: Callable[[Any], Any] | None = None
    refuse: Callable[[Any, str], BaseException | None] | None = None


def widening(
    fn: Callable[..., Any],
    name: str,
    how: NoKernel,
    wider: Mapping[Any, Any],
    *,
    count: int | None = None,
    check: Callable[[tuple, Any], None] | None = None,
) -> Callable[..., Any]:
    """Op ``name`` as ``fn``, computed in the dtype ``wider`` names for the first tensor
    operand's dtype where the framework has no kernel for that dtype (``how``), with NumPy's
    results: the tensor arguments of that dtype among the first ``count`` (default all) are
    cast to the wider dtype, Python bool operands (of the first two) become ints, and the
    result goes back to the operand's dtype unless the op's declared result is bool or
    indices (``op_specs``).
    ``check(args, dtype)`` may raise a clearer error before a wider computation."""
    spec = SPECS.get(name)
    back = spec is None or spec.promotion not in ("bool", "index")
    is_tensor, dtype_of, cast, place = how.is_tensor, how.dtype, how.cast, how.place
    learned: dict[Any, dict[Any, Any]] = {}  # dtype -> {place: the dtype it widens to}

    def first_tensor(args: tuple) -> Any:
        return next((a for a in args[:2] if is_tensor(a)), None)

    def wide(args: tuple, t: Any, dt: Any, w: Any) -> Any:
        if check is not None:
            check(args, dt)
        n = len(args) if count is None else count
        out = fn(
            *[
                cast(a, w)
                if i < n and is_tensor(a) and dtype_of(a) == dt
                else (int(a) if i < n and i < 2 and type(a) is bool else a)
                for i, a in enumerate(args)
            ]
        )
        return cast(out, t.dtype) if back and dtype_of(out) != dt else out

    def op(*args: Any) -> Any:
        if learned and place is not None and (t := first_tensor(args)) is not None:
            dt = dtype_of(t)
            w = learned.get(dt, {}).get(place(t))
            if w is not None:
                return wide(args, t, dt, w)
        try:
            return fn(*args)
        except Exception as e:
            t = first_tensor(args)
            if not how.raised(e) or t is None:
                raise
            dt = dtype_of(t)
            w = wider.get(dt)
            if w is None:
                if check is not None:
                    check(args, dt)
                refused = None if how.refuse is None else how.refuse(t, name)
                if refused is None:
                    raise
                raise refused from None
            if place is not None:
                learned.setdefault(dt, {})[place(t)] = w
            return wide(args, t, dt, w)

    op.__name__ = name
    return op


def clip_bounds(lo: Any, hi: Any, dtype: np.dtype | None) -> tuple[Any, Any]:
    """NumPy's ``clip`` bounds for a tensor of the NumPy dtype ``dtype``, for frameworks whose
    clip wants bounds of the tensor's own kind: on bool and integer tensors an int within the
    dtype's range (a float bound truncated, as NumPy's cast back does; None, unbounded, the
    range's end), on others (``dtype`` None included) a float (None: -inf or inf). A lower
    bound above the upper one becomes the upper one: the result is ``hi`` everywhere."""
    if dtype is None or dtype.kind not in "biu":
        lo = -math.inf if lo is None else float(lo)
        hi = math.inf if hi is None else float(hi)
    else:
        low, high = (
            (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
        )
        lo = low if lo is None else int(min(max(lo, low), high))
        hi = high if hi is None else int(min(max(hi, low), high))
    return min(lo, hi), hi


def divisor_signed(
    remainder: Callable[[Any, Any], Any],
    copysign: Callable[[Any, Any], Any],
    floating: Callable[[Any], bool],
) -> Callable[[Any, Any], Any]:
    """An adapter's floating-point ``remainder(a, b)`` with the sign of ``b`` on every result,
    zeros included, as the Array API (and Python, and NumPy) has it: the frameworks' kernels
    give a zero result the sign of ``a`` (``-0.0 % 2`` is -0.0). A non-zero floored remainder
    already has ``b``'s sign, so ``copysign(r, b)`` changes only the zeros."""

    def op(a: Any, b: Any) -> Any:
        r = remainder(a, b)
        return copysign(r, b) if floating(r) else r

    return op


def reduction(
    fn: Callable[..., Any],
    copy: Callable[[Any], Any],
    *,
    axis: str = "axis",
    keepdims: str = "keepdims",
    axes: Callable[[Any], Any] = tuple,
    per_axis: bool = False,
) -> Reduction:
    """The ``(x, axis, keepdims)`` op of a framework's reduction ``fn``, called with its own
    keyword names (``axis``, ``keepdims``) and the axes as ``axes(...)``: axis None reduces
    every axis, ``()`` none (``copy(x)``, a new tensor). ``per_axis``: ``fn`` takes one axis
    at a time (``torch.prod``, ``torch.all``)."""

    def reduce(x: Any, ax: tuple[int, ...] | None, keep: bool) -> Any:
        if ax is None:
            if not keep:
                return fn(x)
            if per_axis:
                return fn(x).reshape((1,) * x.ndim)
            ax = tuple(range(x.ndim))
        elif not ax:
            return copy(x)
        if not per_axis:
            return fn(x, **{axis: axes(ax), keepdims: keep})
        for a in sorted(ax, reverse=True):
            x = fn(x, **{axis: a, keepdims: keep})
        return x

    return reduce


def key_axes(key: Any, ndim: int, mask_ndim: Callable[[Any], int | None]) -> list[tuple[Any, int]]:
    """Each item of an index key on an ``ndim``-d tensor with the first axis it indexes, as
    NumPy reads it: the Ellipsis (or, without one, the end of the key) stands for full slices
    of the axes no other item indexes; None and Python bools index none, a boolean mask as many
    as its rank (``mask_ndim(item)``, None for an item that is no mask), any other item one.
    IndexError for two Ellipses or more indexed axes than the tensor has."""
    items = key if type(key) is tuple else (key,)
    ellipses = sum(k is Ellipsis for k in items)
    if ellipses > 1:
        raise IndexError("Expected at most one Ellipsis (...) in an index. Received: several")

    def span(k: Any) -> int:
        if k is Ellipsis or k is None or type(k) is bool:
            return 0
        n = mask_ndim(k)
        return 1 if n is None else n

    spans = [span(k) for k in items]
    rest = ndim - sum(spans)
    if rest < 0:
        raise IndexError(
            f"Expected at most {ndim} indices for a {ndim}-d tensor. Received: {sum(spans)}"
        )
    out: list[tuple[Any, int]] = []
    dim = 0
    for k, n in zip(items, spans, strict=True):
        if k is Ellipsis:
            out.extend((slice(None), dim + i) for i in range(rest))
            dim += rest
        else:
            out.append((k, dim))
            dim += n
    if not ellipses:
        out.extend((slice(None), dim + i) for i in range(rest))
    return out


def vector_matmul(
    matrices: Callable[[Any, Any], Any],
    a: Any,
    b: Any,
    expand: Callable[[Any, int], Any],
    squeeze: Callable[[Any, int], Any],
) -> Any:
    """The Array API's ``a @ b`` from ``matrices``, a matmul of (stacks of) matrices: a 1-d
    ``a`` is a one-row matrix, a 1-d ``b`` a one-column one, and the result loses the axes
    they added. ``expand(x, axis)`` and ``squeeze(x, axis)`` are the framework's."""
    ra, rb = len(a.shape), len(b.shape)
    out = matrices(expand(a, 0) if ra == 1 else a, expand(b, -1) if rb == 1 else b)
    if rb == 1:
        out = squeeze(out, -1)
    return squeeze(out, -1 if rb == 1 else -2) if ra == 1 else out


def channel_fold(
    shape: Sequence[int], pads: Sequence[tuple[int, int]]
) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """How to run the core's ``pad(x, pads, mode)`` (one (before, after) pair per axis) on a
    reflect or replicate kernel that takes (N, C, *spatial): ``(first, lead, folded)``, where
    ``first`` is the first padded axis (at least 1), ``pads[first:]`` the kernel's spatial pads,
    ``folded`` the shape with the axes ``lead`` before ``first - 1`` made one N (the result is
    reshaped to ``(*lead, *y.shape[1:])``); None when no axis is padded (a copy of x)."""
    nonzero = [i for i, p in enumerate(pads) if p != (0, 0)]
    if not nonzero:
        return None
    first = max(nonzero[0], 1)
    lead = tuple(shape[: first - 1])
    return first, lead, (math.prod(lead), *shape[first - 1 :])


def summed_matmul(
    a: Any,
    b: Any,
    expand: Callable[[Any, int], Any],
    squeeze: Callable[[Any, int], Any],
    cast: Callable[[Any, Any], Any],
    int64: Any,
    zeros: Callable[[tuple[int, ...], Any], Any] | None = None,
) -> Any:
    """The Array API's ``a @ b`` computed exactly for the dtypes a framework's matmul kernels
    lack (integers, bool): each row times each column summed over the inner axis in int64 and
    ``cast(x, dtype)`` back (integers wrap as in NumPy; bool: whether any product is true),
    batch dimensions broadcast, 1-d operands as ``vector_matmul`` has them. ``expand`` and
    ``squeeze`` are the framework's; ``zeros(shape, like)``, where given, makes the result of
    zero-size operands (for frameworks that cannot reduce zero-size arrays). ValueError for
    inner dimensions that differ."""

    def matrices(a: Any, b: Any) -> Any:
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(
                "Expected matmul operands with matching inner dimensions. "
                f"Received: shapes {tuple(a.shape)} and {tuple(b.shape)}"
            )
        if zeros is not None and (0 in a.shape or 0 in b.shape):
            batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
            return zeros((*batch, a.shape[-2], b.shape[-1]), a)
        out = (cast(expand(a, -1), int64) * cast(expand(b, -3), int64)).sum(-2)
        return cast(out, a.dtype)

    return vector_matmul(matrices, a, b, expand, squeeze)


#: the Python scalars the core hands an op as an operand
_PY_SCALARS = (bool, int, float, complex)


def as_tensors(a: Any, b: Any, full: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
    """The operands ``a`` and ``b`` of a binary op for a framework function that takes
    tensors only: a Python scalar becomes a 0-d tensor like the other operand
    (``full(like, value)``, the framework's)."""
    if isinstance(a, _PY_SCALARS):
        return full(b, a), b
    if isinstance(b, _PY_SCALARS):
        return a, full(a, b)
    return a, b


def nan_first(ops: Any, floating: Callable[[Any], bool], *, ask: bool = False) -> None:
    """Make the op table ``ops``'s argmax and argmin give, where a NaN lies along the axis, the
    first NaN's place, as NumPy and PyTorch do, for frameworks whose kernels skip NaN: on input
    that ``floating(x)`` says is floating, composed from the table's own isnan, any, astype,
    argmax and where. ``ask``: first ask the device whether x holds a NaN at all (a NaN sum;
    so does inf - inf, which only costs the exact path) and skip the rest where it holds none;
    without it the composition runs on every floating input (no device sync: traceable)."""
    argmax = ops.argmax

    def first_nan(arg: ArgReduction) -> ArgReduction:
        def op(x: Any, axis: int | None) -> Any:
            out = arg(x, axis)
            if not floating(x) or (ask and not bool(ops.isnan(ops.sum(x, None, False)))):
                return out
            nan = ops.isnan(x)
            first = argmax(ops.astype(nan, uint8), axis)
            axes = None if axis is None or not len(x.shape) else (axis,)  # 0-d: its element
            return ops.where(ops.any(nan, axes, False), first, out)

        return op

    for name in ("argmax", "argmin"):
        setattr(type(ops), name, staticmethod(first_nan(getattr(ops, name))))


def reduced_exponents(
    pow_fn: Callable[[Any, Any], Any],
    where: Callable[[Any, Any, Any], Any],
    numpy_dtype: Callable[[Any], np.dtype] = lambda t: np.dtype(t.dtype),
) -> Callable[[Any, Any], Any]:
    """``pow_fn(a, b)`` where an unsigned integer exponent ``e`` of an n-bit dtype with the top
    bit set becomes ``e mod 2**(n-2) + 2**(n-2)``: the same power modulo 2**n (odd bases'
    powers repeat with period 2**(n-2), even bases' are 0 from the n-th on), for kernels that
    read such exponents, through a signed view, as negative (TensorFlow's uint64 computed in
    int64). ``where`` and ``numpy_dtype`` (a tensor's) are the framework's."""

    def op(a: Any, b: Any) -> Any:
        if hasattr(b, "dtype"):
            dt = numpy_dtype(b)
            if dt.kind == "u":
                bits = 8 * dt.itemsize
                period = 1 << (bits - 2)
                b = where(b >= (1 << (bits - 1)), (b & (period - 1)) | period, b)
        return pow_fn(a, b)

    return op


def native_astype(
    backend: str,
    table: Mapping[DType, Any],
    alternatives: Mapping[DType, str],
    cast: Callable[[Any, Any], Any] | None = None,
) -> Callable[[Any, DType], Any]:
    """The op table's ``astype`` for a framework whose tensors convert with
    ``x.astype(native_dtype)`` (or ``cast(x, native_dtype)``): the dtype from ``table`` (the
    adapter's ``dtypes.NATIVE``); ``dtype_error`` (naming ``alternatives``) for a dtype the
    framework lacks."""

    def astype(x: Any, dt: DType) -> Any:
        try:
            native = table[dt]
        except KeyError:
            raise dtype_error(backend, table, dt, alternatives) from None
        return x.astype(native) if cast is None else cast(x, native)

    return astype
