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
from multidev.examples.modern_cnns import lenet

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
    "jax": """
        import jax
        exported = jax.export.deserialize(open(PATH, "rb").read())
        out = np.asarray(exported.call(x))
    """,
}
SUFFIX = {"torch": ".pt2", "tensorflow": "", "paddle": "", "mxnet": "", "jax": ".jax"}


def _net() -> nn.Block:
    md.manual_seed(3)
    return nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Dropout(0.5), nn.Linear(7, 2)).eval()


def _bn_cnn() -> nn.Block:
    """A CNN whose forward reads buffers (BatchNorm's running statistics, set apart from
    their initial zeros and ones so that a file that lost them computes something else)."""
    md.manual_seed(4)
    net = nn.Sequential(
        nn.Conv2d(1, 4, kernel_size=3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
        nn.Linear(4 * 6 * 6, 3),
    )  # fmt: skip
    with md.no_grad():
        net[1].running_mean[...] = md.arange(4, dtype=md.float32) * 0.1
        net[1].running_var[...] = md.arange(4, dtype=md.float32) + 2.0
    return net.eval()


MODELS = {
    "mlp": (_net, (4, 5)),
    "lenet": (lambda: lenet().eval(), (2, 1, 28, 28)),
    "bn-cnn": (_bn_cnn, (3, 1, 8, 8)),
}


@pytest.mark.parametrize("model", list(MODELS))
def test_export_loads_without_multidev(model, tmp_path):
    bk = registry.current()
    if bk.name not in LOADERS:
        pytest.skip(f"{bk.name} has no serving format (see test_export_unsupported)")
    make, shape = MODELS[model]
    md.manual_seed(0)
    net = make()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    path = tmp_path / f"model{SUFFIX[bk.name]}"
    written = md.export(net, path, md.asarray(x))
    assert written == path
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
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


def test_export_refuses_buffer_writes_and_keeps_the_file(tmp_path):
    """JAX: a forward that updates BatchNorm's running statistics (training mode) cannot be
    a serving function; the export stops, the statistics and the file at ``path`` stay."""
    bk = registry.current()
    if bk.name != "jax":
        pytest.skip(f"{bk.name}: only JAX refuses buffer writes (jax.export: pure functions)")
    net = _bn_cnn().train()
    before = net[1].running_mean.numpy()
    path = tmp_path / f"model{SUFFIX[bk.name]}"
    path.write_bytes(b"previous")
    with pytest.raises(ValueError, match=r"writes its buffers.*block\.eval\(\)"):
        md.export(net, path, md.ones((2, 1, 8, 8)))
    np.testing.assert_array_equal(net[1].running_mean.numpy(), before)
    assert path.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    net(md.ones((2, 1, 8, 8)))  # the block still runs eagerly, its buffers hold arrays
    assert not np.array_equal(net[1].running_mean.numpy(), before)
