"""Training on the active backend: optimisers against PyTorch's own (when torch is importable),
optimiser and gradient API details, the no-autograd error, ``net.native`` details, and the
training examples with their cross-backend comparison."""

from __future__ import annotations

import json

import numpy as np
import pytest

import multidev as md
from multidev import nn, registry
from multidev.examples import linear_regression, mlp_classifier
from multidev.nn import functional as F
from multidev.testing import native_reference, train_compare

BK = registry.current()
needs_autograd = pytest.mark.skipif(
    "autograd" not in BK.capabilities, reason=f"{BK.name} adapter lacks capability 'autograd'"
)


class MLP(nn.Block):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(5, 16)
        self.out = nn.Linear(16, 3)

    def forward(self, X):
        return self.out(F.relu(self.hidden(X)))


# ------------------------------------------------------------------ against torch.optim


def _torch_twin(torch, net):
    twin = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for (_, p), t in zip(net.named_parameters(), twin.parameters(), strict=True):
            t.copy_(torch.from_numpy(np.array(p.numpy())))
    return twin


@needs_autograd
@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [
        ("SGD", {"lr": 0.1}),
        ("SGD", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}),
        ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
        ("Adam", {"lr": 0.01}),
        ("Adam", {"lr": 0.01, "betas": (0.8, 0.95), "eps": 1e-6, "weight_decay": 0.1}),
    ],
)
def test_training_matches_torch_optim(kind, kwargs):
    torch = pytest.importorskip("torch")
    md.manual_seed(3)
    net = MLP()
    twin = _torch_twin(torch, net)
    opt = getattr(md.optim, kind)(net.parameters(), **kwargs)
    topt = getattr(torch.optim, kind)(twin.parameters(), **kwargs)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.standard_normal((8, 5)).astype(np.float32)
        y = rng.integers(0, 3, 8)
        with md.autograd.record():
            loss = F.cross_entropy(net(md.asarray(x)), md.asarray(y))
        loss.backward()
        opt.step()
        opt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(twin(torch.from_numpy(x)), torch.from_numpy(y))
        topt.zero_grad()
        tloss.backward()
        topt.step()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    for p, t in zip(net.parameters(), twin.parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ optimisers (any backend)


def test_steps_with_assigned_gradients_follow_pytorchs_sgd_rule():
    p = nn.Parameter(md.asarray([[1.0, -2.0], [0.5, 3.0]]))
    opt = md.optim.SGD([p], lr=0.1, momentum=0.5, weight_decay=0.1)
    grads = [np.array([[0.1, 0.2], [0.3, 0.4]], np.float32), np.full((2, 2), -1.0, np.float32)]
    want = p.numpy().copy()
    buf = None
    for g in grads:
        p.grad = md.asarray(g)
        opt.step()
        d = g + 0.1 * want
        buf = d if buf is None else 0.5 * buf + d
        want = want - 0.1 * buf
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-6)


def test_parameters_without_gradients_are_left_alone():
    a, b = nn.Parameter(md.ones(3)), nn.Parameter(md.ones(3))
    opt = md.optim.Adam([a, b], lr=0.1)
    a.grad = md.ones(3)
    opt.step()
    np.testing.assert_allclose(a.numpy(), [0.9, 0.9, 0.9], rtol=1e-6)
    np.testing.assert_array_equal(b.numpy(), [1.0, 1.0, 1.0])
    assert b not in opt.state


def test_zero_grad_and_param_groups():
    a, b = nn.Parameter(md.ones(2)), nn.Parameter(md.ones(2))
    opt = md.optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0]
    a.grad = md.ones(2)
    b.grad = md.ones(2)
    opt.param_groups[0]["lr"] = 0.5
    opt.step()
    np.testing.assert_allclose(a.numpy(), [0.5, 0.5])
    np.testing.assert_allclose(b.numpy(), [0.0, 0.0])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    assert "Parameter Group 1" in repr(opt) and "lr: 1.0" in repr(opt)


def test_optimiser_argument_errors():
    p = nn.Parameter(md.ones(2))
    with pytest.raises(ValueError, match="at least one parameter"):
        md.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match=r"Wrap it in a list: \[p\]"):
        md.optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match=r"nn\.Parameter"):
        md.optim.SGD([md.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="appears twice"):
        md.optim.SGD([p, p], lr=0.1)
    with pytest.raises(ValueError, match="Expected lr"):
        md.optim.SGD([p], lr=-1.0)
    with pytest.raises(ValueError, match="Expected betas"):
        md.optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(TypeError, match="hyperparameters"):
        md.optim.SGD([{"params": [p], "momentun": 0.9}], lr=0.1)


def test_assigning_a_gradient_checks_its_shape():
    p = nn.Parameter(md.ones((2, 3)))
    with pytest.raises(ValueError, match=r"shape \(2, 3\).*\(3, 2\)"):
        p.grad = md.ones((3, 2))
    p.grad = np.full((2, 3), 2.0)
    assert p.grad.dtype is md.float32 and p.grad.device is p.device
    p.grad = None
    assert p.grad is None


# ------------------------------------------------------------------ autograd API details


def test_no_grad_and_record_are_context_managers_on_every_backend():
    assert md.no_grad is md.autograd.no_grad
    rec = md.autograd.record()
    with rec:
        assert md.autograd.is_recording() == ("autograd" in BK.capabilities)
        with pytest.raises(RuntimeError, match="already entered"), rec:
            pass
    assert not md.autograd.is_recording()


@needs_autograd
def test_backward_on_an_integer_tensor_is_refused():
    with pytest.raises(md.AutogradError, match="floating-point"):
        md.sum(md.arange(3)).backward()


def test_numpy_backend_says_it_has_no_autograd_and_names_those_that_do():
    with md.use_backend("numpy"):
        with md.autograd.record():
            loss = F.mse_loss(nn.Linear(2, 1)(md.ones((3, 2))), md.zeros((3, 1)))
        with pytest.raises(md.AutogradError) as info:
            loss.backward()
    message = str(info.value)
    assert "numpy backend, which has no autograd" in message
    with_autograd = [
        n
        for n in md.available_backends()
        if n != "numpy" and "autograd" in registry.load(n).capabilities
    ]
    for name in with_autograd:
        assert name in message
    if not with_autograd:
        assert "No backend with autograd is installed" in message
    if "torch" in md.available_backends():
        assert "MULTIDEV_BACKEND=" in message and "torch" in message


# ------------------------------------------------------------------ net.native


@needs_autograd
def test_native_module_trains_with_the_frameworks_optimiser_over_many_steps():
    md.manual_seed(0)
    ops = native_reference(BK)
    net = MLP()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 5)).astype(np.float32)
    y = (x @ rng.standard_normal((5, 3))).astype(np.float32)
    losses = [float(ops["native_sgd_step"](net.native, x, y, 0.1)) for _ in range(30)]
    assert losses[-1] < 0.3 * losses[0]
    np.testing.assert_allclose(
        F.mse_loss(net(md.asarray(x)), md.asarray(y)).item(),
        float(ops["native_sgd_step"](net.native, x, y, 0.0)),
        rtol=1e-6,
    )


def test_torch_native_names_print_and_train_mode():
    if BK.name != "torch":
        pytest.skip("torch-specific view of net.native")
    net = nn.Sequential(MLP(), nn.Dropout(0.5), nn.Linear(3, 1))
    native = net.native
    assert [n for n, _ in native.named_parameters()] == [n for n, _ in net.named_parameters()]
    assert repr(native) == repr(net)
    native.eval()
    assert not net[1].training and not net.training
    native.train()
    assert net[1].training


def test_native_train_and_eval_switch_every_block():
    if BK.name not in ("torch", "paddle"):
        pytest.skip("torch and Paddle modules have train()/eval()")
    net = nn.Sequential(nn.Sequential(MLP(), nn.Dropout(0.5)), nn.Linear(3, 1))
    native = net.native
    blocks = [m for _, m in net.named_modules()]
    assert native.eval() is native
    assert not native.training and not any(b.training for b in blocks)
    assert native.train() is native
    assert native.training and all(b.training for b in blocks)
    native.train(False)
    assert not native.training and not any(b.training for b in blocks)


@pytest.mark.parametrize("name", ["submodules", "collect_params", "hybridize", "name"])
def test_native_refuses_names_the_framework_module_uses(name):
    reserved = {"tensorflow": ("submodules", "name"), "mxnet": ("collect_params", "hybridize")}
    if name not in reserved.get(BK.name, ()):
        pytest.skip("a name this backend's module class does not use")
    net = nn.Sequential()
    setattr(net, name, nn.Linear(2, 1))
    with pytest.raises(ValueError, match=f"'{name}' in Sequential. Rename"):
        _ = net.native
    assert nn.Sequential(nn.Linear(2, 1)).native is not None


def test_native_needs_a_framework_backend():
    with md.use_backend("numpy"), pytest.raises(TypeError, match="numpy backend"):
        _ = nn.Linear(2, 1).native


# ------------------------------------------------------------------ examples


@needs_autograd
def test_linear_regression_example_reaches_its_threshold(capsys):
    assert linear_regression.main() == 0
    out = capsys.readouterr().out
    assert "epoch 3, loss" in out and "threshold 0.001: ok" in out


@needs_autograd
def test_mlp_classifier_example_reaches_its_threshold(capsys):
    assert mlp_classifier.main() == 0
    assert "threshold 0.1: ok" in capsys.readouterr().out


def _result(backend, losses, threshold=1.0):
    return {"backend": backend, "examples": {"ex": {"losses": losses, "threshold": threshold}}}


def test_train_compare_check_finds_disagreement_and_missed_thresholds(tmp_path):
    same = [_result("a", [1.0, 0.5]), _result("b", [1.0, 0.50001])]
    problems, lines = train_compare.check(same, rtol=1e-4)
    assert problems == [] and "largest relative difference 2e-05" in lines[0]
    off = [_result("a", [1.0, 0.5]), _result("b", [1.0, 0.51])]
    problems, _ = train_compare.check(off, rtol=1e-4)
    assert len(problems) == 1 and "epoch 2" in problems[0]
    high = [_result("a", [1.0, 0.5], threshold=0.1)]
    problems, _ = train_compare.check(high)
    assert any("not below the threshold" in p for p in problems)
    short = [_result("a", [1.0, 0.5]), _result("b", [1.0])]
    assert any("epochs" in p for p in train_compare.check(short)[0])
    files = []
    for r in off:
        files.append(tmp_path / f"{r['backend']}.json")
        files[-1].write_text(json.dumps(r))
    assert train_compare.main(["check", *map(str, files)]) == 1
