"""``md.export``: the written file loads and runs in the framework alone.

Each check runs the loader in a subprocess that never imports multidev (it asserts so) and
compares its outputs with the Block's own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import multidev as md
from multidev import nn, registry

LOADERS = {
    "torch": """
        import torch
        program = torch.export.load(PATH)
        out = program.module()(torch.from_numpy(x)).detach().numpy()
    """,
    "tensorflow": """
        import tensorflow as tf
        loaded = tf.saved_model.load(PATH)
        out = loaded.serve(tf.constant(x)).numpy()
        served = loaded.signatures["serving_default"](tf.constant(x))
        assert np.allclose(next(iter(served.values())).numpy(), out)
    """,
    "paddle": """
        import paddle
        layer = paddle.jit.load(PATH)
        out = layer(paddle.to_tensor(x)).numpy()
    """,
    "mxnet": """
        import mxnet as mx
        mx.npx.set_np()
        net = mx.gluon.SymbolBlock.imports(PATH + "-symbol.json", ["data"], PATH + "-0000.params")
        out = net(mx.np.array(x)).asnumpy()
    """,
}
SUFFIX = {"torch": ".pt2", "tensorflow": "", "paddle": "", "mxnet": ""}


def _net() -> nn.Block:
    md.manual_seed(3)
    return nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Dropout(0.5), nn.Linear(7, 2)).eval()


def test_export_loads_without_multidev(tmp_path):
    bk = registry.current()
    if bk.name not in LOADERS:
        pytest.skip(f"{bk.name} has no serving format (see test_export_unsupported)")
    net = _net()
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    path = tmp_path / f"model{SUFFIX[bk.name]}"
    written = md.export(net, path, md.asarray(x))
    assert written == path
    np.save(tmp_path / "x.npy", x)
    script = (
        "import sys\nimport numpy as np\n"
        f"PATH = {str(path)!r}\nx = np.load({str(tmp_path / 'x.npy')!r})\n"
        + textwrap.dedent(LOADERS[bk.name])
        + f"np.save({str(tmp_path / 'out.npy')!r}, out)\n"
        + "assert not any(m.split('.')[0] == 'multidev' for m in sys.modules), 'imported'\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MULTIDEV_BACKEND")}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = np.load(tmp_path / "out.npy")
    np.testing.assert_allclose(got, net(md.asarray(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_export_unsupported(tmp_path):
    bk = registry.current()
    if bk.name in LOADERS:
        pytest.skip(f"{bk.name} exports (see test_export_loads_without_multidev)")
    with pytest.raises(TypeError, match="serving format"):
        md.export(_net(), tmp_path / "model", md.ones((1, 5)))


def test_export_needs_tensors(tmp_path):
    with pytest.raises(TypeError, match=r"md\.Tensor example inputs"):
        md.export(_net(), tmp_path / "model", np.ones((1, 5), np.float32))


def test_export_refuses_training_dropout(tmp_path):
    bk = registry.current()
    if bk.name not in LOADERS:
        pytest.skip(f"{bk.name} has no serving format")
    with pytest.raises(ValueError, match=r"block\.eval\(\)"):
        md.export(_net().train(), tmp_path / f"model{SUFFIX[bk.name]}", md.ones((1, 5)))
