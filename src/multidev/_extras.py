"""Optional dependencies of the training tools (the ``multidev[train]`` extra)."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise ImportError saying what needs it and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        dist = {"sklearn": "scikit-learn"}.get(top, top)
        raise ImportError(
            f"Expected the optional package {dist!r} for {purpose}. Received: {e}. Install "
            f"the training extras: pip install 'multidev[train]' (or pip install {dist})."
        ) from e
