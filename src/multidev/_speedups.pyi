"""Type stub of the optional C accelerator built from ``_speedups.c``."""

from typing import Any

def install(
    cls: type, base: type, bool_dtype: Any, ops: dict[str, tuple[dict[Any, Any], bool, Any]], /
) -> bool:
    """Put C fast paths into the operator slots of ``cls``; False where too many classes
    already have them (the Python operators then serve ``cls``)."""

def installed(cls: type, /) -> tuple[str, ...]:
    """The dunder names whose C fast path is in ``cls``'s slots now."""
