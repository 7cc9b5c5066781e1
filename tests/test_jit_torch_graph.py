"""``torch.compile`` of a multidev training step: ``md.autograd.record()`` breaks no graph.

``torch._dynamo.explain`` counts the graphs Dynamo cuts a function into. The forward recorded
inside ``md.autograd.record()`` and the loss are one graph, as in PyTorch's own step (the
recording bookkeeping, ContextVars that Dynamo cannot trace, is skipped while torch.compile
traces, and the grad mode is switched with calls Dynamo follows).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import multidev as md  # noqa: E402
from multidev import nn, registry  # noqa: E402

pytestmark = pytest.mark.skipif(
    registry.current().name != "torch", reason="needs MULTIDEV_BACKEND=torch"
)


def _setup():
    md.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = md.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    X = md.asarray(rng.standard_normal((6, 4)).astype(np.float32))
    y = md.asarray(rng.standard_normal((6, 3)).astype(np.float32))
    return net, opt, X, y


def _explain(fn, *tensors):
    """Graphs and breaks of ``fn`` (of md Tensors) as Dynamo compiles it on native tensors."""
    bk = tensors[0]._bk

    def body(*natives):
        args = [md.Tensor(n, bk, t._dev, t._dtype) for n, t in zip(natives, tensors, strict=True)]
        out = fn(*args)
        return None if out is None else out.native

    torch._dynamo.reset()
    result = torch._dynamo.explain(body)(*(t.native for t in tensors))
    return result.graph_count, result.graph_break_count


def test_recorded_forward_and_loss_are_one_graph():
    net, _, X, y = _setup()

    def forward_loss(X, y):
        with md.autograd.record():
            loss = ((net(X) - y) ** 2).mean()
        return loss

    assert _explain(forward_loss, X, y) == (1, 0)
