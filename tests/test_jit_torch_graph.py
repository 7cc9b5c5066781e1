"""``torch.compile`` of a multidev training step: ``md.autograd.record()`` breaks no graph,
and ``md.jit`` of a whole step is one graph.

``torch._dynamo.explain`` counts the graphs Dynamo cuts a function into. The forward recorded
inside ``md.autograd.record()`` and the loss are one graph, as in PyTorch's own step (the
recording bookkeeping, ContextVars that Dynamo cannot trace, is skipped while torch.compile
traces, and the grad mode is switched with calls Dynamo follows). The whole step (record,
forward and loss, ``backward()``, ``opt.step()``, ``opt.zero_grad()``) compiles without a break,
as the same native step does with Dynamo's ``trace_autograd_ops``: ``backward()`` is
``Tensor.backward`` (which Dynamo traces), and the optimiser's state, keyed by Parameters, hashes
them by identity with object's own ``__hash__`` (which Dynamo follows). The compiled step leaves
the parameters and the momentum buffers as the eager step does.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import multidev as md  # noqa: E402
from multidev import nn, registry  # noqa: E402
from multidev.testing.models import mse_train_step  # noqa: E402

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
    with torch._dynamo.config.patch(trace_autograd_ops=True):
        result = torch._dynamo.explain(body)(*(t.native for t in tensors))
    return result.graph_count, result.graph_break_count, result.break_reasons


def test_recorded_forward_and_loss_are_one_graph():
    net, _, X, y = _setup()

    def forward_loss(X, y):
        with md.autograd.record():
            loss = ((net(X) - y) ** 2).mean()
        return loss

    assert _explain(forward_loss, X, y)[:2] == (1, 0)


def test_explain_finds_one_graph_for_the_training_step():
    net, opt, X, y = _setup()
    graphs, breaks, reasons = _explain(mse_train_step(net, opt, detach=True), X, y)
    assert (graphs, breaks) == (1, 0), reasons


def test_jitted_step_breaks_no_graph_and_matches_eager(monkeypatch):
    monkeypatch.setenv("MULTIDEV_TORCH_COMPILE_BACKEND", "aot_eager")
    net, opt, X, y = _setup()
    step = mse_train_step(net, opt, detach=True)
    eager_losses = [float(step(X, y)) for _ in range(3)]
    eager_params = [p.numpy().copy() for p in net.parameters()]
    eager_state = [opt.state[p]["momentum_buffer"].numpy().copy() for p in net.parameters()]

    net, opt, X, y = _setup()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    jitted = md.jit(mse_train_step(net, opt, detach=True))
    losses = [float(jitted(X, y)) for _ in range(3)]
    assert sum(torch._dynamo.utils.counters["graph_break"].values()) == 0, dict(
        torch._dynamo.utils.counters["graph_break"]
    )
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-6)
    for p, want, buf in zip(net.parameters(), eager_params, eager_state, strict=True):
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            opt.state[p]["momentum_buffer"].numpy(), buf, rtol=1e-5, atol=1e-6
        )
