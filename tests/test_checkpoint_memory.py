"""md.load needs memory bounded by a small multiple of the bytes it returns plus a fixed
allowance, whatever the header holds: hostile headers (deep or wide nesting, one tensor
referenced millions of times, hundreds of thousands of zero-size tensors) are refused before
they are parsed. Peak memory is measured in a child process (tracemalloc, which sees
NumPy's buffers and every Python object, and the growth of the resident set)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import google_crc32c
import numpy as np
import pytest

import multidev as md
from multidev import _safetensors as st
from multidev import registry

BK = registry.current()
MB = 1 << 20
PREFIX = b'{"__metadata__":{"header_crc32c":"'

CHILD = """
    import json, resource, sys, time, tracemalloc
    import multidev as md
    md.load(sys.argv[1])  # warm up: the backend, its kernels and caches
    out = {}
    for path in sys.argv[2:]:
        tracemalloc.start()
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        try:
            got = md.load(path)
            outcome = "ok"
        except md.CheckpointError as e:
            got, outcome = None, "CheckpointError: " + e.reason[:300]
        except BaseException as e:
            got, outcome = None, f"{type(e).__name__}: {str(e)[:300]}"
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024
        out[path] = {"outcome": outcome, "peak": peak, "rss": rss, "seconds": seconds}
        del got
    print(json.dumps(out))
"""


def _measure(tmp_path: Path, *paths: Path) -> dict[str, dict]:
    warm = tmp_path / "warm"
    md.save({"w": md.ones(2), "n": 1}, warm)
    env = {**os.environ, "MULTIDEV_BACKEND": BK.name}
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(warm), *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return {Path(k).name: v for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items()}


def _file(path: Path, header: bytes, data: bytes = b"") -> Path:
    """A safetensors file from raw header JSON; a multidev header gets its checksum."""
    header += b" " * (-len(header) % 8)
    if header.startswith(PREFIX):
        k = len(PREFIX)
        header = header[:k] + b"%08x" % google_crc32c.value(header[k + 8 :]) + header[k + 8 :]
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def _nested_empty(path: Path, mb: int, item: bytes) -> Path:
    n = mb * MB // (len(item) + 1)
    return _file(path, b'{"a":[' + b",".join([item] * n) + b"]}")


def _referenced(path: Path, times: int) -> Path:
    """A valid multidev file whose structure lists one 4-byte tensor ``times`` times."""
    structure = '{"list":[' + ",".join(['{"tensor":"a"}'] * times) + "]}"
    crc = f"{google_crc32c.value(np.float32(1).tobytes()):08x}"
    meta = {
        "header_crc32c": "00000000",
        "format": "multidev",
        "format_version": "1",
        "backend": BK.name,
        "structure": structure,
        "crc32c": json.dumps({"a": crc}),
    }
    header = {"__metadata__": meta, "a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}
    return _file(path, json.dumps(header, separators=(",", ":")).encode(), np.float32(1).tobytes())


def _zero_size(path: Path, count: int) -> Path:
    entry = '"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'
    return _file(path, ("{" + ",".join(entry % i for i in range(count)) + "}").encode())


def test_hostile_headers_are_refused_within_the_allowance(tmp_path):
    paths = [
        _nested_empty(tmp_path / "objects_24mb", 24, b"{}"),
        _nested_empty(tmp_path / "lists_4mb", 4, b"[]"),
        _nested_empty(tmp_path / "deep_lists_4mb", 4, b"[[[[]]]]"),
        _referenced(tmp_path / "referenced_4.5M", 4_500_000),
        _referenced(tmp_path / "referenced_200k", 200_000),
        _zero_size(tmp_path / "zero_size_850k", 850_000),
    ]
    results = _measure(tmp_path, *paths)
    for name, r in results.items():
        assert r["outcome"].startswith("CheckpointError"), (name, r)
        assert "memory" in r["outcome"], (name, r)
        # nothing is returned: the fixed allowance is all it may take
        assert r["peak"] <= st.HEADER_ALLOWANCE, (name, r)
        assert r["rss"] <= st.HEADER_ALLOWANCE + 64 * MB, (name, r)


def test_legal_files_within_the_budget_load_in_bounded_memory(tmp_path):
    """Many references, many small tensors and plain values that the budget admits load,
    within a small multiple of the bytes they return plus the allowance."""
    data = md.asarray(np.arange(1 << 18, dtype=np.float32))  # 1 MiB
    md.save({"big": data, "refs": [data] * 20_000}, tmp_path / "refs")
    md.save([md.ones(3) for _ in range(2_000)], tmp_path / "small")
    md.save(
        {"values": list(range(20_000)), "names": [str(i) for i in range(2_000)]}, tmp_path / "plain"
    )
    results = _measure(tmp_path, tmp_path / "refs", tmp_path / "small", tmp_path / "plain")
    for name, r in results.items():
        assert r["outcome"] == "ok", (name, r)
        returned = {"refs": 1 << 20, "small": 2_000 * 12, "plain": 0}[name]
        assert r["peak"] <= 8 * returned + st.HEADER_ALLOWANCE, (name, r)


def test_save_refuses_what_load_would_refuse(tmp_path):
    """A structure too large for its data fails at save time, leaving no file."""
    x = md.ones(1)
    with pytest.raises(ValueError, match="Save fewer, larger tensors"):
        md.save([x] * 100_000, tmp_path / "f")
    assert list(tmp_path.iterdir()) == []


def test_header_cost_bounds_what_json_needs():
    """The scan's estimate is an upper bound of what json.loads allocates."""
    import tracemalloc

    cases = [
        b"[" + b",".join([b"[]"] * 100_000) + b"]",
        b"[" + b",".join([b"{}"] * 100_000) + b"]",
        b"[" + b",".join([b"[[{}]]"] * 50_000) + b"]",
        b"{" + b",".join(b'"k%d":[%d]' % (i, i) for i in range(50_000)) + b"}",
        b'["' + b'","'.join(b'x\\"y' for _ in range(50_000)) + b'"]',
        b'"' + b"a" * 1_000_000 + "\U0001f642".encode() + b'"',
        b"[" + b",".join([b"12345.5e3"] * 100_000) + b"]",
    ]
    for raw in cases:
        tracemalloc.start()
        value = json.loads(raw.decode())
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del value
        assert st.json_cost(raw) >= peak, raw[:40]
