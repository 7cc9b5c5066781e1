"""Section "init": ``nn.init`` fills Parameters and Tensors in place with PyTorch's formulas,
drawing from multidev's host generator, so a seed gives bit-identical values on every backend.

Expected values are computed here independently, with NumPy's PCG64 generator in float32.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.nn import init


def _uniform(seed: int, shape, lo: float, hi: float) -> np.ndarray:
    u = np.random.Generator(np.random.PCG64(seed)).random(shape, dtype=np.float32)
    u *= np.float32(hi - lo)
    u += np.float32(lo)
    return u


def _normal(seed: int, shape, mean: float, std: float) -> np.ndarray:
    z = np.random.Generator(np.random.PCG64(seed)).standard_normal(shape, dtype=np.float32)
    z *= np.float32(std)
    z += np.float32(mean)
    return z


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def _fresh(shape=(6, 5)) -> nn.Parameter:
    return nn.Parameter(md.zeros(shape))


# (init call, expected values from seed and shape (fan_in=5, fan_out=6))
_CASES = {
    "uniform_": (lambda p: init.uniform_(p, -2.0, 3.0), lambda s, sh: _uniform(s, sh, -2.0, 3.0)),
    "uniform_default": (init.uniform_, lambda s, sh: _uniform(s, sh, 0.0, 1.0)),
    "normal_": (
        lambda p: init.normal_(p, mean=1.0, std=0.01),
        lambda s, sh: _normal(s, sh, 1.0, 0.01),
    ),
    "normal_default": (init.normal_, lambda s, sh: _normal(s, sh, 0.0, 1.0)),
    "xavier_uniform_": (
        init.xavier_uniform_,
        lambda s, sh: _uniform(s, sh, -math.sqrt(6 / 11), math.sqrt(6 / 11)),
    ),
    "xavier_uniform_gain": (
        lambda p: init.xavier_uniform_(p, gain=2.0),
        lambda s, sh: _uniform(s, sh, -2 * math.sqrt(6 / 11), 2 * math.sqrt(6 / 11)),
    ),
    "xavier_normal_": (init.xavier_normal_, lambda s, sh: _normal(s, sh, 0.0, math.sqrt(2 / 11))),
    "kaiming_uniform_": (
        init.kaiming_uniform_,
        lambda s, sh: _uniform(
            s,
            sh,
            -math.sqrt(3.0) * math.sqrt(2.0) / math.sqrt(5),
            math.sqrt(3.0) * math.sqrt(2.0) / math.sqrt(5),
        ),
    ),
    "kaiming_uniform_fan_out_relu": (
        lambda p: init.kaiming_uniform_(p, mode="fan_out", nonlinearity="relu"),
        lambda s, sh: _uniform(
            s,
            sh,
            -math.sqrt(3.0) * math.sqrt(2.0) / math.sqrt(6),
            math.sqrt(3.0) * math.sqrt(2.0) / math.sqrt(6),
        ),
    ),
    "kaiming_normal_": (
        init.kaiming_normal_,
        lambda s, sh: _normal(s, sh, 0.0, math.sqrt(2.0) / math.sqrt(5)),
    ),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_random_initialisers_are_bit_identical_to_the_host_stream(name):
    call, expected = _CASES[name]
    p = _fresh()
    native = p.native
    md.manual_seed(11)
    assert call(p) is p
    np.testing.assert_array_equal(_bits(p.numpy()), _bits(expected(11, (6, 5))))
    assert p.native is native


def test_constant_zeros_ones():
    p = _fresh((3, 4))
    init.constant_(p, 42)
    np.testing.assert_array_equal(p.numpy(), np.full((3, 4), 42.0))
    init.ones_(p)
    np.testing.assert_array_equal(p.numpy(), np.ones((3, 4)))
    init.zeros_(p)
    np.testing.assert_array_equal(p.numpy(), np.zeros((3, 4)))
    t = md.zeros(5, dtype=md.int64)
    init.constant_(t, 7)
    assert t.dtype is md.int64
    np.testing.assert_array_equal(t.numpy(), np.full(5, 7))


def test_initialisers_work_in_place_on_plain_tensors():
    t = md.zeros((4, 3))
    md.manual_seed(5)
    assert init.normal_(t, std=2.0) is t
    np.testing.assert_array_equal(_bits(t.numpy()), _bits(_normal(5, (4, 3), 0.0, 2.0)))


def test_linear_default_initialisation_is_pytorchs():
    md.manual_seed(2)
    lin = nn.Linear(20, 7)
    bound = 1 / math.sqrt(20)
    w = lin.weight.numpy()
    b = lin.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    g = np.random.Generator(np.random.PCG64(2))
    wb = math.sqrt(3.0) * math.sqrt(2.0 / (1 + math.sqrt(5) ** 2)) / math.sqrt(20)
    want_w = g.random((7, 20), dtype=np.float32) * np.float32(2 * wb) + np.float32(-wb)
    want_b = g.random(7, dtype=np.float32) * np.float32(2 * bound) + np.float32(-bound)
    np.testing.assert_array_equal(_bits(w), _bits(want_w))
    np.testing.assert_array_equal(_bits(b), _bits(want_b))


def test_reset_parameters_redraws_with_the_default():
    md.manual_seed(4)
    lin = nn.Linear(3, 2)
    first = [p.numpy().copy() for p in lin.parameters()]
    md.manual_seed(4)
    lin.reset_parameters()
    for p, want in zip(lin.parameters(), first, strict=True):
        np.testing.assert_array_equal(_bits(p.numpy()), _bits(want))


def test_same_seed_same_model_and_different_seed_different_model():
    def params(seed):
        md.manual_seed(seed)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        return [p.numpy().copy() for p in net.parameters()]

    a, b, c = params(0), params(0), params(1)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(_bits(x), _bits(y))
    assert not np.array_equal(a[0], c[0])


def test_statistics_of_large_draws():
    p = _fresh((400, 500))
    init.normal_(p, mean=0.5, std=0.01)
    v = p.numpy()
    assert abs(v.mean() - 0.5) < 1e-3 and abs(v.std() - 0.01) < 1e-3
    init.xavier_uniform_(p)
    a = math.sqrt(6 / 900)
    v = p.numpy()
    assert np.abs(v).max() <= a and abs(v.std() - a / math.sqrt(3)) < 1e-3


def test_apply_with_the_books_initialisers():
    from multidev.examples.parameters import init_42, init_constant, init_normal, init_xavier

    md.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    net.apply(init_normal)
    assert np.abs(net[0].weight.numpy()).max() < 0.1
    assert not net[0].bias.numpy().any()
    net.apply(init_constant)
    np.testing.assert_array_equal(net[0].weight.numpy(), np.ones((8, 4)))
    net[0].apply(init_xavier)
    net[2].apply(init_42)
    assert np.abs(net[0].weight.numpy()).max() <= math.sqrt(6 / 12)
    assert not (net[0].weight.numpy() == 1).all()
    np.testing.assert_array_equal(net[2].weight.numpy(), np.full((1, 8), 42.0))


def test_my_init_zeroes_small_weights():
    md.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    seen = []

    def my_init(m):
        if type(m) is nn.Linear:
            name, param = next(m.named_parameters())
            seen.append((name, param.shape))
            nn.init.uniform_(m.weight, -10, 10)
            m.weight.data *= m.weight.data.abs() >= 5

    net.apply(my_init)
    assert seen == [("weight", (8, 4)), ("weight", (1, 8))]
    w = net[0].weight.numpy()
    assert ((np.abs(w) >= 5) | (w == 0)).all() and (w == 0).any()


def test_init_errors_say_what_was_expected():
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        init.xavier_uniform_(md.zeros(3))
    with pytest.raises(TypeError, match="floating-point"):
        init.uniform_(md.zeros(3, dtype=md.int32))
    with pytest.raises(ValueError, match="fan_in"):
        init.kaiming_normal_(md.zeros((2, 2)), mode="fan")
    with pytest.raises(TypeError, match=r"Parameter or md\.Tensor"):
        init.zeros_([1.0, 2.0])
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("leaky_relu", 0) == math.sqrt(2)
