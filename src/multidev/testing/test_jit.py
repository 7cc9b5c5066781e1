"""Section "jit": ``md.jit``, ``Block.hybridize`` and ``md.synchronize``.

A compiled forward and a compiled training step (record, backward, ``opt.step()``,
``opt.zero_grad()``) give eager's numbers within float32 tolerance and train the very same
parameters; new shapes and dtypes retrace; ``train()``/``eval()`` and ``Dropout`` behave as
in eager; what the backend cannot compile runs eagerly with exactly one ``md.JitWarning``.

On torch these tests compile with ``torch.compile(backend="aot_eager")`` (the same graph
capture, forward and backward, without C++ code generation: seconds, not tens of seconds,
on a small CPU machine) unless ``MULTIDEV_TORCH_COMPILE_BACKEND`` says otherwise; the nox
session ``jit_inductor`` runs them with the full ``inductor`` compiler.
"""

from __future__ import annotations

import os
import types
import warnings

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.nn import functional as F
from multidev.testing.models import mse_train_step, train_step

RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(autouse=True)
def _cheap_torch_compile(monkeypatch):
    if "MULTIDEV_TORCH_COMPILE_BACKEND" not in os.environ:
        monkeypatch.setenv("MULTIDEV_TORCH_COMPILE_BACKEND", "aot_eager")


def _mlp(dropout: float = 0.0) -> nn.Sequential:
    md.manual_seed(7)
    layers = [nn.Linear(4, 16), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers, nn.Linear(16, 3))


def _grad(p: nn.Parameter) -> np.ndarray:
    assert p.grad is not None
    return p.grad.numpy()


def _data(n: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = md.asarray(rng.standard_normal((n, 4)).astype(np.float32))
    y = md.asarray(rng.standard_normal((n, 3)).astype(np.float32))
    return X, y


def _values(net: nn.Block) -> dict[str, np.ndarray]:
    return {k: np.array(v.numpy()) for k, v in net.state_dict().items()}


def _jit_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, md.JitWarning)]


def _compiles(bk) -> bool:
    return "jit" in bk.capabilities


def _compiles_steps(bk) -> bool:
    """Whether the backend compiles a whole training step (its compiler traces backward())."""
    return _compiles(bk) and bk.jit_backward_unsupported is None


def _trained_alike(run) -> tuple[tuple, tuple, list[str]]:
    """``run(compiled)`` (3 training steps: their losses, then the model's values) eagerly and
    under md.jit: the same losses and values, and the loss falls. Returns both runs and the
    JitWarnings of the compiled one."""
    eager = run(False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jitted = run(True)
    np.testing.assert_allclose(jitted[0], eager[0], rtol=RTOL, atol=ATOL)
    for k, v in eager[1].items():
        np.testing.assert_allclose(jitted[1][k], v, rtol=RTOL, atol=ATOL, err_msg=k)
    assert eager[0][2] < eager[0][0]  # it trains
    return eager, jitted, _jit_warnings(caught)


def test_forward_equals_eager(bk):
    net = _mlp()
    X, _ = _data()
    fwd = md.jit(lambda X: net(X))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fwd(X)
        again = fwd(X)
    np.testing.assert_allclose(got.numpy(), net(X).numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(again.numpy(), got.numpy(), rtol=RTOL, atol=ATOL)
    assert got.dtype == md.float32 and got.shape == (6, 3)
    assert len(_jit_warnings(caught)) == (0 if _compiles(bk) else 1)


def test_numpy_constants_made_inside_are_compiled(bk):
    """``md.asarray`` of a NumPy array inside the compiled function (an index table, a mask)
    is a constant of the compiled graph, and a cast is an operation of it: neither is a reason
    to run eagerly."""
    X, _ = _data()
    order = np.array([3, 0, 2, 1], np.int64)
    scale = np.linspace(0.5, 2.0, 4)  # float64, cast inside

    def f(X):
        return md.take(X, md.asarray(order), axis=1) * md.asarray(scale).astype(md.float32)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = md.jit(f)(X)
    np.testing.assert_allclose(got.numpy(), X.numpy()[:, order] * scale, rtol=RTOL, atol=ATOL)
    assert len(_jit_warnings(caught)) == (0 if _compiles(bk) else 1)


@pytest.mark.requires("autograd")
def test_train_step_equals_eager(bk):
    X, y = _data()

    def run(compiled: bool):
        net = _mlp()
        opt = md.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        variables = [p.native for p in net.parameters()]
        step = mse_train_step(net, opt)
        fn = md.jit(step) if compiled else step
        losses = [fn(X, y).item() for _ in range(3)]
        assert [p.native for p in net.parameters()] == variables  # the very same variables
        assert all(p.grad is None for p in net.parameters())
        buffers = [opt.state[p]["momentum_buffer"].numpy() for p in net.parameters()]
        return losses, _values(net), buffers

    eager, jitted, found = _trained_alike(run)
    for a, b in zip(jitted[2], eager[2], strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    assert len(found) == (0 if _compiles_steps(bk) else 1), found


@pytest.mark.requires("autograd")
def test_cross_entropy_with_ignored_labels_trains_like_eager(bk):
    """A step whose loss has class weights, an ignored label and label smoothing (composed
    of multidev ops, its labels checked on the host outside a compiler's trace) compiles or
    falls back, and trains as the eager step does."""
    X, _ = _data()
    labels = md.asarray(np.array([0, 2, -1, 1, 2, -1]))
    weight = md.asarray(np.array([1.0, 2.0, 0.5], np.float32))

    def run(compiled: bool):
        net = _mlp()
        opt = md.optim.SGD(net.parameters(), lr=0.1)

        def step(X, y):
            opt.zero_grad()
            with md.autograd.record():
                loss = F.cross_entropy(net(X), y, weight, ignore_index=-1, label_smoothing=0.1)
            loss.backward()
            opt.step()
            return loss

        fn = md.jit(step) if compiled else step
        return [fn(X, labels).item() for _ in range(3)], _values(net)

    _trained_alike(run)


@pytest.mark.requires("autograd")
def test_cnn_train_step_compiles_and_equals_eager(bk):
    """Convolution, both poolings and a sigmoid (LeNet's kernels) in a compiled training step:
    eager's numbers, compiled without a JitWarning where the backend compiles steps."""
    rng = np.random.default_rng(2)
    X = md.asarray(rng.standard_normal((4, 1, 8, 8)).astype(np.float32))
    y = md.asarray(rng.integers(0, 3, size=4))

    def run(compiled: bool):
        md.manual_seed(5)
        net = nn.Sequential(
            nn.Conv2d(1, 2, 3, padding=1), nn.Sigmoid(), nn.AvgPool2d(2, 2),
            nn.Conv2d(2, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2, padding=1),
            nn.Flatten(), nn.Linear(18, 3),
        )  # fmt: skip
        step = train_step(net, md.optim.SGD(net.parameters(), lr=0.5), nn.functional.cross_entropy)
        fn = md.jit(step) if compiled else step
        return [fn(X, y).item() for _ in range(3)], _values(net)

    _, _, found = _trained_alike(run)
    assert len(found) == (0 if _compiles_steps(bk) else 1), found


@pytest.mark.requires("autograd")
def test_train_step_updates_buffers_like_eager(bk):
    """BatchNorm's running statistics and batch count after jitted training steps are eager's
    (a compiler that traces once must carry buffers in and out, as it does optimiser state)."""
    X, y = _data(8)

    def run(compiled: bool):
        md.manual_seed(3)
        net = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 3))
        opt = md.optim.SGD(net.parameters(), lr=0.1)
        step = mse_train_step(net, opt)
        fn = md.jit(step) if compiled else step
        losses = [fn(X, y).item() for _ in range(3)]
        net.eval()
        return losses, _values(net), net(X).numpy()

    eager = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.JitWarning)
        jitted = run(True)
    assert int(jitted[1]["1.num_batches_tracked"]) == 3
    np.testing.assert_allclose(jitted[0], eager[0], rtol=RTOL, atol=ATOL)
    for k, v in eager[1].items():
        np.testing.assert_allclose(jitted[1][k], v, rtol=RTOL, atol=ATOL, err_msg=k)
    np.testing.assert_allclose(jitted[2], eager[2], rtol=RTOL, atol=ATOL)


@pytest.mark.requires("autograd")
def test_gradient_left_for_the_caller(bk):
    """A compiled function that leaves gradients behind leaves eager's gradients."""
    X, y = _data()
    net = _mlp()

    def loss_and_grad(X, y):
        with md.autograd.record():
            loss = ((net(X) - y) ** 2).mean()
        loss.backward()
        return loss

    loss_and_grad(X, y)
    want = [_grad(p).copy() for p in net.parameters()]
    for p in net.parameters():
        p.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.JitWarning)
        md.jit(loss_and_grad)(X, y)
    for p, w in zip(net.parameters(), want, strict=True):
        np.testing.assert_allclose(_grad(p), w, rtol=RTOL, atol=ATOL)


def test_captured_tensors_are_inputs(bk):
    """Tensors a function reaches through its closure and its default values (a mask, class
    weights) compile with it and are read at each call: writing new values into them changes
    the compiled results as it changes eager's."""
    net = _mlp()
    X, _ = _data()
    mask = md.asarray(np.array([1.0, 0.0, 1.0], np.float32))
    weights = md.asarray(np.array([0.5, 2.0, 3.0], np.float32))

    def fwd(X, weights=weights):
        return net(X) * mask * weights + 1.0

    fn = md.jit(fwd)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [fn(X).numpy().copy(), fn(X).numpy().copy()]
        want = [fwd(X).numpy()]
        mask[...] = md.asarray(np.array([0.0, 1.0, 1.0], np.float32))
        weights[1] = 4.0
        got.append(fn(X).numpy())
    want += [want[0], fwd(X).numpy()]
    assert not np.allclose(want[2], want[0])  # the new values change the result
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    assert len(_jit_warnings(caught)) == (0 if _compiles(bk) else 1), _jit_warnings(caught)


def test_captured_tensor_written_in_place(bk):
    """A function that accumulates into a tensor of its closure leaves eager's values in it."""
    net = _mlp()
    X, _ = _data()

    def run(compiled: bool) -> tuple[list, np.ndarray]:
        total = md.zeros((3,))

        def accumulate(X):
            total[...] = total + net(X).sum(axis=0)
            return total * 2.0

        fn = md.jit(accumulate) if compiled else accumulate
        return [fn(X).numpy().copy() for _ in range(3)], total.numpy()

    eager = run(False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jitted = run(True)
    for g, w in zip(jitted[0], eager[0], strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(jitted[1], eager[1], rtol=RTOL, atol=ATOL)
    assert len(_jit_warnings(caught)) <= 1


@pytest.mark.requires("autograd")
def test_train_step_with_captured_tensors(bk):
    """A training step whose data and class weights are default values of the step (no
    arguments at all) trains as in eager."""
    X, y = _data()
    weights = md.asarray(np.array([0.5, 2.0, 3.0], np.float32))

    def run(compiled: bool):
        net = _mlp()
        opt = md.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

        def step(net=net, opt=opt, X=X, y=y):
            with md.autograd.record():
                loss = (((net(X) - y) ** 2) * weights).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        fn = md.jit(step) if compiled else step
        return [fn().item() for _ in range(3)], _values(net)

    _, _, found = _trained_alike(run)
    if _compiles_steps(bk):
        assert found == []
    else:  # the warning gives the backend's own reason, not a failed trace
        assert len(found) == 1 and "tracing it failed" not in found[0], found


def test_new_shape_and_dtype_retrace():
    f = md.jit(lambda x: x * 2.0 + 1.0)
    for shape, dtype in [((2, 3), md.float32), ((5,), md.float32), ((2, 3), md.float64)]:
        x = md.asarray(np.arange(np.prod(shape), dtype=np.float64).reshape(shape), dtype=dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", md.JitWarning)
            out = f(x)
        assert out.shape == shape and out.dtype == dtype
        np.testing.assert_allclose(out.numpy(), x.numpy() * 2 + 1)


def test_train_and_eval_modes_under_jit(bk):
    net = _mlp(dropout=0.5)
    X = md.asarray(np.ones((8, 4), np.float32))
    fwd = md.jit(lambda X: net(X))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net.eval()
        np.testing.assert_allclose(fwd(X).numpy(), net(X).numpy(), rtol=RTOL, atol=ATOL)
        net.train()
        hidden = md.jit(lambda X: net[2](net[1](net[0](X))))
        a, b = hidden(X).numpy(), hidden(X).numpy()
        net.eval()
        np.testing.assert_allclose(fwd(X).numpy(), net(X).numpy(), rtol=RTOL, atol=ATOL)
    relu = np.maximum(net[0](X).numpy(), 0)
    for out in (a, b):  # each element dropped, or kept and scaled by 1 / (1 - p)
        kept = out != 0
        np.testing.assert_allclose(out[kept], 2 * relu[kept], rtol=RTOL, atol=ATOL)
        assert 0 < kept.sum() < kept.size
    assert not np.array_equal(a != 0, b != 0)  # a fresh mask per call, not a constant
    assert len(_jit_warnings(caught)) <= 2  # at most one per jitted function


def test_warning_once_and_eager_result(bk):
    """A function reading values back to Python runs correctly, warning at most once."""
    f = md.jit(lambda x: x * float(x.sum().item()))
    x = md.asarray(np.arange(4, dtype=np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [f(x).numpy() for _ in range(3)]
    for out in outs:
        np.testing.assert_allclose(out, np.arange(4) * 6.0)
    found = _jit_warnings(caught)
    assert len(found) <= 1
    if not _compiles(bk):
        assert len(found) == 1 and "eagerly" in found[0]


def test_jit_rejects_non_callable():
    with pytest.raises(TypeError, match="Expected a function"):
        md.jit(3)  # type: ignore[arg-type]  # deliberately not a callable


def test_hybridize_in_place(bk):
    net = _mlp()
    X, _ = _data()
    want = net(X).numpy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert net.hybridize() is net
        np.testing.assert_allclose(net(X).numpy(), want, rtol=RTOL, atol=ATOL)
        X2, _ = _data(n=3, seed=5)
        net.hybridize(False)
        eager2 = net(X2).numpy()
        net.hybridize()
        np.testing.assert_allclose(net(X2).numpy(), eager2, rtol=RTOL, atol=ATOL)
    assert len(_jit_warnings(caught)) <= 2
    assert "forward" not in net.hybridize(False).__dict__


def test_synchronize():
    x = md.ones((64, 64)) @ md.ones((64, 64))
    # the return value the annotation promises, checked at run time
    assert md.synchronize() is None  # type: ignore[func-returns-value]
    assert md.synchronize(x.device) is None  # type: ignore[func-returns-value]
    assert float(x[0, 0]) == 64.0


@pytest.mark.requires("autograd")
def test_hybridized_forward_trains_like_eager():
    """A compiled forward inside an eager training step: gradients flow through it."""
    X, y = _data()

    def train(hybridize: bool):
        net = _mlp()
        if hybridize:
            net.hybridize()
        opt = md.optim.SGD(net.parameters(), lr=0.1)
        losses = []
        for _ in range(3):
            with md.autograd.record():
                loss = ((net(X) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        return losses, _values(net)

    eager = train(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.JitWarning)
        compiled = train(True)
    np.testing.assert_allclose(compiled[0], eager[0], rtol=RTOL, atol=ATOL)
    for k, v in eager[1].items():
        np.testing.assert_allclose(compiled[1][k], v, rtol=RTOL, atol=ATOL, err_msg=k)


# ---------------------------------------------------------------- state changed between calls
#: a module global the compiled functions read (changed by the "global" case)
_GLOBAL_SCALE = 1.0


class _Head(nn.Block):
    """Linear -> BatchNorm -> Linear with a plain Python attribute its forward reads."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc = nn.Linear(8, 3)
        self.scale = 1.0

    def forward(self, x):
        return self.fc(self.bn(self.hidden(x))) * self.scale


_STEP_CHANGES = ["lr", "scheduler", "momentum", "optimizer"]
_CHANGES = [
    "layer",
    "parameter",
    "parameter_values",
    "buffer",
    "mode",
    "attribute",
    "captured",
    "closure_value",
    "global",
]


def _run_changed(change: str, training: bool, compiled: bool):
    """Two calls, ``change``, two more calls, eagerly or under md.jit: the outputs and the
    model's values after each call."""
    global _GLOBAL_SCALE
    _GLOBAL_SCALE = 1.0
    X, y = _data(8)
    md.manual_seed(11)
    net = _Head()
    opt = md.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
    weights = md.asarray(np.array([0.5, 2.0, 3.0], np.float32))
    shift = 0.0

    def step(X, y):
        with md.autograd.record():
            out = net(X) * _GLOBAL_SCALE + shift
            loss = (((out - y) ** 2) * weights).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    def forward(X):
        return net(X) * weights * _GLOBAL_SCALE + shift

    fn = step if training else forward
    if compiled:
        fn = md.jit(fn)
    args = (X, y) if training else (X,)
    got = []
    for i in range(4):
        if i == 2:
            md.manual_seed(5)
            if change == "lr":
                opt.param_groups[0]["lr"] = 0.0
            elif change == "scheduler":
                md.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.01).step()
            elif change == "momentum":
                opt.param_groups[0]["momentum"] = 0.0
            elif change == "optimizer":
                opt = md.optim.SGD(net.parameters(), lr=0.0)
            elif change == "layer":
                net.fc = nn.Linear(8, 3)
            elif change == "parameter":
                net.fc.weight = nn.Parameter(md.ones((3, 8)) * 0.25)
            elif change == "parameter_values":
                with md.no_grad():
                    net.fc.weight[...] = md.ones((3, 8)) * -0.5
            elif change == "buffer":
                net.bn.running_mean = md.ones((8,)) * 3.0
                net.bn.running_var = md.ones((8,)) * 0.25
            elif change == "mode":
                net.eval()
            elif change == "attribute":
                net.scale = -2.0
            elif change == "captured":
                weights = md.asarray(np.array([4.0, 0.0, 1.0], np.float32))
            elif change == "closure_value":
                shift = 5.0
            elif change == "global":
                _GLOBAL_SCALE = -3.0
        got.append((fn(*args).numpy().copy(), _values(net)))
    _GLOBAL_SCALE = 1.0
    return got


@pytest.mark.parametrize(
    ("change", "training"),
    [(c, True) for c in _STEP_CHANGES + _CHANGES] + [(c, False) for c in _CHANGES],
)
def test_state_changed_between_calls(bk, change, training):
    """Every kind of state a compiled function reads, changed after it compiled (a learning
    rate, a scheduler's step, momentum, a new optimiser, a replaced layer or parameter, new
    parameter values, new buffers, eval mode, a plain attribute of a block, a rebound captured
    tensor, a closure's or a module's Python number): the compiled calls that follow give
    eager's results, never those of the state it compiled with."""
    if training and "autograd" not in bk.capabilities:
        pytest.skip("the backend records no gradients")
    eager = _run_changed(change, training, compiled=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", md.JitWarning)
        jitted = _run_changed(change, training, compiled=True)
    # the change matters: the last call differs from what an unchanged run gives
    unchanged = _run_changed("none", training, compiled=False)
    last_differs = not np.allclose(eager[3][0], unchanged[3][0], rtol=1e-4, atol=1e-5) or any(
        not np.allclose(eager[3][1][k], v, rtol=1e-4, atol=1e-5) for k, v in unchanged[3][1].items()
    )
    assert last_differs, "the change must change the results"
    for i, ((out, values), (want, want_values)) in enumerate(zip(jitted, eager, strict=True)):
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5, err_msg=f"call {i}")
        for k, v in want_values.items():
            np.testing.assert_allclose(values[k], v, rtol=1e-4, atol=1e-5, err_msg=f"call {i}: {k}")


@pytest.mark.requires("autograd")
def test_schedule_changes_lr_without_retrace(bk):
    """A learning rate that a schedule changes at every step is an input of the compiled step:
    the training follows eager's, and a compiler that traces once does not retrace for it."""
    X, y = _data()

    def run(compiled: bool):
        net = _mlp()
        opt = md.optim.SGD(net.parameters(), lr=0.2, momentum=0.5)
        sched = md.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        traced = types.SimpleNamespace(n=0)  # (not a list of numbers: md.jit keys on those)

        def step(X, y):
            traced.n += 1  # Python: runs at each trace of a trace-once compiler
            with md.autograd.record():
                loss = ((net(X) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        fn = md.jit(step) if compiled else step
        losses = []
        for _ in range(5):
            losses.append(fn(X, y).item())
            sched.step()
        return losses, _values(net), traced.n

    _, jitted, found = _trained_alike(run)
    if getattr(bk, "jit_traces_once", False) and not found:  # compiled, not run eagerly
        # once before the momentum buffers exist and once with them; not once per rate
        assert jitted[2] <= 2, f"traced {jitted[2]} times for 5 learning rates"


#: optimisers whose state a compiled step must carry from call to call (Adam's step counter,
#: its moments, RMSprop's averages, the momentum buffers)
_OPTIMISERS = {
    "Adam": lambda ps: md.optim.Adam(ps, lr=0.05),
    "AdamW": lambda ps: md.optim.AdamW(ps, lr=0.05, weight_decay=0.1),
    "RMSprop": lambda ps: md.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
    "SGD-nesterov": lambda ps: md.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
    "Adagrad": lambda ps: md.optim.Adagrad(ps, lr=0.1),
}


def _optimiser_run(make_opt, reads_value: bool):
    X, y = _data()

    def run(compiled: bool):
        net = _mlp()
        opt = make_opt(net.parameters())

        def step(X, y):
            with md.autograd.record():
                loss = ((net(X) - y) ** 2).mean()
            if reads_value:  # a value read back to Python between forward and backward
                assert np.isfinite(loss.item())
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        fn = md.jit(step) if compiled else step
        # more calls than torch.compile's recompile limit (8)
        losses = [fn(X, y).item() for _ in range(10)]
        state = {
            f"{i}.{k}": np.array(v.numpy()) if isinstance(v, md.Tensor) else np.array(v)
            for i, p in enumerate(net.parameters())
            for k, v in opt.state.get(p, {}).items()
        }
        return losses, _values(net), state

    eager, jitted, _ = _trained_alike(run)
    assert jitted[2].keys() == eager[2].keys() and eager[2], "the optimiser's state"
    for k, v in eager[2].items():
        np.testing.assert_allclose(jitted[2][k], v, rtol=1e-4, atol=1e-5, err_msg=k)
    assert jitted[0][-1] != jitted[0][-2], "the parameters move at every call"


@pytest.mark.requires("autograd")
@pytest.mark.parametrize("name", list(_OPTIMISERS))
def test_stateful_optimisers_train_like_eager(bk, name):
    """A compiled step with Adam, AdamW, RMSprop, SGD with momentum or Adagrad: at each of ten
    calls the same losses, parameters and optimiser state as eager (the step counters, the
    moments and the buffers carried from call to call)."""
    _optimiser_run(_OPTIMISERS[name], reads_value=False)


@pytest.mark.requires("autograd")
@pytest.mark.parametrize("name", ["Adam", "SGD-nesterov"])
def test_step_reading_a_value_trains_like_eager(bk, name):
    """A step that reads a value back to Python between its forward and its backward (which
    a compiler cannot hold in one graph) still trains as eager does, compiled in parts or
    run eagerly: never a backward that finds no gradients."""
    _optimiser_run(_OPTIMISERS[name], reads_value=True)
