"""Array-API-named functions. Each checks backend and device, matches dtypes, then calls the
adapter's op table; results stay on their inputs' device."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, overload

from . import amp as _amp
from . import dtypes as _dt
from .dispatch import (
    ARITH,
    SCALARS,
    as_tensor,
    asarray,
    binop,
    call,
    cast,
    check_same,
    elementwise,
    floating,
    to,
    unop,
    wrap,
)
from .errors import ShapeError
from .tensors import Tensor

__all__ = [
    "abs",
    "add",
    "argmax",
    "argmin",
    "astype",
    "clip",
    "concat",
    "cos",
    "divide",
    "einsum",
    "equal",
    "exp",
    "expand_dims",
    "flatten",
    "floor",
    "greater",
    "less",
    "log",
    "log1p",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "permute_dims",
    "pow",
    "prod",
    "reshape",
    "sin",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "subtract",
    "sum",
    "tanh",
    "transpose",
    "where",
]


@overload
def _axes(x: Tensor, axis: None) -> None: ...
@overload
def _axes(x: Tensor, axis: int | Sequence[int]) -> tuple[int, ...]: ...
def _axes(x: Tensor, axis: Any) -> tuple[int, ...] | None:
    """``axis`` (None, an int or a sequence) as non-negative axes in ``[-ndim, ndim)``, as the
    Array API has it: a 0-d tensor has no axis to reduce, squeeze or flip (use ``axis=None``)."""
    if axis is None:
        return None
    ndim = x.ndim
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(
                f"Expected an axis in [-{ndim}, {ndim}). Received: {a} for shape {x.shape}"
                + ("; a 0-d tensor takes axis=None" if ndim == 0 else "")
            )
        out.append(a % ndim)
    return tuple(out)


def _axis(x: Tensor, axis: int) -> int:
    """One dimension, as PyTorch indexes them: a 0-d tensor has the one dimension 0 (or -1)."""
    ndim = builtins.max(x.ndim, 1)
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"Expected an axis in [-{ndim}, {ndim}). Received: {axis} for shape {x.shape}"
        )
    return axis % ndim


# ---------------------------------------------------------------- elementwise


def _lhs(x: Any, y: Any) -> Tensor:
    """The left operand ``x`` of a binary function as a Tensor: a Python scalar beside a
    tensor ``y`` takes ``y``'s dtype by the scalar rule (``add(2, y)`` is ``y``'s dtype, as
    ``y + 2`` is; added in Array API 2024.12)."""
    if type(x) in SCALARS and isinstance(y, Tensor):
        return asarray(x, dtype=_dt.scalar_result_type(y._dtype, x), device=y.device)
    return as_tensor(x, y if isinstance(y, Tensor) else None)


def add(x, y) -> Tensor:
    """Elementwise ``x + y`` with NumPy's broadcasting and type promotion."""
    return (x if isinstance(x, Tensor) else _lhs(x, y)) + y


def subtract(x, y) -> Tensor:
    """Elementwise ``x - y`` with NumPy's broadcasting and type promotion."""
    return (x if isinstance(x, Tensor) else _lhs(x, y)) - y


def multiply(x, y) -> Tensor:
    """Elementwise ``x * y`` with NumPy's broadcasting and type promotion."""
    return (x if isinstance(x, Tensor) else _lhs(x, y)) * y


def divide(x, y) -> Tensor:
    """Elementwise true division ``x / y``; integer operands give a floating result."""
    return (x if isinstance(x, Tensor) else _lhs(x, y)) / y


def pow(x, y) -> Tensor:
    """Elementwise ``x ** y`` with NumPy's broadcasting and type promotion."""
    return (x if isinstance(x, Tensor) else _lhs(x, y)) ** y


def equal(x, y) -> Tensor:
    """Elementwise ``x == y`` as a bool tensor."""
    return (x if isinstance(x, Tensor) else _lhs(x, y)) == y


def less(x, y) -> Tensor:
    """Elementwise ``x < y`` as a bool tensor."""
    return (x if isinstance(x, Tensor) else _lhs(x, y)) < y


def greater(x, y) -> Tensor:
    """Elementwise ``x > y`` as a bool tensor."""
    return (x if isinstance(x, Tensor) else _lhs(x, y)) > y


def negative(x) -> Tensor:
    """Elementwise ``-x``."""
    return -as_tensor(x)


def abs(x) -> Tensor:
    """Elementwise absolute value; the modulus (of the real dtype) for complex input."""
    x = as_tensor(x)
    if x._dtype.kind == "c":
        return wrap(x, call(x, "abs", x._native), _dt.real_dtype(x._dtype))
    return unop(x, "abs")


def maximum(x, y) -> Tensor:
    """Elementwise maximum of ``x`` and ``y`` (NaN propagates)."""
    x = x if isinstance(x, Tensor) else _lhs(x, y)
    return binop(x, y, "maximum", ARITH)


def minimum(x, y) -> Tensor:
    """Elementwise minimum of ``x`` and ``y`` (NaN propagates)."""
    x = x if isinstance(x, Tensor) else _lhs(x, y)
    return binop(x, y, "minimum", ARITH)


def matmul(x, y) -> Tensor:
    """Matrix product ``x @ y`` (NumPy's rules for 1-d and batched operands)."""
    if _amp.ACTIVE:
        x, y = _amp.cast("matmul", x, y)
    return as_tensor(x) @ as_tensor(y, x)


def _einsum_terms(equation: str, ts: Sequence[Tensor]) -> None:
    """ValueError where ``equation`` does not fit the operands: one input term per operand,
    one letter per dimension (``...`` standing for the rest), a letter's dimensions of one
    size, the output's letters found in the inputs, each once."""
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ts):
        raise ValueError(
            f"Expected one input term per operand in einsum's equation. Received: "
            f"{equation!r} ({len(terms)} terms) for {len(ts)} operands."
        )
    sizes: dict[str, int] = {}
    for term, t in zip(terms, ts, strict=True):
        letters = term.replace("...", "")
        if (not letters.isalpha() and letters) or term.count("...") > 1:
            raise ValueError(
                f"Expected einsum terms of letters and at most one '...'. Received: {term!r} "
                f"in {equation!r}."
            )
        if len(letters) != t.ndim if "..." not in term else len(letters) > t.ndim:
            raise ValueError(
                f"Expected one letter per dimension in einsum's term {term!r}. Received: a "
                f"{t.ndim}-d operand of shape {t.shape}."
            )
        lead = term.find("...")
        dims = t.shape if lead < 0 else t.shape[:lead] + t.shape[t.ndim - (len(term) - lead - 3) :]
        for letter, n in zip(letters, dims, strict=True):
            if sizes.setdefault(letter, n) != n:
                raise ValueError(
                    f"Expected the dimensions einsum's letter {letter!r} labels to be of one "
                    f"size. Received: sizes {sizes[letter]} and {n} in {equation!r}."
                )
    out = output.replace("...", "")
    if arrow and (
        not all(c in sizes for c in out) or len(set(out)) != len(out) or output.count("...") > 1
    ):
        raise ValueError(
            f"Expected einsum's output term to name input letters, each once. Received: "
            f"{output!r} in {equation!r}."
        )


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation over the operands' labelled dimensions, as ``torch.einsum``:
    ``einsum("ij,jk->ik", a, b)`` is ``a @ b``, ``einsum("ii", x)`` the trace,
    ``einsum("bij,bjk->bik", ...)`` a batched product; ``...`` stands for the dimensions no
    letter names, and without ``->`` the output is the letters seen once, in alphabetical
    order. The operands may also be given as one list. They are promoted to one dtype
    (PyTorch's rules) and must share a device; the framework's own einsum computes it
    (differentiable where the backend has autograd).

    Raises ValueError where the equation does not fit the operands (term count, one letter
    per dimension, one size per letter: no broadcasting of size-1 dimensions), TypeError for
    bool operands (no framework has a bool einsum kernel), and, on Paddle, for integer
    operands (it has none either: cast them to a floating dtype)."""
    if not isinstance(equation, str):
        raise TypeError(
            f"Expected the einsum equation as a str, e.g. 'ij,jk->ik'. Received: "
            f"{type(equation).__name__}. Pass the equation first, then the operands."
        )
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ts, dt = _same_all(operands)
    if dt is _dt.bool:
        raise TypeError(
            "Expected numeric operands for einsum. Received: bool tensors. Cast them first, "
            "e.g. with .astype(md.int64)."
        )
    eq = equation.replace(" ", "")
    _einsum_terms(eq, ts)
    natives = [t._native if t._dtype is dt else call(t, "astype", t._native, dt) for t in ts]
    return wrap(ts[0], call(ts[0], "einsum", eq, *natives), dt)


def _float_unary(name: str):
    def fn(x) -> Tensor:
        x = floating(as_tensor(x))
        return wrap(x, call(x, name, x._native), x._dtype)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}; integer input is computed in float32."
    return fn


exp = _float_unary("exp")
log = _float_unary("log")
log1p = _float_unary("log1p")
sqrt = _float_unary("sqrt")
sin = _float_unary("sin")
cos = _float_unary("cos")
tanh = _float_unary("tanh")


def floor(x) -> Tensor:
    """Elementwise largest integer value not above x; integer input is returned unchanged
    (a copy)."""
    x = as_tensor(x)
    if x._dtype.kind in "biu":
        return astype(x, x._dtype)
    return wrap(x, call(x, "floor", x._native), x._dtype)


def square(x) -> Tensor:
    """Elementwise ``x * x``."""
    x = as_tensor(x)
    return x * x


def clip(x, min: Any = None, max: Any = None) -> Tensor:
    """``x`` limited to ``[min, max]`` (Python numbers, or tensors that broadcast against x);
    the result keeps x's dtype."""
    x = as_tensor(x)
    if min is None and max is None:
        return x
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = binop(out, astype(as_tensor(min, x), x._dtype, copy=False), "maximum", ARITH)
        if max is not None:
            out = binop(out, astype(as_tensor(max, x), x._dtype, copy=False), "minimum", ARITH)
        return out
    return wrap(x, call(x, "clip", x._native, min, max), x._dtype)


def where(condition, x, y) -> Tensor:
    """Elements of ``x`` where ``condition`` holds, else of ``y``."""
    cond = as_tensor(condition)
    if cond._dtype is not _dt.bool:
        raise TypeError(f"Expected a bool condition. Received: {cond._dtype}")
    ref = x if isinstance(x, Tensor) else (y if isinstance(y, Tensor) else cond)
    scalar_x, scalar_y = type(x) in SCALARS, type(y) in SCALARS
    x_value, y_value = x, y
    x, y = as_tensor(x, ref), as_tensor(y, ref)
    check_same(cond, x)
    check_same(cond, y)
    if scalar_x and not scalar_y:  # a Python scalar takes the tensor's dtype, as in x + 1
        dt = _dt.scalar_result_type(y._dtype, x_value)
    elif scalar_y and not scalar_x:
        dt = _dt.scalar_result_type(x._dtype, y_value)
    else:
        dt = _dt.result_type(x._dtype, y._dtype)
    xn = x._native if x._dtype is dt else call(x, "astype", x._native, dt)
    yn = y._native if y._dtype is dt else call(y, "astype", y._native, dt)
    return wrap(cond, elementwise(cond, "where", cond._native, xn, yn), dt)


def astype(x, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Tensor:
    """``x`` converted to ``dtype`` (a new tensor unless ``copy=False`` and nothing changes),
    on ``device`` where given."""
    x = as_tensor(x)
    dt = _dt.as_dtype(dtype)
    if dt is not x._dtype:
        x, copy = cast(x, dt), False
    if device is not None:
        return to(x, device, copy=copy)
    return to(x, x._dev, copy=True) if copy else x


# ---------------------------------------------------------------- reductions


def _accumulator(x: Tensor, dtype: Any) -> Tensor:
    """``x`` in the dtype a sum or product accumulates in: ``dtype`` where given, else uint64
    for uint16, uint32 and uint64 input (as in NumPy and the Array API), int64 for other bool
    and integer input (as in PyTorch), else x's own."""
    if dtype is not None:
        return astype(x, dtype, copy=False)
    if x._dtype in _WIDE_UNSIGNED:
        return x if x._dtype is _dt.uint64 else astype(x, _dt.uint64)
    if x._dtype.kind in "biu" and x._dtype is not _dt.int64:
        return astype(x, _dt.int64)
    return x


_WIDE_UNSIGNED = frozenset(_dt.UNSIGNED)
#: the integer dtypes narrower than 64 bits: NumPy, PyTorch, JAX and Paddle sum and multiply
#: those in 64 bits whatever the input, so a result asked for in one is cast back (modular
#: arithmetic: the same as accumulating in the narrow dtype)
NARROW = frozenset(d for d in _dt.EVERY if d.kind in "biu" and d.itemsize < 8)


def accumulated(x: Tensor, name: str, *args: Any) -> Tensor:
    """The adapter's reduction ``name`` of ``x`` (in its accumulator's dtype) with ``args``,
    in x's dtype."""
    out = call(x, name, x._native, *args)
    if x._dtype in NARROW and x._bk.dtype_of(out) is not x._dtype:
        out = call(x, "astype", out, x._dtype)
    return wrap(x, out, x._dtype)


def sum(x, axis=None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum over ``axis``; bool and integer input sum in int64, as in PyTorch, unless
    ``dtype`` names the accumulator."""
    if _amp.ACTIVE:
        (x,) = _amp.cast("sum", x)
    x = _accumulator(as_tensor(x), dtype)
    return accumulated(x, "sum", _axes(x, axis), keepdims)


def prod(x, axis=None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:
    """Product over ``axis``; accumulates like ``sum``."""
    if _amp.ACTIVE:
        (x,) = _amp.cast("prod", x)
    x = _accumulator(as_tensor(x), dtype)
    return accumulated(x, "prod", _axes(x, axis), keepdims)


def mean(x, axis=None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis`` (all axes when None); floating input only."""
    x = floating(as_tensor(x))
    return wrap(x, call(x, "mean", x._native, _axes(x, axis), keepdims), x._dtype)


def _nonempty(x: Tensor, what: str, axis: Any = None) -> None:
    """A reduction with no identity (max, min, argmax, argmin) needs elements along each axis
    it reduces; an empty tensor is fine when the reduced axes are non-empty (shape (0, 3)
    reduced over axis 1 gives shape (0,))."""
    if x.size == 0:
        axes = range(x.ndim) if axis is None else _axes(x, axis)
        if any(x.shape[a] == 0 for a in axes):
            raise ValueError(
                f"Expected a non-empty tensor (or non-empty reduced axes) for {what}. "
                f"Received: shape {x.shape}, axis={axis!r}"
            )


def max(x, axis=None, keepdims: bool = False) -> Tensor:
    """Largest element over ``axis`` (all axes when None); an empty reduction raises ValueError.
    With a tensor in place of ``axis``, PyTorch's ``torch.max(input, other)``: ``maximum``."""
    if isinstance(axis, Tensor):
        return maximum(x, axis)
    x = as_tensor(x)
    _nonempty(x, "max", axis)
    return wrap(x, call(x, "max", x._native, _axes(x, axis), keepdims), x._dtype)


def min(x, axis=None, keepdims: bool = False) -> Tensor:
    """Smallest element over ``axis`` (all axes when None); an empty reduction raises ValueError.
    With a tensor in place of ``axis``, PyTorch's ``torch.min(input, other)``: ``minimum``."""
    if isinstance(axis, Tensor):
        return minimum(x, axis)
    x = as_tensor(x)
    _nonempty(x, "min", axis)
    return wrap(x, call(x, "min", x._native, _axes(x, axis), keepdims), x._dtype)


def _arg_reduction(name: str, x: Any, axis: int | None, keepdims: bool) -> Tensor:
    """The op ``name`` (argmax, argmin) over ``axis`` (None: the flattened tensor) as int64;
    with ``keepdims`` the reduced axes stay with length 1 (the adapters' ops drop them). Bool
    input is read as uint8 (False < True): several frameworks have no bool kernel for these."""
    x = as_tensor(x)
    _nonempty(x, name, axis)
    if x._dtype is _dt.bool:
        x = astype(x, _dt.uint8)
    ax = None if axis is None else _axis(x, axis)
    out = call(x, name, x._native, ax)
    if keepdims:
        kept = tuple(1 if ax is None or i == ax else n for i, n in enumerate(x.shape))
        out = call(x, "reshape", out, kept)
    return wrap(x, out, _dt.int64)


def argmax(x, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the largest element (first one on ties), as int64."""
    return _arg_reduction("argmax", x, axis, keepdims)


def argmin(x, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the smallest element (first one on ties), as int64."""
    return _arg_reduction("argmin", x, axis, keepdims)


# ---------------------------------------------------------------- shapes


def reshape(x, /, shape: Any, *, copy: bool | None = None) -> Tensor:
    """``x`` with ``shape`` (one entry may be -1); ``copy=True`` always gives a new tensor."""
    x = as_tensor(x)
    if copy:
        x = astype(x, x._dtype)
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if None in x.shape:  # a symbolic trace's unknown dimension (TensorFlow's free batch):
        if shape.count(-1) > 1:  # the size is checked, and -1 resolved, by the framework
            raise ValueError(f"Expected at most one -1 in a shape. Received: {shape}")
        return wrap(x, call(x, "reshape", x._native, shape), x._dtype)
    size = x.size
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if shape.count(-1) > 1 or (
        (-1 not in shape and known != size) or (-1 in shape and (known == 0 or size % known))
    ):
        raise ShapeError(
            f"Expected a shape with {size} elements to reshape a tensor of shape {x.shape}. "
            f"Received: {shape}",
            op="reshape",
            shapes=(x.shape, shape),
        )
    if -1 in shape:
        shape = tuple(size // known if s == -1 else s for s in shape)
    return wrap(x, call(x, "reshape", x._native, shape), x._dtype)


def flatten(x, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge the dimensions ``start_dim`` to ``end_dim`` (inclusive) into one, as ``torch.flatten``."""
    x = as_tensor(x)
    shape = x.shape
    if not shape:
        return reshape(x, (1,))
    s, e = _axis(x, start_dim), _axis(x, end_dim)
    n = 1
    for d in shape[s : e + 1]:
        n *= d
    if s == 1 and n:  # (batch, features): the batch as -1, so that a tracer keeps it free
        return reshape(x, (-1, n, *shape[e + 1 :]))
    return reshape(x, (*shape[:s], n, *shape[e + 1 :]))


def permute_dims(x, axes: Sequence[int]) -> Tensor:
    """Reorder the dimensions: result dimension ``i`` is input dimension ``axes[i]``."""
    x = as_tensor(x)
    axes = tuple(a % builtins.max(x.ndim, 1) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"Expected a permutation of range({x.ndim}). Received: {axes}")
    return wrap(x, call(x, "permute_dims", x._native, axes), x._dtype)


def transpose(x, dim0: int = 0, dim1: int = 1) -> Tensor:
    """Swap two axes (PyTorch's ``transpose``)."""
    x = as_tensor(x)
    axes = list(range(x.ndim))
    d0, d1 = _axis(x, dim0), _axis(x, dim1)
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return permute_dims(x, axes)


def _same_all(xs: Sequence[Any]) -> tuple[list[Tensor], _dt.DType]:
    if not xs:
        raise ValueError("Expected at least one tensor. Received: an empty sequence")
    ts = [as_tensor(t) for t in xs]
    dt = ts[0]._dtype
    for t in ts[1:]:
        check_same(ts[0], t)
        dt = _dt.result_type(dt, t._dtype)
    return ts, dt


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Tensor:
    """The tensors joined along ``axis`` (flattened first where ``axis`` is None)."""
    if axis is None:
        return concat([reshape(as_tensor(t), (-1,)) for t in arrays], axis=0)
    ts, dt = _same_all(arrays)
    ax = _axis(ts[0], axis)
    natives = [t._native if t._dtype is dt else call(t, "astype", t._native, dt) for t in ts]
    try:
        return wrap(ts[0], call(ts[0], "concat", natives, ax), dt)
    except Exception as e:
        _check_joinable("concat", ts, ax, e)
        raise


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Tensor:
    """Join tensors of one shape along a new dimension ``axis``."""
    ts, dt = _same_all(arrays)
    natives = [t._native if t._dtype is dt else call(t, "astype", t._native, dt) for t in ts]
    ax = axis % (ts[0].ndim + 1)
    first = ts[0].shape
    if any(t.shape != first for t in ts[1:]):  # MXNet would stack some without a word
        _check_joinable("stack", ts, None, None)
    try:
        return wrap(ts[0], call(ts[0], "stack", natives, ax), dt)
    except Exception as e:
        _check_joinable("stack", ts, None, e)
        raise


def _check_joinable(name: str, ts: list[Tensor], axis: int | None, exc: Exception | None) -> None:
    """Called where the native concat (``axis``) or stack (``axis`` None) raised ``exc``:
    ShapeError where the tensors' shapes cannot be joined, else return (``exc`` stands)."""
    shapes = tuple(t.shape for t in ts)
    first = shapes[0]
    if axis is None:
        bad = any(s != first for s in shapes)
        want = "tensors of one shape"
    else:
        bad = any(
            len(s) != len(first)
            or any(a != b for i, (a, b) in enumerate(zip(s, first, strict=False)) if i != axis)
            for s in shapes
        )
        want = f"tensors of one rank whose sizes agree on every axis but axis {axis}"
    if bad:
        raise ShapeError(
            f"Expected {want} for {name}. Received: shapes {', '.join(map(str, shapes))}. "
            "Reshape or slice the tensors so that they match.",
            op=name,
            shapes=shapes,
        ) from exc


def expand_dims(x, axis: int = 0) -> Tensor:
    """``x`` with a new axis of size 1 at ``axis`` (in ``[-ndim - 1, ndim]``; IndexError
    outside it, as the standard says)."""
    x = as_tensor(x)
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise IndexError(
            f"Expected an axis in [{-x.ndim - 1}, {x.ndim}] for a {x.ndim}-d tensor. "
            f"Received: {axis}"
        )
    ax = axis % (x.ndim + 1)
    shape = x.shape
    return reshape(x, (*shape[:ax], 1, *shape[ax:]))


def squeeze(x, axis=None) -> Tensor:
    """Remove dimensions of size 1 (``axis``: only those; a named dimension not of size 1 raises ValueError)."""
    x = as_tensor(x)
    shape = x.shape
    axes = _axes(x, axis)
    if axes is None:
        axes = tuple(i for i, s in enumerate(shape) if s == 1)
    for a in axes:
        if shape[a] != 1:
            raise ShapeError(
                f"Expected axis {a} of size 1 to squeeze. Received: shape {shape}",
                op="squeeze",
                shapes=(shape,),
            )
    return reshape(x, tuple(s for i, s in enumerate(shape) if i not in axes))
