"""md.save / md.load of plain Python values and int dict keys inside the structure, as in an
optimiser's or scheduler's ``state_dict()`` (PyTorch's layout), on the active backend."""

from __future__ import annotations

import json
import math
import struct
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file

import multidev as md
from multidev.testing.portability import sample_values


def _same(got: Any, want: Any, where: str = "obj") -> None:
    """Equal values of exactly the same types (floats bit for bit), tensors bit for bit."""
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, md.Tensor):
        assert got.dtype is want.dtype and got.shape == want.shape, where
        g, w = np.asarray(got.numpy()), np.asarray(want.numpy())
        assert g.tobytes() == w.tobytes(), f"{where}: bits changed"
    elif isinstance(want, float):
        assert struct.pack("<d", got) == struct.pack("<d", want), f"{where}: {got!r} != {want!r}"
    elif isinstance(want, dict):
        assert [(type(k), k) for k in got] == [(type(k), k) for k in want], f"{where}: keys"
        for k in want:
            _same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), f"{where}: length"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def _adam_state() -> dict:
    """An Adam ``state_dict()`` in PyTorch's layout, with tensors and plain values."""
    return {
        "state": {
            0: {
                "step": md.asarray(np.float32(3.0)),
                "exp_avg": md.asarray(sample_values(md.float32, (2, 3), 1)),
                "exp_avg_sq": md.asarray(sample_values(md.float32, (2, 3), 2)),
            },
            1: {"step": 3, "exp_avg": md.zeros(3), "exp_avg_sq": md.ones(3)},
        },
        "param_groups": [
            {
                "lr": 0.1,
                "betas": (0.9, 0.999),
                "eps": 1e-08,
                "weight_decay": 0,
                "amsgrad": False,
                "maximize": False,
                "foreach": None,
                "capturable": False,
                "differentiable": False,
                "fused": None,
                "decoupled_weight_decay": False,
                "params": [0, 1],
            }
        ],
    }


EDGE_FLOATS = [
    0.0,
    -0.0,
    math.inf,
    -math.inf,
    math.nan,
    struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_DEAD_BEEF))[0],
    struct.unpack("<d", struct.pack("<Q", 0xFFF0_0000_0000_0001))[0],
    5e-324,
    1.7976931348623157e308,
    0.1,
    1 / 3,
]

OBJECTS = {
    "adam state_dict": _adam_state,
    "scheduler state_dict (no tensors)": lambda: {
        "step_size": 30,
        "gamma": 0.1,
        "base_lrs": [0.1, 0.01],
        "last_epoch": -1,
        "verbose": False,
        "_step_count": 1,
        "_get_lr_called_within_step": False,
        "_last_lr": [0.1, 0.01],
    },
    "edge floats": lambda: {"floats": EDGE_FLOATS, "tuple": tuple(EDGE_FLOATS)},
    "ints": lambda: [0, -1, 1, 2**31, -(2**63), 2**64 + 1, -(2**200), 2**4095],
    "bool is not int": lambda: [True, False, 1, 0, 1.0, 0.0],
    "strings": lambda: ["", "a", "é模🙂", '\x00\n"\\', "\ud800", "x" * 10_000],
    "none": lambda: [None, {"k": None}, (None,)],
    "int and str keys apart": lambda: {0: "int zero", "0": "str zero", -5: 1, 2**70: 2},
    "int keys in order": lambda: OrderedDict([(3, md.ones(1)), (1, md.zeros(1)), (2, None)]),
    "plain top level": lambda: 42,
    "plain str top level": lambda: "just a string",
    "tensor with plain values": lambda: [md.arange(3), 1, 2.5, "x", None, True],
}


@pytest.mark.parametrize("make", OBJECTS.values(), ids=OBJECTS.keys())
def test_plain_values_round_trip(tmp_path, make):
    obj = make()
    md.save(obj, tmp_path / "f")
    _same(md.load(tmp_path / "f"), obj)


def test_optimiser_state_keeps_its_tensors_tied_and_readable(tmp_path):
    obj = _adam_state()
    shared = obj["state"][1]["exp_avg"]
    obj["state"][1]["exp_avg_sq"] = shared
    md.save(obj, tmp_path / "f")
    got = md.load(tmp_path / "f")
    assert got["state"][1]["exp_avg"] is got["state"][1]["exp_avg_sq"]
    arrays = load_file(tmp_path / "f")
    assert sorted(arrays) == [
        "state.0.exp_avg",
        "state.0.exp_avg_sq",
        "state.0.step",
        "state.1.exp_avg",
    ]


def test_files_without_plain_values_stay_version_1(tmp_path):
    """Older multidev versions read files without plain values; newer features bump the
    version so an older reader says 'upgrade' instead of 'corrupted'."""
    from safetensors import safe_open

    md.save({"w": md.ones(2)}, tmp_path / "old")
    md.save({"w": md.ones(2), "step": 1}, tmp_path / "new")
    md.save({1: md.ones(2)}, tmp_path / "intkey")
    versions = []
    for name in ("old", "new", "intkey"):
        with safe_open(tmp_path / name, framework="numpy") as f:
            versions.append(f.metadata()["format_version"])
    assert versions == ["1", "2", "2"]


BAD = {
    "numpy scalar": (np.float32(1.0), TypeError, "float32 at obj"),
    "numpy int key": ({np.int64(1): 1}, TypeError, "str or int dictionary keys"),
    "bool key": ({True: 1}, TypeError, "str or int dictionary keys"),
    "float key": ({1.5: 1}, TypeError, "str or int dictionary keys"),
    "tuple key": ({(1, 2): 1}, TypeError, "str or int dictionary keys"),
    "huge int": ([2**5000], ValueError, "at most 4096 bits"),
    "huge int key": ({2**5000: 1}, ValueError, "at most 4096 bits"),
    "object": ({"o": object()}, TypeError, r"object at obj\['o'\]"),
    "bytes": ({"b": b"x"}, TypeError, "bytes"),
    "complex": ({"c": 1j}, TypeError, "complex"),
}


@pytest.mark.parametrize("obj, exc, match", BAD.values(), ids=BAD.keys())
def test_unsupported_values_leave_the_file_untouched(tmp_path, obj, exc, match):
    md.save([1, md.ones(1)], tmp_path / "f")
    before = (tmp_path / "f").read_bytes()
    with pytest.raises(exc, match=match):
        md.save(obj, tmp_path / "f")
    assert (tmp_path / "f").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def _reseal(path, structure: Any) -> None:
    """Put ``structure`` into the file's metadata and seal the header checksum again."""
    import google_crc32c

    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n], object_pairs_hook=OrderedDict)
    header["__metadata__"]["structure"] = json.dumps(structure)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    k = len(b'{"__metadata__":{"header_crc32c":"')
    raw = raw[:k] + b"%08x" % google_crc32c.value(raw[k + 8 :]) + raw[k + 8 :]
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + n :])


BAD_NODES = {
    "float not hex": {"float": "zz00000000000000"},
    "float short": {"float": "00"},
    "float as number": {"float": 1.5},
    "int as str": {"int": "1"},
    "int as bool": {"int": True},
    "int too big": {"int": 2**5000},
    "bool as int": {"bool": 1},
    "str as number": {"str": 1},
    "none with value": {"none": 0},
    "float dict key": {"dict": [[1.5, {"none": None}]]},
    "bool dict key": {"dict": [[True, {"none": None}]]},
    "int key twice": {"dict": [[1, {"none": None}], [1, {"none": None}]]},
}


@pytest.mark.parametrize("node", BAD_NODES.values(), ids=BAD_NODES.keys())
def test_bad_plain_nodes_are_checkpoint_errors(tmp_path, node):
    md.save([None], tmp_path / "f")
    _reseal(tmp_path / "f", {"list": [node]})
    with pytest.raises(md.CheckpointError) as info:
        md.load(tmp_path / "f")
    assert info.value.path == str(tmp_path / "f")
