"""The op-table builder: an adapter's ``OpTable`` from the ops declared in
``multidev.op_specs``, its own lowerings and the framework's namespaces."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from ..op_specs import SPECS
from .interfaces import OpTable

__all__ = ["PythonOperatorOps", "find_native", "op_table"]


def op_table(
    *namespaces: Any,
    modules: Sequence[Any] = (),
    wrap: Callable[[Any, str], Any] | None = None,
    reduce: Callable[[Any], Any] | None = None,
    **lowerings: Any,
) -> OpTable:
    """An adapter's op table, over the ops declared in ``multidev.op_specs.SPECS``: for each,
    the adapter's lowering (``lowerings``, else the first of the adapter's lowering ``modules``
    that has one: an entry of the module's ``LOWERINGS`` dict where it has one, else a function
    of the op's name), else the first of the op's ``natives`` found on the framework's
    ``namespaces`` (a reduction's made into the ``(x, axis, keepdims)`` op by ``reduce(fn)``,
    and taken only where ``reduce`` is given), else Python's operator
    (``PythonOperatorOps``); the last two through ``wrap(fn, name)`` where given. An op found
    nowhere is absent: ``missing_members`` names it."""
    tables = [getattr(module, "LOWERINGS", module) for module in modules]
    table = {}
    for name, spec in SPECS.items():
        fn = lowerings.get(name)
        for found in tables:
            if fn is None:
                fn = found.get(name) if isinstance(found, Mapping) else getattr(found, name, None)
        if fn is None:
            reducing = spec.args == "(x, axis, keepdims)"
            fn = None if reducing and reduce is None else find_native(namespaces, spec.natives)
            fn = reduce(fn) if reducing and fn is not None and reduce is not None else fn
            if fn is None and wrap and isinstance(vars(PythonOperatorOps).get(name), staticmethod):
                fn = getattr(PythonOperatorOps, name)
            fn = fn if fn is None or wrap is None else wrap(fn, name)
        if fn is not None:
            table[name] = fn
    unknown = set(lowerings).union(*[t for t in tables if isinstance(t, Mapping)]) - set(SPECS)
    if unknown:
        raise TypeError(
            f"Expected lowerings of ops declared in multidev.op_specs. Received: "
            f"{sorted(unknown)}. Declare the op there first."
        )
    ops = type("Ops", (PythonOperatorOps,), {k: staticmethod(v) for k, v in table.items()})
    # the class is built from the declarations and the lowerings: the checker cannot see them
    return cast(OpTable, ops())


def wrapped_table(table: OpTable, wrap: Callable[[Any], Any]) -> OpTable:
    """``table`` with each of its ops passed through ``wrap``: how an adapter records every op
    (JAX's tape, MXNet's recording switch) without a wrapper in each lowering."""
    members = {n: staticmethod(wrap(getattr(table, n))) for n in SPECS if hasattr(table, n)}
    return cast(OpTable, type(f"Wrapped{type(table).__name__}", (type(table),), members)())


def find_native(namespaces: Sequence[Any], names: Sequence[str]) -> Any:
    """The first of ``names`` found on the first namespace that has one, or None."""
    for namespace in namespaces:
        for name in names:
            fn = getattr(namespace, name, None)
            if fn is not None:
                return fn
    return None


class PythonOperatorOps:
    """Op-table entries that every framework spells with Python operators, and the defaults
    composed from the table's own ops where a framework has no kernel (or an imprecise one)."""

    add = staticmethod(operator.add)
    subtract = staticmethod(operator.sub)
    multiply = staticmethod(operator.mul)
    divide = staticmethod(operator.truediv)
    floor_divide = staticmethod(operator.floordiv)
    remainder = staticmethod(operator.mod)
    pow = staticmethod(operator.pow)
    matmul = staticmethod(operator.matmul)
    equal = staticmethod(operator.eq)
    not_equal = staticmethod(operator.ne)
    less = staticmethod(operator.lt)
    less_equal = staticmethod(operator.le)
    greater = staticmethod(operator.gt)
    greater_equal = staticmethod(operator.ge)
    negative = staticmethod(operator.neg)
    getitem = staticmethod(operator.getitem)

    def log_softmax(self, x: Any, axis: int) -> Any:
        """log(softmax(x)) along ``axis`` as ``s - log(sum(exp(s)))`` with ``s = x - max(x)``
        (stable: no exp overflows)."""
        ops = cast(OpTable, self)  # the table this class is the base of
        axes = (axis,) if len(x.shape) else ()  # a 0-d tensor: its only element
        s = ops.subtract(x, ops.max(x, axes, True))
        return ops.subtract(s, ops.log(ops.sum(ops.exp(s), axes, True)))
