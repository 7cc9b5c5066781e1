"""A ResNet-style training step with BatchNorm under ``md.jit`` on MXNet: compiled without a
JitWarning (the running statistics and batch counters are written by the graph), and the
same losses, parameters and buffers as the eager step."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

mx = pytest.importorskip("mxnet")

import multidev as md  # noqa: E402
from multidev import nn  # noqa: E402
from multidev.nn import functional as F  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def mxnet_backend():
    with md.use_backend("mxnet"):
        yield


class Residual(nn.Block):
    """d2l's residual block: two 3x3 convolutions with BatchNorm, a 1x1 shortcut."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1, stride=stride)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.conv3 = nn.Conv2d(c_in, c_out, 1, stride=stride)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.bn2 = nn.BatchNorm2d(c_out)

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        return F.relu(Y + self.conv3(X))


def _net() -> nn.Sequential:
    md.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        Residual(8, 8),
        Residual(8, 16, stride=2),
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(16, 5),
    )


def _step(net, opt):
    """One SGD training step of ``net`` on cross-entropy; returns the loss."""

    def step(X, y):
        with md.autograd.record():
            loss = F.cross_entropy(net(X), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


def _train(jit: bool, steps: int = 4):
    net = _net()
    net.train()
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    counters = {n: b for n, b in net.named_buffers() if n.endswith("num_batches_tracked")}

    step = _step(net, opt)

    run = md.jit(step) if jit else step
    losses = []
    for _ in range(steps):
        X = md.asarray(rng.standard_normal((6, 3, 8, 8)).astype(np.float32))
        y = md.asarray(rng.integers(0, 5, 6))
        losses.append(float(run(X, y).item()))
    for name, b in net.named_buffers():  # updated in place: the same tensors
        if name in counters:
            assert b is counters[name]
    return losses, {k: v.numpy() for k, v in net.state_dict().items()}


def test_resnet_step_compiles_without_warning_and_equals_eager():
    with warnings.catch_warnings():
        warnings.simplefilter("error", md.JitWarning)
        losses, state = _train(jit=True)
    want_losses, want_state = _train(jit=False)
    np.testing.assert_allclose(losses, want_losses, rtol=RTOL, atol=ATOL)
    assert state.keys() == want_state.keys()
    for k, v in want_state.items():
        assert state[k].dtype == v.dtype, k
        np.testing.assert_allclose(state[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
    assert state["1.num_batches_tracked"].dtype == np.int64
    assert int(state["1.num_batches_tracked"]) == 4
    assert int(state["4.bn2.num_batches_tracked"]) == 4


def test_jitted_step_compiles_the_forward():
    """The forward of the step is one CachedOp (not the eager operators)."""
    net = _net()
    X = md.asarray(np.random.default_rng(1).standard_normal((4, 3, 8, 8)).astype(np.float32))

    def forward(X):
        return net(X)

    with warnings.catch_warnings():
        warnings.simplefilter("error", md.JitWarning)
        with md.autograd.record():
            out = md.jit(forward)(X)
    graph = json.loads(mx.autograd.get_symbol(out.native).tojson())
    assert [n["op"] for n in graph["nodes"] if n["op"] != "null"] == ["_CachedOp"]
    assert int(net[1].num_batches_tracked.item()) == 1


def test_jitted_and_eager_steps_interleave():
    """Buffers written by the graph take eager in-place updates after it (and the other way
    round): alternating steps equal eager steps throughout."""

    def train(mixed: bool):
        net = _net()
        opt = md.optim.SGD(net.parameters(), lr=0.1)

        step = _step(net, opt)

        jitted = md.jit(step)
        rng = np.random.default_rng(0)
        for i in range(6):
            X = md.asarray(rng.standard_normal((6, 3, 8, 8)).astype(np.float32))
            y = md.asarray(rng.integers(0, 5, 6))
            (jitted if mixed and i % 2 == 0 else step)(X, y)
        return {k: v.numpy() for k, v in net.state_dict().items()}

    with warnings.catch_warnings():
        warnings.simplefilter("error", md.JitWarning)
        got = train(mixed=True)
    want = train(mixed=False)
    assert int(got["1.num_batches_tracked"]) == 6
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
