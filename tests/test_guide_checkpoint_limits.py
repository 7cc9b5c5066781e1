"""The user guide's (docs/guide/checkpoints.md) per-backend checkpoint limits and memory bound are the ones the code applies."""

from __future__ import annotations

import re
from pathlib import Path

import multidev as md
from multidev import _safetensors as st
from multidev import checkpoint, registry
from multidev import dtypes as _dt

GUIDE = (Path(__file__).parents[1] / "docs" / "guide" / "checkpoints.md").read_text(
    encoding="utf-8"
)


def _number(text: str) -> int:
    """``64``, ``2^63 - 1`` or ``2^31 - 1`` as an int."""
    m = re.fullmatch(r"\s*(?:2\^(\d+)\s*-\s*(\d+)|(\d+))\s*", text)
    assert m, f"Expected a number like 64 or 2^63 - 1. Received: {text!r}"
    return int(m[3]) if m[3] else 2 ** int(m[1]) - int(m[2])


def _row(backend: str) -> list[str]:
    section = GUIDE[GUIDE.index("**Per-backend limits.**") :]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == backend:
            return cells
    raise AssertionError(
        f"Expected a row for {backend} in the user guide's per-backend limits (docs/guide/checkpoints.md)"
    )


def test_the_readme_states_this_backends_limits():
    bk = registry.current()
    _, ndim, dim, elements, lacks = _row(bk.name)
    limits = checkpoint.limits_of(bk)
    assert _number(ndim) == limits.ndim
    assert _number(dim) == limits.dim
    assert _number(elements.split(",")[0]) == limits.elements
    lacking = {dt.name for dt in _dt.ALL + _dt.UNSIGNED if checkpoint.lacks_dtype(bk, dt)}
    stated = set() if lacks == "—" else {s.strip() for s in lacks.split(",")}
    assert stated == lacking


def test_the_readme_states_the_memory_bound():
    text = " ".join(GUIDE[GUIDE.index("**Bounded memory.**") :].split())
    assert f"{st.HEADER_ALLOWANCE >> 20} MiB plus {st.HEADER_PER_DATA_BYTE} bytes per byte" in text
    assert f"{st.ENTRY_COST // 1024} KiB per tensor entry" in text
    assert f"{st._TEXT_COST} bytes per byte of text, {st._ITEM_COST} bytes per JSON value" in text
    assert f"{checkpoint.MAX_DEPTH} levels" in text
    assert md.CheckpointError.__name__ in GUIDE
