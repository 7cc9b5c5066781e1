"""``md.jit`` of a whole training step on PyTorch is one ``torch.compile`` graph.

The step (``md.autograd.record()``, forward and loss, ``backward()``, ``opt.step()``,
``opt.zero_grad()``) compiles without a graph break, as the same native step does with
Dynamo's ``trace_autograd_ops``: ``backward()`` is ``Tensor.backward`` (which Dynamo traces),
and the optimiser's state, keyed by Parameters, hashes them by identity with object's own
``__hash__`` (which Dynamo follows). The compiled step leaves the parameters and the momentum
buffers as the eager step does.
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

    def step(X, y):
        with md.autograd.record():
            loss = ((net(X) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    return net, opt, step, X, y


def test_explain_finds_one_graph_for_the_training_step():
    _, _, step, X, y = _setup()
    bk = X._bk

    def body(xn, yn):
        return step(md.Tensor(xn, bk, X._dev, X._dtype), md.Tensor(yn, bk, y._dev, y._dtype)).native

    torch._dynamo.reset()
    with torch._dynamo.config.patch(trace_autograd_ops=True):
        result = torch._dynamo.explain(body)(X.native, y.native)
    assert (result.graph_count, result.graph_break_count) == (1, 0), result.break_reasons


def test_jitted_step_breaks_no_graph_and_matches_eager(monkeypatch):
    monkeypatch.setenv("MULTIDEV_TORCH_COMPILE_BACKEND", "aot_eager")
    net, opt, step, X, y = _setup()
    eager_losses = [float(step(X, y)) for _ in range(3)]
    eager_params = [p.numpy().copy() for p in net.parameters()]
    eager_state = [opt.state[p]["momentum_buffer"].numpy().copy() for p in net.parameters()]

    net, opt, step, X, y = _setup()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    jitted = md.jit(step)
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
