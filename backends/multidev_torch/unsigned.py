"""PyTorch's uint16, uint32 and uint64: "shell" dtypes that hold values, cast, multiply,
compare for equality, sum and sort, but lack most other CPU kernels (probed on torch 2.13:
+, -, //, %, **, <, max, maximum, argmax, clamp, shifts, ~, flip, matmul, ...). ``lower``
makes the op table compute those exactly elsewhere, with NumPy's results:

- uint16 in int32 and uint32 in int64 (``contract.widening``): every value fits, and the
  cast back wraps modulo 2**16 or 2**32 as NumPy's arithmetic does;
- uint64 on its int64 view (the same bits): +, -, *, powers, shifts left, bitwise ops and
  negation are the same modulo 2**64; ordering ops (comparisons, max/min, argmax/argmin,
  clip) first flip the top bit, which orders as signed what orders as unsigned; // and %
  divide by halves (``_divmod``); powers reduce huge exponents (``_pow``). Any other op
  PyTorch lacks raises a TypeError naming it.

Only tensors of these dtypes take the lowered paths: the others call PyTorch's op directly
(``plain``, which the core's operators call for multidev's other dtypes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from multidev import dtypes as _dt
from multidev.contract import NoKernel, clip_bounds, widening

__all__ = ["lower"]

_U16, _U32, _U64, _I64 = torch.uint16, torch.uint32, torch.uint64, torch.int64
_WIDER = {torch.uint16: torch.int32, torch.uint32: torch.int64}
_SHELL = frozenset({torch.uint16, torch.uint32, torch.uint64})
_TOP = -(2**63)  # the int64 with only the top bit set
_LOW63 = 2**63 - 1
_PERIOD = 2**62
_PLAIN = frozenset(_dt.ALL) | frozenset(_dt.COMPLEX)


def _refuse(t: Any, name: str) -> TypeError:
    what = str(t.dtype).replace("torch.", "")
    return TypeError(
        f"Expected a dtype PyTorch's {name} supports. Received: {what}, which PyTorch holds "
        f"without a {name} kernel and multidev cannot compute exactly otherwise. Cast it "
        "first, e.g. md.astype(x, md.int64) for values below 2**63, or md.float64."
    )


_NO_KERNEL = NoKernel(
    raised=lambda e: (
        isinstance(e, (RuntimeError, NotImplementedError)) and "not implemented for 'UInt" in str(e)
    ),
    is_tensor=lambda a: isinstance(a, torch.Tensor),
    cast=lambda t, dtype: t.to(dtype),
    place=lambda t: t.device,
    refuse=_refuse,
)


# ---------------------------------------------------------------- uint64 through int64


def _bits(a: Any) -> Any:
    """A uint64 operand as int64 with the same bits (a Python int modulo 2**64)."""
    if isinstance(a, torch.Tensor):
        return a.view(_I64) if a.dtype is _U64 else a
    if isinstance(a, int) and not isinstance(a, bool):
        a %= 2**64
        return a - 2**64 if a > _LOW63 else a
    return a


def _ordered(a: Any) -> Any:
    """A uint64 operand as the int64 that orders as it does (the top bit flipped)."""
    b = _bits(a)
    return b ^ _TOP if isinstance(b, (torch.Tensor, int)) else b


def _unsigned(out: Any) -> Any:
    return out.view(_U64) if isinstance(out, torch.Tensor) and out.dtype is _I64 else out


def _same_bits(fn: Callable[..., Any], n: int = 2) -> Callable[..., Any]:
    """``fn`` on the int64 view of its uint64 operands (the first ``n`` arguments), viewed
    back as uint64: the ops that are the same modulo 2**64."""

    def op(*args: Any) -> Any:
        return _unsigned(fn(*map(_bits, args[:n]), *args[n:]))

    return op


def _same_bits1(fn: Callable[..., Any]) -> Callable[..., Any]:
    return _same_bits(fn, 1)


def _positions(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (whose result is positions: nonzero) on the int64 view of its uint64 operand."""
    return lambda x, *args: fn(_bits(x), *args)


def _order(n: int, *, back: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``fn`` on the top-bit-flipped int64 views of the first ``n`` arguments; ``back``: its
    result flipped back to uint64 (max, min) rather than taken as it is (bool, indices)."""

    def make(fn: Callable[..., Any]) -> Callable[..., Any]:
        def op(*args: Any) -> Any:
            out = fn(*map(_ordered, args[:n]), *args[n:])
            return (out ^ _TOP).view(_U64) if back else out

        return op

    return make


def _clip(fn: Callable[..., Any]) -> Callable[..., Any]:
    def op(x: Any, lo: Any, hi: Any) -> Any:
        lo, hi = clip_bounds(lo, hi, _dt.uint64.numpy)
        return (fn(_ordered(x), _ordered(lo), _ordered(hi)) ^ _TOP).view(_U64)

    return op


def _below(a: Any, b: Any) -> Any:
    """Whether ``a < b`` as uint64, elementwise, of int64 views."""
    return (a ^ _TOP) < (b ^ _TOP)


def _divmod(a: Any, b: Any) -> tuple[Any, Any]:
    """uint64 ``a // b`` and ``a % b`` of int64 views: a divisor of 2**63 or more goes once
    or not at all; a smaller one divides ``a >> 1`` (below 2**63: exact in int64), and twice
    that quotient leaves a remainder below twice the divisor, at most one subtraction from
    the result. A zero divisor raises PyTorch's own error, as on int64."""
    a, b = torch.broadcast_tensors(a, b)
    big = b < 0
    small = torch.where(big, 1, b)  # where ``big`` decides, any non-zero divisor
    q = torch.div((a >> 1) & _LOW63, small, rounding_mode="floor") << 1
    r = a - q * small
    over = ~_below(r, small)
    q = torch.where(over, q + 1, q)
    r = torch.where(over, r - small, r)
    ge = ~_below(a, b)
    q = torch.where(big, ge.to(_I64), q)
    r = torch.where(big, torch.where(ge, a - b, a), r)
    return q, r


def _division(which: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def make(fn: Callable[..., Any]) -> Callable[..., Any]:
        def op(a: Any, b: Any) -> Any:
            a, b = _bits(a), _bits(b)
            like = a if isinstance(a, torch.Tensor) else b
            a, b = (torch.as_tensor(v, dtype=_I64, device=like.device) for v in (a, b))
            return _divmod(a, b)[which].view(_U64)

        return op

    return make


def _pow(fn: Callable[..., Any]) -> Callable[..., Any]:
    """uint64 powers modulo 2**64 on int64 views; an exponent of 2**63 or more (a negative
    view) becomes one below 2**63 with the same power: ``e mod 2**62 + 2**62`` (odd bases'
    powers repeat with period 2**62 modulo 2**64; even bases' are 0 from the 64th on)."""

    def op(a: Any, b: Any) -> Any:
        e = _bits(b)
        if isinstance(e, torch.Tensor):
            e = torch.where(e < 0, (e & _PERIOD - 1) | _PERIOD, e)
        elif e < 0:
            e = (e & _PERIOD - 1) | _PERIOD
        return _unsigned(fn(_bits(a), e))

    return op


def _right_shift(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Logical shift right of uint64 bits: int64's shift is arithmetic, so the first step of
    one shifts and clears the top bit."""

    def op(x: Any, s: Any) -> Any:
        x, s = _bits(x), torch.as_tensor(_bits(s), device=x.device)
        rest = torch.clamp(s - 1, min=0)
        return torch.where(s == 0, x, fn((x >> 1) & _LOW63, rest)).view(_U64)

    return op


def _accumulate(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A sum or product (running or not): of uint64 on the int64 view (which wraps the same);
    of uint16/uint32 PyTorch's int64 result cast back, exact modulo 2**16 / 2**32."""

    def op(x: Any, *args: Any) -> Any:
        if x.dtype is _U64:
            return fn(x.view(_I64), *args).view(_U64)
        return fn(x, *args).to(x.dtype)

    return op


_CMP, _ARG, _MAX = _order(2, back=False), _order(1, back=False), _order(1, back=True)
#: op -> its uint64 lowering, made from the table's op
_UINT64: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "add": _same_bits,
    "subtract": _same_bits,
    "multiply": _same_bits,
    "matmul": _same_bits,
    "bitwise_left_shift": _same_bits,
    "bitwise_and": _same_bits,
    "bitwise_or": _same_bits,
    "bitwise_xor": _same_bits,
    "negative": _same_bits1,
    "bitwise_invert": _same_bits1,
    "flip": _same_bits1,
    "roll": _same_bits1,
    # moving values without reading them: the same on the bits
    "take": _same_bits1,
    "take_along_axis": _same_bits1,
    "tril": _same_bits1,
    "triu": _same_bits1,
    "nonzero": _positions,
    "searchsorted": _order(2, back=False),
    "pow": _pow,
    "bitwise_right_shift": _right_shift,
    "floor_divide": _division(0),
    "remainder": _division(1),
    "less": _CMP,
    "less_equal": _CMP,
    "greater": _CMP,
    "greater_equal": _CMP,
    "maximum": _order(2, back=True),
    "minimum": _order(2, back=True),
    "argmax": _ARG,
    "argmin": _ARG,
    "max": _MAX,
    "min": _MAX,
    "clip": _clip,
    "sum": _accumulate,
    "prod": _accumulate,
    "cumulative_sum": _accumulate,
    "cumulative_prod": _accumulate,
}
#: ops whose PyTorch result on the shell dtypes is int64 (sums and products)
_ACCUMULATING = frozenset({"sum", "prod", "cumulative_sum", "cumulative_prod"})
#: the ops ``lower`` lowers: those lacking a shell-dtype kernel in PyTorch (probed on torch
#: 2.13) or giving int64 on them; uint16/uint32 of others ops take PyTorch's own path
LOWERED = (*_UINT64, "sign", "square")


def _lowered(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` for the table, with the shell dtypes' operands computed as the module says."""
    wide = _accumulate(fn) if name in _ACCUMULATING else widening(fn, name, _NO_KERNEL, _WIDER)
    make = _UINT64.get(name)
    u64 = make(fn) if make is not None else wide  # widening refuses uint64 (not in _WIDER)

    def op(*args: Any) -> Any:
        # every call on every dtype passes here: attribute reads and identity tests only
        # (an isinstance check of torch.Tensor goes through its metaclass)
        try:
            dt = args[0].dtype
        except AttributeError:  # a Python scalar first
            dt = getattr(args[1], "dtype", None) if len(args) > 1 else None
        if dt is _U64:
            return u64(*args)
        if dt is _U16 or dt is _U32:
            return wide(*args)
        return fn(*args)

    op.__name__ = name
    # the core's operators call PyTorch's op directly on multidev's other dtypes
    op.plain, op.plain_dtypes = fn, _PLAIN  # type: ignore[attr-defined]
    return op


#: each shell dtype's signed dtype of the same width, whose view moves the same bits
SAME_WIDTH = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: _I64}


def lower(ops: Any) -> None:
    """Make the op table ``ops`` compute the ops of ``LOWERED`` on uint16, uint32 and uint64
    tensors as this module says."""
    for name in LOWERED:
        fn = getattr(ops, name, None)
        if fn is not None:
            setattr(type(ops), name, staticmethod(_lowered(fn, name)))
