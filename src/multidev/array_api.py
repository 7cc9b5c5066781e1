"""The rest of the Array API 2023.12 main namespace, and the namespace plumbing.

``__array_api_version__`` is ``"2023.12"``: the revision multidev implements completely. The
functions and behaviours that the 2024.12 revision adds are provided as well (their docstrings
say "added in 2024.12"), but not yet all of that revision, so the namespace does not claim it.

Each function checks and normalises its arguments here, once, then runs the adapter's native
op (declared in ``op_specs``, in each adapter's op table) or a composition of native ops; no
value goes through host memory. ``install()`` attaches ``__array_namespace__``, the DLPack
methods and the Array API's array methods to ``Tensor``.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from . import creation, methods, ops, registry
from . import dtypes as _dt
from .device import Device
from .dispatch import (
    as_tensor,
    call,
    cast,
    check_same,
    elementwise,
    expand,
    floating,
    new_tensor,
    wrap,
)
from .errors import ShapeError
from .tensors import Tensor

__array_api_version__ = "2023.12"

#: the Array API's constants
e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None

__all__ = [
    "__array_api_version__",
    "__array_namespace_info__",
    "acos",
    "acosh",
    "all",
    "any",
    "argsort",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "broadcast_arrays",
    "broadcast_to",
    "can_cast",
    "ceil",
    "conj",
    "copysign",
    "cosh",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "diff",
    "e",
    "empty",
    "empty_like",
    "expm1",
    "finfo",
    "floor_divide",
    "from_dlpack",
    "greater_equal",
    "hypot",
    "iinfo",
    "imag",
    "inf",
    "isdtype",
    "isfinite",
    "isinf",
    "isnan",
    "less_equal",
    "linspace",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matrix_transpose",
    "meshgrid",
    "moveaxis",
    "nan",
    "newaxis",
    "nextafter",
    "nonzero",
    "not_equal",
    "pi",
    "positive",
    "real",
    "reciprocal",
    "remainder",
    "repeat",
    "result_type",
    "roll",
    "round",
    "searchsorted",
    "sign",
    "signbit",
    "sinh",
    "sort",
    "std",
    "take",
    "take_along_axis",
    "tan",
    "tensordot",
    "tile",
    "tril",
    "triu",
    "trunc",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unstack",
    "var",
    "vecdot",
]

_INTEGRAL = frozenset(d for d in _dt.ALL + _dt.UNSIGNED if d.kind in "iu")
_REAL_FLOATING = frozenset(d for d in _dt.ALL if d.kind == "f")
_COMPLEX = frozenset(_dt.COMPLEX)
_KINDS = {
    "bool": frozenset({_dt.bool}),
    "signed integer": frozenset(d for d in _INTEGRAL if d.kind == "i"),
    "unsigned integer": frozenset(d for d in _INTEGRAL if d.kind == "u"),
    "integral": _INTEGRAL,
    "real floating": _REAL_FLOATING,
    "complex floating": _COMPLEX,
    "numeric": _INTEGRAL | _REAL_FLOATING | _COMPLEX,
}


# ---------------------------------------------------------------- data types


def isdtype(dtype: _dt.DType, kind: Any) -> bool:
    """Whether ``dtype`` is ``kind``: a dtype, a kind name ("integral", "real floating", ...)
    or a tuple of them."""
    dtype = _dt.as_dtype(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"Expected a dtype kind among {sorted(_KINDS)}. Received: {kind!r}")
        return dtype in _KINDS[kind]
    return dtype is _dt.as_dtype(kind)


#: the Python scalars an Array API function takes in place of a tensor (added in 2024.12)
_SCALARS = (bool, int, float, complex)


def _dtype_of(obj: Any) -> _dt.DType:
    return obj._dtype if isinstance(obj, Tensor) else _dt.as_dtype(obj)


def result_type(*arrays_and_dtypes: Any) -> _dt.DType:
    """The dtype that operations on these tensors, dtypes or Python scalars give."""
    tensors = [a for a in arrays_and_dtypes if not isinstance(a, _SCALARS)]
    if not tensors:
        raise ValueError("Expected at least one tensor or dtype. Received: only Python scalars")
    dt = _dtype_of(tensors[0])
    for a in tensors[1:]:
        dt = _dt.result_type(dt, _dtype_of(a))
    for a in arrays_and_dtypes:
        if isinstance(a, _SCALARS):
            dt = _dt.scalar_result_type(dt, a)
    return dt


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether promotion turns ``from_`` (a dtype or tensor) into ``to`` without loss."""
    src, dst = _dtype_of(from_), _dt.as_dtype(to)
    return _dt.result_type(src, dst) is dst


@dataclass(frozen=True)
class finfo_object:
    """Machine limits of a floating-point dtype."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: _dt.DType


@dataclass(frozen=True)
class iinfo_object:
    """Limits of an integer dtype."""

    bits: int
    max: int
    min: int
    dtype: _dt.DType


def finfo(type: Any, /) -> finfo_object:
    """Limits of a floating-point dtype (or of a tensor's dtype); for a complex dtype, those
    of its real and imaginary parts."""
    dt = _dt.real_dtype(_dtype_of(type))
    if dt.kind != "f":
        raise TypeError(f"Expected a floating-point dtype. Received: {dt}; use md.iinfo")
    if dt is _dt.bfloat16:
        import ml_dtypes

        info: Any = ml_dtypes.finfo(ml_dtypes.bfloat16)
    else:
        info = np.finfo(dt.numpy)
    return finfo_object(
        info.bits,
        float(info.eps),
        float(info.max),
        float(info.min),
        float(info.smallest_normal),
        dt,
    )


def iinfo(type: Any, /) -> iinfo_object:
    """Limits of an integer dtype (or of a tensor's dtype)."""
    dt = _dtype_of(type)
    if dt.kind not in "iu":
        raise TypeError(f"Expected an integer dtype. Received: {dt}; use md.finfo")
    info = np.iinfo(dt.numpy)
    return iinfo_object(info.bits, int(info.max), int(info.min), dt)


class ArrayNamespaceInfo:
    """What ``md.__array_namespace_info__()`` reports of the current backend."""

    def capabilities(self) -> dict[str, Any]:
        """What the backend supports; "max dimensions" is the framework's own limit (the
        adapter's ``array_limits``: 9 on Paddle, 5 on MXNet, whose elementwise kernels
        broadcast over at most five dimensions, 64 elsewhere)."""
        limits = registry.current().array_limits
        ndim = min(limits.ndim, limits.broadcast_ndim)
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": ndim}

    def default_device(self) -> Device:
        return registry.current().default_device()

    def devices(self) -> list[Device]:
        return list(registry.current().devices())

    def default_dtypes(self, *, device: Any = None) -> dict[str, _dt.DType]:
        out = {"real floating": _dt.float32, "integral": _dt.int64, "indexing": _dt.int64}
        if "complex" in registry.current().capabilities:
            out["complex floating"] = _dt.complex64
        return out

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, _dt.DType]:
        """The standard's dtypes the backend has (float16 and bfloat16 are not among them)."""
        bk = registry.current()
        caps = bk.capabilities
        have = [
            d
            for d in _dt.EVERY
            if d.name not in ("float16", "bfloat16")
            and (d.name != "float64" or "float64" in caps)
            and (d.kind != "c" or "complex" in caps)
            and _holds(bk, d)
        ]
        if kind is not None:
            have = [d for d in have if isdtype(d, kind)]
        return {d.name: d for d in have}


def _holds(bk: Any, dt: _dt.DType) -> bool:
    """Whether the backend has a native dtype for ``dt`` (MXNet has no int16)."""
    try:
        bk.native_dtype(dt)
    except TypeError:
        return False
    return True


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The inspection object of the Array API: devices and dtypes of the current backend."""
    return ArrayNamespaceInfo()


# ---------------------------------------------------------------- elementwise


def _native_unary(name: str, doc: str):
    def fn(x: Any, /) -> Tensor:
        x = floating(as_tensor(x))
        return wrap(x, call(x, name, x._native), x._dtype)

    fn.__name__ = name
    fn.__doc__ = doc + "; integer input is computed in float32."
    return fn


acos = _native_unary("acos", "Elementwise inverse cosine (radians)")
acosh = _native_unary("acosh", "Elementwise inverse hyperbolic cosine")
asin = _native_unary("asin", "Elementwise inverse sine (radians)")
asinh = _native_unary("asinh", "Elementwise inverse hyperbolic sine")
atan = _native_unary("atan", "Elementwise inverse tangent (radians)")
atanh = _native_unary("atanh", "Elementwise inverse hyperbolic tangent")
cosh = _native_unary("cosh", "Elementwise hyperbolic cosine")
sinh = _native_unary("sinh", "Elementwise hyperbolic sine")
tan = _native_unary("tan", "Elementwise tangent of radians")
expm1 = _native_unary("expm1", "Elementwise exp(x) - 1, exact near 0")
log2 = _native_unary("log2", "Elementwise base-2 logarithm")
log10 = _native_unary("log10", "Elementwise base-10 logarithm")
reciprocal = _native_unary("reciprocal", "Elementwise 1 / x (added in Array API 2024.12)")


def _rounding(name: str, doc: str):
    def fn(x: Any, /) -> Tensor:
        x = as_tensor(x)
        if x._dtype.kind != "f":
            return ops.astype(x, x._dtype)  # integers are already whole: a copy
        return wrap(x, call(x, name, x._native), x._dtype)

    fn.__name__ = name
    fn.__doc__ = doc + "; integer input is returned unchanged (a copy)."
    return fn


ceil = _rounding("ceil", "Elementwise smallest integer value not below x")
trunc = _rounding("trunc", "Elementwise x rounded toward zero")
round = _rounding("round", "Elementwise x rounded to the nearest integer, halves to even")


def _complex_part(name: str, doc: str):
    def fn(x: Any, /) -> Tensor:
        x = as_tensor(x)
        if x._dtype.kind != "c":
            if name == "imag":
                return creation.zeros_like(x)
            return ops.astype(x, x._dtype)  # a real tensor is its own real part and conjugate
        dt = x._dtype if name == "conj" else _dt.real_dtype(x._dtype)
        return wrap(x, call(x, name, x._native), dt)

    fn.__name__ = name
    fn.__doc__ = doc
    return fn


real = _complex_part("real", "Elementwise real part (float32 of complex64, float64 of complex128).")
imag = _complex_part("imag", "Elementwise imaginary part (zeros for real input).")
conj = _complex_part("conj", "Elementwise complex conjugate (a copy of real input).")


def sign(x: Any, /) -> Tensor:
    """Elementwise -1, 0 or 1 (NaN stays NaN); ``x / |x|`` (0 at 0) for complex input."""
    x = as_tensor(x)
    if x._dtype is _dt.bool:
        raise TypeError("Expected a numeric tensor for sign. Received: bool")
    if x._dtype.kind == "u":  # 0 or 1 (not every framework has an unsigned sign kernel)
        return ops.astype(x > 0, x._dtype)
    if x._dtype.kind == "c":
        m = ops.abs(x)
        return ops.where(m == 0, creation.zeros_like(x), x / ops.where(m == 0, 1.0, m))
    return wrap(x, call(x, "sign", x._native), x._dtype)


def positive(x: Any, /) -> Tensor:
    """``+x``: a copy."""
    x = as_tensor(x)
    return ops.astype(x, x._dtype)


def _float_predicate(name: str, on_integers: bool, doc: str):
    def fn(x: Any, /) -> Tensor:
        x = as_tensor(x)
        if x._dtype.kind == "c":  # of both parts: finite if both are, NaN/inf if either is
            re, im = fn(real(x)), fn(imag(x))
            return logical_and(re, im) if on_integers else logical_or(re, im)
        if x._dtype.kind != "f":
            out = (x == x) if on_integers else (x != x)
            return out
        return wrap(x, call(x, name, x._native), _dt.bool)

    fn.__name__ = name
    fn.__doc__ = doc
    return fn


isnan = _float_predicate("isnan", False, "Elementwise: is x NaN (never, for integers).")
isinf = _float_predicate("isinf", False, "Elementwise: is x infinite (never, for integers).")
isfinite = _float_predicate("isfinite", True, "Elementwise: is x finite (always, for integers).")


def signbit(x: Any, /) -> Tensor:
    """Elementwise: is the sign bit set (true for -0.0 and negative NaN)."""
    x = floating(as_tensor(x))
    return wrap(x, call(x, "signbit", x._native), _dt.bool)


def _pair(x1: Any, x2: Any, floating_only: bool = False) -> tuple[Tensor, Tensor]:
    """Two Tensors of one dtype and device; a Python scalar takes the tensor's dtype (lifted
    to float32 only where a float meets an integer tensor)."""
    if not isinstance(x1, Tensor) and isinstance(x2, Tensor):
        b, a = _pair(x2, x1, floating_only)
        return a, b
    x1 = as_tensor(x1)
    if isinstance(x2, _SCALARS):
        dt = _dt.scalar_result_type(x1._dtype, x2)
        x2 = creation.full((), x2, dtype=dt, device=x1.device)
    else:
        x2 = as_tensor(x2, x1)
        check_same(x1, x2)
        dt = _dt.result_type(x1._dtype, x2._dtype)
    if floating_only and dt.kind == "c":
        raise TypeError(f"Expected real-valued tensors. Received: {dt}; use md.real/md.imag")
    if floating_only and dt.kind != "f":
        dt = _dt.float32
    return ops.astype(x1, dt, copy=False), ops.astype(x2, dt, copy=False)


def _float_binary(name: str, doc: str):
    def fn(x1: Any, x2: Any, /) -> Tensor:
        a, b = _pair(x1, x2, floating_only=True)
        return wrap(a, elementwise(a, name, a._native, b._native), a._dtype)

    fn.__name__ = name
    fn.__doc__ = doc + "; integer input is computed in float32."
    return fn


atan2 = _float_binary("atan2", "Elementwise angle of the point (x2, x1), in radians")
hypot = _float_binary("hypot", "Elementwise sqrt(x1**2 + x2**2) without overflow")
copysign = _float_binary("copysign", "Elementwise |x1| with the sign of x2")
logaddexp = _float_binary("logaddexp", "Elementwise log(exp(x1) + exp(x2)) without overflow")
nextafter = _float_binary(
    "nextafter",
    "Elementwise the next representable value after x1 toward x2 (added in Array API 2024.12)",
)


def _same(x1: Any, x2: Any) -> Tensor:
    return ops._lhs(x1, x2) if isinstance(x2, Tensor) else as_tensor(x1)


def not_equal(x1: Any, x2: Any, /) -> Tensor:
    """Elementwise ``x1 != x2`` as a bool tensor."""
    return _same(x1, x2) != x2


def less_equal(x1: Any, x2: Any, /) -> Tensor:
    """Elementwise ``x1 <= x2`` as a bool tensor."""
    return _same(x1, x2) <= x2


def greater_equal(x1: Any, x2: Any, /) -> Tensor:
    """Elementwise ``x1 >= x2`` as a bool tensor."""
    return _same(x1, x2) >= x2


def floor_divide(x1: Any, x2: Any, /) -> Tensor:
    """Elementwise floor division ``x1 // x2`` (Python's rounding towards negative infinity)."""
    return _same(x1, x2) // x2


def remainder(x1: Any, x2: Any, /) -> Tensor:
    """Elementwise remainder of ``x1 // x2``, with the sign of ``x2`` (Python's ``%``)."""
    return _same(x1, x2) % x2


def _bool_or_int(name: str, bool_name: str | None, doc: str):
    def fn(x1: Any, x2: Any, /) -> Tensor:
        a, b = _pair(x1, x2)
        if a._dtype.kind == "f" or (bool_name is None and a._dtype is _dt.bool):
            kinds = "integer or bool" if bool_name else "integer"
            raise TypeError(f"Expected {kinds} tensors for {name}. Received: {a._dtype}")
        native = bool_name if a._dtype is _dt.bool and bool_name is not None else name
        return wrap(a, elementwise(a, native, a._native, b._native, op=name), a._dtype)

    fn.__name__ = name
    fn.__doc__ = doc
    return fn


bitwise_and = _bool_or_int("bitwise_and", "logical_and", "Elementwise bitwise AND.")
bitwise_or = _bool_or_int("bitwise_or", "logical_or", "Elementwise bitwise OR.")
bitwise_xor = _bool_or_int("bitwise_xor", "not_equal", "Elementwise bitwise XOR.")
bitwise_left_shift = _bool_or_int("bitwise_left_shift", None, "Elementwise x1 << x2.")
bitwise_right_shift = _bool_or_int("bitwise_right_shift", None, "Elementwise x1 >> x2.")


def bitwise_invert(x: Any, /) -> Tensor:
    """Elementwise bitwise NOT (logical NOT for bool)."""
    x = as_tensor(x)
    if x._dtype.kind == "f":
        raise TypeError("Expected an integer or bool tensor for bitwise_invert. Received: float")
    name = "logical_not" if x._dtype is _dt.bool else "bitwise_invert"
    return wrap(x, call(x, name, x._native), x._dtype)


def _logical(name: str, native: str):
    def fn(x1: Any, x2: Any, /) -> Tensor:
        a = ops.astype(_same(x1, x2), _dt.bool, copy=False)
        b = ops.astype(as_tensor(x2, a), _dt.bool, copy=False)
        return wrap(a, elementwise(a, native, a._native, b._native, op=name), _dt.bool)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name.split('_')[1].upper()} of the truth values."
    return fn


logical_and = _logical("logical_and", "logical_and")
logical_or = _logical("logical_or", "logical_or")
logical_xor = _logical("logical_xor", "not_equal")


def logical_not(x: Any, /) -> Tensor:
    """Elementwise NOT of the truth values."""
    x = ops.astype(as_tensor(x), _dt.bool, copy=False)
    return wrap(x, call(x, "logical_not", x._native), _dt.bool)


# ---------------------------------------------------------------- reductions and statistics


def _truth_reduce(name: str):
    def fn(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
        x = as_tensor(x)
        # complex: true where either part is non-zero (TensorFlow's cast keeps only the real)
        x = x != 0 if x._dtype.kind == "c" else ops.astype(x, _dt.bool, copy=False)
        axes = ops._axes(x, axis)
        return wrap(x, call(x, name, x._native, axes, keepdims), _dt.bool)

    fn.__name__ = name
    fn.__doc__ = f"Whether {name} elements along ``axis`` are true."
    return fn


all = _truth_reduce("all")
any = _truth_reduce("any")


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
    """Variance along ``axis`` with ``correction`` degrees of freedom subtracted (Bessel's
    correction is ``correction=1``); integer input is computed in float32."""
    x = floating(as_tensor(x))
    axes = ops._axes(x, axis)
    axes = tuple(range(x.ndim)) if axes is None else axes
    n = math.prod(x.shape[a] for a in axes)
    d = x - ops.mean(x, axis=axes, keepdims=True)
    return ops.sum(d * d, axis=axes, keepdims=keepdims) / builtins.max(n - correction, 0)


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
    """Standard deviation: the square root of ``var``."""
    return ops.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def _cumulative(
    name: str, x: Any, axis: int | None, dtype: Any, include_initial: bool, initial: int
) -> Tensor:
    x = as_tensor(x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"Expected axis= for a {x.ndim}-d tensor. Received: axis=None")
        axis = 0
    ax = ops._axis(x, axis)
    dt = _dt.as_dtype(dtype) if dtype is not None else x._dtype
    if dtype is None and dt in _dt.UNSIGNED:
        dt = _dt.uint64
    elif dtype is None and dt.kind in "biu" and dt is not _dt.int64:
        dt = _dt.int64
    if dt is not x._dtype:
        x = cast(x, dt)
    out = ops.accumulated(x, name, ax)
    if include_initial:
        shape = list(x.shape)
        shape[ax] = 1
        first = creation.full(tuple(shape), initial, dtype=dt, device=x.device)
        out = ops.concat([first, out], axis=ax)
    return out


def cumulative_sum(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Tensor:
    """Running sums along ``axis`` (required unless ``x`` is 1-d); bool and integer input sums
    in int64 (uint16 to uint64 in uint64), as ``sum`` does."""
    return _cumulative("cumulative_sum", x, axis, dtype, include_initial, 0)


def cumulative_prod(
    x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False
) -> Tensor:
    """Running products along ``axis`` (required unless ``x`` is 1-d; added in Array API 2024.12);
    bool and integer input multiplies in int64, as ``prod`` does; ``include_initial`` starts
    with ones."""
    return _cumulative("cumulative_prod", x, axis, dtype, include_initial, 1)


def diff(
    x: Any,
    /,
    *,
    axis: int = -1,
    n: int = 1,
    prepend: Any = None,
    append: Any = None,
) -> Tensor:
    """The ``n``-th forward difference along ``axis`` (added in Array API 2024.12), after joining
    ``prepend`` and ``append`` to ``x`` there; on bool tensors, whether neighbours differ."""
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError(
            "Expected a tensor of at least one dimension for diff. Received: shape ()",
            op="diff",
            shapes=((),),
        )
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"Expected a non-negative int n for diff. Received: {n!r}")
    ax = ops._axis(x, axis)
    parts = [as_tensor(p, x) for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = ops.concat(parts, axis=ax)
    lead = (slice(None),) * ax
    later_key, earlier_key = (*lead, slice(1, None)), (*lead, slice(None, -1))
    for _ in range(n):
        later, earlier = x[later_key], x[earlier_key]
        x = later != earlier if x._dtype is _dt.bool else later - earlier
    return x


# ---------------------------------------------------------------- sorting and searching


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """Values sorted along ``axis`` (stable)."""
    x = as_tensor(x)
    ax = ops._axis(x, axis)
    return wrap(x, call(x, "sort", x._native, ax, descending), x._dtype)


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """Indices (int64) that sort ``x`` along ``axis`` (stable: ties keep their order)."""
    x = as_tensor(x)
    ax = ops._axis(x, axis)
    return wrap(x, call(x, "argsort", x._native, ax, descending), _dt.int64)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Tensor:
    """Insertion indices (int64) of ``x2`` into the sorted 1-d ``x1``."""
    x1 = as_tensor(x1)
    if x1.ndim != 1:
        raise ShapeError(
            f"Expected a 1-d sorted tensor x1 for searchsorted. Received: shape {x1.shape}",
            op="searchsorted",
            shapes=(x1.shape,),
        )
    if side not in ("left", "right"):
        raise ValueError(f"Expected side 'left' or 'right'. Received: {side!r}")
    if sorter is not None:
        sorter = as_tensor(sorter, x1)
        if sorter.shape != x1.shape:  # take would sort a part of x1 without a word
            raise ShapeError(
                f"Expected a sorter of the shape of x1 for searchsorted. Received: x1 of shape "
                f"{x1.shape} and sorter of shape {sorter.shape}",
                op="searchsorted",
                shapes=(x1.shape, sorter.shape),
            )
        x1 = take(x1, sorter)
    x2 = as_tensor(x2, x1)
    check_same(x1, x2)
    dt = _dt.result_type(x1._dtype, x2._dtype)
    a, b = ops.astype(x1, dt, copy=False), ops.astype(x2, dt, copy=False)
    return wrap(x1, call(x1, "searchsorted", a._native, b._native, side), _dt.int64)


def nonzero(x: Any, /) -> tuple[Tensor, ...]:
    """Indices (int64) of the non-zero elements, one tensor per axis."""
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError(
            "Expected a tensor of at least one dimension for nonzero. Received: shape ()",
            op="nonzero",
            shapes=((),),
        )
    return tuple(wrap(x, n, _dt.int64) for n in call(x, "nonzero", x._native))


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """How many elements are non-zero (int64), over ``axis`` (every axis by default; an int or
    a tuple), added in Array API 2024.12."""
    x = as_tensor(x)
    nonzero_mask = x if x._dtype is _dt.bool else x != 0
    return ops.sum(nonzero_mask, axis=axis, keepdims=keepdims, dtype=_dt.int64)


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _unique(x: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(the run number of each sorted element, x's stable sort order, the sorted values,
    where each run of equal sorted values starts): the pieces every unique_* function is
    built from, all native ops. NaN differs from itself, so each NaN is a run of its own."""
    x = as_tensor(x)
    flat = ops.reshape(x, (-1,))
    if flat._dtype.kind == "c":
        # NumPy's order of complex values (by real part, then imaginary part) as two stable
        # sorts of real tensors: PyTorch, TensorFlow and Paddle have no complex sort kernel
        order = argsort(imag(flat))
        order = take(order, argsort(take(real(flat), order)))
    else:
        order = argsort(flat)
    s = take(flat, order)
    if s.shape[0] == 0:
        empty = creation.zeros((0,), dtype=_dt.int64, device=x.device)
        return empty, order, s, empty
    first = creation.full((1,), True, dtype=_dt.bool, device=x.device)
    is_start = ops.concat([first, s[1:] != s[:-1]])
    runs = cumulative_sum(is_start) - 1
    return runs, order, s, nonzero(is_start)[0]


def _counts(starts: Tensor, n: int) -> Tensor:
    end = creation.full((1,), n, dtype=_dt.int64, device=starts.device)
    bounds = ops.concat([starts, end])
    return bounds[1:] - bounds[:-1]


def unique_values(x: Any, /) -> Tensor:
    """The distinct values of ``x``, sorted, as a 1-d tensor."""
    _, _, s, starts = _unique(x)
    return take(s, starts)


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """The distinct values of ``x`` (sorted) and how often each occurs (int64)."""
    _, _, s, starts = _unique(x)
    return UniqueCountsResult(take(s, starts), _counts(starts, s.shape[0]))


def _inverse(x: Tensor, order: Tensor, runs: Tensor) -> Tensor:
    """For each element of ``x`` (in its shape), the index of its value among the sorted
    distinct values: the run number of its place in the sort order."""
    return ops.reshape(take(runs, argsort(order)), x.shape)


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """The distinct values of ``x`` (sorted) and, for each element of ``x`` (in its shape),
    the index of its value among them."""
    x = as_tensor(x)
    runs, order, s, starts = _unique(x)
    return UniqueInverseResult(take(s, starts), _inverse(x, order, runs))


def unique_all(x: Any, /) -> UniqueAllResult:
    """Distinct values (sorted), the first index of each in the flattened ``x``, the inverse
    indices (in x's shape) and the counts."""
    x = as_tensor(x)
    runs, order, s, starts = _unique(x)
    inverse = _inverse(x, order, runs)
    return UniqueAllResult(
        take(s, starts), take(order, starts), inverse, _counts(starts, s.shape[0])
    )


# ---------------------------------------------------------------- indexing and shapes


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Tensor:
    """Elements of ``x`` at integer ``indices`` along ``axis`` (optional for 1-d ``x``)."""
    x = as_tensor(x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"Expected axis= for a {x.ndim}-d tensor. Received: axis=None")
        axis = 0
    idx = as_tensor(indices, x)
    check_same(x, idx)
    if idx._dtype.kind not in "iu":
        raise TypeError(f"Expected integer indices. Received: {idx._dtype}")
    idx = ops.astype(idx, _dt.int64, copy=False)
    ax = ops._axis(x, axis)
    idx = ops.where(idx < 0, idx + x.shape[ax], idx)  # negative indices count from the end
    return wrap(x, call(x, "take", x._native, idx._native, ax), x._dtype)


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Tensor:
    """Elements of ``x`` at integer ``indices`` (negative ones count from the end) along
    ``axis`` (added in Array API 2024.12): ``indices`` has ``x``'s rank, and the two broadcast against
    each other on every other axis."""
    x = as_tensor(x)
    idx = as_tensor(indices, x)
    check_same(x, idx)
    if idx._dtype.kind not in "iu":
        raise TypeError(f"Expected integer indices. Received: {idx._dtype}")
    if idx.ndim != x.ndim or x.ndim == 0:
        raise ShapeError(
            f"Expected indices with the rank of x (at least 1) for take_along_axis. Received: "
            f"indices of shape {idx.shape} for x of shape {x.shape}",
            op="take_along_axis",
            shapes=(x.shape, idx.shape),
        )
    ax = ops._axis(x, axis)
    off = [s for i, s in enumerate(x.shape) if i != ax]
    idx_off = [s for i, s in enumerate(idx.shape) if i != ax]
    try:
        common = list(np.broadcast_shapes(tuple(off), tuple(idx_off)))
    except ValueError:
        raise ShapeError(
            f"Expected x and indices that broadcast on every axis but {ax} for "
            f"take_along_axis. Received: shapes {x.shape} and {idx.shape}",
            op="take_along_axis",
            shapes=(x.shape, idx.shape),
        ) from None
    x = broadcast_to(x, (*common[:ax], x.shape[ax], *common[ax:]))
    idx = broadcast_to(idx, (*common[:ax], idx.shape[ax], *common[ax:]))
    idx = ops.astype(idx, _dt.int64, copy=False)
    idx = ops.where(idx < 0, idx + x.shape[ax], idx)
    return wrap(x, call(x, "take_along_axis", x._native, idx._native, ax), x._dtype)


def flip(x: Any, /, *, axis: Any = None) -> Tensor:
    """``x`` reversed along ``axis`` (all axes by default). ``md.flip`` is
    ``torch_names.flip``, which also takes PyTorch's positional ``dims``."""
    x = as_tensor(x)
    axes = ops._axes(x, axis)
    axes = tuple(range(x.ndim)) if axes is None else axes
    return wrap(x, call(x, "flip", x._native, axes), x._dtype)


def roll(x: Any, /, shift: int | Sequence[int], *, axis: Any = None) -> Tensor:
    """``x`` shifted cyclically by ``shift`` along ``axis`` (the flattened tensor by default)."""
    x = as_tensor(x)
    if axis is None:
        flat = ops.reshape(x, (-1,))
        s = shift if isinstance(shift, int) else builtins.sum(shift)
        return ops.reshape(wrap(x, call(x, "roll", flat._native, (s,), (0,)), x._dtype), x.shape)
    axes = ops._axes(x, axis)
    shifts = (shift,) * len(axes) if isinstance(shift, int) else tuple(shift)
    if len(shifts) != len(axes):
        raise ValueError(f"Expected one shift per axis. Received: {shifts} for axes {axes}")
    return wrap(x, call(x, "roll", x._native, shifts, axes), x._dtype)


def broadcast_to(x: Any, /, shape: Sequence[int]) -> Tensor:
    """``x`` broadcast to ``shape`` (NumPy's rules)."""
    x = as_tensor(x)
    shape = tuple(int(s) for s in shape)
    try:
        np.broadcast_shapes(x.shape, shape)
        ok = np.broadcast_shapes(x.shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ShapeError(
            f"Expected a shape that {x.shape} broadcasts to for broadcast_to. Received: {shape}",
            op="broadcast_to",
            shapes=(x.shape, shape),
        )
    try:
        out = call(x, "broadcast_to", x._native, shape)
    except Exception as e:  # more dimensions than the framework's kernel broadcasts at once
        try:
            out = expand(x._bk, x._dev, x._native, x.shape, shape)
        except Exception:
            raise e from None
    return wrap(x, out, x._dtype)


def broadcast_arrays(*arrays: Any) -> list[Tensor]:
    """The tensors broadcast against each other."""
    ts = [as_tensor(a) for a in arrays]
    try:
        shape = np.broadcast_shapes(*(t.shape for t in ts))
    except ValueError:
        raise ShapeError(
            f"Expected shapes that broadcast together for broadcast_arrays. Received: "
            f"{[t.shape for t in ts]}",
            op="broadcast_arrays",
            shapes=tuple(t.shape for t in ts),
        ) from None
    return [broadcast_to(t, shape) for t in ts]


def moveaxis(x: Any, source: Any, destination: Any, /) -> Tensor:
    """``x`` with axes ``source`` moved to positions ``destination``."""
    x = as_tensor(x)
    src = ops._axes(x, source)
    dst = ops._axes(x, destination)
    if len(src) != len(dst):
        raise ValueError(f"Expected as many sources as destinations. Received: {src}, {dst}")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return ops.permute_dims(x, order)


def matrix_transpose(x: Any, /) -> Tensor:
    """``x`` with its last two axes swapped."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ShapeError(
            f"Expected at least 2 dimensions for matrix_transpose. Received: shape {x.shape}",
            op="matrix_transpose",
            shapes=(x.shape,),
        )
    return ops.transpose(x, -2, -1)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``."""
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError(
            "Expected a tensor of at least one dimension for unstack. Received: shape ()",
            op="unstack",
            shapes=((),),
        )
    ax = ops._axis(x, axis)
    lead = (slice(None),) * ax
    keys = ((*lead, i) for i in range(x.shape[ax]))  # a subscript's own *lead needs 3.11
    return tuple(x[key] for key in keys)


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times (an int, or an int tensor, one per element)."""
    x = as_tensor(x)
    if axis is None:
        x, axis = ops.reshape(x, (-1,)), 0
    ax = ops._axis(x, axis)
    if isinstance(repeats, Tensor):
        check_same(x, repeats)
        if repeats.shape == (1,) and x.shape[ax] != 1:  # one count for every element
            repeats = broadcast_to(repeats, (x.shape[ax],))
        if repeats.shape not in ((), (x.shape[ax],)):  # MXNet would repeat some silently
            raise ShapeError(
                f"Expected repeats of shape (), (1,) or ({x.shape[ax]},) (one count per element "
                f"along axis {ax} of shape {x.shape}). Received: repeats of shape "
                f"{repeats.shape}. Give one count per element, or one for all.",
                op="repeat",
                shapes=(x.shape, repeats.shape),
            )
        reps: Any = ops.astype(repeats, _dt.int64, copy=False)._native
    else:
        reps = int(repeats)
    return wrap(x, call(x, "repeat", x._native, reps, ax), x._dtype)


def tile(x: Any, repetitions: Sequence[int], /) -> Tensor:
    """``x`` repeated ``repetitions[i]`` times along each axis."""
    x = as_tensor(x)
    reps = tuple(int(r) for r in repetitions)
    if builtins.any(r < 0 for r in reps):
        raise ValueError(
            f"Expected non-negative repetitions for tile. Received: {reps}. Use 0 for an "
            "empty result along an axis."
        )
    n = builtins.max(len(reps), x.ndim)
    reps = (1,) * (n - len(reps)) + reps
    x = ops.reshape(x, (1,) * (n - x.ndim) + x.shape)
    return wrap(x, call(x, "tile", x._native, reps), x._dtype)


def _check_matrices(x: Tensor, name: str) -> None:
    """ShapeError for fewer than 2 dimensions (NumPy would treat a 1-d tensor as one row of a
    square matrix, PyTorch, TensorFlow and Paddle refuse it with their own errors)."""
    if x.ndim < 2:
        raise ShapeError(
            f"Expected a matrix or a stack of matrices (at least 2 dimensions) for {name}. "
            f"Received: shape {x.shape}. Reshape a vector to (1, n) or (n, 1) first.",
            op=name,
            shapes=(x.shape,),
        )


def tril(x: Any, /, *, k: int = 0) -> Tensor:
    """``x`` with the elements above the ``k``-th diagonal zeroed."""
    x = as_tensor(x)
    _check_matrices(x, "tril")
    return wrap(x, call(x, "tril", x._native, int(k)), x._dtype)


def triu(x: Any, /, *, k: int = 0) -> Tensor:
    """``x`` with the elements below the ``k``-th diagonal zeroed."""
    x = as_tensor(x)
    _check_matrices(x, "triu")
    return wrap(x, call(x, "triu", x._native, int(k)), x._dtype)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """Dot products of vectors along ``axis`` (broadcasting the rest): ``sum(conj(x1) * x2)``,
    so complex ``x1`` is conjugated."""
    x1 = as_tensor(x1)
    x2 = as_tensor(x2, x1)
    if x1.shape[axis] != x2.shape[axis]:
        raise ShapeError(
            f"Expected equal sizes along axis {axis} for vecdot. Received: {x1.shape} and "
            f"{x2.shape}",
            op="vecdot",
            shapes=(x1.shape, x2.shape),
        )
    product = (conj(x1) if x1._dtype.kind == "c" else x1) * x2
    return ops.sum(product, axis=axis, dtype=product.dtype)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Tensor:
    """Sum of products over ``axes`` (an int: the last n of x1 with the first n of x2; or two
    sequences of axes)."""
    x1 = as_tensor(x1)
    x2 = as_tensor(x2, x1)
    if isinstance(axes, int):
        a1 = tuple(range(x1.ndim - axes, x1.ndim))
        a2 = tuple(range(axes))
    else:
        a1 = ops._axes(x1, tuple(axes[0])) or ()
        a2 = ops._axes(x2, tuple(axes[1])) or ()
    if [x1.shape[a] for a in a1] != [x2.shape[a] for a in a2]:
        raise ShapeError(
            f"Expected matching contracted sizes for tensordot. Received: {x1.shape} and "
            f"{x2.shape}",
            op="tensordot",
            shapes=(x1.shape, x2.shape),
        )
    free1 = [a for a in range(x1.ndim) if a not in a1]
    free2 = [a for a in range(x2.ndim) if a not in a2]
    k = math.prod(x1.shape[a] for a in a1)
    rows = math.prod(x1.shape[a] for a in free1)
    cols = math.prod(x2.shape[a] for a in free2)
    m = ops.reshape(ops.permute_dims(x1, free1 + list(a1)), (rows, k))
    n = ops.reshape(ops.permute_dims(x2, list(a2) + free2), (k, cols))
    out_shape = tuple(x1.shape[a] for a in free1) + tuple(x2.shape[a] for a in free2)
    return ops.reshape(m @ n, out_shape)


# ---------------------------------------------------------------- creation


def empty(shape: Any = None, *sizes: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A new tensor of ``shape`` (``empty((2, 3))``, or PyTorch's ``empty(2, 3)``) whose values
    are unspecified (not zero-filled where the framework has an uninitialised allocation; zeros
    on TensorFlow, which has none)."""
    return creation.empty(shape, *sizes, dtype=dtype, device=device)


def empty_like(x: Tensor, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """A new tensor of x's shape, dtype and device (or those given), values unspecified."""
    return creation.empty(
        x.shape,
        dtype=x.dtype if dtype is None else dtype,
        device=x.device if device is None else device,
    )


def linspace(
    start: float,
    stop: float,
    /,
    num: int,
    *,
    dtype: Any = None,
    device: Any = None,
    endpoint: bool = True,
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (float32 by default)."""
    dt = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    if num < 0:
        raise ValueError(f"Expected num >= 0. Received: {num}")
    steps = builtins.max(num - 1 if endpoint else num, 1)
    step = (stop - start) / steps
    i = creation.arange(num, dtype=_dt.float64 if dt is _dt.float64 else _dt.float32, device=device)
    out = i * step + start
    if endpoint and num > 1:
        out[num - 1] = stop
    return ops.astype(out, dt, copy=False)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids of 1-d tensors (``indexing`` "xy": Cartesian, "ij": matrix)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Expected indexing 'xy' or 'ij'. Received: {indexing!r}")
    ts = [as_tensor(a) for a in arrays]
    if builtins.any(t.ndim != 1 for t in ts):
        shapes = tuple(t.shape for t in ts)
        raise ShapeError(
            f"Expected 1-d tensors for meshgrid. Received: shapes {shapes}. Flatten them first "
            "(md.reshape(x, (-1,))).",
            op="meshgrid",
            shapes=shapes,
        )
    n = len(ts)
    sizes = [t.shape[0] for t in ts]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(ts):
        pos = i
        if indexing == "xy" and n >= 2 and i < 2:
            pos = 1 - i
        shape = [1] * n
        shape[pos] = t.shape[0]
        out.append(broadcast_to(ops.reshape(t, tuple(shape)), tuple(sizes)))
    return out


# ---------------------------------------------------------------- DLPack


def _dlpack_device(self: Tensor) -> tuple[int, int]:
    """(device type, index) in DLPack's codes: 1 CPU, 2 CUDA."""
    return (1, 0) if self._dev.type == "cpu" else (2, self._dev.index)


def _dlpack(
    self: Tensor,
    *,
    stream: Any = None,
    max_version: Any = None,
    dl_device: Any = None,
    copy: Any = None,
) -> Any:
    """A DLPack capsule sharing this tensor's memory."""
    return call(self, "to_dlpack", self._native)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A Tensor of the current backend sharing the memory of any DLPack producer (``x`` has
    ``__dlpack__``)."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(
            f"Expected an object with __dlpack__ (a tensor or array). Received: {type(x).__name__}"
        )
    bk = registry.current()
    if isinstance(x, Tensor) and x._bk is bk:
        native = x._native  # the same framework: share the tensor itself
    elif bk.tensor_types and isinstance(x, bk.tensor_types):
        native = x
    else:
        # from_dlpack is one of the array-API lowerings, outside the OpTable protocol
        array_ops: Any = bk.ops
        native = array_ops.from_dlpack(x)
    t = new_tensor(native, bk, bk.device_of(native), bk.dtype_of(native))
    return t if device is None else t.to(device, copy=builtins.bool(copy))


# ---------------------------------------------------------------- array object


def _array_namespace(self: Tensor, /, *, api_version: str | None = None) -> Any:
    if api_version not in (None, "2021.12", "2022.12", "2023.12"):
        raise ValueError(
            f"Expected api_version None or one up to '2023.12'. Received: {api_version!r}"
        )
    import multidev

    return multidev


def install() -> None:
    """Attach the Array API's dunders and methods to ``Tensor``."""
    table: dict[str, Any] = {
        "__array_namespace__": _array_namespace,
        "__dlpack__": _dlpack,
        "__dlpack_device__": _dlpack_device,
        "__pos__": positive,
        "__xor__": lambda self, other: bitwise_xor(self, other),
        "__rxor__": lambda self, other: bitwise_xor(_same(other, self), self),
        "__lshift__": lambda self, other: bitwise_left_shift(self, other),
        "__rlshift__": lambda self, other: bitwise_left_shift(_same(other, self), self),
        "__rshift__": lambda self, other: bitwise_right_shift(self, other),
        "__rrshift__": lambda self, other: bitwise_right_shift(_same(other, self), self),
        # & | ~ on integers are bitwise (on bool, logical)
        "__and__": lambda self, other: bitwise_and(self, other),
        "__rand__": lambda self, other: bitwise_and(_same(other, self), self),
        "__or__": lambda self, other: bitwise_or(self, other),
        "__ror__": lambda self, other: bitwise_or(_same(other, self), self),
        "__invert__": bitwise_invert,
        "mT": property(matrix_transpose),
    }
    in_place = {
        "and": (bitwise_and, "&="),
        "or": (bitwise_or, "|="),
        "xor": (bitwise_xor, "^="),
        "lshift": (bitwise_left_shift, "<<="),
        "rshift": (bitwise_right_shift, ">>="),
        "matmul": (ops.matmul, "@="),
    }
    for name, (op, symbol) in in_place.items():
        table[f"__i{name}__"] = methods.in_place(op, symbol)
    for name, fn in table.items():
        setattr(Tensor, name, fn)


install()
