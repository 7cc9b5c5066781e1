"""Compilation on MXNet: synchronisation only, so far.

MXNet 1.9's ``hybridize`` builds its graph by calling ``hybrid_forward`` with ``Symbol``
inputs; multidev's MXNet ops run on ``mxnet.numpy`` ndarrays and cannot take Symbols, so
``md.jit`` and ``block.hybridize()`` run eagerly here, with an ``md.JitWarning``.
"""

from __future__ import annotations

import mxnet as mx

from multidev.device import Device

__all__ = ["UNSUPPORTED", "Jit"]

UNSUPPORTED = (
    "MXNet 1.9 compiles by tracing Symbols through hybrid_forward, and multidev's MXNet ops "
    "run on mxnet.numpy ndarrays only, so there is no graph to hybridize yet"
)


class Jit:
    """The compilation hooks of the MXNet adapter."""

    jit_unsupported = UNSUPPORTED
    export_unsupported = (
        "MXNet's symbol + params export needs a hybridized graph, which multidev blocks do "
        "not have on MXNet yet (" + UNSUPPORTED + ")."
    )

    def synchronize(self, dev: Device | None) -> None:
        """Wait for MXNet's asynchronous engine (every queued operation)."""
        mx.nd.waitall()
