"""What only makes sense for the JAX adapter: immutable arrays rebound by in-place writes,
Parameters as Variables, bounds-checked indexing (JAX clamps), the tape of ``jax.vjp`` against
``jax.grad``, float64, and the devices from ``jax.devices()``."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import multidev as md  # noqa: E402
from multidev import nn, registry  # noqa: E402

BK = registry.load("jax")


@pytest.fixture(autouse=True)
def _jax_backend():
    with md.use_backend("jax"):
        yield


def test_tensors_are_jax_arrays_and_float64_exists():
    x = md.asarray([1.0, 2.0], dtype=md.float64)
    assert isinstance(x.native, jax.Array)
    assert x.native.dtype == jnp.float64
    assert md.asarray(np.arange(3)).dtype is md.int64


def test_a_write_rebinds_the_tensor_to_a_new_array():
    x = md.zeros(3)
    before = x.native
    x[1] = 5.0
    assert x.native is not before  # JAX arrays are immutable
    np.testing.assert_array_equal(np.asarray(before), [0, 0, 0])
    np.testing.assert_array_equal(x.numpy(), [0, 5, 0])


def test_a_write_through_p_data_is_seen_by_every_user_of_the_parameter():
    lin = nn.Linear(2, 2)
    p = lin.weight
    var = p.native
    p.data[0, 0] = 42.0
    assert p.native is var  # the same Variable, holding a new array
    assert float(p[0, 0].item()) == 42.0
    assert BK.is_trainable_variable(var)


def test_indices_out_of_range_raise_instead_of_clamping():
    x = md.arange(3)
    with pytest.raises(IndexError):
        _ = x[5]
    with pytest.raises(IndexError):
        _ = x[md.asarray([0, 3])]
    with pytest.raises(IndexError):
        x[md.asarray([-4])] = 1


def test_to_the_same_device_is_the_same_object():
    x = md.ones(2)
    assert x.to(x.device) is x
    assert md.try_gpu() == (md.gpu(0) if md.num_gpus() else md.cpu())


def test_several_cpu_devices_keep_arrays_where_they_are():
    if md.Device("cpu", 1) not in md.devices():
        pytest.skip("JAX's runtime started with one CPU device")
    x = md.ones(2, device="cpu:1")
    assert x.device == md.Device("cpu", 1)
    assert (x + x).device == md.Device("cpu", 1)
    assert x.native.devices() == {jax.devices("cpu")[1]}
    with pytest.raises(md.DeviceMismatchError):
        _ = x + md.ones(2)


def test_tape_gradients_equal_jax_grad():
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    x0 = rng.standard_normal((5, 4)).astype(np.float32)
    w = nn.Parameter(md.asarray(w0))
    with md.autograd.record():
        y = md.tanh(md.asarray(x0) @ w.T)
        loss = md.sum(y * y) / 2 + md.mean(md.exp(w))
    loss.backward()

    def f(w):
        y = jnp.tanh(x0 @ w.T)
        return jnp.sum(y * y) / 2 + jnp.mean(jnp.exp(w))

    np.testing.assert_allclose(w.grad.numpy(), jax.grad(f)(jnp.asarray(w0)), rtol=1e-5, atol=1e-6)


def test_an_op_that_returns_its_input_keeps_the_gradient_path():
    w = nn.Parameter(md.ones((2, 3)))
    with md.autograd.record():
        y = md.reshape(w, (2, 3))  # JAX returns the very array for a reshape to the same shape
        loss = md.sum(y * 3.0)
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 3), 3.0))


def test_nothing_is_recorded_under_no_grad():
    w = nn.Parameter(md.ones(2))
    with md.autograd.record(), md.no_grad():
        loss = md.sum(w * 2.0)
    with pytest.raises(md.AutogradError):
        loss.backward()


def test_an_sgd_step_updates_the_variable_in_place():
    lin = nn.Linear(3, 1)
    var = lin.weight.native
    opt = md.optim.SGD(lin.parameters(), lr=0.5)
    with md.autograd.record():
        loss = md.sum(lin(md.ones((2, 3))))
    loss.backward()
    before = lin.weight.numpy().copy()
    grad = lin.weight.grad.numpy()
    opt.step()
    assert lin.weight.native is var
    np.testing.assert_allclose(lin.weight.numpy(), before - 0.5 * grad, rtol=1e-6)


def _train(jit: bool, opt_class, steps: int = 4):
    md.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = opt_class(net.parameters(), lr=0.1)
    x = md.asarray(np.linspace(-1, 1, 40, dtype=np.float32).reshape(10, 4))
    y = md.sum(x, axis=1, keepdims=True)

    def step(x, y):
        with md.autograd.record():
            loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    run = md.jit(step) if jit else step
    losses = [float(run(x, y).item()) for _ in range(steps)]
    return losses, net[0].weight.numpy(), net[0].weight.native


def test_md_jit_compiles_the_training_step_with_the_parameters_passed_functionally():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", md.JitWarning)  # compiled, not run eagerly
        got, w_got, var = _train(True, md.optim.SGD)
    want, w_want, _ = _train(False, md.optim.SGD)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(w_got, w_want, rtol=1e-5, atol=1e-6)
    assert isinstance(var.value, jax.Array) and not isinstance(var.value, jax.core.Tracer)


def test_a_step_that_falls_back_to_eager_is_not_applied_twice():
    with pytest.warns(md.JitWarning, match="Python values"):  # Adam's step counter
        got, w_got, _ = _train(True, md.optim.Adam)
    want, w_want, _ = _train(False, md.optim.Adam)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(w_got, w_want, rtol=1e-5, atol=1e-6)
