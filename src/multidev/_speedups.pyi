"""Type stub of the optional C accelerator built from ``_speedups.c``."""

from typing import Any

def install(
    cls: type, base: type, bool_dtype: Any, ops: dict[str, tuple[dict[Any, Any], bool, Any]], /
) -> bool:
    """Put C fast paths into the operator slots of ``cls``; False where too many classes
    already have them (the Python operators then serve ``cls``)."""

def installed(cls: type, /) -> tuple[str, ...]:
    """The dunder names whose C fast path is in ``cls``'s slots now."""

def set_autocast(on: bool, /) -> None:
    """Whether an enabled ``md.autocast`` is open in any thread: while it is, ``@`` runs the
    Python operator (which applies the autocast policy) instead of its fast path."""

class exact_result:
    """``fn(*args, **kwargs)`` where its type is exactly ``cls``, else ``convert`` of it (``fn``
    is called once): an adapter's normalising wrapper around a native op, in C."""

    fn: Any
    cls: type
    convert: Any
    def __init__(self, fn: Any, cls: type, convert: Any, /) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
