"""The backend contract: the few primitives that differ per framework.

An adapter is any object with the members of ``Adapter`` (structural typing: it need not
inherit). ``AdapterBase`` supplies defaults that suit most frameworks, the optional hooks'
included. The core has already checked devices, matched dtypes and normalised arguments before
it calls an op, so an op receives native tensors of one dtype on one device and returns a
native tensor that stays on that device.

One module per concern; every name is re-exported here (``from multidev.contract import X``):

- ``interfaces``: ``Adapter``, ``OpTable``, the capability protocols, ``missing_members``;
- ``hooks``: the optional hooks grouped by concern, each with its default, and the
  distributed engine's;
- ``base``: ``AdapterBase`` and ``EagerAutograd``;
- ``op_table``: the op-table builder;
- ``lowering``: helpers adapters compose their ops from.
"""

from __future__ import annotations

from ..registry import Framework
from .base import AdapterBase, EagerAutograd, dtype_error, dtype_lookup, env_count, lazy_backend
from .hooks import (
    AutogradHooks,
    DistributedEngine,
    Engine,
    ExportHooks,
    JitHooks,
    UpdateHooks,
)
from .interfaces import (
    CAPABILITIES,
    Adapter,
    ArgReduction,
    ArrayLimits,
    Autograd,
    Binary,
    DLPack,
    Extension,
    Joining,
    OpTable,
    Reduction,
    Unary,
    missing_members,
)
from .lowering import (
    NoKernel,
    as_tensors,
    channel_fold,
    clip_bounds,
    divisor_signed,
    key_axes,
    nan_first,
    native_astype,
    reduced_exponents,
    reduction,
    summed_matmul,
    vector_matmul,
    widening,
)
from .op_table import PythonOperatorOps, find_native, op_table, wrapped_table

__all__ = [
    "CAPABILITIES",
    "Adapter",
    "AdapterBase",
    "ArgReduction",
    "ArrayLimits",
    "Autograd",
    "AutogradHooks",
    "Binary",
    "DLPack",
    "DistributedEngine",
    "EagerAutograd",
    "Engine",
    "ExportHooks",
    "Extension",
    "Framework",
    "JitHooks",
    "Joining",
    "NoKernel",
    "OpTable",
    "PythonOperatorOps",
    "Reduction",
    "Unary",
    "UpdateHooks",
    "as_tensors",
    "channel_fold",
    "clip_bounds",
    "divisor_signed",
    "dtype_error",
    "dtype_lookup",
    "env_count",
    "find_native",
    "key_axes",
    "lazy_backend",
    "missing_members",
    "nan_first",
    "native_astype",
    "op_table",
    "reduced_exponents",
    "reduction",
    "summed_matmul",
    "vector_matmul",
    "widening",
    "wrapped_table",
]
