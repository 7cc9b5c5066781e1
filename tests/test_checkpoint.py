"""md.save / md.load on the active backend: round trips, corruption, atomicity, interop.

Run once per backend: ``MULTIDEV_BACKEND=torch pytest tests/test_checkpoint.py``.
The format helpers below are written from the documented layout, independently of
multidev's own writer, so the tests also pin the file format down.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import textwrap
import time
import zipfile
from collections import OrderedDict
from pathlib import Path

import google_crc32c
import numpy as np
import pytest
from conftest import run_python
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import multidev as md
from multidev import checkpoint, registry
from multidev import dtypes as _dt
from multidev.testing import portability
from multidev.testing.portability import sample_values

BK = registry.current()
SUPPORTED = [dt for dt in _dt.ALL if not checkpoint.lacks_dtype(BK, dt)]
PREFIX = b'{"__metadata__":{"header_crc32c":"'
CODES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
    "int64": "I64", "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64",
}  # fmt: skip
ENV = {**os.environ, "MULTIDEV_BACKEND": BK.name}


def _bits(x) -> bytes:
    return np.ascontiguousarray(np.asarray(x)).tobytes()


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".multidev-tmp"))


# ------------------------------------------------------------------ the documented layout


def split(data: bytes) -> tuple[dict, bytes]:
    """Header (as an ordered dict) and data section of a safetensors file."""
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + n], object_pairs_hook=OrderedDict), data[8 + n :]


def craft(header: dict | bytes, data: bytes = b"", *, seal: bool = True) -> bytes:
    """A file from a header (dict, or raw JSON bytes) and a data section. With ``seal``, a
    multidev header gets its checksum: CRC32C of the header bytes after the checksum value."""
    raw = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":"))
    raw = raw.encode() if isinstance(raw, str) else raw
    raw += b" " * (-len(raw) % 8)
    if seal and raw.startswith(PREFIX):
        k = len(PREFIX)
        raw = raw[:k] + b"%08x" % google_crc32c.value(raw[k + 8 :]) + raw[k + 8 :]
    return struct.pack("<Q", len(raw)) + raw + data


def small_file(tmp_path: Path) -> bytes:
    """A small multidev checkpoint with several dtypes, a 0-d and a zero-size tensor."""
    obj = {
        "w": md.asarray(sample_values(md.float32, (2, 3), 1)),
        "b": [md.asarray(np.array([1, -2, 3], np.int64)), md.asarray(np.array(True))],
        "e": md.zeros((0, 2)),
    }
    md.save(obj, tmp_path / "small")
    return (tmp_path / "small").read_bytes()


# ------------------------------------------------------------------ d2l file I/O examples


def test_x_file(tmp_path):
    x = md.arange(4)
    md.save(x, tmp_path / "x-file")
    x2 = md.load(tmp_path / "x-file")
    assert isinstance(x2, md.Tensor) and x2.dtype is md.int64 and x2.tolist() == [0, 1, 2, 3]


def test_x_files(tmp_path):
    x, y = md.arange(4), md.zeros(4)
    md.save([x, y], tmp_path / "x-files")
    x2, y2 = md.load(tmp_path / "x-files")
    assert (x2.tolist(), y2.tolist()) == ([0, 1, 2, 3], [0.0, 0.0, 0.0, 0.0])


def test_mydict(tmp_path):
    mydict = {"x": md.arange(4), "y": md.zeros(4)}
    md.save(mydict, tmp_path / "mydict")
    mydict2 = md.load(tmp_path / "mydict")
    assert type(mydict2) is dict and list(mydict2) == ["x", "y"]
    assert mydict2["x"].tolist() == [0, 1, 2, 3] and mydict2["y"].tolist() == [0.0] * 4


# ------------------------------------------------------------------ round trips


@st.composite
def tensors(draw):
    """(tensor, expected host array): random bits of a supported dtype, possibly viewed
    through a transpose, a strided slice or an integer index (non-contiguous natives)."""
    dt = draw(st.sampled_from(SUPPORTED))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=4)))
    n = int(np.prod(shape, dtype=np.int64))
    if dt is md.bool:
        host = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    else:
        raw = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
        host = np.frombuffer(raw, dtype=dt.numpy).copy()
    host = host.reshape(shape)
    t = md.asarray(host)
    view = draw(st.sampled_from(["plain", "transpose", "slice", "index"]))
    if view == "transpose" and host.ndim >= 2:
        perm = tuple(draw(st.permutations(range(host.ndim))))
        return md.permute_dims(t, perm), host.transpose(perm)
    if view == "slice" and host.ndim >= 1:
        key = tuple(slice(draw(st.integers(0, 2)), None, draw(st.integers(1, 3))) for _ in shape)
        return t[key], host[key]
    if view == "index" and host.ndim >= 1 and shape[0] > 0:
        i = draw(st.integers(0, shape[0] - 1))
        return t[i], host[i]
    return t, host


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ckpt")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(tensors(), min_size=1, max_size=4))
def test_round_trip_bit_exact(folder, items):
    md.save([t for t, _ in items], folder / "rt")
    got = md.load(folder / "rt")
    assert type(got) is list and len(got) == len(items)
    for g, (t, host) in zip(got, items, strict=True):
        assert g.dtype is t.dtype and g.shape == host.shape
        assert _bits(g.numpy()) == _bits(host)


POOL = [md.ones((2, 2)), md.arange(3), md.zeros((), dtype=md.uint8)]
keys = st.text(max_size=6) | st.sampled_from(["0", "a.b", "a", "b", "__metadata__", "x#1"])
trees = st.recursive(
    st.sampled_from(POOL),
    lambda kids: (
        st.lists(kids, max_size=3)
        | st.lists(kids, max_size=3).map(tuple)
        | st.dictionaries(keys, kids, max_size=3)
        | st.dictionaries(keys, kids, max_size=3).map(lambda d: OrderedDict(reversed(d.items())))
    ),
    max_leaves=10,
)


def _same_shape(orig, got, ties: dict) -> None:
    if isinstance(orig, md.Tensor):
        assert isinstance(got, md.Tensor)
        assert ties.setdefault(id(orig), got) is got, "tied tensors must come back tied"
        assert _bits(got.numpy()) == _bits(orig.numpy()) and got.dtype is orig.dtype
        return
    assert type(got) is type(orig)
    if isinstance(orig, dict):
        assert list(got) == list(orig)
        for k in orig:
            _same_shape(orig[k], got[k], ties)
    else:
        assert len(got) == len(orig)
        for o, g in zip(orig, got, strict=True):
            _same_shape(o, g, ties)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=trees)
def test_structures_round_trip(folder, obj):
    md.save(obj, folder / "tree")
    ties: dict = {}
    _same_shape(obj, md.load(folder / "tree"), ties)
    assert len(set(map(id, ties.values()))) == len(ties), "untied tensors came back tied"


@pytest.mark.parametrize("dt", SUPPORTED, ids=lambda d: d.name)
def test_special_values_bit_exact(tmp_path, dt):
    host = portability.special_bits(dt)
    md.save(md.asarray(host), tmp_path / "f")
    assert _bits(md.load(tmp_path / "f").numpy()) == _bits(host)


def test_tied_tensor_is_stored_once(tmp_path):
    from safetensors import safe_open

    w = md.ones((3, 3))
    same_native = md.asarray(w.native)
    md.save({"a": w, "b": [w], "c": same_native, "d": md.ones((3, 3))}, tmp_path / "f")
    with safe_open(tmp_path / "f", "np") as f:
        assert sorted(f.keys()) == ["a", "d"]
    got = md.load(tmp_path / "f")
    assert got["a"] is got["b"][0] is got["c"] and got["d"] is not got["a"]


def test_tensor_names_follow_the_structure(tmp_path):
    from safetensors import safe_open

    x = md.ones(1)
    obj = {"a.b": x, "a": {"b": md.zeros(1)}, "__metadata__": md.ones(2), "l": [md.ones(3)]}
    md.save(obj, tmp_path / "f")
    with safe_open(tmp_path / "f", "np") as f:
        assert sorted(f.keys()) == ["__metadata__#1", "a.b", "a.b#1", "l.0"]
    got = md.load(tmp_path / "f")
    assert list(got) == list(obj) and got["a"]["b"].tolist() == [0.0]


def test_empty_structures(tmp_path):
    for obj in ([], {}, (), [[], {"a": ()}]):
        md.save(obj, tmp_path / "f")
        assert md.load(tmp_path / "f") == obj


def test_loaded_tensors_do_not_share_the_file(tmp_path):
    md.save({"w": md.ones(4)}, tmp_path / "f")
    w = md.load(tmp_path / "f")["w"]
    md.save({"w": md.zeros(4)}, tmp_path / "f")
    w[0] = 5.0
    assert w.tolist() == [5.0, 1.0, 1.0, 1.0]


# ------------------------------------------------------------------ placement


def test_load_device(tmp_path):
    md.save([md.ones(2)], tmp_path / "f")
    (t,) = md.load(tmp_path / "f")
    assert t.device is md.default_device()
    for dev in BK.devices():
        if dev.type == "cpu":
            (t,) = md.load(tmp_path / "f", device=str(dev))
            assert t.device is dev
            with dev:
                (t,) = md.load(tmp_path / "f")
            assert t.device is dev
    with pytest.raises(md.DeviceError, match="gpu:7"):
        md.load(tmp_path / "f", device="gpu:7")


# ------------------------------------------------------------------ the file format


def test_file_is_valid_safetensors_with_metadata(tmp_path):
    from safetensors import safe_open

    w = md.asarray(sample_values(md.float32, (3, 4), 2))
    b = md.asarray(np.array([1, 2, 3], np.uint8))
    d = md.asarray(np.array([1.5, -2.0], np.float64)) if md.float64 in SUPPORTED else b
    md.save({"w": w, "b": b, "d": d}, tmp_path / "f")
    data = (tmp_path / "f").read_bytes()
    header, payload = split(data)
    assert data[8:].startswith(PREFIX) and struct.unpack("<Q", data[:8])[0] % 8 == 0
    meta = header.pop("__metadata__")
    assert meta["format"] == "multidev" and meta["format_version"] == "1"
    assert meta["backend"] == BK.name
    assert json.loads(meta["structure"])["dict"][0] == ["w", {"tensor": "w"}]
    crcs = json.loads(meta["crc32c"])
    for name, info in header.items():
        begin, end = info["data_offsets"]
        itemsize = _dt.from_name({v: k for k, v in CODES.items()}[info["dtype"]]).itemsize
        assert begin % itemsize == 0, "each tensor is aligned to its item size"
        assert crcs[name] == f"{google_crc32c.value(payload[begin:end]):08x}"
    with safe_open(tmp_path / "f", "np") as f:
        assert f.metadata()["format"] == "multidev"
        assert _bits(f.get_tensor("w")) == _bits(w.numpy())


def test_safetensors_numpy_reads_float32_checkpoint(tmp_path):
    from safetensors.numpy import load_file

    x = md.asarray(sample_values(md.float32, (4, 5), 3))
    sd = OrderedDict([("0.weight", x), ("0.bias", md.ones(4)), ("t", md.permute_dims(x, (1, 0)))])
    md.save(sd, tmp_path / "f")
    got = load_file(tmp_path / "f")
    assert set(got) == set(sd)
    for k, v in sd.items():
        assert got[k].dtype == np.float32 and _bits(got[k]) == _bits(v.numpy())


@pytest.mark.parametrize("dt", SUPPORTED, ids=lambda d: d.name)
def test_reads_foreign_safetensors(tmp_path, dt):
    from safetensors.numpy import save_file

    arrays = {
        "z": sample_values(dt, (3, 2), 5),
        "a": sample_values(dt, (), 6),
        "e": sample_values(dt, (0, 4), 7),
    }
    save_file(arrays, tmp_path / "f", metadata={"format": "pt"})
    got = md.load(tmp_path / "f")
    assert type(got) is dict and set(got) == set(arrays)
    for k, v in arrays.items():
        assert got[k].dtype is dt and got[k].shape == v.shape and _bits(got[k].numpy()) == _bits(v)


def test_foreign_file_keeps_header_order(tmp_path):
    header = {
        "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
        "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
    }
    (tmp_path / "f").write_bytes(craft(header, np.array([1, 2], np.float32).tobytes()))
    got = md.load(tmp_path / "f")
    assert list(got) == ["b", "a"] and got["a"].tolist() == [2.0]


def test_crc32c_is_the_c_implementation():
    assert google_crc32c.implementation == "c", "reinstall google-crc32c with its C extension"


# ------------------------------------------------------------------ corrupted files


def test_truncation_at_every_byte(tmp_path):
    good = small_file(tmp_path)
    path = tmp_path / "cut"
    for n in range(len(good)):
        path.write_bytes(good[:n])
        with pytest.raises(md.CheckpointError):
            md.load(path)
            pytest.fail(f"loaded a file truncated to {n} of {len(good)} bytes")


def test_every_single_bit_flip(tmp_path):
    good = bytearray(small_file(tmp_path))
    path = tmp_path / "flip"
    for i in range(len(good)):
        for bit in range(8):
            bad = bytearray(good)
            bad[i] ^= 1 << bit
            path.write_bytes(bad)
            with pytest.raises(md.CheckpointError):
                md.load(path)
                pytest.fail(f"loaded a file with bit {bit} of byte {i} flipped")


def test_appended_bytes(tmp_path):
    (tmp_path / "f").write_bytes(small_file(tmp_path) + b"\0")
    with pytest.raises(md.CheckpointError, match="trailing"):
        md.load(tmp_path / "f")


def _t(dtype="F32", shape=(2,), offsets=(0, 8)) -> dict:
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch pwned-by-pickle",))


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"w": [1.0, 2.0]}))
    return buf.getvalue()


def _npy() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ones(3))
    return buf.getvalue()


D8 = bytes(8)
FOREIGN = {
    "empty file": (b"", "empty"),
    "shorter than the length": (b"\x10\x00\x00", "at least 8 bytes"),
    "header length larger than file": (struct.pack("<Q", 1 << 20) + b"{}", "larger than"),
    "header length huge": (struct.pack("<Q", (1 << 64) - 1) + b"{}" * 8, "larger than"),
    "header length zero": (struct.pack("<Q", 0) + D8, "too small"),
    "not utf-8": (craft(b'{"a\xff":1}'), "UTF-8"),
    "not json": (craft(b"{not json}"), "JSON"),
    "json list": (craft(b"[1,2]"), "JSON object"),
    "deeply nested json": (craft(b"[" * 100_000), "JSON|deeply"),
    "huge integer": (craft('{"a":{"dtype":"F32","shape":[1' + "0" * 5000 + "]}}"), "JSON"),
    "duplicate tensor": (craft(b'{"a":1,"a":2}'), "twice"),
    "duplicate metadata key": (craft(b'{"__metadata__":{"k":"1","k":"2"}}'), "twice"),
    "metadata not strings": (craft({"__metadata__": {"k": 1}}), "strings"),
    "tensor not an object": (craft({"a": [1, 2]}), "Expected an object"),
    "unknown dtype": (craft({"a": _t("F8_E4M3", (8,), (0, 8))}, D8), "F8_E4M3"),
    "missing dtype": (craft({"a": {"shape": [2], "data_offsets": [0, 8]}}, D8), "dtype"),
    "float shape": (craft({"a": _t(shape=(2.0,))}, D8), "shape"),
    "bool shape": (craft({"a": _t(shape=(True, True))}, D8), "shape"),
    "negative shape": (craft({"a": _t(shape=(-2,))}, D8), "shape"),
    "negative offset": (craft({"a": _t(offsets=(-8, 0))}, D8), "data_offsets"),
    "three offsets": (craft({"a": {**_t(), "data_offsets": [0, 4, 8]}}, D8), "data_offsets"),
    "end before begin": (craft({"a": _t(shape=(0,), offsets=(8, 0))}, D8), "end before"),
    "shape/size mismatch": (craft({"a": _t(shape=(3,))}, D8), "takes 12 bytes"),
    "dtype/size mismatch": (craft({"a": _t("F64")}, D8), "takes 16 bytes"),
    "huge shape": (craft({"a": _t(shape=(1 << 40, 1 << 40))}, D8), "takes"),
    "overlap": (craft({"a": _t(), "b": _t(offsets=(4, 12))}, bytes(12)), "overlaps"),
    "hole": (craft({"a": _t(), "b": _t(offsets=(12, 20))}, bytes(20)), "hole"),
    "offsets past the end": (craft({"a": _t(), "b": _t(offsets=(8, 16))}, D8), "truncated"),
    "trailing bytes": (craft({"a": _t()}, bytes(12)), "trailing"),
    "bool bytes other than 0/1": (craft({"a": _t("BOOL", (2,), (0, 2))}, b"\x01\x07"), "0 and 1"),
    "pickle": (pickle.dumps({"w": [1.0]}, protocol=4), "pickle"),
    "pickle protocol 2": (pickle.dumps(list(range(50)), protocol=2), "pickle"),
    "hostile pickle": (pickle.dumps(_Evil(), protocol=5), "pickle"),
    "zip (torch.save)": (_zip(), "zip"),
    "npy": (_npy(), "npy"),
}


@pytest.mark.parametrize("data, reason", FOREIGN.values(), ids=FOREIGN.keys())
def test_corrupted_or_foreign_file(tmp_path, monkeypatch, data, reason):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad").write_bytes(data)
    with pytest.raises(md.CheckpointError, match=reason) as info:
        md.load(tmp_path / "bad")
    assert info.value.path == str(tmp_path / "bad") and str(tmp_path / "bad") in str(info.value)
    assert not (tmp_path / "pwned-by-pickle").exists()


def _resealed(good: bytes, edit) -> bytes:
    """``good`` with its header edited by ``edit(header, metadata)`` and sealed again, so that
    only the consistency check under test can reject it."""
    header, data = split(good)
    edit(header, header["__metadata__"])
    return craft(header, data)


def _structure(meta, value) -> None:
    meta["structure"] = json.dumps(value)


OURS = {
    "header checksum mismatch": (
        lambda g: g.replace(
            b'"backend":"' + BK.name.encode(), b'"backend":"' + b"x" * len(BK.name)
        ),
        "header fails its CRC32C",
    ),
    "data checksum mismatch": (lambda g: g[:-1] + bytes([g[-1] ^ 0x80]), "fails its CRC32C"),
    "checksum field lost": (
        lambda g: _resealed(g, lambda h, m: m.pop("header_crc32c")),
        "lost its checksum",
    ),
    "future format version": (
        lambda g: _resealed(g, lambda h, m: m.update(format_version="99")),
        "version 99",
    ),
    "format version not a number": (
        lambda g: _resealed(g, lambda h, m: m.update(format_version="1.0")),
        "numeric",
    ),
    "structure not json": (
        lambda g: _resealed(g, lambda h, m: m.update(structure="{")),
        "structure metadata is not valid JSON",
    ),
    "structure names a missing tensor": (
        lambda g: _resealed(g, lambda h, m: _structure(m, {"tensor": "nope"})),
        "missing tensor",
    ),
    "structure leaves a tensor out": (
        lambda g: _resealed(g, lambda h, m: _structure(m, {"list": [{"tensor": "w"}]})),
        "not referenced",
    ),
    "structure node unknown": (
        lambda g: _resealed(g, lambda h, m: _structure(m, {"set": []})),
        "structure nodes",
    ),
    "structure dict key twice": (
        lambda g: _resealed(
            g,
            lambda h, m: m.update(
                structure='{"dict":[["k",{"tensor":"w"}],["k",{"tensor":"b.0"}],'
                '["j",{"tensor":"b.1"}],["e",{"tensor":"e"}]]}'
            ),
        ),
        "twice",
    ),
    "structure too deep": (
        lambda g: _resealed(g, lambda h, m: m.update(structure='{"list":[' * 400 + "]}" * 400)),
        "deep",
    ),
    "crc table missing a tensor": (
        lambda g: _resealed(g, lambda h, m: m.update(crc32c='{"w":"00000000"}')),
        "CRC32C",
    ),
    "crc not hex": (
        lambda g: _resealed(
            g,
            lambda h, m: m.update(crc32c=json.dumps({k: "xyz" for k in json.loads(m["crc32c"])})),
        ),
        "CRC32C",
    ),
}


@pytest.mark.parametrize("make, reason", OURS.values(), ids=OURS.keys())
def test_corrupted_multidev_file(tmp_path, make, reason):
    good = small_file(tmp_path)
    (tmp_path / "bad").write_bytes(make(good))
    with pytest.raises(md.CheckpointError, match=reason):
        md.load(tmp_path / "bad")


def test_special_paths(tmp_path):
    with pytest.raises(md.CheckpointError, match="directory"):
        md.load(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(md.CheckpointError, match="not a regular file"):
        md.load(tmp_path / "fifo")
    with pytest.raises(FileNotFoundError):
        md.load(tmp_path / "missing")


# ------------------------------------------------------------------ atomic, validated saves


def _cyclic():
    a: list = [md.ones(1)]
    a.append(a)
    return a


def _deep():
    obj: list = [md.ones(1)]
    for _ in range(checkpoint.MAX_DEPTH + 1):
        obj = [obj]
    return obj


BAD_OBJECTS = {
    "bytes": (b"3", TypeError, "Received: bytes"),
    "numpy scalar leaf": ({"w": md.ones(1), "n": np.int64(1)}, TypeError, r"int64 at obj\['n'\]"),
    "numpy array": ([md.ones(1), np.ones(2)], TypeError, r"ndarray at obj\[1\]"),
    "float key": ({1.5: md.ones(1)}, TypeError, "str or int dictionary keys"),
    "set": ({md.ones(1)}, TypeError, "set"),
    "cycle": (_cyclic(), ValueError, "contains itself"),
    "too deep": (_deep(), ValueError, "levels of nesting"),
}


@pytest.mark.parametrize("obj, exc, match", BAD_OBJECTS.values(), ids=BAD_OBJECTS.keys())
def test_bad_object_leaves_file_untouched(tmp_path, obj, exc, match):
    md.save(md.ones(2), tmp_path / "f")
    before = (tmp_path / "f").read_bytes()
    with pytest.raises(exc, match=match):
        md.save(obj, tmp_path / "f")
    assert (tmp_path / "f").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_save_paths(tmp_path):
    md.save(md.ones(1), str(tmp_path / "s"))
    md.save(md.ones(1), os.fsencode(tmp_path / "b"))
    assert md.load(tmp_path / "s").tolist() == md.load(str(tmp_path / "b")).tolist() == [1.0]
    with pytest.raises(TypeError, match="Expected a file path"):
        md.save(md.ones(1), io.BytesIO())
    with pytest.raises(IsADirectoryError):
        md.save(md.ones(1), tmp_path)
    with pytest.raises(FileNotFoundError):
        md.save(md.ones(1), tmp_path / "missing" / "f")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "s"]


def _run(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_python(script, *args, timeout=timeout, check=False, MULTIDEV_BACKEND=BK.name)


def test_full_disk_keeps_previous_file(tmp_path):
    old = md.asarray(sample_values(md.float32, (1000,), 9))
    md.save({"w": old}, tmp_path / "f")
    before = (tmp_path / "f").read_bytes()
    script = """
        import errno, resource, signal, sys
        import numpy as np
        import multidev as md
        big = md.asarray(np.ones((1024, 1024), np.float32))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        try:
            md.save({"w": big}, sys.argv[1])
        except OSError as e:
            sys.exit(0 if e.errno == errno.EFBIG else f"unexpected {e!r}")
        sys.exit("the save did not fail")
    """
    r = _run(script, str(tmp_path / "f"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "f").read_bytes() == before
    assert _temps(tmp_path) == []
    assert _bits(md.load(tmp_path / "f")["w"].numpy()) == _bits(old.numpy())


def test_concurrent_saves_leave_one_valid_file(tmp_path):
    script = """
        import sys
        import numpy as np
        import multidev as md
        path, value = sys.argv[1], int(sys.argv[2])
        obj = {"id": md.asarray(np.int64(value)),
               "x": md.asarray(np.full((512, 1024), value, np.float32))}
        print("ready", flush=True)
        for _ in range(25):
            md.save(obj, path)
    """
    path = tmp_path / "shared"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), str(path), str(v)],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for v in (1, 2)
    ]
    seen = set()
    deadline = time.monotonic() + 300
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        if path.exists():
            got = md.load(path)
            value = int(got["id"].item())
            assert value in (1, 2) and np.all(got["x"].numpy() == value)
            seen.add(value)
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    got = md.load(path)
    assert int(got["id"].item()) in (1, 2) and np.all(got["x"].numpy() == got["id"].item())
    assert _temps(tmp_path) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["shared"]
    assert seen, "the reader never saw the file while the writers ran"


# ------------------------------------------------------------------ portability tool


def test_portability_write_and_check(tmp_path):
    out = portability.write(tmp_path)
    result = portability.check(tmp_path)
    mine = result["writers"][BK.name]
    assert mine["status"] == "ok" and not mine["failed"], mine
    assert len(mine["ok"]) == len(list(out.glob("*.safetensors")))
    victim = out / "nested.safetensors"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 1
    victim.write_bytes(data)
    spec = json.loads((out / "manifest.json").read_text())
    spec["files"]["tied.safetensors"]["expected"]["list"][0]["tensor"]["hex"] = "00"
    (out / "manifest.json").write_text(json.dumps(spec))
    bad = portability.check(tmp_path)["writers"][BK.name]
    assert bad["status"] == "failed"
    assert sorted(f["file"] for f in bad["failed"]) == ["nested.safetensors", "tied.safetensors"]
    (tmp_path / "check.json").write_text(json.dumps(portability.check(tmp_path)))
    m = portability.matrix(tmp_path)
    assert m["failed"] == 1 and m["cells"][BK.name][BK.name]["status"] == "failed"
    assert "FAILED" in portability.render(m)
