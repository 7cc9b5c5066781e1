"""Section "grad mode": gradients recorded as in PyTorch (``loss.backward()`` without
``md.autograd.record()``), ``md.no_grad``, ``md.set_grad_enabled``, ``md.enable_grad``,
``md.is_grad_enabled``, and in-place writes on recorded tensors that never half-apply."""

# p.grad (a Tensor or None) is read right after backward(): a None fails the test there; a
# tensor made with requires_grad=True is a leaf with .grad, which Tensor's type does not show
# mypy: disable-error-code="union-attr,attr-defined"

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn

autograd = pytest.mark.requires("autograd")
#: backward() without record() (every backend with autograd)
implicit = pytest.mark.requires("implicit_grad")
#: a test run inside ``record()`` and without it
record_or_not = pytest.mark.parametrize(
    "explicit", [True, pytest.param(False, marks=implicit)], ids=["record", "implicit"]
)


def _net() -> nn.Sequential:
    md.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def _data(rng) -> tuple[md.Tensor, md.Tensor]:
    x = md.asarray(rng.standard_normal((5, 4)).astype(np.float32))
    y = md.asarray(rng.standard_normal((5, 2)).astype(np.float32))
    return x, y


def _grads(net: nn.Block) -> dict[str, np.ndarray]:
    return {n: p.grad.numpy().copy() for n, p in net.named_parameters()}


def _assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-6, atol=1e-7, err_msg=k)


@autograd
@implicit
def test_backward_without_record_equals_the_recorded_one(rng):
    x, y = _data(rng)
    net = _net()
    with md.autograd.record():
        loss = md.mean((net(x) - y) ** 2)
    loss.backward()
    recorded = _grads(net)
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(2):  # twice: backward() starts the next implicit recording
        opt.zero_grad()
        loss = md.mean((net(x) - y) ** 2)
        loss.backward()
        _assert_same(_grads(net), recorded)


@autograd
@implicit
def test_backward_without_record_on_plain_tensors_that_require_grad(rng):
    x, _ = _data(rng)
    # made with requires_grad=True, and as an nn.Parameter used outside any Block (whose
    # creation did not start the recording on TensorFlow and JAX)
    for make in (
        lambda: md.zeros((4, 1), requires_grad=True),
        lambda: nn.Parameter(md.zeros((4, 1))),
    ):
        with md.autograd.record():  # ends any recording left open by earlier code
            pass
        w = make()
        for step in range(2):
            loss = md.sum(md.matmul(x, w) * 2.0)
            loss.backward()
            expected = (step + 1) * 2.0 * x.numpy().sum(axis=0, keepdims=True).T
            np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-5)


@autograd
@implicit
def test_a_forward_no_backward_used_leaves_the_next_step_right(rng):
    x, y = _data(rng)
    net = _net()
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    stale = md.mean((net(x) - y) ** 2)
    opt.zero_grad()
    loss = md.mean((net(x) - y) ** 2)
    loss.backward()
    np.testing.assert_allclose(stale.numpy(), loss.numpy())
    assert all(p.grad is not None for p in net.parameters())


@autograd
@implicit
def test_zero_grad_between_forward_and_backward_as_in_pytorch(rng):
    """``loss = f(); opt.zero_grad(); loss.backward()`` (d2l's Trainer and its conv-layer
    section, and ``net.zero_grad()`` too) gives the recorded step's gradients."""
    x, y = _data(rng)
    net = _net()
    with md.autograd.record():
        loss = md.mean((net(x) - y) ** 2)
    loss.backward()
    recorded = _grads(net)
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    for zero in (opt.zero_grad, net.zero_grad):
        loss = md.mean((net(x) - y) ** 2)
        zero()
        loss.backward()
        _assert_same(_grads(net), recorded)


@autograd
def test_detach_stops_the_gradient_and_data_writes_the_parameter():
    """``x.detach()`` is a constant to backward, of a parameter and of a recorded result
    alike, and so is ``x.data`` of a result: d/dw of sum(w.detach() * w) is w, of
    sum(h.detach() * h) with h = 3w is 9w (TensorFlow and MXNet gave 2w and 18w, JAX 2w for
    the parameter: the gradient went through). A write through ``p.data`` inside
    ``record()`` changes the parameter, as in PyTorch (MXNet refused it). ``p.data`` of a
    parameter is its variable on TensorFlow and JAX, where writes need it."""
    w = nn.Parameter(md.asarray(np.array([1.0, 2.0], np.float32)))
    with md.autograd.record():
        loss = md.sum(w.detach() * w)
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])
    for detach in (lambda t: t.detach(), lambda t: t.data):
        w.grad = None
        with md.autograd.record():
            h = w * 3.0
            loss = md.sum(detach(h) * h)
        loss.backward()
        np.testing.assert_allclose(w.grad.numpy(), [9.0, 18.0])
    with md.autograd.record():
        w.data[0] = 5.0
    np.testing.assert_array_equal(w.numpy(), [5.0, 2.0])


@autograd
def test_clone_and_copies_pass_the_gradient():
    """``x.clone()`` and a copy to the same device are differentiable, as in PyTorch: d/dw of
    sum(w.clone() * w) is 2w (TensorFlow raised LookupError: no gradient for DeepCopy)."""
    w = nn.Parameter(md.asarray(np.array([1.0, -2.0], np.float32)))
    for copy in (lambda t: t.clone(), lambda t: t.to(t.device, copy=True)):
        w.grad = None
        with md.autograd.record():
            loss = md.sum(copy(w) * w)
        loss.backward()
        np.testing.assert_allclose(w.grad.numpy(), [2.0, -4.0])


@autograd
def test_a_second_backward_without_retain_graph_is_an_autograd_error():
    """The recording is freed by the first backward(); a second one raises md.AutogradError
    on every backend (torch raised its RuntimeError, Paddle a SystemError), and with
    retain_graph=True the gradients add up."""
    w = nn.Parameter(md.asarray(np.array([1.0, 2.0], np.float32)))
    with md.autograd.record():
        loss = md.sum(w * w)
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 8.0])
    with pytest.raises(md.AutogradError, match="retain_graph=True"):
        loss.backward()


@autograd
def test_zero_grad_inside_record_clears_the_gradients(rng):
    """``zero_grad()`` inside ``with md.autograd.record():``, before the forward pass and after
    a backward, is not part of the recording: the next backward gives the first step's
    gradients again (MXNet crashed, its reset of the gradient buffers recorded)."""
    x, y = _data(rng)
    net = _net()
    with md.autograd.record():
        loss = md.mean((net(x) - y) ** 2)
    loss.backward()
    recorded = _grads(net)
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    for zero in (opt.zero_grad, net.zero_grad):
        with md.autograd.record():
            zero()
            loss = md.mean((net(x) - y) ** 2)
        loss.backward()
        _assert_same(_grads(net), recorded)
        with md.autograd.record():
            zero()
        assert all(p.grad is None or not p.grad.numpy().any() for p in net.parameters())


@autograd
@implicit
def test_no_grad_set_grad_enabled_and_enable_grad_nest_as_in_pytorch(rng):
    x, y = _data(rng)
    net = _net()
    assert md.is_grad_enabled()
    with md.no_grad():
        assert not md.is_grad_enabled()
        with md.no_grad():
            assert not md.is_grad_enabled()
        assert not md.is_grad_enabled()
        with md.enable_grad():
            assert md.is_grad_enabled()
            loss = md.mean((net(x) - y) ** 2)
        assert not md.is_grad_enabled()
        unrecorded = md.mean((net(x) - y) ** 2)
    assert md.is_grad_enabled()
    loss.backward()
    assert net[0].weight.grad is not None
    with pytest.raises(md.AutogradError, match="no_grad"):
        unrecorded.backward()
    with md.set_grad_enabled(False):
        assert not md.is_grad_enabled()
        with md.set_grad_enabled(True):
            assert md.is_grad_enabled()
        assert not md.is_grad_enabled()
    assert md.is_grad_enabled()
    md.set_grad_enabled(False)  # as a call: switches at once, until switched back
    try:
        assert not md.is_grad_enabled()
        off = md.mean((net(x) - y) ** 2)
        with md.autograd.record():  # record() records anyway, as before
            assert md.is_grad_enabled()
            on = md.mean((net(x) - y) ** 2)
        assert not md.is_grad_enabled()
    finally:
        md.set_grad_enabled(True)
    assert md.is_grad_enabled()
    with pytest.raises(md.AutogradError):
        off.backward()
    on.backward()

    @md.enable_grad()
    def recorded_forward():
        return md.mean((net(x) - y) ** 2)

    with md.no_grad():
        inside = recorded_forward()
        assert not md.is_grad_enabled()
    inside.backward()


# ------------------------------------------------------------------ in-place writes


def _residual_and_masked(x: md.Tensor, w: md.Tensor, mask: md.Tensor, in_place: bool):
    """ResNet's ``Y += X`` and d2l's masked softmax ``X[~mask] = -1e6``, in place or not."""
    y = md.matmul(x, w)
    if in_place:
        y += x
        y *= 2.0
        y[~mask] = -1e6
        y[:, 0] = 0.5
    else:
        y = (y + x) * 2.0
        y = md.where(mask, y, md.full_like(y, -1e6))
        col = md.asarray(np.arange(y.shape[1]) == 0)
        y = md.where(col, md.full_like(y, 0.5), y)
    return md.sum(md.nn.functional.softmax(y, dim=-1) * md.arange(y.shape[1], dtype=md.float32))


@autograd
@record_or_not
def test_in_place_writes_on_recorded_tensors_give_pytorchs_gradients(rng, explicit):
    x = md.asarray(rng.standard_normal((3, 4)).astype(np.float32))
    mask = md.asarray(rng.random((3, 4)) > 0.3)
    start = rng.standard_normal((4, 4)).astype(np.float32)
    grads, values = [], []
    for in_place in (False, True):
        w = md.zeros((4, 4), requires_grad=True)
        with md.no_grad():
            w[...] = md.asarray(start)
        if explicit:
            with md.autograd.record():
                loss = _residual_and_masked(x, w, mask, in_place)
        else:
            loss = _residual_and_masked(x, w, mask, in_place)
        loss.backward()
        grads.append(w.grad.numpy())
        values.append(loss.numpy())
    np.testing.assert_allclose(values[1], values[0], rtol=1e-6)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-7)
    assert np.abs(grads[0]).sum() > 0


@autograd
@record_or_not
def test_values_computed_from_parameters_written_into_part_of_a_tensor(rng, explicit):
    """d2l's multistep prediction: ``preds[i] = model(preds[i - 4:i])`` on a tensor that is
    not a parameter (MXNet records no partial write: it gathers the values instead). The writes are recorded (a later loss differentiates through them), as
    in PyTorch; the gradient equals the one of the same values built out of place."""
    start = rng.standard_normal(4).astype(np.float32)
    w0 = rng.standard_normal(4).astype(np.float32) * 0.5

    def run(in_place: bool) -> tuple[np.ndarray, np.ndarray]:
        w = nn.Parameter(md.asarray(w0))
        preds = md.zeros(7)
        with md.no_grad():
            preds[:4] = md.asarray(start)
        rows = [preds[j] for j in range(4)]
        for i in range(4, 7):
            # a copy of the window: PyTorch refuses a backward through a view that a later
            # write changed (the product saves it for w's gradient)
            window = preds[i - 4 : i].clone() if in_place else md.stack(rows[i - 4 : i])
            value = md.sum(window * w)
            if in_place:
                preds[i] = value.reshape(1, 1)  # a model's (1, 1) output, as in d2l
            rows.append(value)
        out = preds if in_place else md.stack(rows)
        loss = md.sum(out * md.arange(7, dtype=md.float32))
        loss.backward()
        return out.numpy(), w.grad.numpy()

    if explicit:
        with md.autograd.record():
            got = run(True)
    else:
        got = run(True)
    want = run(False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    assert np.abs(want[1]).sum() > 0


@autograd
def test_a_refused_in_place_write_changes_nothing(rng):
    """Writes PyTorch refuses (into a parameter while recording) either work as written or
    raise with the tensor unchanged: never half-applied."""
    start = rng.standard_normal((3, 4)).astype(np.float32)
    writes = {
        "+=": lambda p: p.__iadd__(1.0),
        "*=": lambda p: p.__imul__(2.0),
        "mask": lambda p: p.__setitem__(p > 0, 0.0),
        "index": lambda p: p.__setitem__((slice(None), 1), 7.0),
    }
    for name, write in writes.items():
        p = nn.Parameter(md.asarray(start))
        # what the write gives where allowed (outside recording)
        allowed = nn.Parameter(md.asarray(start))
        with md.no_grad():
            write(allowed)
        with md.autograd.record():
            md.sum(p * 2.0)
            try:
                write(p)
            except Exception:
                np.testing.assert_array_equal(p.numpy(), start, err_msg=name)
                continue
        np.testing.assert_array_equal(p.numpy(), allowed.numpy(), err_msg=name)
