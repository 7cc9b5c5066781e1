"""Helpers for an adapter's native reference module (``reference.py``, its ``OPS`` table):
the conformance suite's computations written in the framework's own code.

An adapter writes an entry only where its framework spells the computation differently from
the names below; ``native_table`` takes the others from the framework's namespaces and turns
everything into what the suite calls: NumPy arrays in (also inside lists), NumPy arrays out
(also inside tuples). Nothing here goes through multidev.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from ..contract import find_native
from ..dtypes import bfloat16

__all__ = [
    *("FLOAT_KEYS", "NAMESPACE_KEYS", "REDUCTION_KEYS", "eager_sgd_step", "gradient_keys"),
    *("native_table", "tape_grads", "bfloat16_bits", "bfloat16_numpy"),
]


def _by_name(text: str) -> dict[str, tuple[str, ...]]:
    """``name|alias|...`` entries (space-separated) as ``{name: (name, alias, ...)}``."""
    return {entry.split("|")[0]: tuple(entry.split("|")) for entry in text.split()}


#: reference keys with NumPy's meaning and call, by the names frameworks give them (tried in
#: order on each namespace): ``native_table`` takes them from the framework's namespaces
NAMESPACE_KEYS = _by_name(
    "add subtract multiply divide maximum matmul exp log log1p sqrt abs tanh sigmoid relu "
    "softmax log_softmax argmax reshape permute_dims|permute|transpose "
    "concat|cat|concatenate stack where clip|clamp|clip_by_value real imag conj"
)

#: reductions ``(x, axis, keepdims)`` (axis None: every axis, (): none), by the same rule
REDUCTION_KEYS = _by_name("sum|reduce_sum mean|reduce_mean max|reduce_max")
REDUCTION_KEYS["max"] = ("amax", *REDUCTION_KEYS["max"])

#: keys defined on floating point: integer input is computed in float32, as multidev does
FLOAT_KEYS = frozenset({"mean", "softmax", "log_softmax"})


def _reduction(fn: Callable[..., Any], keywords: tuple[str, str], axes: type) -> Any:
    axis_kw, keep_kw = keywords

    def reduce(t: Any, axis: Any, keepdims: bool) -> Any:
        if isinstance(axis, (list, tuple)):
            if not axis:  # reduce over no axis: the input itself
                return t
            axis = axes(axis)
        elif axis is None:
            if not keepdims:
                return fn(t)
            axis = axes(range(t.ndim))
        return fn(t, **{axis_kw: axis, keep_kw: keepdims})

    return reduce


def native_table(
    to_native: Callable[[np.ndarray], Any],
    to_numpy: Callable[[Any], np.ndarray],
    ops: Mapping[str, Callable[..., Any]],
    *namespaces: Any,
    modules: Sequence[Any] = (),
    reduce_keywords: tuple[str, str] = ("axis", "keepdims"),
    axes: type = tuple,
    grads: Callable[..., tuple] | None = None,
    losses: tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]] | None = None,
) -> dict[str, Callable[..., Any]]:
    """``ops`` (functions of native tensors), the entries of the ``OPS`` dicts of the
    adapter's reference ``modules`` (``cnn_reference.py``, ``sequence_reference.py``; the first
    that has a key gives it) that ``ops`` lacks, and the ``NAMESPACE_KEYS``,
    ``FUNCTIONAL_KEYS`` and ``REDUCTION_KEYS`` that all of them lack from the first of
    ``namespaces`` that has them (reductions called with the framework's ``reduce_keywords``
    and the axes as ``axes``), as functions of NumPy arrays. With ``grads`` and the
    framework's ``losses`` (``mse_loss``, ``cross_entropy``; see ``gradient_keys``), the
    ``grad_*`` keys that ``ops`` lacks differentiate those and the table's own ``GRADIENT_OF``
    entries."""

    def arg(a: Any) -> Any:
        if isinstance(a, np.ndarray):
            return to_native(a)
        if isinstance(a, list) and a and isinstance(a[0], np.ndarray):
            return [to_native(x) for x in a]
        return a

    def out(r: Any) -> Any:
        if isinstance(r, tuple):
            return tuple(out(x) for x in r)
        if isinstance(r, list) or r is None:
            return r
        return to_numpy(r)

    def floating(a: Any) -> Any:
        is_int = isinstance(a, np.ndarray) and a.dtype.kind in "biu"
        return a.astype(np.float32) if is_int else a

    def lift(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def op(*args: Any) -> Any:
            if name in FLOAT_KEYS:
                args = tuple(floating(a) for a in args)
            return out(fn(*(arg(a) for a in args)))

        op.__name__ = getattr(fn, "__name__", "op")
        return op

    table = dict(ops)
    for module in modules:
        table.update((k, v) for k, v in module.OPS.items() if k not in table)
    for name, names in {**NAMESPACE_KEYS, **FUNCTIONAL_KEYS}.items():
        fn = find_native(namespaces, names) if name not in table else None
        if fn is not None:
            table[name] = fn
    for name, names in REDUCTION_KEYS.items():
        fn = find_native(namespaces, names) if name not in table else None
        if fn is not None:
            table[name] = _reduction(fn, reduce_keywords, axes)
    if grads is not None:
        table = {**_gradient_keys(grads, losses, table), **table}
    return {name: lift(name, fn) for name, fn in table.items()}


def gradient_keys(
    grads: Callable[..., tuple],
    linear: Callable[..., Any],
    relu: Callable[[Any], Any],
    softmax: Callable[[Any, int], Any],
    mse_loss: Callable[[Any, Any], Any],
    cross_entropy: Callable[[Any, Any], Any],
) -> dict[str, Callable[..., Any]]:
    """The ``grad_*`` reference keys from the framework's ``grads(fn, tensors, gy)`` (the
    gradients of sum(fn(*tensors) * gy), of fn(...) itself when gy is None) and its own
    functions; ``cross_entropy(logits, labels)`` is the mean loss (labels: int64 tensors)."""
    return {
        "grad_linear": lambda x, w, b, gy: grads(linear, (x, w, b), gy),
        "grad_relu": lambda x, gy: grads(relu, (x,), gy)[0],
        "grad_softmax": lambda x, axis, gy: grads(lambda t: softmax(t, axis), (x,), gy)[0],
        "grad_mse_loss": lambda a, b: grads(mse_loss, (a, b))[0],
        "grad_cross_entropy": lambda z, y: grads(lambda t: cross_entropy(t, y), (z,))[0],
    }


def tape_grads(
    watch: Callable[[Any], Any], record: Callable[[], AbstractContextManager] = nullcontext
) -> Callable[..., tuple]:
    """``grads(fn, tensors, gy)`` for a framework whose tensors keep their gradient in
    ``.grad`` after ``out.backward(gy)``: ``watch(t)`` asks for t's gradient, ``record()``
    is the context that records the computation (where the framework needs one)."""

    def grads(fn: Callable[..., Any], ts: Sequence[Any], gy: Any = None) -> tuple:
        for t in ts:
            watch(t)
        with record():
            y = fn(*ts)
        y.backward(gy)
        return tuple(t.grad for t in ts)

    return grads


def eager_sgd_step(
    optimizer: Callable[[Any, float], Any],
    zero_grad: Callable[[Any], Any],
    mse_loss: Callable[[Any, Any], Any],
    record: Callable[[], AbstractContextManager] = nullcontext,
    update: Callable[[Any], Any] = lambda opt: opt.step(),
) -> Callable[..., Any]:
    """``native_sgd_step(module, x, y, lr)``: one step of the framework's SGD
    (``optimizer(module, lr)``, the module's gradients cleared by ``zero_grad(module)``,
    the parameters changed by ``update(opt)``) on the MSE of module(x) against y, computed
    under ``record()`` (where the framework needs a context to record); returns the loss."""

    def step(module: Any, x: Any, y: Any, lr: float) -> Any:
        opt = optimizer(module, lr)
        zero_grad(module)
        with record():
            loss = mse_loss(module(x), y)
        loss.backward()
        update(opt)
        return loss

    return step


def bfloat16_bits(
    to_native: Callable[[np.ndarray], Any], as_bfloat16: Callable[[Any], Any] = lambda t: t
) -> Callable[[Any], Any]:
    """``to_native`` for a framework that takes no ``ml_dtypes`` arrays: each array as a
    writable, C-contiguous copy (which the tensor may alias), a bfloat16 one as its uint16
    bits, read back as bfloat16 by ``as_bfloat16(tensor)`` (where the framework does not do
    it itself)."""

    def convert(a: Any) -> Any:
        arr = np.array(a)
        if arr.dtype == bfloat16.numpy:
            return as_bfloat16(to_native(arr.view(np.uint16)))
        return to_native(arr)

    return convert


def bfloat16_numpy(
    to_numpy: Callable[[Any], np.ndarray],
    is_bfloat16: Callable[[Any], bool],
    as_bits: Callable[[Any], Any] = lambda t: t,
) -> Callable[[Any], np.ndarray]:
    """``to_numpy`` for a framework whose bfloat16 tensors reach NumPy as 16-bit integer
    bits (``as_bits(tensor)`` where it does not give them itself): those as
    ``ml_dtypes.bfloat16`` arrays."""

    def convert(t: Any) -> np.ndarray:
        if is_bfloat16(t):
            return to_numpy(as_bits(t)).view(bfloat16.numpy)
        return to_numpy(t)

    return convert


#: reference keys with PyTorch's functional meaning and call (``linear`` with an (out, in)
#: weight, ``conv2d`` on NCHW with (x, w, b, stride, padding, dilation, groups)), found by
#: the same rule as ``NAMESPACE_KEYS``
FUNCTIONAL_KEYS = _by_name("linear conv2d")

#: the table's entries that ``native_table``'s ``grads`` differentiates for the ``grad_*`` keys
GRADIENT_OF = ("linear", "relu", "softmax")


def _gradient_keys(
    grads: Callable[..., tuple], losses: Sequence[Callable[..., Any]] | None, table: Mapping
) -> dict[str, Any]:
    """``gradient_keys`` of the table's own ``GRADIENT_OF`` entries and ``losses``; TypeError
    naming what it lacks."""
    missing = [name for name in GRADIENT_OF if name not in table]
    missing += [] if losses is not None else ["losses=(mse_loss, cross_entropy)"]
    if missing or losses is None:
        raise TypeError(
            f"Expected the reference entries {', '.join(GRADIENT_OF)} and losses=(mse_loss, "
            f"cross_entropy) for the grad_* keys that grads differentiates. Received: no "
            f"{', '.join(missing)}. Write the entries in the table (or find them in its "
            "namespaces) and pass losses, or write gradient_keys(...) instead."
        )
    return gradient_keys(grads, *(table[name] for name in GRADIENT_OF), *losses)


# The suite's computations in plain NumPy, for the NumPy adapter's reference table and for the
# conformance tests that check multidev against NumPy.


def numpy_softmax(a: np.ndarray, axis: int) -> np.ndarray:
    """Softmax along ``axis``, shifted by the maximum."""
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def numpy_log_softmax(a: np.ndarray, axis: int) -> np.ndarray:
    """Log-softmax along ``axis``, shifted by the maximum."""
    shifted = a - a.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def numpy_linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """``x @ w.T + b`` (weight (out, in), bias None: none)."""
    y = x @ w.T
    return y if b is None else y + b


def numpy_adaptive_avg_pool2d(x: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The mean of NCHW ``x`` over PyTorch's adaptive windows (cell i spans floor(i*H/out) to
    ceil((i+1)*H/out))."""
    (h, w), (oh, ow) = x.shape[2:], size
    out = np.empty((*x.shape[:2], oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            cell = x[:, :, i * h // oh : -(-(i + 1) * h // oh), j * w // ow : -(-(j + 1) * w // ow)]
            out[:, :, i, j] = cell.mean(axis=(2, 3))
    return out


__all__ += ["FUNCTIONAL_KEYS", "GRADIENT_OF", "numpy_adaptive_avg_pool2d", "numpy_linear"]
__all__ += ["numpy_log_softmax", "numpy_softmax"]
