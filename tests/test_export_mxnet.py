"""MXNet's serving format: ``md.export`` and ``net.native.export`` write Gluon's
``path-symbol.json`` + ``path-0000.params``, which ``gluon.SymbolBlock.imports`` loads in a
process without multidev (it asserts so) and runs to the Block's own outputs."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

mx = pytest.importorskip("mxnet")

import multidev as md  # noqa: E402
from multidev import nn  # noqa: E402

LOADER = """
import sys
import numpy as np
import mxnet as mx
mx.npx.set_np()
prefix, names, epoch, out_path = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4]
net = mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", names, f"{prefix}-{epoch:04d}.params")
xs = [mx.np.array(np.load(f"{prefix}-{name}.npy")) for name in names]
np.save(out_path, net(*xs).asnumpy())
assert not any(m.split(".")[0] == "multidev" for m in sys.modules), "imported"
"""


@pytest.fixture(autouse=True)
def mxnet_backend():
    with md.use_backend("mxnet"):
        yield


def _load_and_run(prefix, names: list[str], inputs: list[np.ndarray], epoch: int = 0):
    for name, x in zip(names, inputs, strict=True):
        np.save(f"{prefix}-{name}.npy", x)
    out = f"{prefix}-out.npy"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MULTIDEV_BACKEND")}
    done = subprocess.run(
        [sys.executable, "-c", LOADER, str(prefix), ",".join(names), str(epoch), out],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return np.load(out)


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_batchnorm_buffers_are_exported(tmp_path):
    md.manual_seed(2)
    net = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    for _ in range(3):
        net(md.asarray(_x(8, 5, seed=1)))  # training mode: running statistics move
    net.eval()
    x = _x(4, 5)
    md.export(net, tmp_path / "bn", md.asarray(x))
    params = mx.npx.load(str(tmp_path / "bn-0000.params"))
    assert "arg:1.running_mean" in params and "arg:0.weight" in params
    got = _load_and_run(tmp_path / "bn", ["data"], [x])
    np.testing.assert_allclose(got, net(md.asarray(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_two_inputs_are_data0_and_data1(tmp_path):
    class Pair(nn.Block):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 2)
            self.b = nn.Linear(4, 2)

        def forward(self, x, z):
            return self.a(x) * self.b(z)

    md.manual_seed(4)
    net = Pair()
    x, z = _x(5, 3), _x(5, 4, seed=1)
    md.export(net, tmp_path / "pair", (md.asarray(x), md.asarray(z)))
    got = _load_and_run(tmp_path / "pair", ["data0", "data1"], [x, z])
    np.testing.assert_allclose(got, net(md.asarray(x), md.asarray(z)).numpy(), rtol=1e-5, atol=1e-6)


def test_native_export_after_hybridized_call(tmp_path):
    md.manual_seed(5)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    native = net.native
    with pytest.raises(RuntimeError, match="hybridize"):
        native.export(str(tmp_path / "early"))
    native.hybridize()
    x = _x(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", md.JitWarning)
        want = native(mx.np.array(x)).asnumpy()
    native.export(str(tmp_path / "gluon"), epoch=3)
    got = _load_and_run(tmp_path / "gluon", ["data"], [x], epoch=3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
