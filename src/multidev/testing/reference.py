"""Helpers for an adapter's native reference module (``reference.py``, its ``OPS`` table):
the conformance suite's computations written in the framework's own code.

An adapter writes each entry as a function of native tensors; ``native_table`` turns them
into what the suite calls: NumPy arrays in (also inside lists), NumPy arrays out (also
inside tuples). Nothing here goes through multidev.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["NAMESPACE_KEYS", "native_table"]

#: reference keys every framework spells like NumPy, with NumPy's meaning: ``native_table``
#: takes them from the framework's namespace unless the table gives them
NAMESPACE_KEYS = (
    *("add", "subtract", "multiply", "divide", "maximum", "matmul"),
    *("exp", "log", "log1p", "sqrt", "abs", "tanh"),
)


def native_table(
    to_native: Callable[[np.ndarray], Any],
    to_numpy: Callable[[Any], np.ndarray],
    ops: Mapping[str, Callable[..., Any]],
    namespace: Any = None,
) -> dict[str, Callable[..., Any]]:
    """``ops`` (functions of native tensors), and the ``NAMESPACE_KEYS`` of ``namespace`` that
    ``ops`` lacks, as functions of NumPy arrays."""

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

    def lift(fn: Callable[..., Any]) -> Callable[..., Any]:
        def op(*args: Any) -> Any:
            return out(fn(*(arg(a) for a in args)))

        op.__name__ = getattr(fn, "__name__", "op")
        return op

    table = dict(ops)
    if namespace is not None:
        for name in NAMESPACE_KEYS:
            if name not in table:
                table[name] = getattr(namespace, name)
    return {name: lift(fn) for name, fn in table.items()}
