"""md.export(..., format="onnx") on the active backend: the file runs in onnxruntime in a
process that imports neither multidev nor the framework, and gives multidev's outputs and the
NumPy reference backend's for the same seeded weights (so every backend's file agrees); what
an exporter cannot express is a typed error that writes nothing."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.examples import transformer_classifier
from multidev.examples.modern_cnns import lenet, resnet18
from multidev.examples.rnn_language_model import VOCAB, LanguageModel

BK = md.get_backend()
EXPORTERS = {
    "torch": "onnxscript",
    "tensorflow": "tf2onnx",
    "paddle": "paddle2onnx",
    "mxnet": "mxnet.onnx",
}
HAVE = BK in EXPORTERS and all(
    importlib.util.find_spec(m) for m in (EXPORTERS[BK], "onnx", "onnxruntime")
)
needs_exporter = pytest.mark.skipif(
    not HAVE,
    reason=f"{BK}: no ONNX exporter here"
    if BK not in EXPORTERS
    else f"{EXPORTERS[BK]}, onnx or onnxruntime missing (pip install 'multidev[onnx-<backend>]')",
)

RUNNER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import onnxruntime as ort
    path, inputs, out = sys.argv[1:4]
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    arrays = np.load(inputs)
    results = {k: session.run(None, {"input0": arrays[k]})[0] for k in arrays.files}
    np.savez(out, **results)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in
                    ("multidev", "torch", "tensorflow", "paddle", "mxnet", "keras"))
    print(json.dumps(loaded))
    """
)


def _run_onnx(path, batches, tmp_path):
    """Outputs of the ONNX file for each input, computed by onnxruntime in a fresh process."""
    np.savez(tmp_path / "in.npz", **{str(i): x for i, x in enumerate(batches)})
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            RUNNER,
            str(path),
            str(tmp_path / "in.npz"),
            str(tmp_path / "out.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout.strip().splitlines()[-1]) == []  # no multidev, no framework
    out = np.load(tmp_path / "out.npz")
    return [out[str(i)] for i in range(len(batches))]


def _reference(make, batches):
    """The NumPy backend's outputs for the same seeded model."""
    with md.use_backend("numpy"):
        md.manual_seed(0)
        net = make().eval()
        return [net(md.asarray(x)).numpy() for x in batches]


def _mlp():
    return nn.Sequential(
        nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3)
    )


@needs_exporter
def test_an_mlp_with_a_free_batch_size_runs_without_multidev(tmp_path):
    md.manual_seed(0)
    net = _mlp().eval()
    path = md.export(net, tmp_path / "mlp.onnx", md.randn(2, 6), format="onnx")
    assert path == tmp_path / "mlp.onnx"
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((n, 6)).astype(np.float32) for n in (1, 3, 7)]
    got = _run_onnx(path, batches, tmp_path)
    for g, x, ref in zip(got, batches, _reference(_mlp, batches), strict=True):
        np.testing.assert_allclose(g, net(md.asarray(x)).numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(g, ref, rtol=1e-5, atol=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".tmp") == []


@needs_exporter
@pytest.mark.parametrize("model", ["lenet", "resnet18"])
def test_cnns_at_a_fixed_batch_size(model, tmp_path):
    make, shape = {"lenet": (lenet, (2, 1, 28, 28)), "resnet18": (resnet18, (2, 1, 32, 32))}[model]
    md.manual_seed(0)
    net = make().eval()
    path = md.export(
        net, tmp_path / f"{model}.onnx", md.randn(*shape), format="onnx", dynamic_batch=False
    )
    batches = [np.random.default_rng(1).standard_normal(shape).astype(np.float32)]
    (got,) = _run_onnx(path, batches, tmp_path)
    np.testing.assert_allclose(got, net(md.asarray(batches[0])).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, _reference(make, batches)[0], rtol=1e-5, atol=1e-5)


FREE_BATCH_CNNS = {
    "torch": ("lenet", "resnet18"),
    "paddle": ("lenet", "resnet18"),
    "tensorflow": ("lenet", "resnet18"),
}


@needs_exporter
@pytest.mark.parametrize("model", ["lenet", "resnet18"])
def test_cnns_with_a_free_batch_size(model, tmp_path):
    if model not in FREE_BATCH_CNNS.get(BK, ()):
        pytest.skip(f"{BK}'s tracer fixes {model}'s batch size: the next test")
    make, shape = {"lenet": (lenet, (1, 28, 28)), "resnet18": (resnet18, (1, 32, 32))}[model]
    md.manual_seed(0)
    net = make().eval()
    path = md.export(net, tmp_path / f"{model}.onnx", md.randn(2, *shape), format="onnx")
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((n, *shape)).astype(np.float32) for n in (1, 3)]
    for got, ref in zip(_run_onnx(path, batches, tmp_path), _reference(make, batches), strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


#: how each backend's exporter handles the sequence models of the zoo (docs/guide/checkpoints.md)
SEQUENCE = {
    "torch": {"gru_lm": "fixed batch", "transformer": "fixed batch"},
    "tensorflow": {"gru_lm": "fixed batch", "transformer": "fixed batch"},
    "paddle": {"gru_lm": "fixed batch", "transformer": "free batch"},
    "mxnet": {"gru_lm": "refused", "transformer": "refused"},
}


def _gru_lm():
    return LanguageModel("gru", len(VOCAB))


@needs_exporter
@pytest.mark.parametrize("model", ["gru_lm", "transformer"])
def test_sequence_models(model, tmp_path):
    make, vocab, steps = {
        "gru_lm": (_gru_lm, len(VOCAB), 20),
        "transformer": (
            transformer_classifier.Classifier,
            transformer_classifier.VOCAB,
            transformer_classifier.SEQ_LEN,
        ),
    }[model]
    md.manual_seed(0)
    net = make().eval()
    tokens = np.random.default_rng(3).integers(0, vocab, (2, steps))
    expect = SEQUENCE[BK][model]
    path = tmp_path / f"{model}.onnx"
    if expect == "refused":
        with pytest.raises(md.UnsupportedOperationError, match="Expected"):
            md.export(net, path, md.asarray(tokens), format="onnx", dynamic_batch=False)
        assert not path.exists()
        return
    md.export(net, path, md.asarray(tokens), format="onnx", dynamic_batch=expect == "free batch")
    batches = [tokens] if expect == "fixed batch" else [tokens[:1], np.concatenate([tokens] * 2)]
    for got, ref in zip(_run_onnx(path, batches, tmp_path), _reference(make, batches), strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


class _ReadsTheBatchSize(nn.Block):
    """``X.reshape(X.shape[0], -1)``: the batch size read as a Python number, which no
    exporter can keep free (torch fixes it in the graph, TensorFlow traces it as None,
    Paddle as -1)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(12, 3)

    def forward(self, X):
        return self.linear(X.reshape(X.shape[0], -1))


@needs_exporter
def test_what_an_exporter_cannot_express_is_a_typed_error_that_writes_nothing(tmp_path):
    target = tmp_path / "model.onnx"
    target.write_bytes(b"previous")
    md.manual_seed(0)
    net = _ReadsTheBatchSize().eval()
    with pytest.raises(md.UnsupportedOperationError, match="Expected"):
        md.export(net, target, md.randn(2, 3, 4), format="onnx", dynamic_batch=True)
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]
    # with the batch size fixed, the same model exports
    md.export(net, target, md.randn(2, 3, 4), format="onnx", dynamic_batch=False)
    assert target.read_bytes() != b"previous"


def test_an_unknown_format_and_a_backend_without_an_exporter(tmp_path):
    net = _mlp().eval()
    with pytest.raises(ValueError, match="format"):
        md.export(net, tmp_path / "m", md.randn(2, 6), format="tflite")
    if BK not in EXPORTERS:
        with pytest.raises(TypeError, match="an ONNX exporter"):
            md.export(net, tmp_path / "m.onnx", md.randn(2, 6), format="onnx")
    assert not (tmp_path / "m.onnx").exists()
