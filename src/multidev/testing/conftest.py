"""Fixtures and markers shared by the conformance sections."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import registry
from multidev.testing import native_reference


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "requires(capability): needs an adapter capability")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped when num_gpus() == 0")


def pytest_collection_modifyitems(config, items) -> None:
    bk = registry.current()
    xfails = getattr(bk, "conformance_xfails", {}) or {}
    for item in items:
        for mark in item.iter_markers("requires"):
            cap = mark.args[0]
            if cap not in bk.capabilities:
                item.add_marker(
                    pytest.mark.skip(reason=f"{bk.name} adapter lacks capability '{cap}'")
                )
        if item.get_closest_marker("gpu") and md.num_gpus() == 0:
            item.add_marker(pytest.mark.skip(reason="no GPU: num_gpus() == 0"))
        reason = xfails.get(item.name) or xfails.get(item.nodeid.split("::", 1)[-1])
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


@pytest.fixture
def bk():
    """The active adapter."""
    return registry.current()


@pytest.fixture
def native_ops(bk):
    """The adapter's native reference ops; skip where the adapter names none (NumPy itself)."""
    ops = native_reference(bk)
    if ops is None:
        pytest.skip(f"{bk.name} adapter has no native reference module")
    return ops


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
