"""md.load_native on the active backend: weights files written by torch, Keras, Paddle and MXNet
themselves (tests/fixtures/native/, made by tools/make_native_weights.py with the real
frameworks) load into the same multidev model and give the writer's own outputs; hostile,
truncated and corrupt files raise md.CheckpointError without running anything."""

from __future__ import annotations

import io
import pickle
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.examples import transformer_classifier
from multidev.examples.modern_cnns import resnet18
from multidev.examples.rnn_language_model import VOCAB, LanguageModel

NATIVE = Path(__file__).parent / "fixtures" / "native"
FILES = {"torch": "{}.pt", "keras": "{}.weights.h5", "paddle": "{}.pdparams", "mxnet": "{}.params"}
try:
    import h5py  # noqa: F401

    HAS_H5PY = True
except ImportError:
    HAS_H5PY = False


#: the d2l zoo models of multidev.examples, at the sizes tools/make_native_weights.py writes
ZOO = ("resnet18", "gru_lm", "transformer")


def _model(kind: str, framework: str) -> nn.Block:
    md.manual_seed(123)  # values that differ from every file's
    if kind == "resnet18":
        return resnet18(num_classes=3, width=4)
    if kind == "gru_lm":
        return LanguageModel("gru", len(VOCAB))
    if kind == "transformer":
        return transformer_classifier.Classifier()
    if kind == "mlp":
        return nn.Sequential(
            nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 7), nn.ReLU(), nn.Linear(7, 3)
        )
    eps = 1e-3 if framework == "keras" else 1e-5  # Keras' BatchNormalization default
    return nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2, eps=eps), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3)
    )


@pytest.mark.parametrize("kind", ["mlp", "cnn", *ZOO])
@pytest.mark.parametrize("framework", sorted(FILES))
def test_a_native_file_gives_the_writer_s_outputs(framework, kind):
    if framework == "keras" and not HAS_H5PY:
        pytest.skip("h5py (multidev[interchange]) is not installed in this environment")
    path = NATIVE / framework / FILES[framework].format(kind)
    ref = np.load(NATIVE / framework / f"{kind}.npz")
    net = _model(kind, framework).eval()
    before = net(md.asarray(ref["x"])).numpy()
    assert not np.allclose(before, ref["y"], atol=1e-3)  # the load is what makes them equal
    net.load_state_dict(md.load_native(path))
    np.testing.assert_allclose(net(md.asarray(ref["x"])).numpy(), ref["y"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("framework", sorted(FILES))
def test_2d_weights_come_in_multidev_s_orientation(framework):
    """Each writer's own (out, in) matrix W of y = x W^T + b (a non-square 7x5 and a square 7x7),
    saved by the writer beside its file: a loader that transposed a square weight, or failed to
    transpose Paddle's and Keras' (in, out) ones, gives other values."""
    if framework == "keras" and not HAS_H5PY:
        pytest.skip("h5py (multidev[interchange]) is not installed in this environment")
    ref = np.load(NATIVE / framework / "mlp.npz")
    assert ref["w0"].shape == (7, 5) and not np.allclose(ref["w2"], ref["w2"].T)
    net = _model("mlp", framework)
    net.load_state_dict(md.load_native(NATIVE / framework / FILES[framework].format("mlp")))
    np.testing.assert_array_equal(net[0].weight.numpy(), ref["w0"])
    np.testing.assert_array_equal(net[2].weight.numpy(), ref["w2"])


def test_torch_2d_weights_keep_their_values_and_orientation():
    """A square (7x7) and a non-square (7x5) weight: values, not only shapes, as torch saved."""
    sd = md.load_native(NATIVE / "torch" / "mlp.pt")
    assert sd.framework == "torch" and list(sd)[:2] == ["0.weight", "0.bias"]
    raw = _torch_arrays(NATIVE / "torch" / "mlp.pt")
    for key in ("0.weight", "2.weight"):
        assert sd[key].shape == raw[key].shape
        np.testing.assert_array_equal(sd[key].numpy(), raw[key])
    assert sd["0.weight"].shape == (7, 5)
    assert not np.array_equal(raw["2.weight"], raw["2.weight"].T)


def _torch_arrays(path: Path) -> dict[str, np.ndarray]:
    """The float32 storages of a torch archive read directly, one per tensor in file order
    (contiguous tensors), shaped by the sizes the multidev loader reports: an independent
    reading of the same bytes."""
    sd = md.load_native(path)
    out = {}
    with zipfile.ZipFile(path) as z:
        root = z.namelist()[0].split("/")[0]
        for i, key in enumerate(sd):
            data = np.frombuffer(z.read(f"{root}/data/{i}"), dtype="<f4")
            out[key] = data.reshape(sd[key].shape)
    return out


def test_paddle_and_mxnet_names_become_multidev_s():
    paddle = md.load_native(NATIVE / "paddle" / "cnn.pdparams")
    assert {"1.running_mean", "1.running_var"} <= set(paddle) and "1._mean" not in paddle
    assert paddle["4.weight"].shape == (32, 3)  # Paddle's (in, out): the model transposes it
    mxnet = md.load_native(NATIVE / "mxnet" / "cnn.params")
    assert {"1.weight", "1.bias", "1.running_mean"} <= set(mxnet) and "1.gamma" not in mxnet


def test_a_keras_file_with_a_layer_the_model_lacks_is_a_state_dict_error():
    if not HAS_H5PY:
        pytest.skip("h5py (multidev[interchange]) is not installed in this environment")
    net = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
    before = [p.numpy().copy() for p in net.parameters()]
    with pytest.raises(md.StateDictError):
        net.load_state_dict(md.load_native(NATIVE / "keras" / "mlp.weights.h5"))
    for p, b in zip(net.parameters(), before, strict=True):
        np.testing.assert_array_equal(p.numpy(), b)


class _Evil:
    def __reduce__(self):
        return (exec, ("open(__import__('sys').argv[0] + '.pwned', 'w')",))


def _hostile_pickle(path: Path, framework: str) -> None:
    payload = pickle.dumps({"0.weight": _Evil()}, protocol=2)
    if framework == "paddle":
        path.write_bytes(payload)
        return
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/version", "3\n")


@pytest.mark.parametrize(("framework", "name"), [("paddle", "evil.pdparams"), ("torch", "evil.pt")])
def test_a_pickle_that_would_run_code_runs_nothing(framework, name, tmp_path):
    path = tmp_path / name
    _hostile_pickle(path, framework)
    events: list[str] = []

    def hook(event: str, args: tuple) -> None:
        if event in ("exec", "compile", "os.system", "subprocess.Popen", "open") and (
            event != "open" or str(args[0]).endswith(".pwned")
        ):
            events.append(event)

    sys.addaudithook(hook)  # stays for the process; it only records
    with pytest.raises(md.CheckpointError, match=r"names __builtin__\.exec"):
        md.load_native(path)
    assert events == []
    assert not list(tmp_path.glob("*.pwned"))


def _corruptions(data: bytes) -> list[bytes]:
    return [data[: len(data) // 2], data[:10], b"", data[:-3], bytes(len(data))]


@pytest.mark.parametrize("framework", sorted(FILES))
def test_truncated_or_corrupt_files_are_checkpoint_errors(framework, tmp_path):
    if framework == "keras" and not HAS_H5PY:
        pytest.skip("h5py (multidev[interchange]) is not installed in this environment")
    data = (NATIVE / framework / FILES[framework].format("cnn")).read_bytes()
    for i, bad in enumerate(_corruptions(data)):
        path = tmp_path / FILES[framework].format(f"bad{i}")
        path.write_bytes(bad)
        with pytest.raises(md.CheckpointError):
            md.load_native(path)


def test_mxnet_sizes_are_checked_before_anything_is_allocated(tmp_path):
    header = struct.pack("<QQQ", 0x112, 0, 1)
    array = struct.pack("<Iii", 0xF993FAC9, 0, 2) + struct.pack("<qq", 2**31, 2**31)
    array += struct.pack("<iii", 1, 0, 0)
    path = tmp_path / "huge.params"
    path.write_bytes(header + array + b"\0" * 64)
    with pytest.raises(md.CheckpointError, match="needs"):
        md.load_native(path)
    path.write_bytes(struct.pack("<QQQ", 0x112, 0, 2**60))
    with pytest.raises(md.CheckpointError, match="claimed"):
        md.load_native(path)


def test_a_torch_tensor_reaching_past_its_storage_is_refused(tmp_path):
    good = NATIVE / "torch" / "mlp.pt"
    with zipfile.ZipFile(good) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    root = next(iter(entries)).split("/")[0]
    pkl = entries[f"{root}/data.pkl"]
    # the first tensor's size (7, 5) -> (7, 50): 350 elements from a storage of 35
    marker = b"K\x07K\x05\x86"  # BININT1 7, BININT1 5, TUPLE2
    assert pkl.count(marker) >= 1
    entries[f"{root}/data.pkl"] = pkl.replace(marker, b"K\x07K\x32\x86", 1)
    path = tmp_path / "stretched.pt"
    with zipfile.ZipFile(path, "w") as z:
        for n, d in entries.items():
            z.writestr(n, d)
    with pytest.raises(md.CheckpointError, match="storage"):
        md.load_native(path)


def test_an_unknown_suffix_asks_for_the_framework(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"x")
    with pytest.raises(ValueError, match="framework="):
        md.load_native(path)
    with pytest.raises(md.CheckpointError):
        md.load_native(path, framework="mxnet")


def test_torch_optimiser_state_comes_back_as_plain_values(tmp_path):
    """An optimiser's state_dict() saved by torch.save: nested dicts and lists, 0-d tensors."""
    torch = pytest.importorskip("torch")
    p = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam([p], lr=0.01)
    p.sum().backward()
    opt.step()
    torch.save(opt.state_dict(), tmp_path / "adam.pt")
    state = md.load_native(tmp_path / "adam.pt")
    assert state["param_groups"][0]["lr"] == 0.01 and state["param_groups"][0]["params"] == [0]
    assert state["state"][0]["step"].shape == () and state["state"][0]["step"].item() == 1
    np.testing.assert_allclose(state["state"][0]["exp_avg"].numpy(), [0.1, 0.1, 0.1], rtol=1e-6)


def test_in_memory_bytes_are_not_a_path():
    with pytest.raises(TypeError):
        md.load_native(io.BytesIO(b""))  # type: ignore[arg-type]
