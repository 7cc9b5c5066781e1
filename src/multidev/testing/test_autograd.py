"""Section "autograd": ``md.autograd.record()``, ``loss.backward()``, ``md.no_grad()``, the
losses, ``Dropout`` and the optimisers.

Gradients of ``Linear``, ``relu``, ``softmax``, ``mse_loss`` and ``cross_entropy`` are compared
with central finite differences of the same multidev forward in float64, and with the
framework's own autograd (the adapter's reference ``grad_*`` entries). Optimiser steps are
compared with PyTorch's update rules written out in NumPy.
"""

# p.grad (a Tensor or None) is read right after backward(): a None fails the test there
# mypy: disable-error-code="union-attr"

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.nn import functional as F
from multidev.testing import reference as ref

autograd = pytest.mark.requires("autograd")

RTOL, ATOL = 1e-5, 1e-6  # float32 gradients vs the framework's own
FD_RTOL, FD_ATOL = 1e-3, 1e-4  # float32 gradients vs float64 finite differences


def _grads(f, *arrays: np.ndarray) -> list[np.ndarray]:
    """d f(*params) / d params through md.autograd, each array a float32 Parameter."""
    params = [nn.Parameter(md.asarray(np.asarray(a, dtype=np.float32))) for a in arrays]
    with md.autograd.record():
        out = f(*params)
    out.backward()
    return [p.grad.numpy() for p in params]


def _finite_differences(f, *inputs: np.ndarray, eps: float = 1e-6) -> list[np.ndarray]:
    """Central differences of the scalar f(*tensors), evaluated by multidev in float64."""
    arrays = [np.asarray(a, dtype=np.float64) for a in inputs]

    def value(values):
        with md.no_grad():
            return f(*(md.asarray(v, dtype=md.float64) for v in values)).item()

    out = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [v.copy() for v in arrays]
            minus = [v.copy() for v in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (value(plus) - value(minus)) / (2 * eps)
        out.append(g)
    return out


def _away_from_zero(rng, shape) -> np.ndarray:
    """Values with |x| >= 0.1, so that finite differences never straddle relu's kink."""
    x = rng.uniform(0.1, 1.0, shape) * rng.choice([-1.0, 1.0], shape)
    return x.astype(np.float32)


def _cases(rng):
    """name -> (md loss of the inputs, inputs, extra arguments of the reference grad)."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((2, 4)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    gy = rng.standard_normal((3, 2)).astype(np.float32)
    xr = _away_from_zero(rng, (3, 4))
    gr = rng.standard_normal((3, 4)).astype(np.float32)
    logits = rng.standard_normal((5, 3)).astype(np.float32)
    labels = np.array([0, 2, 1, 2, 0], dtype=np.int64)
    target = rng.standard_normal((5, 3)).astype(np.float32)

    def weighted(y, g):
        return md.sum(y * md.asarray(g, dtype=y.dtype, device=y.device))

    return {
        "linear": (lambda x, w, b: weighted(F.linear(x, w, b), gy), (x, w, b), (gy,)),
        "relu": (lambda x: weighted(F.relu(x), gr), (xr,), (gr,)),
        "softmax": (lambda x: weighted(F.softmax(x, dim=-1), gr), (x,), (-1, gr)),
        "mse_loss": (
            lambda a, t: F.mse_loss(a, t),
            (logits, target),
            (),
        ),
        "cross_entropy": (
            lambda z: F.cross_entropy(z, md.asarray(labels, device=z.device)),
            (logits,),
            (labels,),
        ),
    }


CASES = ("linear", "relu", "softmax", "mse_loss", "cross_entropy")


@autograd
@pytest.mark.requires("float64")
@pytest.mark.parametrize("name", CASES)
def test_gradients_match_finite_differences(name, rng):
    f, inputs, _ = _cases(rng)[name]
    for got, want in zip(_grads(f, *inputs), _finite_differences(f, *inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=FD_RTOL, atol=FD_ATOL)


@autograd
@pytest.mark.parametrize("name", CASES)
def test_gradients_match_the_frameworks_own_autograd(name, rng, native_ops):
    f, inputs, extra = _cases(rng)[name]
    got = _grads(f, *inputs)
    if name == "linear":
        want = list(native_ops["grad_linear"](*inputs, *extra))
    elif name == "mse_loss":
        want = [native_ops["grad_mse_loss"](*inputs)]
        got = got[:1]
    else:
        want = [native_ops[f"grad_{name}"](*inputs, *extra)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@autograd
def test_linear_layer_gradients_are_the_matrix_formulas(rng):
    lin = nn.Linear(4, 2)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    with md.autograd.record():
        loss = md.sum(lin(md.asarray(x)))
    loss.backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.ones((3, 2)).T @ x, rtol=RTOL)
    np.testing.assert_allclose(lin.bias.grad.numpy(), [3.0, 3.0], rtol=RTOL)
    assert lin.weight.grad.shape == (2, 4) and lin.weight.grad.dtype is md.float32
    assert lin.weight.grad.device is lin.weight.device


# ------------------------------------------------------------------ losses (values)


def test_loss_values_match_numpy(rng):
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    labels = np.array([3, 0, 1, 1, 2, 0])
    log_p = ref.numpy_log_softmax(logits, 1)
    per_sample = -log_p[np.arange(6), labels]
    z, y = md.asarray(logits), md.asarray(labels)
    np.testing.assert_allclose(F.cross_entropy(z, y).item(), per_sample.mean(), rtol=1e-6)
    np.testing.assert_allclose(
        F.cross_entropy(z, y, reduction="sum").item(), per_sample.sum(), rtol=1e-6
    )
    np.testing.assert_allclose(
        F.cross_entropy(z, y, reduction="none").numpy(), per_sample, rtol=1e-6
    )
    np.testing.assert_allclose(nn.CrossEntropyLoss()(z, y).item(), per_sample.mean(), rtol=1e-6)
    target = rng.standard_normal((6, 4)).astype(np.float32)
    mse = ((logits - target) ** 2).mean()
    np.testing.assert_allclose(F.mse_loss(z, md.asarray(target)).item(), mse, rtol=1e-6)
    np.testing.assert_allclose(nn.MSELoss()(z, md.asarray(target)).item(), mse, rtol=1e-6)


def test_loss_shape_and_label_errors():
    with pytest.raises(ValueError, match=r"same shape.*\(4, 1\) and \(4,\)"):
        F.mse_loss(md.ones((4, 1)), md.ones(4))
    with pytest.raises(TypeError, match="integer class labels"):
        F.cross_entropy(md.ones((2, 3)), md.ones(2))
    with pytest.raises(ValueError, match="labels of shape"):
        F.cross_entropy(md.ones((2, 3)), md.asarray([0, 1, 2]))


def _torch_cross_entropy(x, y, weight, ignore, smoothing, reduction):
    """PyTorch's cross-entropy with class weights, an ignored label and label smoothing,
    written out in NumPy (float64)."""
    x = x.astype(np.float64)
    log_p = x - x.max(1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(1, keepdims=True))
    c = x.shape[1]
    w = np.ones(c) if weight is None else weight.astype(np.float64)
    kept = y != ignore
    safe = np.where(kept, y, 0)
    nll = -w[safe] * log_p[np.arange(len(y)), safe]
    smooth = -(log_p * w).sum(1) / c
    loss = ((1 - smoothing) * nll + smoothing * smooth) * kept
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / (w[safe] * kept).sum()


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_weight_ignore_index_and_label_smoothing(rng, weighted, smoothing, reduction):
    """PyTorch's ``weight``, ``ignore_index`` and ``label_smoothing`` (the mean divides by the
    weights of the labels kept), for the layer too; a label equal to ignore_index counts 0.
    Without ignore_index, -100 is an out-of-range label, as every other (PyTorch ignores it
    by default; multidev only when asked)."""
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = np.array([0, 2, -100, 4, 1, 2])
    weight = np.arange(1, 6).astype(np.float32) if weighted else None
    w = None if weight is None else md.asarray(weight)
    for ignore, labels in ((-100, y), (2, np.where(y < 0, 3, y))):
        want = _torch_cross_entropy(x, labels, weight, ignore, smoothing, reduction)
        kw = {"ignore_index": ignore, "reduction": reduction, "label_smoothing": smoothing}
        got = F.cross_entropy(md.asarray(x), md.asarray(labels), w, **kw)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
        layer = nn.CrossEntropyLoss(w, **kw)
        np.testing.assert_allclose(
            layer(md.asarray(x), md.asarray(labels)).numpy(), want, rtol=1e-5
        )
    with pytest.raises(IndexError, match="class labels"):  # MXNet's: where the loss is read
        F.cross_entropy(md.asarray(x), md.asarray(y), w, label_smoothing=smoothing).numpy()
    with pytest.raises(TypeError, match="reduction='sum'"):
        F.cross_entropy(md.asarray(x), md.asarray(y), "sum")


@pytest.mark.parametrize("options", [{}, {"ignore_index": 1, "label_smoothing": 0.1}])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_and_nll_loss_over_k_dimensions(rng, options, reduction):
    """Logits (N, C, d1, d2) with labels (N, d1, d2): PyTorch's loss per position, equal to
    the (N * d1 * d2, C) loss of the positions as rows; "none" keeps the (N, d1, d2) shape."""
    x = rng.standard_normal((2, 4, 3, 2)).astype(np.float32)
    y = rng.integers(0, 4, (2, 3, 2))
    rows = np.moveaxis(x, 1, -1).reshape(-1, 4)
    weight = np.array([1.0, 2.0, 0.5, 1.5], np.float32)
    ignore, smoothing = options.get("ignore_index"), options.get("label_smoothing", 0.0)
    want = _torch_cross_entropy(rows, y.reshape(-1), weight, ignore, smoothing, reduction)
    want = want.reshape(2, 3, 2) if reduction == "none" else want
    kw = dict(options, reduction=reduction)
    got = F.cross_entropy(md.asarray(x), md.asarray(y), md.asarray(weight), **kw)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    if not options:  # the fused kernel's path
        plain = _torch_cross_entropy(rows, y.reshape(-1), None, None, 0.0, reduction)
        got = F.cross_entropy(md.asarray(x), md.asarray(y), reduction=reduction)
        np.testing.assert_allclose(got.numpy(), plain.reshape(np.shape(want)), rtol=1e-5)
        log_p = F.log_softmax(md.asarray(x), 1)
        got = F.nll_loss(log_p, md.asarray(y), md.asarray(weight), reduction=reduction)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"\(N, C, d1, \.\.\.\) with labels"):
        F.cross_entropy(md.asarray(x), md.asarray(y[:, :2]))


def _soft_cross_entropy_np(x, q, weight, smoothing, reduction):
    """PyTorch's cross-entropy with class probabilities (class axis 1), in NumPy (float64)."""
    x = x.astype(np.float64)
    log_p = x - x.max(1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(1, keepdims=True))
    c = x.shape[1]
    q = q * (1 - smoothing) + smoothing / c
    w = np.ones(c) if weight is None else weight.astype(np.float64)
    w = w.reshape((c,) + (1,) * (x.ndim - 2))
    loss = -(log_p * q * w).sum(1)
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4)], ids=["NC", "NCd"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_class_probabilities(rng, shape, smoothing, reduction):
    """A floating target of the logits' shape holds class probabilities (PyTorch's soft
    targets): weights multiply, label smoothing mixes in the uniform distribution, and the
    mean is over the samples; ignore_index is refused there, for the layer too."""
    x = rng.standard_normal(shape).astype(np.float32)
    q = rng.random(shape).astype(np.float32)
    q /= q.sum(1, keepdims=True)
    weight = np.array([0.5, 1.0, 2.0], np.float32)
    for w in (None, weight):
        want = _soft_cross_entropy_np(x, q, w, smoothing, reduction)
        kw = {"reduction": reduction, "label_smoothing": smoothing}
        ww = None if w is None else md.asarray(w)
        got = F.cross_entropy(md.asarray(x), md.asarray(q), ww, **kw)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
        layer = nn.CrossEntropyLoss(ww, **kw)
        np.testing.assert_allclose(layer(md.asarray(x), md.asarray(q)).numpy(), want, rtol=1e-5)
    with pytest.raises(ValueError, match="ignore_index only with integer class labels"):
        F.cross_entropy(md.asarray(x), md.asarray(q), ignore_index=0)
    with pytest.raises(TypeError, match="class probabilities of the logits' shape"):
        F.cross_entropy(md.asarray(x), md.asarray(q[:1]))
    other = md.devices()[-1]
    if other != md.asarray(x).device:  # several devices (TensorFlow's and MXNet's CPUs)
        with pytest.raises(md.DeviceMismatchError):
            F.cross_entropy(md.asarray(x), md.asarray(q, device=other))


@autograd
@pytest.mark.requires("float64")
def test_cross_entropy_with_class_probabilities_differentiates(rng):
    x = rng.standard_normal((3, 4))
    q = rng.random((3, 4))
    q = md.asarray(q / q.sum(1, keepdims=True))

    def f(z):
        return F.cross_entropy(z, q, label_smoothing=0.1)

    (got,) = _grads(f, x)
    (want,) = _finite_differences(f, x)
    np.testing.assert_allclose(got, want, rtol=FD_RTOL, atol=FD_ATOL)


@autograd
@pytest.mark.requires("float64")
def test_cross_entropy_with_ignored_labels_and_weights_differentiates(rng):
    """The gradient of the weighted, smoothed loss with an ignored label equals central
    finite differences of the same loss; the ignored row's gradient is 0."""
    x = rng.standard_normal((4, 3))
    y = md.asarray(np.array([0, -1, 2, 1]))
    w = md.asarray(np.array([1.0, 2.0, 0.5], np.float32))

    def f(z):
        return F.cross_entropy(z, y, w, ignore_index=-1, label_smoothing=0.1)

    (got,) = _grads(f, x)
    (want,) = _finite_differences(f, x)
    np.testing.assert_allclose(got, want, rtol=FD_RTOL, atol=FD_ATOL)
    np.testing.assert_array_equal(got[1], 0.0)


# ------------------------------------------------------------------ accumulation, tying


@autograd
def test_gradients_add_up_across_backward_calls_until_zero_grad(rng):
    lin = nn.Linear(3, 2)
    X = md.asarray(rng.standard_normal((4, 3)).astype(np.float32))
    grads = []
    for _ in range(2):
        with md.autograd.record():
            loss = md.sum(lin(X) ** 2)
        loss.backward()
        grads.append(lin.weight.grad.numpy().copy())
    np.testing.assert_allclose(grads[1], 2 * grads[0], rtol=RTOL)
    opt = md.optim.SGD(lin.parameters(), lr=0.1)
    opt.zero_grad()
    assert (lin.weight.grad, lin.bias.grad) == (None, None)
    with md.autograd.record():
        loss = md.sum(lin(X) ** 2)
    loss.backward()
    w = lin.weight.numpy()
    np.testing.assert_allclose(
        lin.weight.grad.numpy(), 2 * ((X.numpy() @ w.T + lin.bias.numpy()).T @ X.numpy()), rtol=1e-4
    )


@autograd
def test_tied_weight_gradient_is_the_sum_of_both_uses(rng):
    shared = nn.Linear(4, 4)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    X = md.asarray(rng.standard_normal((5, 4)).astype(np.float32))
    with md.autograd.record():
        loss = md.sum(net(X))
    loss.backward()
    tied = shared.weight.grad.numpy()

    # the same computation with two untied copies of the layer
    first, second = nn.Linear(4, 4), nn.Linear(4, 4)
    for lin in (first, second):
        lin.load_state_dict(shared.state_dict())
    with md.autograd.record():
        loss2 = md.sum(second(F.relu(first(X))))
    loss2.backward()
    np.testing.assert_allclose(loss.item(), loss2.item(), rtol=RTOL)
    np.testing.assert_allclose(
        tied, first.weight.grad.numpy() + second.weight.grad.numpy(), rtol=RTOL, atol=ATOL
    )


@autograd
def test_only_parameters_that_took_part_get_gradients():
    used, unused = nn.Linear(2, 1), nn.Linear(2, 1)
    with md.autograd.record():
        loss = md.sum(used(md.ones((3, 2))))
    loss.backward()
    assert used.weight.grad is not None
    assert unused.weight.grad is None and unused.bias.grad is None


@autograd
def test_backward_inside_the_record_block():
    lin = nn.Linear(2, 1)
    with md.autograd.record():
        loss = md.sum(lin(md.ones((3, 2))))
        loss.backward()
    np.testing.assert_allclose(lin.bias.grad.numpy(), [3.0])


@autograd
def test_backward_with_a_gradient_argument(rng):
    lin = nn.Linear(3, 2)
    X = rng.standard_normal((4, 3)).astype(np.float32)
    gy = rng.standard_normal((4, 2)).astype(np.float32)
    with md.autograd.record():
        y = lin(md.asarray(X))
    y.backward(md.asarray(gy))
    np.testing.assert_allclose(lin.weight.grad.numpy(), gy.T @ X, rtol=1e-5, atol=1e-6)


@autograd
def test_retain_graph_allows_a_second_backward():
    lin = nn.Linear(2, 1)
    with md.autograd.record():
        loss = md.sum(lin(md.ones((3, 2))))
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(lin.bias.grad.numpy(), [6.0])


# ------------------------------------------------------------------ errors, no_grad


@autograd
def test_backward_on_a_tensor_that_was_not_recorded_raises():
    with pytest.raises(md.AutogradError, match="record"):
        md.sum(md.ones((2, 2)) * 3.0).backward()
    lin = nn.Linear(2, 1)
    with md.autograd.record(), md.no_grad():
        paused = md.sum(lin(md.ones((3, 2))))
    with pytest.raises(md.AutogradError, match="no_grad"):
        paused.backward()
    assert lin.weight.grad is None


@autograd
def test_backward_on_a_non_scalar_needs_a_gradient():
    lin = nn.Linear(2, 3)
    with md.autograd.record():
        y = lin(md.ones((4, 2)))
    with pytest.raises(md.AutogradError, match=r"one-element.*\(4, 3\).*gradient="):
        y.backward()
    with pytest.raises(md.AutogradError, match=r"gradient of the tensor's shape"):
        y.backward(md.ones((4, 2)))


@autograd
def test_no_grad_as_decorator_and_results_equal_recorded_ones():
    lin = nn.Linear(3, 2)
    X = md.ones((2, 3))

    @md.no_grad()
    def predict(x):
        return lin(x)

    with md.autograd.record():
        recorded = lin(X)
        unrecorded = predict(X)
    np.testing.assert_array_equal(recorded.numpy(), unrecorded.numpy())
    with pytest.raises(md.AutogradError):
        md.sum(unrecorded).backward()
    assert md.autograd.no_grad is md.no_grad


def test_without_autograd_backward_says_so(bk):
    if "autograd" in bk.capabilities:
        pytest.skip(f"{bk.name} has autograd")
    with md.autograd.record():
        loss = md.sum(nn.Linear(2, 1)(md.ones((3, 2))))
    with pytest.raises(md.AutogradError, match=f"{bk.name} backend, which has no autograd"):
        loss.backward()


# ------------------------------------------------------------------ dropout


def _host_mask(seed: int, shape: tuple[int, ...], p: float) -> np.ndarray:
    """The keep mask multidev's host generator draws after md.manual_seed(seed)."""
    u = np.random.Generator(np.random.PCG64(seed)).random(shape, dtype=np.float32)
    return u >= np.float32(p)


def test_dropout_is_active_in_train_and_identity_in_eval():
    drop = nn.Dropout(0.25)
    X = md.ones((20, 30))
    md.manual_seed(7)
    out = drop(X).numpy()
    keep = _host_mask(7, (20, 30), 0.25)
    np.testing.assert_allclose(out, np.where(keep, 1 / 0.75, 0.0), rtol=1e-6)
    drop.eval()
    np.testing.assert_array_equal(drop(X).numpy(), X.numpy())
    net = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    net.eval()
    assert not net[1].training
    net.train()
    assert net[1].training


@autograd
def test_dropout_gradient_is_the_scaled_mask():
    w = nn.Parameter(md.ones((6, 5)))
    md.manual_seed(3)
    with md.autograd.record():
        loss = md.sum(F.dropout(w, 0.5, training=True))
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), np.where(_host_mask(3, (6, 5), 0.5), 2.0, 0.0))


# ------------------------------------------------------------------ optimisers


def _sgd_reference(p, grads, lr, momentum, weight_decay):
    """PyTorch's SGD rule in NumPy (float32)."""
    p, buf = p.copy(), None
    for g in grads:
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + g
            g = buf
        p = p - lr * g
    return p


def _adam_reference(p, grads, lr, betas, eps, weight_decay):
    """PyTorch's Adam rule in NumPy (float32)."""
    p = p.copy()
    m, v = np.zeros_like(p), np.zeros_like(p)
    b1, b2 = betas
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v) / np.sqrt(1 - b2**t) + eps
        p = p - lr / (1 - b1**t) * m / denom
    return p


def _fixed_gradient_steps(opt_factory, rng, steps=4):
    """Run ``steps`` optimiser steps where step k's gradient is a fixed array G[k]."""
    p0 = rng.standard_normal((3, 4)).astype(np.float32)
    grads = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(steps)]
    p = nn.Parameter(md.asarray(p0))
    native = p.native
    opt = opt_factory([p])
    for g in grads:
        opt.zero_grad()
        with md.autograd.record():
            loss = md.sum(p * md.asarray(g))
        loss.backward()
        opt.step()
    assert p.native is native  # updated in place: the same variable
    return p0, grads, p.numpy()


@autograd
@pytest.mark.parametrize(("momentum", "weight_decay"), [(0.0, 0.0), (0.9, 0.0), (0.9, 0.01)])
def test_sgd_steps_follow_pytorchs_rule(rng, momentum, weight_decay):
    p0, grads, got = _fixed_gradient_steps(
        lambda ps: md.optim.SGD(ps, lr=0.1, momentum=momentum, weight_decay=weight_decay), rng
    )
    want = _sgd_reference(p0, grads, 0.1, momentum, weight_decay)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@autograd
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adam_steps_follow_pytorchs_rule(rng, weight_decay):
    betas = (0.8, 0.99)
    p0, grads, got = _fixed_gradient_steps(
        lambda ps: md.optim.Adam(ps, lr=0.01, betas=betas, eps=1e-8, weight_decay=weight_decay),
        rng,
    )
    want = _adam_reference(p0, grads, 0.01, betas, 1e-8, weight_decay)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@autograd
def test_optimiser_updates_parameters_on_their_own_device():
    dev = md.devices()[-1]
    with dev:
        net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
        X, y = md.randn(8, 3), md.randn(8, 1)
    variables = [p.native for p in net.parameters()]
    before = [p.numpy().copy() for p in net.parameters()]
    opt = md.optim.Adam(net.parameters(), lr=0.01)
    with md.autograd.record():
        loss = F.mse_loss(net(X), y)
    loss.backward()
    assert all(p.grad.device is dev for p in net.parameters())
    opt.step()
    for p, var, old in zip(net.parameters(), variables, before, strict=True):
        assert p.device is dev and p.native is var
        assert not np.array_equal(p.numpy(), old)


@autograd
def test_training_loop_reduces_the_loss():
    md.manual_seed(0)
    X = md.randn(64, 2)
    y = X @ md.asarray([[2.0], [-3.4]]) + 4.2
    net = nn.Sequential(nn.Linear(2, 1))
    opt = md.optim.SGD(net.parameters(), lr=0.1)
    losses = []
    for _ in range(30):
        with md.autograd.record():
            loss = F.mse_loss(net(X), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < 1e-2 * losses[0]
