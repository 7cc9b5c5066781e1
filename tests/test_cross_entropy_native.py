"""``md.nn.functional.cross_entropy`` runs each framework's fused kernel (the adapters' lowering
of the ``cross_entropy`` op) and gives what the NumPy reference gives: the same values, the
same gradients through ``md.autograd``, the same errors for labels outside [0, C).

Each backend is also compared with its framework's own loss written natively (PyTorch's and
Paddle's ``F.cross_entropy``, TensorFlow's ``sparse_softmax_cross_entropy_with_logits``,
Gluon's ``SoftmaxCrossEntropyLoss``), values and gradients. On PyTorch a recorded forward and
loss stays one Dynamo graph, and a jitted training step with this loss matches the eager one.
"""

# p.grad (a Tensor or None) is read right after backward(): a None fails the test there
# mypy: disable-error-code="union-attr"

from __future__ import annotations

import warnings

import numpy as np
import pytest

import multidev as md
from multidev import nn, registry
from multidev.nn import functional as F

BACKEND = registry.current().name
AUTOGRAD = "autograd" in registry.current().capabilities
needs_autograd = pytest.mark.skipif(not AUTOGRAD, reason="the backend has no autograd")
REDUCTIONS = ("mean", "sum", "none")


def _reference(logits: np.ndarray, labels: np.ndarray, reduction: str) -> np.ndarray:
    """-log_softmax(logits)[i, labels[i]] in float64, reduced."""
    z = logits.astype(np.float64)
    s = z - z.max(axis=-1, keepdims=True)
    per = np.log(np.exp(s).sum(axis=-1)) - np.take_along_axis(s, labels[..., None], -1)[..., 0]
    return {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]


def _reference_grad(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """d mean_i(cross-entropy) / d logits: (softmax - one-hot) / N."""
    z = logits.astype(np.float64)
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1
    return p / len(labels)


def _data(rng, n: int = 7, c: int = 5, dtype=np.float32):
    logits = (3 * rng.standard_normal((n, c))).astype(dtype)
    labels = rng.integers(0, c, n)
    labels[:c] = np.arange(min(n, c))  # every class appears
    return logits, labels


@pytest.fixture(name="rng")
def rng_fixture() -> np.random.Generator:
    return np.random.default_rng(15)


def test_autograd_backends_lower_the_fused_op():
    """Every framework with autograd has a fused kernel for it: the adapter's table holds the
    op (NumPy's runs the composed reference form)."""
    has_op = getattr(registry.current().ops, "cross_entropy", None) is not None
    assert has_op is AUTOGRAD


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_match_the_reference(rng, reduction, dtype):
    logits, labels = _data(rng, dtype=dtype)
    out = F.cross_entropy(md.asarray(logits), md.asarray(labels), reduction=reduction)
    assert out.numpy().dtype == dtype
    assert out.shape == ((7,) if reduction == "none" else ())
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), _reference(logits, labels, reduction), rtol=rtol)


@pytest.mark.parametrize("dtype", ["int32", "uint8"])
def test_any_integer_label_dtype_gives_the_same_loss(rng, dtype):
    logits, labels = _data(rng)
    want = F.cross_entropy(md.asarray(logits), md.asarray(labels), reduction="none").numpy()
    got = F.cross_entropy(md.asarray(logits), md.asarray(labels.astype(dtype)), reduction="none")
    np.testing.assert_array_equal(got.numpy(), want)


def test_one_sample_form_and_layer_form(rng):
    logits, labels = _data(rng)
    z, y = md.asarray(logits[2]), md.asarray(labels[2])
    for reduction in REDUCTIONS:
        out = F.cross_entropy(z, y, reduction=reduction)
        assert out.shape == ()
        np.testing.assert_allclose(out.item(), _reference(logits[2:3], labels[2:3], "sum"), 1e-6)
    loss = nn.CrossEntropyLoss(reduction="sum")(md.asarray(logits), md.asarray(labels))
    np.testing.assert_allclose(loss.item(), _reference(logits, labels, "sum"), rtol=1e-6)


def test_integer_logits_are_float32(rng):
    labels = np.array([0, 2, 1])
    logits = rng.integers(-3, 3, (3, 3))
    out = F.cross_entropy(md.asarray(logits), md.asarray(labels))
    assert out.dtype is md.float32
    np.testing.assert_allclose(out.item(), _reference(logits, labels, "mean"), rtol=1e-6)


def test_large_logits_stay_finite():
    logits = np.array([[1000.0, 0.0, -1000.0], [-1000.0, 1000.0, 0.0]], dtype=np.float32)
    out = F.cross_entropy(md.asarray(logits), md.asarray(np.array([2, 1])), reduction="none")
    np.testing.assert_allclose(out.numpy(), [2000.0, 0.0], rtol=1e-6)


def test_empty_batch():
    """No samples: no label to check; the mean is NaN (NumPy's mean of nothing), the sum 0."""
    z, y = md.asarray(np.zeros((0, 4), np.float32)), md.asarray(np.zeros(0, np.int64))
    assert F.cross_entropy(z, y, reduction="none").shape == (0,)
    assert F.cross_entropy(z, y, reduction="sum").item() == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "Mean of empty slice"
        assert np.isnan(F.cross_entropy(z, y).item())


@pytest.mark.parametrize("bad", [5, -1, -100, 2**40, -(2**63)])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_labels_out_of_range_raise(rng, bad, reduction):
    """Never a silent loss for a label that names no class (a zero one-hot row, a clipped
    index, or torch's and Paddle's default ignored label -100): IndexError naming the range,
    at the call; MXNet's asynchronous engine fails where the loss is read: an IndexError there,
    with MXNet's error as its cause."""
    logits, labels = _data(rng)
    labels[3] = bad
    z, y = md.asarray(logits), md.asarray(labels)
    if BACKEND == "mxnet":
        from mxnet.base import MXNetError

        loss = F.cross_entropy(z, y, reduction=reduction)
        with pytest.raises(IndexError, match=r"class labels included.*out of bound") as e:
            loss.numpy()
        assert isinstance(e.value.__cause__, MXNetError)
        return
    with pytest.raises(IndexError, match=r"Expected class labels in \[0, 5\).*Received: .*"):
        F.cross_entropy(z, y, reduction=reduction)


def test_label_and_shape_errors_come_first():
    with pytest.raises(TypeError, match="integer class labels"):
        F.cross_entropy(md.ones((2, 3)), md.ones(2))
    with pytest.raises(ValueError, match=r"labels of shape.*\(2, 3\) and labels \(3,\)"):
        F.cross_entropy(md.ones((2, 3)), md.asarray([0, 1, 2]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(md.ones((2, 3)), md.asarray([0, 1]), reduction="batchmean")


def _grad(logits: np.ndarray, labels: np.ndarray, reduction: str = "mean") -> np.ndarray:
    z = nn.Parameter(md.asarray(logits))
    with md.autograd.record():
        loss = F.cross_entropy(z, md.asarray(labels), reduction=reduction)
        if reduction == "none":
            loss = md.sum(loss * md.asarray(np.arange(1, len(labels) + 1, dtype=logits.dtype)))
    loss.backward()
    return z.grad.numpy()


@needs_autograd
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_matches_the_reference(rng, dtype):
    logits, labels = _data(rng, dtype=dtype)
    g = _grad(logits, labels)
    assert g.dtype == dtype
    tol = {"rtol": 1e-5, "atol": 1e-7} if dtype == np.float32 else {"rtol": 1e-12, "atol": 0}
    np.testing.assert_allclose(g, _reference_grad(logits, labels), **tol)
    weights = np.arange(1, 8)[:, None]  # d sum_i(w_i loss_i) = w_i (softmax - one-hot)_i
    want = _reference_grad(logits, labels) * len(labels) * weights
    np.testing.assert_allclose(_grad(logits, labels, "none"), want, **tol)
    np.testing.assert_allclose(
        _grad(logits, labels, "sum"), _reference_grad(logits, labels) * len(labels), **tol
    )


def _torch_own(logits, labels):
    import torch

    z = torch.tensor(logits, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(z, torch.tensor(labels))
    loss.backward()
    return loss.item(), z.grad.numpy()


def _tensorflow_own(logits, labels):
    import tensorflow as tf

    z = tf.Variable(logits)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, z))
    return float(loss), tape.gradient(loss, z).numpy()


def _paddle_own(logits, labels):
    import paddle

    z = paddle.to_tensor(logits, stop_gradient=False)
    loss = paddle.nn.functional.cross_entropy(z, paddle.to_tensor(labels))
    loss.backward()
    return float(loss), z.grad.numpy()


def _mxnet_own(logits, labels):
    from mxnet import autograd, gluon
    from mxnet import np as mnp

    z = mnp.array(logits, dtype=logits.dtype)
    z.attach_grad()
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(z, mnp.array(labels)).mean()
    loss.backward()
    return float(loss), z.grad.asnumpy()


def _jax_own(logits, labels):
    """JAX has no loss functions of its own (optax holds them): jax.nn.log_softmax, the
    label's entry, and jax.value_and_grad."""
    import jax
    import jax.numpy as jnp

    def loss_of(z):
        logp = jax.nn.log_softmax(z, axis=1)
        return -jnp.mean(jnp.take_along_axis(logp, jnp.asarray(labels)[:, None], axis=1))

    loss, grad = jax.value_and_grad(loss_of)(jnp.asarray(logits))
    return float(loss), np.asarray(grad)


OWN = {"torch": _torch_own, "tensorflow": _tensorflow_own, "paddle": _paddle_own}
OWN["mxnet"] = _mxnet_own
OWN["jax"] = _jax_own


@needs_autograd
def test_loss_and_gradient_match_the_frameworks_own_loss(rng):
    """float64, where every framework's own kernel is exact to rounding (MXNet's float32
    log_softmax kernel is not: multidev's lowering stays exact there too)."""
    logits, labels = _data(rng, n=9, c=6, dtype=np.float64)
    own_loss, own_grad = OWN[BACKEND](logits, labels)
    loss = F.cross_entropy(md.asarray(logits), md.asarray(labels))
    np.testing.assert_allclose(loss.item(), own_loss, rtol=1e-12)
    np.testing.assert_allclose(_grad(logits, labels), own_grad, rtol=1e-10, atol=1e-15)


@needs_autograd
def test_float32_gradient_matches_the_frameworks_own(rng):
    logits, labels = _data(rng, n=9, c=6)
    own_loss, own_grad = OWN[BACKEND](logits, labels)
    rtol = 1e-5 if BACKEND == "mxnet" else 1e-6  # Gluon's float32 log_softmax kernel
    np.testing.assert_allclose(
        F.cross_entropy(md.asarray(logits), md.asarray(labels)).item(), own_loss, rtol=rtol
    )
    np.testing.assert_allclose(_grad(logits, labels), own_grad, rtol=10 * rtol, atol=1e-7)


@needs_autograd
def test_training_with_the_loss_matches_the_composed_reference(rng):
    """Five SGD steps of a small MLP with the fused loss end where the same steps with the
    reference loss (one-hot times log_softmax, built from multidev ops) end."""
    X = rng.standard_normal((8, 4)).astype(np.float32)
    y = rng.integers(0, 3, 8)

    def composed(logits, labels):
        onehot = md.astype(md.expand_dims(labels, -1) == md.arange(3), md.float32)
        return -md.mean(md.sum(onehot * F.log_softmax(logits, -1), axis=-1))

    finals = []
    for loss_fn in (F.cross_entropy, composed):
        md.manual_seed(3)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        opt = md.optim.SGD(net.parameters(), lr=0.5)
        for _ in range(5):
            with md.autograd.record():
                loss = loss_fn(net(md.asarray(X)), md.asarray(y))
            loss.backward()
            opt.step()
            opt.zero_grad()
        finals.append([p.numpy() for p in net.parameters()])
    for a, b in zip(*finals, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ PyTorch: fused and traced

torch_only = pytest.mark.skipif(BACKEND != "torch", reason="needs MULTIDEV_BACKEND=torch")


@torch_only
def test_torch_runs_its_fused_kernel(rng):
    logits, labels = _data(rng)
    z = nn.Parameter(md.asarray(logits))
    with md.autograd.record():
        loss = F.cross_entropy(z, md.asarray(labels))
    assert loss.native.grad_fn.name() == "NllLossBackward0"


@torch_only
def test_torch_recorded_forward_and_loss_are_one_graph(rng):
    import torch

    md.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    X = md.asarray(rng.standard_normal((6, 4)).astype(np.float32))
    y = md.asarray(np.array([0, 1, 2, 2, 1, 0]))
    bk = X._bk

    def body(x, t):
        with md.autograd.record():
            loss = F.cross_entropy(
                net(md.Tensor(x, bk, X._dev, X._dtype)), md.Tensor(t, bk, y._dev, y._dtype)
            )
        return loss.native

    torch._dynamo.reset()
    result = torch._dynamo.explain(body)(X.native, y.native)
    assert (result.graph_count, result.graph_break_count) == (1, 0), result.break_reasons


@torch_only
def test_torch_jitted_training_step_matches_eager(rng, monkeypatch):
    monkeypatch.setenv("MULTIDEV_TORCH_COMPILE_BACKEND", "aot_eager")
    X = md.asarray(rng.standard_normal((6, 4)).astype(np.float32))
    y = md.asarray(np.array([0, 1, 2, 2, 1, 0]))
    runs = []
    for jit in (False, True):
        md.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        opt = md.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

        def step(X, y, net=net, opt=opt):
            with md.autograd.record():
                loss = F.cross_entropy(net(X), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        run = md.jit(step) if jit else step
        losses = [float(run(X, y)) for _ in range(3)]
        runs.append((losses, [p.numpy().copy() for p in net.parameters()]))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-6)
    for a, b in zip(runs[1][1], runs[0][1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
