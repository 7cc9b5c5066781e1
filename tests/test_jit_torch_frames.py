"""What ``md.jit`` hands ``torch.compile``: one graph per training step, one cache per function.

A step that returns its loss as it is (not ``loss.detach()``, the d2l and user-guide way) made
Dynamo give up on the whole step: the loss's recording was consumed by ``backward()``, so the
compiled function could not return it, and the step ran eagerly with each of multidev's inner
functions compiled on its own (about 75 frames, 3-5x slower than ``torch.compile`` of the
native step). A step that calls such a ``backward()`` now returns its tensors detached.

Dynamo keeps compiled code and guards on the code object; each ``md.jit`` function has its
own, so the ninth jitted model is still compiled (all of them shared one code object, which
reached Dynamo's recompile limit of 8 graphs and ran every later one eagerly).
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


@pytest.fixture(autouse=True)
def _aot_eager(monkeypatch):
    monkeypatch.setenv("MULTIDEV_TORCH_COMPILE_BACKEND", "aot_eager")
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()


def _setup(seed=0):
    md.manual_seed(seed)
    net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = md.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(seed)
    X = md.asarray(rng.standard_normal((6, 4)).astype(np.float32))
    y = md.asarray(rng.standard_normal((6, 3)).astype(np.float32))
    return net, opt, X, y


def _step(net, opt, detach=False):
    def step(X, y):
        with md.autograd.record():
            out = net(X)
            loss = ((out - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return (loss.detach(), out.detach()) if detach else (loss, out)

    return step


def _counter(name):
    return dict(torch._dynamo.utils.counters[name])


def test_step_returning_its_loss_is_one_graph_and_matches_eager():
    net, opt, X, y = _setup()
    step = _step(net, opt)
    eager = [step(X, y) for _ in range(3)]
    eager_params = [p.numpy().copy() for p in net.parameters()]

    net, opt, X, y = _setup()
    jitted = md.jit(_step(net, opt))
    compiled = [jitted(X, y) for _ in range(3)]

    assert _counter("graph_break") == {}
    # one whole graph per compile (fullgraph: no frame compiled apart): the first step and
    # the one after the momentum buffers appear
    assert _counter("stats").get("unique_graphs") == 2, _counter("stats")
    for (loss, out), (want_loss, want_out) in zip(compiled, eager, strict=True):
        np.testing.assert_allclose(loss.numpy(), want_loss.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-5, atol=1e-6)
    for p, want in zip(net.parameters(), eager_params, strict=True):
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-5, atol=1e-6)


def test_outputs_of_a_forward_keep_their_recording():
    net, _, X, y = _setup()

    @md.jit
    def loss_of(X, y):
        with md.autograd.record():
            return ((net(X) - y) ** 2).mean()

    loss_of(X, y).backward()
    got = [p.grad.numpy().copy() for p in net.parameters()]
    for p in net.parameters():
        p.grad = None
    with md.autograd.record():
        want_loss = ((net(X) - y) ** 2).mean()
    want_loss.backward()
    for g, p in zip(got, net.parameters(), strict=True):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_each_jitted_function_has_its_own_cache():
    # models of different widths: each needs its own graph (parameter shapes are guarded)
    limit = torch._dynamo.config.recompile_limit
    y = _setup()[3]
    steps = []
    for width in range(4, 4 + limit + 2):
        net = nn.Sequential(nn.Linear(width, 16), nn.ReLU(), nn.Linear(16, 3))
        opt = md.optim.SGD(net.parameters(), lr=0.1)
        X = md.asarray(np.ones((6, width), np.float32))
        steps.append((md.jit(_step(net, opt, detach=True)), X, y))
    for jitted, X, y in steps:
        jitted(X, y)
    assert "unimplemented" not in torch._dynamo.utils.counters, _counter("unimplemented")
    assert _counter("graph_break") == {}
    assert _counter("stats").get("unique_graphs") == len(steps), _counter("stats")
