"""Convolution, pooling, normalisation and padding (DESIGN §11) on the active backend:
forward against the NumPy definitions, gradients against central differences, layers'
buffers, checkpoints and errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from multidev_numpy import cnn as ref

import multidev as md
from multidev import nn
from multidev.nn import functional as F

RNG = np.random.default_rng(0)
HAS_AUTOGRAD = md.asarray(0.0).backend in md.autograd.autograd_backends()


def _a(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


CONV_CASES = [
    # (in, out, k, stride, padding, dilation, groups)
    (4, 6, 3, 1, 0, 1, 1),
    (4, 6, 3, 2, 1, 1, 2),
    (4, 4, 3, 1, "same", 2, 4),
    (4, 6, (2, 3), 1, "same", 1, 1),
    (4, 6, (2, 3), (1, 2), (1, 0), 1, 1),
    (4, 6, 3, 1, "valid", (2, 1), 2),
]


def _pads(padding, k, d):
    k = (k, k) if isinstance(k, int) else k
    d = (d, d) if isinstance(d, int) else d
    if padding == "same":
        return tuple(
            (dd * (kk - 1) // 2, dd * (kk - 1) - dd * (kk - 1) // 2)
            for kk, dd in zip(k, d, strict=True)
        )
    p = 0 if padding == "valid" else padding
    p = (p, p) if isinstance(p, int) else p
    return tuple((v, v) for v in p)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _naive_conv2d(x, w, b, stride, pads, dilation, groups):
    """Cross-correlation written out one output position at a time, independent of
    multidev_numpy.cnn (which the other tests take as the definition): a padding or
    dilation bug in that definition shows here."""
    (pt, pb), (pl, pr) = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    cout, cin_g, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], cout, oh, ow))
    per = cout // groups
    for o in range(cout):
        g = o // per
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    g * cin_g : (g + 1) * cin_g,
                    i * sh : i * sh + dh * (kh - 1) + 1 : dh,
                    j * sw : j * sw + dw * (kw - 1) + 1 : dw,
                ]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3)) + b[o]
    return out


@pytest.mark.parametrize("cin,cout,k,stride,padding,dilation,groups", CONV_CASES)
def test_conv2d_and_its_definition_match_a_plain_loop(
    cin, cout, k, stride, padding, dilation, groups
):
    x, w, b = _a(2, cin, 7, 8), _a(cout, cin // groups, *_pair(k)), _a(cout)
    args = (_pair(stride), _pads(padding, k, dilation), _pair(dilation), groups)
    want = _naive_conv2d(x, w, b, *args)
    np.testing.assert_allclose(ref.conv2d(x, w, b, *args), want, rtol=1e-4, atol=1e-4)
    got = F.conv2d(md.asarray(x), md.asarray(w), md.asarray(b), stride, padding, dilation, groups)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_uneven_same_padding_puts_the_extra_row_after():
    """An even kernel under "same" pads one more at the end (torch's rule): checked on values
    against the plain loop with explicit (top, bottom) = (0, 1) pads."""
    x, w, b = _a(1, 2, 5, 6), _a(3, 2, 2, 2), _a(3)
    got = F.conv2d(md.asarray(x), md.asarray(w), md.asarray(b), 1, "same").numpy()
    want = _naive_conv2d(x, w, b, (1, 1), ((0, 1), (0, 1)), (1, 1), 1)
    assert got.shape == (1, 3, 5, 6)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    flipped = _naive_conv2d(x, w, b, (1, 1), ((1, 0), (1, 0)), (1, 1), 1)
    assert not np.allclose(got, flipped, atol=1e-3)


@pytest.mark.parametrize("cin,cout,k,stride,padding,dilation,groups", CONV_CASES)
def test_conv2d_matches_the_definition(cin, cout, k, stride, padding, dilation, groups):
    x, w, b = _a(2, cin, 9, 10), _a(cout, cin // groups, *_pair(k)), _a(cout)
    got = F.conv2d(md.asarray(x), md.asarray(w), md.asarray(b), stride, padding, dilation, groups)
    want = ref.conv2d(x, w, b, _pair(stride), _pads(padding, k, dilation), _pair(dilation), groups)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_conv1d_is_conv2d_of_unit_height():
    x, w = _a(2, 4, 11), _a(6, 2, 3)
    got = F.conv1d(md.asarray(x), md.asarray(w), None, 2, 1, 2, 2)
    want = ref.conv2d(x[:, :, None], w[:, :, None], None, (1, 2), ((0, 0), (1, 1)), (1, 2), 2)
    np.testing.assert_allclose(got.numpy(), want[:, :, 0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (2, 1, 1, 2, 1), (2, 0, 0, 1, 2), (3, 2, 2, 2, 1),
])  # fmt: skip
def test_conv_transpose2d_matches_the_definition(stride, padding, output_padding, groups, dilation):
    x, w, b = _a(2, 4, 5, 6), _a(4, 3, 3, 3), _a(3 * groups)
    got = F.conv_transpose2d(
        md.asarray(x), md.asarray(w), md.asarray(b), stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip
    want = ref.conv_transpose2d(
        x, w, b, _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation), groups
    )
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def _avg_reference(x, k, s, p, count_include_pad):
    pads = ((p, p), (p, p))
    total = ref._windows(ref._padded(x, pads), (k, k), (s, s)).sum(axis=(4, 5))
    if count_include_pad:
        return total / (k * k)
    ones = np.ones_like(x[:1, :1])
    count = ref._windows(ref._padded(ones, pads), (k, k), (s, s)).sum(axis=(4, 5))
    return total / count


@pytest.mark.parametrize("k,s,p", [(2, 2, 0), (3, 2, 1), (3, 1, 1), (2, 1, 0)])
def test_pooling_matches_the_definition(k, s, p):
    x = _a(2, 3, 9, 8)
    got = F.max_pool2d(md.asarray(x), k, s, p)
    want = ref.max_pool2d(x, (k, k), (s, s), ((p, p), (p, p)))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    for include in (True, False):
        got = F.avg_pool2d(md.asarray(x), k, s, p, count_include_pad=include)
        np.testing.assert_allclose(
            got.numpy(), _avg_reference(x, k, s, p, include), rtol=1e-5, atol=1e-6
        )


def test_max_pool2d_ceil_mode_keeps_the_partial_last_window():
    x = _a(1, 2, 7, 7)
    got = F.max_pool2d(md.asarray(x), 2, 2, ceil_mode=True)
    assert got.shape == (1, 2, 4, 4)
    np.testing.assert_allclose(got.numpy()[..., -1, -1], x[..., -1, -1])


def test_adaptive_avg_pool2d_averages_pytorch_windows():
    x = _a(2, 3, 7, 6)
    got = F.adaptive_avg_pool2d(md.asarray(x), (3, 2)).numpy()
    for i in range(3):
        h0, h1 = (i * 7) // 3, -(-((i + 1) * 7) // 3)
        np.testing.assert_allclose(got[:, :, i, 0], x[:, :, h0:h1, :3].mean(axis=(2, 3)), rtol=1e-5)
    np.testing.assert_allclose(
        F.adaptive_avg_pool2d(md.asarray(x), 1).numpy()[:, :, 0, 0], x.mean(axis=(2, 3)), rtol=1e-5
    )


def test_batch_norm_training_normalises_and_updates_running_statistics():
    x, w, b = _a(4, 3, 5, 5), _a(3), _a(3)
    rm, rv = md.zeros((3,)), md.ones((3,))
    got = F.batch_norm(md.asarray(x), rm, rv, md.asarray(w), md.asarray(b), True, 0.1, 1e-5)
    np.testing.assert_allclose(
        got.numpy(), ref.batch_norm(x, None, None, w, b, 1e-5), rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(rm.numpy(), 0.1 * x.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        rv.numpy(), 0.9 + 0.1 * x.var(axis=(0, 2, 3), ddof=1), rtol=1e-5, atol=1e-7
    )
    got = F.batch_norm(md.asarray(x), rm, rv, None, None, False)
    want = ref.batch_norm(x, rm.numpy(), rv.numpy(), None, None, 1e-5)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


def test_group_norm_normalises_each_group():
    x, w, b = _a(2, 6, 4, 3), _a(6), _a(6)
    got = F.group_norm(md.asarray(x), 3, md.asarray(w), md.asarray(b)).numpy()
    g = x.reshape(2, 3, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(
        x.shape
    ) * w.reshape(1, 6, 1, 1) + b.reshape(1, 6, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"),
                                          ("replicate", "edge")])  # fmt: skip
def test_pad_matches_numpy(mode, np_mode):
    x = _a(2, 3, 4, 5)
    kwargs = {"constant_values": 2.5} if mode == "constant" else {}
    got = F.pad(md.asarray(x), (1, 2, 3, 0), mode, 2.5 if mode == "constant" else None)
    np.testing.assert_array_equal(
        got.numpy(), np.pad(x, ((0, 0), (0, 0), (3, 0), (1, 2)), np_mode, **kwargs)
    )


# ---------------------------------------------------------------- gradients

GRAD_CASES = {
    "conv2d groups dilation same": lambda x, w: F.conv2d(x, w, None, 1, "same", 2, 2),
    "conv2d stride padding": lambda x, w: F.conv2d(x, w, None, 2, 1, 1, 2),
    "conv_transpose2d": lambda x, w: F.conv_transpose2d(
        x, w.reshape(4, 3, 3, 3)[:, :2], None, 2, 1, 1
    ),
    "max_pool2d": lambda x, w: F.max_pool2d(F.conv2d(x, w, groups=2), 3, 2, 1, ceil_mode=True),
    "avg_pool2d": lambda x, w: F.avg_pool2d(
        F.conv2d(x, w, groups=2), 3, 2, 1, count_include_pad=False
    ),
    "batch_norm": lambda x, w: F.batch_norm(F.conv2d(x, w, groups=2), None, None, training=True),
    "group_norm": lambda x, w: F.group_norm(F.conv2d(x, w, groups=2), 3),
    "adaptive_avg_pool2d": lambda x, w: F.adaptive_avg_pool2d(F.conv2d(x, w, groups=2), (2, 3)),
}


@pytest.mark.skipif(not HAS_AUTOGRAD, reason="the backend has no autograd")
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_central_differences(name):
    fn = GRAD_CASES[name]
    x0 = RNG.standard_normal((2, 4, 8, 9))
    w0 = RNG.standard_normal((6, 2, 3, 3))
    probe = RNG.standard_normal(fn(md.asarray(x0), md.asarray(w0)).shape)
    x, w = md.nn.Parameter(md.asarray(x0)), md.nn.Parameter(md.asarray(w0))
    with md.autograd.record():
        loss = (fn(x, w) * md.asarray(probe)).sum()
    loss.backward()
    for t, base, other in ((x, x0, w0), (w, w0, x0)):
        v = RNG.standard_normal(base.shape)
        eps = 1e-6

        def f(a, t=t, other=other):
            args = (a, other) if t is x else (other, a)
            return float((fn(md.asarray(args[0]), md.asarray(args[1])).numpy() * probe).sum())

        numeric = (f(base + eps * v) - f(base - eps * v)) / (2 * eps)
        analytic = float((t.grad.numpy() * v).sum())
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-6), name


# ---------------------------------------------------------------- layers and buffers


def _cnn():
    md.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16, 3), nn.BatchNorm1d(3),
    )  # fmt: skip


def test_batchnorm_buffers_are_state_and_update_only_in_training():
    net = _cnn()
    keys = list(net.state_dict())
    assert keys[:7] == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                        "1.running_var", "1.num_batches_tracked"]  # fmt: skip
    assert [n for n, _ in net.named_buffers()] == [
        "1.running_mean", "1.running_var", "1.num_batches_tracked",
        "6.running_mean", "6.running_var", "6.num_batches_tracked",
    ]  # fmt: skip
    bn = net[1]
    x = md.asarray(_a(5, 2, 4, 4))
    net.eval()
    net(x)
    assert bn.num_batches_tracked.item() == 0
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(4, np.float32))
    net.train()
    net(x)
    net(x)
    assert bn.num_batches_tracked.item() == 2
    assert bn.num_batches_tracked.dtype == md.int64
    assert np.abs(bn.running_mean.numpy()).max() > 0
    assert not np.allclose(bn.running_var.numpy(), 1.0)


def test_buffers_survive_save_load_deepcopy_and_to(tmp_path):
    net = _cnn()
    net.train()
    net(md.asarray(_a(5, 2, 4, 4)))
    net.register_buffer("scratch", md.ones((2,)), persistent=False)
    assert "scratch" not in net.state_dict()
    md.save(net.state_dict(), tmp_path / "cnn.safetensors")
    other = _cnn()
    other.load_state_dict(md.load(tmp_path / "cnn.safetensors"))
    for (k, a), (_, b) in zip(net.state_dict().items(), other.state_dict().items(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    clone = copy.deepcopy(net)
    clone(md.asarray(_a(5, 2, 4, 4)))
    assert clone[1].num_batches_tracked.item() == 2
    assert net[1].num_batches_tracked.item() == 1
    assert net.to(md.asarray(0.0).device) is net
    assert net[1].running_mean.device == net[0].weight.device
    net.eval()
    np.testing.assert_allclose(net(md.asarray(_a(2, 2, 4, 4))).shape, (2, 3))


def test_lazy_layers_infer_their_input_size():
    conv, bn = nn.LazyConv2d(5, 3, padding=1), nn.LazyBatchNorm2d()
    y = bn(conv(md.asarray(_a(2, 3, 6, 6))))
    assert type(conv) is nn.Conv2d and conv.weight.shape == (5, 3, 3, 3)
    assert type(bn) is nn.BatchNorm2d and bn.running_mean.shape == (5,)
    assert y.shape == (2, 5, 6, 6)


def test_print_matches_pytorch():
    net = nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.BatchNorm2d(6), nn.MaxPool2d(2), nn.AvgPool2d(2),
        nn.Conv2d(6, 6, 3, padding="same", groups=3, bias=False, dilation=2),
        nn.ConvTranspose2d(6, 2, 2, stride=2), nn.GroupNorm(2, 2), nn.AdaptiveAvgPool2d((1, 1)),
        nn.Conv1d(2, 2, 3), nn.Identity(),
    )  # fmt: skip
    assert repr(net).splitlines()[1:-1] == [
        "  (0): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))",
        "  (1): BatchNorm2d(6, eps=1e-05, momentum=0.1, affine=True, bias=True, "
        "track_running_stats=True)",
        "  (2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
        "  (3): AvgPool2d(kernel_size=2, stride=2, padding=0)",
        "  (4): Conv2d(6, 6, kernel_size=(3, 3), stride=(1, 1), padding=same, dilation=(2, 2), "
        "groups=3, bias=False)",
        "  (5): ConvTranspose2d(6, 2, kernel_size=(2, 2), stride=(2, 2))",
        "  (6): GroupNorm(2, 2, eps=1e-05, affine=True, bias=True)",
        "  (7): AdaptiveAvgPool2d(output_size=(1, 1))",
        "  (8): Conv1d(2, 2, kernel_size=(3,), stride=(1,))",
        "  (9): Identity()",
    ]


def test_conv_default_init_bounds_follow_fan_in():
    md.manual_seed(0)
    conv = nn.Conv2d(4, 8, 3, groups=2)
    bound = 1 / np.sqrt(2 * 3 * 3)
    assert conv.weight.shape == (8, 2, 3, 3)
    assert np.abs(conv.weight.numpy()).max() <= bound
    assert np.abs(conv.bias.numpy()).max() <= bound


def test_bad_inputs_raise_clear_errors():
    conv = nn.Conv2d(3, 4, 3)
    with pytest.raises(ValueError, match="in_channels"):
        conv(md.asarray(_a(1, 2, 5, 5)))
    with pytest.raises(ValueError, match="4-D input"):
        conv(md.asarray(_a(2, 5, 5)))
    with pytest.raises(ValueError, match="stride 1 with padding='same'"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(md.asarray(_a(1, 3)))
    with pytest.raises(ValueError, match="4D input"):
        nn.BatchNorm2d(3)(md.asarray(_a(2, 3)))


def test_deepcopy_gives_independent_parameters_on_the_same_backend():
    net = _cnn()
    clone = copy.deepcopy(net)
    clone[0].weight.data[0, 0, 0, 0] = 42.0
    assert net[0].weight.numpy()[0, 0, 0, 0] != 42.0
    assert clone(md.asarray(_a(2, 2, 4, 4))).shape == (2, 3)
    lazy = copy.deepcopy(nn.LazyConv2d(3, 1))
    assert lazy(md.asarray(_a(1, 2, 3, 3))).shape == (1, 3, 3, 3)
