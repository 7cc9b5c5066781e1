"""The MXNet op table: NumPy semantics on ``mxnet.numpy`` arrays, with exact paths for what
MXNet's kernels lack (integer and bool matmul, integer floor division and remainder,
reductions of zero-size arrays). ``log_softmax`` is the table's composed default
(``contract.PythonOperatorOps``): MXNet's own kernel loses about 1e-4 relative accuracy in
float32."""

from __future__ import annotations

import operator
from collections.abc import Callable

import mxnet as mx
import numpy as np
from mxnet import np as mnp
from mxnet import npx

from multidev import dtypes as _dt
from multidev.contract import native_astype, op_table, summed_matmul
from multidev.dispatch import SCALAR_OPERAND_OPS

from . import array_api, cnn, losses, sequence_ops
from .arithmetic import F16, F32, FLOATS, floor_divide, remainder, signed_zero, where, zeros
from .dtypes import ALTERNATIVES, NATIVE
from .fill import F64, exact_float64
from .indexing import BOOL, INT64, UINT8, getitem, like

__all__ = ["FLOATS", "OPS"]

_GEMM = frozenset({F32, F64})  # what MXNet's CPU matmul kernels take
_GPU_TYPEID = mx.gpu(0).device_typeid


def _on_gpu(x) -> bool:
    return x.ctx.device_typeid == _GPU_TYPEID


def _pow(a, b):
    out = a**b
    if out.dtype != a.dtype:  # MXNet gives int64 for integer powers with a 0-d operand
        out = out.astype(a.dtype)
    return out


def _matmul(a, b):
    """MXNet's matmul; exact sums for the dtypes its kernels lack (integers, bool; zero-size
    operands answered without a reduction, which MXNet cannot do on them)."""
    dt = a.dtype
    if dt in _GEMM or (dt == F16 and _on_gpu(a)):
        return mnp.matmul(a, b)
    if dt == F16:
        return mnp.matmul(a.astype(F32), b.astype(F32)).astype(F16)
    return summed_matmul(a, b, mnp.expand_dims, mnp.squeeze, mnp.ndarray.astype, INT64, zeros)


def _linear(x, w, b):
    """``x @ w.T + b`` through MXNet's fused ``fully_connected`` where its kernels allow."""
    dt = x.dtype
    if (dt in _GEMM or (dt == F16 and _on_gpu(x))) and 0 not in x.shape and 0 not in w.shape:
        if b is None:
            return npx.fully_connected(x, w, num_hidden=w.shape[0], no_bias=True, flatten=False)
        return npx.fully_connected(x, w, b, num_hidden=w.shape[0], flatten=False)
    y = _matmul(x, mnp.transpose(w))
    return y if b is None else y + b


def _extremum(fn: Callable, logical: Callable) -> Callable:
    """``maximum`` or ``minimum`` (``fn``); on bool arrays, which MXNet's kernels lack, the
    logical or (``+``) or and (``*``) that it is there (a Python bool operand is a 0-d array
    by then: ``_scalar_operand``)."""
    return lambda a, b: (logical if a.dtype == BOOL else fn)(a, b)


def _through(fn: Callable, wider: dict) -> Callable:
    """``fn`` computed in ``wider[dtype]`` for input of a dtype MXNet's kernel lacks (or is
    imprecise in), cast back."""

    def op(x, *args):
        w = wider.get(x.dtype)
        return fn(x, *args) if w is None else fn(x.astype(w), *args).astype(x.dtype)

    return op


def _reduction(fn: Callable, empty: float | None) -> Callable:
    """An (x, axis, keepdims) reduction; ``axis=()`` reduces nothing. Zero-size input is
    answered here (MXNet fails on it): ``empty`` is the result of reducing no elements (0 for
    sum, 1 for prod, nan for mean; None where that is an error, as for max)."""

    def reduce(x, axis, keepdims):
        if axis is not None:
            if not axis:
                return x.copy()
            if x.ndim == 0:
                axis = None
        if 0 in x.shape:
            shape = np.sum(np.empty(x.shape, np.bool_), axis=axis, keepdims=keepdims).shape
            if empty is None and 0 not in shape:
                raise ValueError(
                    f"Expected a non-empty reduction for {fn.__name__}. Received: shape "
                    f"{x.shape} reduced over axis {axis}, which holds no elements."
                )
            return mnp.full(shape, 0 if empty is None else empty, dtype=x.dtype, ctx=x.ctx)
        return fn(x, axis=axis, keepdims=keepdims)

    return reduce


OPS = op_table(
    mnp,
    # lowerings: array_api.py (the Array API beyond the core table), sequence ops, losses, cnn
    modules=[array_api, sequence_ops, losses, cnn],
    # npx.cast, not ndarray.astype: astype copies into a new array, which autograd records as
    # a plain copy (_copyto), so a compiled graph would lose the conversion
    astype=native_astype("mxnet", NATIVE, ALTERNATIVES, lambda x, d: npx.cast(x, dtype=d)),
    clip=_through(mnp.clip, {BOOL: F32}),
    floor_divide=floor_divide,
    getitem=getitem,
    linear=_linear,
    # the core gives logical ops bool arrays only (a Python scalar becomes a 0-d array first)
    logical_and=operator.mul,
    logical_or=operator.add,
    matmul=_matmul,
    max=_reduction(mnp.max, None),
    maximum=_extremum(mnp.maximum, operator.add),
    mean=_reduction(mnp.mean, np.nan),
    min=_reduction(mnp.min, None),
    minimum=_extremum(mnp.minimum, operator.mul),
    permute_dims=_through(mnp.transpose, {BOOL: UINT8}),
    pow=_pow,
    prod=_reduction(mnp.prod, 1),
    relu=npx.relu,
    remainder=remainder,
    # MXNet rounds -0.5 to +0; a rounded float keeps the sign of its input, as in NumPy
    round=lambda x: signed_zero(mnp.round(x), x) if x.dtype in FLOATS else mnp.round(x),
    softmax=_through(lambda x, axis: npx.softmax(x, axis=axis), {F16: F32}),
    sum=_reduction(mnp.sum, 0),
    where=where,
)


def _scalar_operand(fn: Callable, bools: bool) -> Callable:
    """``fn(a, b)`` with a Python float ``b`` that MXNet would read off by an ulp or more
    (fill.py) made a float64 0-d array first, when ``a`` is float64; for ``bools`` (``+``,
    ``*``, maximum, minimum), a Python bool ``b`` made a 0-d array first: MXNet gives int64
    for a bool array with a Python bool (on bool arrays maximum and minimum are + and *). The
    core hands a Python scalar as ``b`` only (``rbinop`` makes a leading one a 0-d tensor)."""

    def op(a, b):
        if (bools and type(b) is bool) or (
            type(b) is float and a.dtype == F64 and not exact_float64(b)
        ):
            b = like(a, b)
        return fn(a, b)

    # two tensors never carry a Python scalar: the core's operators on them (dispatch's
    # per-backend classes) keep calling fn (MXNet's own + and * among them) without this check
    op.plain, op.plain_dtypes = fn, frozenset(_dt.ALL)  # type: ignore[attr-defined]
    return op


for _name in SCALAR_OPERAND_OPS:  # the binary ops the core hands a Python scalar operand
    _fn = _scalar_operand(getattr(OPS, _name), _name in ("add", "multiply", "maximum", "minimum"))
    setattr(type(OPS), _name, staticmethod(_fn))
