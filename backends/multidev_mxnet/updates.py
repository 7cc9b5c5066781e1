"""The optimiser's fused update on MXNet: ``x += alpha * y`` for many tensors in as few engine
operations as the kernels allow.

MXNet's ``multi_sgd_update`` (the kernel Gluon's ``Trainer`` batches its updates with) updates
up to ``MULTI_UPDATE_MAX`` tensors in one engine operation, but on the CPU it walks the largest
tensor's element count for every tensor of the call, and per element it is slower than
``sgd_update`` (measured with MXNet 1.9, one thread: two 256 x 256 tensors in one
``multi_sgd_update`` cost about 1.5x two ``sgd_update`` calls; all six tensors of a 256-wide
MLP in one call about 1.7x one call each). A tensor of more than ``CALL_ELEMENTS`` elements
(what one engine operation costs, counted in elements) is therefore updated by its own
``sgd_update``; the smaller ones are grouped, largest first, so that each walks at most
``CALL_ELEMENTS`` elements beyond its own. For a 256-wide MLP that is one operation for each
256 x 256 weight and one for the four other tensors.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any

import mxnet as mx
from mxnet._ctypes.ndarray import _imperative_invoke

from .arithmetic import FLOATS

__all__ = ["CALL_ELEMENTS", "MULTI_UPDATE_MAX", "add_scaled_many_", "groups", "invoke", "op_handle"]


def invoke(op: int, args: list, keys: list, vals: list, out: Any) -> None:
    """Run MXNet operator ``op`` (``op_handle``) on ``args`` into ``out`` (None: the operator
    writes its inputs), without the generated wrapper's checks and conversions: ``mxnet.numpy``
    arrays are passed as they are (the legacy operators take any array handle)."""
    _imperative_invoke(op, args, keys, vals, out, False, False)


#: pairs per ``multi_sgd_update`` call: the size of the kernel's fixed parameter block
MULTI_UPDATE_MAX = 60
#: the cost of one engine operation counted in elements the update kernel walks: a round
#: estimate (about 30 microseconds a call against a few nanoseconds an element on a CPU)
CALL_ELEMENTS = 8192


def groups(sizes: list[int]) -> list[list[int]]:
    """Indices of ``sizes`` grouped for one ``multi_sgd_update`` each (see the module)."""
    out: list[list[int]] = []
    largest = 0
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        n = sizes[i]
        if out and len(out[-1]) < MULTI_UPDATE_MAX and largest <= CALL_ELEMENTS:
            out[-1].append(i)
        else:
            out.append([i])
            largest = n
    return out


def op_handle(name: str) -> int:
    """The handle of MXNet operator ``name``, for ``invoke``."""
    handle = mx.base.OpHandle()
    mx.base.check_call(mx.base._LIB.NNGetOpHandle(mx.base.c_str(name), ctypes.byref(handle)))
    return handle.value


_SGD = op_handle("sgd_update")
_MULTI_SGD = op_handle("multi_sgd_update")


class _Plan:
    """What ``add_scaled_many_`` does for one list of arrays: the non-floating ones, and the
    groups of floating ones (indices into the list). It refers to the arrays weakly (a plan
    keeps no model's memory alive) and applies only while they are still the same arrays."""

    __slots__ = ("groups", "others", "refs")

    def __init__(self, xs: list) -> None:
        self.refs = [weakref.ref(x) for x in xs]
        floats = [i for i, x in enumerate(xs) if x.dtype in FLOATS and x.size]
        self.others = [i for i, x in enumerate(xs) if x.dtype not in FLOATS]
        self.groups = [[floats[g] for g in group] for group in groups([xs[i].size for i in floats])]

    def fits(self, xs: list) -> bool:
        return all(r() is x for r, x in zip(self.refs, xs, strict=True))


_plans: dict[tuple, _Plan] = {}
#: lists of arrays whose plans are kept (a model's parameters, per dtype and step size)
_PLANS_KEPT = 16


def _plan(xs: list) -> _Plan:
    key = tuple(map(id, xs))
    plan = _plans.get(key)
    if plan is None or not plan.fits(xs):
        if len(_plans) >= _PLANS_KEPT:
            _plans.clear()
        plan = _plans[key] = _Plan(xs)
    return plan


def add_scaled_many_(xs: list, ys: list, alpha: float) -> list:
    """``x += alpha * y`` in place for each pair of ``mxnet.numpy`` arrays (floating ones
    through the grouped kernels, called on the arrays themselves, others by MXNet's ``+=``);
    returns ``xs``."""
    plan = _plan(xs)
    for i in plan.others:
        xs[i] += ys[i] * alpha
    lr = str(-alpha)
    for group in plan.groups:
        n = len(group)
        if n == 1:
            i = group[0]
            invoke(_SGD, [xs[i], ys[i]], ["lr", "wd"], [lr, "0.0"], xs[i])
            continue
        args: list[Any] = []
        for i in group:
            args += (xs[i], ys[i])
        lrs = "(" + ", ".join([lr] * n) + ")"
        wds = "(" + ", ".join(["0.0"] * n) + ")"
        outs = [xs[i] for i in group]
        invoke(_MULTI_SGD, args, ["lrs", "wds", "num_weights"], [lrs, wds, str(n)], outs)
    return xs
