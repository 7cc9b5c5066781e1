"""TensorFlow: ``md.jit`` of a CNN training step keeps its activations NHWC on the CPU.

The traced graph holds NCHW convolutions, poolings and batch norms, and runs with Grappler's
CPU layout conversion, which rewrites them to NHWC once (``multidev_tensorflow.jit``): a step
must compute what the eager step computes (which transposes around every op), and the graph
TensorFlow runs must have no NCHW layout-sensitive op and no transpose pair between them.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.python.eager import context  # noqa: E402

import multidev as md  # noqa: E402
from multidev import nn, registry  # noqa: E402

pytestmark = pytest.mark.skipif(
    registry.current().name != "tensorflow", reason="needs MULTIDEV_BACKEND=tensorflow"
)

#: ops whose data_format Grappler rewrites
LAYOUT_OPS = ("Conv2D", "Pool", "BatchNorm", "BiasAdd")


class _Residual(nn.Block):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)

    def forward(self, x):
        return nn.functional.relu(
            self.bn2(self.conv2(nn.functional.relu(self.bn1(self.conv1(x))))) + x
        )


def _net(dtype) -> nn.Block:
    md.manual_seed(0)
    net = nn.Sequential(
        # a padding as "SAME" pads it (15x15, stride 2: 2 on each side), a max-pool's padding
        nn.Conv2d(3, 8, 5, stride=2, padding=2), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
        _Residual(),
        # 1 on each side where "SAME" would pad (0, 1): through tf.pad; then "VALID"
        nn.Conv2d(8, 6, 3, stride=2, padding=1), nn.Sigmoid(), nn.Conv2d(6, 6, 1, bias=False),
        nn.AvgPool2d(2), nn.Flatten(), nn.Linear(6, 10),
    )  # fmt: skip
    net.to(dtype=dtype)
    net.train()
    return net


def _step(net: nn.Block, x: md.Tensor, y: md.Tensor):
    opt = md.optim.SGD(net.parameters(), lr=0.1)

    def step():
        with md.autograd.record():
            loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


def _data(dtype):
    rng = np.random.default_rng(0)
    x = md.asarray(rng.standard_normal((4, 3, 15, 15)).astype(np.dtype(dtype.name)))
    return x, md.asarray(np.array([1, 2, 3, 9]))


@pytest.mark.parametrize("dtype", [md.float32, md.float64], ids=str)
def test_jitted_cnn_step_matches_the_eager_step(dtype):
    x, y = _data(dtype)
    eager_net, jit_net = _net(dtype), _net(dtype)
    eager, jitted = _step(eager_net, x, y), md.jit(_step(jit_net, x, y))
    tol = 1e-4 if dtype == md.float32 else 1e-10
    for _ in range(3):
        want, got = eager(), jitted()
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
    want_state, got_state = eager_net.state_dict(), jit_net.state_dict()
    assert want_state.keys() == got_state.keys()
    for name, value in want_state.items():  # weights and BN running statistics
        np.testing.assert_allclose(
            got_state[name].numpy(), value.numpy(), rtol=tol, atol=tol, err_msg=name
        )


def test_the_graph_tensorflow_runs_is_nhwc_without_transpose_pairs():
    x, y = _data(md.float32)
    step = md.jit(_step(_net(md.float32), x, y))
    context.enable_run_metadata()  # the first call instantiates (and optimises) the graph
    try:
        step()
        meta = context.export_run_metadata()
    finally:
        context.disable_run_metadata()
    graphs = [
        g.post_optimization_graph
        for g in meta.function_graphs
        if any("Conv2D" in n.op for n in g.post_optimization_graph.node)
    ]
    assert graphs, "no graph with a convolution was run"
    nodes = [n for g in graphs for n in g.node]
    formats = collections.Counter(
        (n.op, n.attr["data_format"].s.decode())
        for n in nodes
        if "data_format" in n.attr and any(k in n.op for k in LAYOUT_OPS)
    )
    assert formats and all(f == "NHWC" for _, f in formats), formats
    # the filter gradients of the 5 convolutions, the 3 batch norms and their gradients
    assert sum(c for (op, _), c in formats.items() if "Conv2DBackpropFilter" in op) == 5
    assert sum(c for (op, _), c in formats.items() if "BatchNorm" in op) == 6
    # the activations change layout once in and once out of the convolutional part (and the
    # gradient once back in): not around every op
    moved = [n.name for n in nodes if n.op == "Transpose" and "LayoutOptimizer" in n.name]
    assert len(moved) <= 3, moved
    # no explicit padding: TensorFlow's oneDNN gradient kernels take named paddings only
    paddings = {n.attr["padding"].s.decode() for n in nodes if "Conv2D" in n.op}
    assert paddings <= {"SAME", "VALID"}, paddings


def test_native_tf_function_of_the_lowerings_stays_nhwc_on_cpu():
    """Outside md.jit (a user's own tf.function, an exported SavedModel) nothing converts
    the layout: the lowerings transpose around the NHWC kernels as eagerly."""
    net = _net(md.float32)
    net.eval()
    x, _ = _data(md.float32)
    want = net(x).numpy()
    native = tf.function(lambda t: net(md.asarray(t))._native, autograph=False)
    graph = native.get_concrete_function(tf.constant(x.numpy())).graph
    nchw = [
        op.type
        for op in graph.get_operations()
        if op.type in ("Conv2D", "MaxPool", "AvgPool") and op.get_attr("data_format") == b"NCHW"
    ]
    assert not nchw
    np.testing.assert_allclose(native(tf.constant(x.numpy())).numpy(), want, rtol=1e-5, atol=1e-5)


def test_hybridized_cnn_differentiated_eagerly_matches_the_plain_one():
    """A hybridized forward runs under the step's tape: TensorFlow calls its gradient function
    itself, without md.jit's call options, so it is traced with the NHWC lowerings."""
    x, y = _data(md.float32)
    plain_net, hybrid_net = _net(md.float32), _net(md.float32)
    hybrid_net.hybridize()
    plain, hybrid = _step(plain_net, x, y), _step(hybrid_net, x, y)
    for _ in range(3):
        want, got = plain(), hybrid()
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
    for name, value in plain_net.state_dict().items():
        got = hybrid_net.state_dict()[name].numpy()
        np.testing.assert_allclose(got, value.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)
