"""Files that are valid safetensors but cannot become arrays on the active backend: every one
is md.CheckpointError naming the path, the tensor and the limit, raised before any data is
read. Run once per backend: ``MULTIDEV_BACKEND=paddle pytest tests/test_checkpoint_limits.py``.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

import multidev as md
from multidev import checkpoint, registry

BK = registry.current()
LIMITS = checkpoint.limits_of(BK)
NUMPY_BYTES = 2**63 - 1


def _write(path: Path, shape: tuple[int, ...], code: str = "F32", itemsize: int = 4) -> Path:
    """A plain safetensors file with one tensor ``t`` of ``shape`` (zero-filled data)."""
    n = itemsize * int(np.prod(shape, dtype=object))
    header = json.dumps({"t": {"dtype": code, "shape": list(shape), "data_offsets": [0, n]}})
    raw = header.encode() + b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + n)
    return path


def _exceeds(shape: tuple[int, ...], itemsize: int = 4) -> bool:
    nonzero = int(np.prod([d or 1 for d in shape], dtype=object))
    return (
        len(shape) > LIMITS.ndim
        or any(d > LIMITS.dim for d in shape)
        or nonzero > LIMITS.elements
        or nonzero * itemsize > NUMPY_BYTES
    )


SHAPES = {
    "65 dims": (1,) * 65,
    "[0, 2**63]": (0, 2**63),
    "[0, 2**62, 2**62]": (0, 2**62, 2**62),
    "[0, 2**63 - 1]": (0, 2**63 - 1),
    "10 dims (paddle)": (1,) * 10,
    "33 dims (mxnet)": (1,) * 33,
    "(2**33, 0) (mxnet)": (2**33, 0),
    "(2**31, 0)": (2**31, 0),
    "(0, 2**31, 2)": (0, 2**31, 2),
    "64 dims": (1,) * 64,
    "9 dims": (1,) * 9,
}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_shapes_beyond_the_backend_are_checkpoint_errors(tmp_path, shape):
    path = _write(tmp_path / "f", shape)
    if not _exceeds(shape):
        got = md.load(path)
        assert got["t"].shape == shape and got["t"].dtype is md.float32
        return
    with pytest.raises(md.CheckpointError) as info:
        md.load(path)
    err = info.value
    assert err.path == str(path) and str(path) in str(err)
    assert "'t'" in err.reason and BK.name in err.reason
    limits = (str(LIMITS.ndim), str(LIMITS.dim), str(LIMITS.elements), str(NUMPY_BYTES))
    assert any(f"at most {x}" in err.reason for x in limits), err.reason


def test_the_declared_limits_are_reached(tmp_path):
    """A tensor exactly at each declared limit loads (the limits are not set too low)."""
    at_ndim = md.load(_write(tmp_path / "ndim", (1,) * LIMITS.ndim))["t"]
    assert at_ndim.shape == (1,) * LIMITS.ndim
    at_dim = md.load(_write(tmp_path / "dim", (LIMITS.dim, 0), "U8", 1))["t"]
    assert at_dim.shape == (LIMITS.dim, 0) and at_dim.dtype is md.uint8
    one_more = _write(tmp_path / "over", (1,) * (LIMITS.ndim + 1))
    with pytest.raises(md.CheckpointError, match=f"at most {LIMITS.ndim}"):
        md.load(one_more)


def _physical_memory() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(_physical_memory() >= 2**40, reason="this machine holds 1 TiB")
def test_a_consistent_header_of_one_tebibyte_is_a_checkpoint_error(tmp_path):
    try:
        path = _write(tmp_path / "f", (2**38,))
    except OSError as e:
        pytest.skip(f"the file system cannot hold a sparse 1 TiB file: {e}")
    with pytest.raises(md.CheckpointError, match=r"memory|at most") as info:
        md.load(path)
    assert str(2**40) in info.value.reason or _exceeds((2**38,)), info.value.reason


def test_framework_failures_while_converting_are_checkpoint_errors(tmp_path, monkeypatch):
    md.save({"w": md.ones(3)}, tmp_path / "f")

    def refuse(arr, dev):
        raise RuntimeError("the framework refused this array")

    monkeypatch.setattr(BK, "from_numpy", refuse)
    with pytest.raises(md.CheckpointError, match="refused this array") as info:
        md.load(tmp_path / "f")
    assert isinstance(info.value.__cause__, RuntimeError) and "'w'" in info.value.reason
