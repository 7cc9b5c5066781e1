"""Section "checkpoint": md.save / md.load on the active backend.

Bit-exact round trips of every dtype the backend has, structures and tied tensors,
non-contiguous tensors, placement, clear errors for corrupted files and unsupported dtypes,
and interoperability with the safetensors package in both directions.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import multidev as md
from multidev import checkpoint, registry
from multidev import dtypes as _dt
from multidev.testing.portability import sample_values

BK = registry.current()
SUPPORTED = [dt for dt in _dt.ALL if not checkpoint.lacks_dtype(BK, dt)]
LACKING = [dt for dt in _dt.ALL if checkpoint.lacks_dtype(BK, dt)]


def _bits(x) -> bytes:
    return np.ascontiguousarray(np.asarray(x)).tobytes()


@pytest.mark.parametrize("dt", SUPPORTED, ids=lambda d: d.name)
def test_every_dtype_round_trips_bit_exact(tmp_path, dt):
    host = sample_values(dt, (6, 5), seed=7)
    x = md.asarray(host)
    md.save(
        {"x": x, "t": md.permute_dims(x, (1, 0)), "s": x[::2, 1:], "0d": x[0, 0]}, tmp_path / "f"
    )
    got = md.load(tmp_path / "f")
    for key, want in (("x", host), ("t", host.T), ("s", host[::2, 1:]), ("0d", host[0, 0])):
        assert got[key].dtype is dt and got[key].shape == np.shape(want), key
        assert _bits(got[key].numpy()) == _bits(want), f"{key}: bits changed"


def test_structure_order_and_ties(tmp_path):
    w, b = md.ones((2, 3)), md.zeros(3, dtype=md.int64)
    obj = OrderedDict(z=[w, (b, w)], a={"w": w, "empty": []})
    md.save(obj, tmp_path / "f")
    got = md.load(tmp_path / "f")
    assert type(got) is OrderedDict and list(got) == ["z", "a"]
    assert type(got["z"]) is list and type(got["z"][1]) is tuple
    assert got["z"][0] is got["z"][1][1] is got["a"]["w"], "tied tensors must come back tied"
    assert got["a"]["empty"] == [] and got["z"][1][0].dtype is md.int64


def test_d2l_file_io(tmp_path):
    x = md.arange(4)
    md.save(x, tmp_path / "x-file")
    assert md.load(tmp_path / "x-file").tolist() == [0, 1, 2, 3]
    y = md.zeros(4)
    md.save([x, y], tmp_path / "x-files")
    x2, y2 = md.load(tmp_path / "x-files")
    assert x2.tolist() == [0, 1, 2, 3] and y2.tolist() == [0.0] * 4
    md.save({"x": x, "y": y}, tmp_path / "mydict")
    d = md.load(tmp_path / "mydict")
    assert list(d) == ["x", "y"] and d["y"].dtype is md.float32


def test_load_places_on_requested_device(tmp_path):
    md.save([md.ones(3)], tmp_path / "f")
    for dev in BK.devices():
        if dev.type == "cpu":
            (t,) = md.load(tmp_path / "f", device=dev)
            assert t.device is dev and t.tolist() == [1.0, 1.0, 1.0]
    (t,) = md.load(tmp_path / "f")
    assert t.device is md.default_device()


@pytest.mark.skipif(not LACKING, reason=f"{BK.name} supports every dtype")
def test_unsupported_dtype_is_a_clear_error(tmp_path):
    from safetensors.numpy import save_file

    dt = LACKING[0]
    path = tmp_path / "f"
    save_file({"w": np.zeros(2, dtype=dt.numpy)}, path)
    with pytest.raises(md.CheckpointError, match=f"{dt.name}.*{BK.name}"):
        md.load(path)


def test_corrupted_files_raise_checkpoint_error(tmp_path):
    md.save({"w": md.ones((4, 4))}, tmp_path / "f")
    good = (tmp_path / "f").read_bytes()
    cases = {
        "empty": b"",
        "truncated": good[:-3],
        "data bit flip": good[:-5] + bytes([good[-5] ^ 0x10]) + good[-4:],
        "header bit flip": good[:40] + bytes([good[40] ^ 0x01]) + good[41:],
        "pickle": b"\x80\x04\x95" + b"\x00" * 40,
    }
    for name, data in cases.items():
        (tmp_path / "bad").write_bytes(data)
        with pytest.raises(md.CheckpointError):
            md.load(tmp_path / "bad")
            pytest.fail(f"{name}: loaded without error")


def test_failed_save_keeps_previous_file(tmp_path):
    md.save(md.ones(2), tmp_path / "f")
    before = (tmp_path / "f").read_bytes()
    with pytest.raises(TypeError, match="Expected a Tensor"):
        md.save({"w": md.ones(2), "n": object()}, tmp_path / "f")
    assert (tmp_path / "f").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_reads_plain_safetensors_files(tmp_path):
    from safetensors.numpy import save_file

    arrays = {"b": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.array([1, -2], np.int64)}
    save_file(arrays, tmp_path / "f", metadata={"format": "pt"})
    got = md.load(tmp_path / "f")
    assert type(got) is dict and set(got) == {"a", "b"}
    for k, v in arrays.items():
        assert got[k].dtype is _dt.from_numpy_dtype(v.dtype) and _bits(got[k].numpy()) == _bits(v)


def test_safetensors_reads_multidev_files(tmp_path):
    from safetensors.numpy import load_file

    x = md.asarray(sample_values(md.float32, (3, 4), seed=3))
    md.save({"w": x, "t": md.permute_dims(x, (1, 0))}, tmp_path / "f")
    got = load_file(tmp_path / "f")
    assert _bits(got["w"]) == _bits(x.numpy()) and _bits(got["t"]) == _bits(x.numpy().T)
