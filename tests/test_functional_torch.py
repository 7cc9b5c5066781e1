"""multidev's ``nn.functional`` and layers against torch's own: ``F.interpolate`` (every
mode, many sizes and scale factors, both kinds of ``recompute_scale_factor``,
``align_corners``, float32 and float64) and the activations, values and gradients, and the
layers' printing."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import multidev as md  # noqa: E402
from multidev import registry  # noqa: E402

F = md.nn.functional

_MODES = {
    1: ["nearest", "nearest-exact", "linear", "area"],
    2: ["nearest", "nearest-exact", "bilinear", "bicubic", "area"],
    3: ["nearest", "nearest-exact", "trilinear", "area"],
}
_OPTIONS = [{"size": n} for n in (1, 2, 4, 6, 11)] + [
    {"scale_factor": s, "recompute_scale_factor": r}
    for s in (0.5, 0.7, 1.0, 1.3, 1.5, 2.0, 2.7)
    for r in (None, True)
]


def _cases(spatial: int):
    for mode in _MODES[spatial]:
        corners = [None, True] if mode in ("linear", "bilinear", "bicubic", "trilinear") else [None]
        for n in (1, 3, 5, 7):
            for options in _OPTIONS:
                for align_corners in corners:
                    yield mode, (2, 3) + (n,) * spatial, {**options, "align_corners": align_corners}


@pytest.fixture(params=["kernel", "composed"])
def resampling(request, monkeypatch):
    """Both of multidev's paths: the adapter's ``interpolate`` op where the backend has one
    (torch), and the gathers every other backend runs (the op taken away)."""
    if request.param == "composed":
        monkeypatch.setattr(registry.current().ops, "interpolate", None, raising=False)
    return request.param


@pytest.mark.parametrize("spatial", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_equal_torchs(spatial, dtype, resampling):
    rng = np.random.default_rng(spatial)
    tol = 1e-5 if dtype == np.float32 else 1e-12  # float32: the taps' sums round differently
    compared = 0
    for mode, shape, kwargs in _cases(spatial):
        x = rng.standard_normal(shape).astype(dtype)
        try:
            want = torch.nn.functional.interpolate(torch.from_numpy(x), mode=mode, **kwargs)
        except (RuntimeError, ValueError):  # an output size of 0: refused by both
            with pytest.raises(ValueError, match="at least"):
                F.interpolate(md.asarray(x), mode=mode, **kwargs)
            continue
        got = F.interpolate(md.asarray(x), mode=mode, **kwargs)
        assert got.shape == tuple(want.shape), (mode, shape, kwargs)
        np.testing.assert_allclose(
            got.numpy(), want.numpy(), rtol=tol, atol=tol, err_msg=f"{mode} {shape} {kwargs}"
        )
        compared += 1
    assert compared > 200


@pytest.mark.parametrize(
    ("mode", "shape", "kwargs"),
    [
        ("nearest", (1, 2, 5, 4), {"scale_factor": 1.7}),
        ("linear", (1, 2, 5), {"size": 9, "align_corners": False}),
        ("bilinear", (1, 2, 5, 4), {"scale_factor": (0.6, 2.5)}),
        ("bilinear", (1, 2, 5, 4), {"size": (3, 7), "align_corners": True}),
        ("bicubic", (1, 2, 5, 4), {"size": (8, 3)}),
        ("trilinear", (1, 2, 3, 4, 2), {"scale_factor": 1.5}),
        ("area", (1, 2, 7, 6), {"size": (3, 4)}),
    ],
)
def test_gradients_equal_torchs(mode, shape, kwargs, resampling):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(shape).astype(np.float32)
    t = torch.from_numpy(x0).requires_grad_()
    want = torch.nn.functional.interpolate(t, mode=mode, **kwargs)
    g = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    (want * torch.from_numpy(g)).sum().backward()
    x = md.tensor(x0, requires_grad=True)
    (F.interpolate(x, mode=mode, **kwargs) * md.asarray(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)


#: name -> extra arguments after the input
_ACTIVATIONS = {
    "relu": (),
    "relu6": (),
    "elu": (0.7,),
    "celu": (0.6,),
    "selu": (),
    "silu": (),
    "mish": (),
    "gelu": (),
    "leaky_relu": (0.2,),
    "hardtanh": (-0.5, 1.5),
    "hardsigmoid": (),
    "hardswish": (),
    "softplus": (2.0, 3.0),
    "softsign": (),
    "tanhshrink": (),
    "logsigmoid": (),
    "threshold": (0.3, -2.0),
    "glu": (1,),
    "softmin": (1,),
    "normalize": (),
}


@pytest.mark.parametrize("name", sorted(_ACTIVATIONS))
def test_activations_equal_torchs(name):
    rng = np.random.default_rng(1)
    x0 = (rng.standard_normal((4, 6)) * 3).astype(np.float32)
    g = rng.standard_normal((4, 6)).astype(np.float32)
    args = _ACTIVATIONS[name]
    t = torch.from_numpy(x0).requires_grad_()
    want = getattr(torch.nn.functional, name)(t, *args)
    (want * torch.from_numpy(g[:, : want.shape[1]])).sum().backward()
    x = md.tensor(x0, requires_grad=True)
    got = getattr(F, name)(x, *args)
    (got * md.asarray(g[:, : got.shape[1]])).sum().backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_prelu_equals_torchs():
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((3, 4, 5)).astype(np.float32)
    ours, theirs = md.nn.PReLU(4, 0.1), torch.nn.PReLU(4, 0.1)
    x, t = md.tensor(x0, requires_grad=True), torch.from_numpy(x0).requires_grad_()
    ours(x).sum().backward()
    theirs(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-5)


def test_the_layers_print_as_torchs():
    for md_layer, torch_layer in [
        (md.nn.ReLU(inplace=True), torch.nn.ReLU(inplace=True)),
        (md.nn.LeakyReLU(0.2, True), torch.nn.LeakyReLU(0.2, True)),
        (md.nn.ELU(), torch.nn.ELU()),
        (md.nn.CELU(0.5), torch.nn.CELU(0.5)),
        (md.nn.Hardtanh(-2.0, 2.0), torch.nn.Hardtanh(-2.0, 2.0)),
        (md.nn.ReLU6(), torch.nn.ReLU6()),
        (md.nn.Hardswish(), torch.nn.Hardswish()),
        (md.nn.Threshold(0.1, 20.0), torch.nn.Threshold(0.1, 20.0)),
        (md.nn.PReLU(3), torch.nn.PReLU(3)),
        (md.nn.Softplus(), torch.nn.Softplus()),
        (md.nn.Softmin(1), torch.nn.Softmin(1)),
        (md.nn.GLU(), torch.nn.GLU()),
        (md.nn.PixelShuffle(2), torch.nn.PixelShuffle(2)),
        (md.nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2)),
        (md.nn.Upsample(size=(3, 4), mode="bicubic"), torch.nn.Upsample((3, 4), mode="bicubic")),
        (md.nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3)),
        (md.nn.UpsamplingBilinear2d(size=5), torch.nn.UpsamplingBilinear2d(size=5)),
    ]:
        assert repr(md_layer) == repr(torch_layer)


_LAYERS = [
    ("MaxPool1d", (3,), {}, (2, 3, 10)),
    ("MaxPool1d", (3, 2, 1), {"dilation": 2, "ceil_mode": True}, (2, 3, 11)),
    ("AvgPool1d", (4, 2, 2), {"count_include_pad": False}, (2, 3, 9)),
    ("AvgPool1d", (3,), {"ceil_mode": True}, (3, 10)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 10)),
    ("ZeroPad2d", ((1, 2, 0, 3),), {}, (2, 3, 4, 5)),
    ("ConstantPad1d", (2, 3.5), {}, (2, 3, 4)),
    ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), -1.0), {}, (1, 2, 3, 4, 5)),
    ("ReflectionPad1d", (2,), {}, (2, 3, 5)),
    ("ReflectionPad2d", ((1, 2, 2, 1),), {}, (2, 3, 4, 5)),
    ("ReplicationPad2d", (2,), {}, (2, 3, 4, 5)),
    ("ReplicationPad3d", (1,), {}, (1, 2, 3, 4, 5)),
    ("CircularPad1d", ((1, 2),), {}, (2, 3, 4)),
    ("Unflatten", (1, (2, 6)), {}, (3, 12, 2)),
    ("RMSNorm", ((4, 5),), {}, (2, 3, 4, 5)),
    ("RMSNorm", (5,), {"eps": 1e-3, "elementwise_affine": False}, (2, 3, 5)),
]


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "shape"), _LAYERS, ids=[f"{c[0]}-{i}" for i, c in enumerate(_LAYERS)]
)
def test_layers_equal_torchs(name, args, kwargs, shape):
    """The layer's output, input gradient and printing equal torch's layer of the same name."""
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal(shape).astype(np.float32)
    ours, theirs = getattr(md.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    t = torch.from_numpy(x0).requires_grad_()
    want = theirs(t)
    g = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    (want * torch.from_numpy(g)).sum().backward()
    x = md.tensor(x0, requires_grad=True)
    got = ours(x)
    (got * md.asarray(g)).sum().backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_max_pool1d_indices_equal_torchs():
    x0 = np.random.default_rng(4).standard_normal((2, 3, 11)).astype(np.float32)
    got = F.max_pool1d(md.asarray(x0), 3, 2, 1, return_indices=True)
    want = torch.nn.functional.max_pool1d(torch.from_numpy(x0), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


def _loss_inputs(rng):
    a, b, c = (rng.standard_normal((5, 4)).astype(np.float32) for _ in range(3))
    sign = np.where(rng.random(5) > 0.5, 1.0, -1.0).astype(np.float32)
    signs = np.where(rng.random((5, 4)) > 0.5, 1.0, -1.0).astype(np.float32)
    labels = (rng.random((5, 4)) > 0.5).astype(np.float32)
    counts = rng.poisson(2.0, (5, 4)).astype(np.float32)
    var = (rng.random((5, 4)) + 0.05).astype(np.float32)
    var[0, 0] = 1e-8  # below eps: clamped
    return {
        "margin_ranking_loss": ((a[:, 0], b[:, 0], sign), {"margin": 0.3}, 2),
        "hinge_embedding_loss": ((a, signs), {"margin": 0.5}, 1),
        "soft_margin_loss": ((a, signs), {}, 1),
        "cosine_embedding_loss": ((a, b, sign), {"margin": 0.1}, 2),
        "triplet_margin_loss": ((a, b, c), {"margin": 0.5, "swap": True}, 3),
        "triplet_margin_loss p1": ((a, b, c), {"p": 1.0}, 3),
        "pairwise_distance": ((a, b), {"keepdim": True}, 2),
        "gaussian_nll_loss": ((a, b, var), {"full": True}, 3),
        "gaussian_nll_loss per row": ((a, b, var[:, 0]), {"reduction": "sum"}, 3),
        "poisson_nll_loss": ((a, counts), {}, 1),
        "poisson_nll_loss full": ((np.abs(a), counts), {"log_input": False, "full": True}, 1),
        "multilabel_soft_margin_loss": ((a, labels), {"reduction": "none"}, 1),
    }


@pytest.mark.parametrize("case", sorted(_loss_inputs(np.random.default_rng(0))))
def test_losses_equal_torchs(case):
    """Values, and the gradients of the inputs torch differentiates (not the targets)."""
    args, kwargs, n = _loss_inputs(np.random.default_rng(5))[case]
    name = case.split()[0]
    ts = [torch.from_numpy(a).requires_grad_(i < n) for i, a in enumerate(args)]
    want = getattr(torch.nn.functional, name)(*ts, **kwargs)
    want.sum().backward()
    xs = [md.tensor(a, requires_grad=True) for a in args]
    got = getattr(F, name)(*xs, **kwargs)
    got.sum().backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    for x, t in zip(xs[:n], ts[:n], strict=True):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_loss_layers_print_as_torchs():
    for name in [
        "MarginRankingLoss",
        "HingeEmbeddingLoss",
        "SoftMarginLoss",
        "CosineEmbeddingLoss",
        "TripletMarginLoss",
        "PairwiseDistance",
        "GaussianNLLLoss",
        "PoissonNLLLoss",
        "MultiLabelSoftMarginLoss",
    ]:
        assert repr(getattr(md.nn, name)()) == repr(getattr(torch.nn, name)())


@pytest.mark.parametrize("name", ["RNNCell", "GRUCell", "LSTMCell"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_equal_torchs(name, batched):
    """The same parameters give torch's next state and input gradient; printing as torch's."""
    rng = np.random.default_rng(6)
    ours, theirs = getattr(md.nn, name)(4, 3), getattr(torch.nn, name)(4, 3)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    with torch.no_grad():
        for k, v in ours.state_dict().items():
            theirs.state_dict()[k].copy_(torch.from_numpy(v.numpy()))
    shape = (2, 4) if batched else (4,)
    x0 = rng.standard_normal(shape).astype(np.float32)
    h0 = rng.standard_normal((*shape[:-1], 3)).astype(np.float32)
    lstm = name == "LSTMCell"
    t = torch.from_numpy(x0).requires_grad_()
    th = torch.from_numpy(h0)
    want = theirs(t, (th, th * 0.5) if lstm else th)
    x = md.tensor(x0, requires_grad=True)
    h = md.asarray(h0)
    got = ours(x, (h, h * 0.5) if lstm else h)
    wants, gots = (want, got) if lstm else ((want,), (got,))
    sum(w.sum() for w in wants).backward()
    md.sum(md.stack([g.sum() for g in gots])).backward()
    for g, w in zip(gots, wants, strict=True):
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert repr(md.nn.RNNCell(2, 3, bias=False, nonlinearity="relu")) == repr(
        torch.nn.RNNCell(2, 3, bias=False, nonlinearity="relu")
    )


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((2, 3, 6, 7), {"kernel_size": 3}),
        ((2, 3, 6, 7), {"kernel_size": (2, 3), "stride": 2, "padding": 1}),
        ((1, 2, 9, 8), {"kernel_size": 3, "dilation": (2, 1), "stride": (1, 3), "padding": (2, 0)}),
        ((3, 5, 5), {"kernel_size": 2}),
    ],
)
def test_unfold_and_fold_equal_torchs(shape, kwargs):
    rng = np.random.default_rng(7)
    x0 = rng.standard_normal(shape).astype(np.float32)
    t = torch.from_numpy(x0).requires_grad_()
    want = torch.nn.functional.unfold(t, **kwargs)
    x = md.tensor(x0, requires_grad=True)
    got = F.unfold(x, **kwargs)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-6)
    g = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    (want * torch.from_numpy(g)).sum().backward()
    (got * md.asarray(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    back = torch.nn.functional.fold(torch.from_numpy(g), shape[-2:], **kwargs)
    np.testing.assert_allclose(
        F.fold(md.asarray(g), shape[-2:], **kwargs).numpy(), back.numpy(), rtol=1e-5, atol=1e-6
    )
    assert repr(md.nn.Unfold(**kwargs)) == repr(torch.nn.Unfold(**kwargs))
    assert repr(md.nn.Fold(shape[-2:], **kwargs)) == repr(torch.nn.Fold(shape[-2:], **kwargs))


@pytest.mark.parametrize("options", [{}, {"batch_first": True, "norm_first": True}])
def test_transformer_equals_torchs(options):
    """nn.Transformer (encoder and decoder stacks with their final norms): the same state-dict
    keys and printing; with md's parameters loaded into torch, the same output and input
    gradients under a causal target mask and padding masks."""
    rng = np.random.default_rng(8)
    kw = {
        "d_model": 8,
        "nhead": 2,
        "num_encoder_layers": 2,
        "num_decoder_layers": 2,
        "dim_feedforward": 16,
        "dropout": 0.0,
        **options,
    }
    ours, theirs = md.nn.Transformer(**kw), torch.nn.Transformer(**kw)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    b = options.get("batch_first", False)
    src0 = rng.standard_normal((2, 5, 8) if b else (5, 2, 8)).astype(np.float32)
    tgt0 = rng.standard_normal((2, 4, 8) if b else (4, 2, 8)).astype(np.float32)
    pad = np.array([[False] * 5, [False] * 3 + [True] * 2])
    t_src, t_tgt = torch.from_numpy(src0).requires_grad_(), torch.from_numpy(tgt0)
    want = theirs(
        t_src,
        t_tgt,
        tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4),
        src_key_padding_mask=torch.from_numpy(pad),
        memory_key_padding_mask=torch.from_numpy(pad),
    )
    src = md.tensor(src0, requires_grad=True)
    got = ours(
        src,
        md.asarray(tgt0),
        tgt_mask=md.nn.Transformer.generate_square_subsequent_mask(4),
        src_key_padding_mask=md.asarray(pad),
        memory_key_padding_mask=md.asarray(pad),
    )
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    (want * torch.from_numpy(g)).sum().backward()
    (got * md.asarray(g)).sum().backward()
    np.testing.assert_allclose(src.grad.numpy(), t_src.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("name", "kwargs", "shape", "channels"),
    [
        ("InstanceNorm1d", {}, (2, 3, 7), 3),
        ("InstanceNorm2d", {"affine": True}, (2, 3, 4, 5), 3),
        ("InstanceNorm2d", {"track_running_stats": True, "momentum": 0.3}, (2, 3, 4, 5), 3),
        ("InstanceNorm3d", {"affine": True, "track_running_stats": True}, (3, 2, 3, 4), 3),
    ],
)
def test_instance_norm_equals_torchs(name, kwargs, shape, channels):
    """Training output, input gradient, running statistics after two steps, eval output and
    printing, from the same parameters."""
    rng = np.random.default_rng(9)
    ours = getattr(md.nn, name)(channels, **kwargs)
    theirs = getattr(torch.nn, name)(channels, **kwargs)
    assert repr(ours) == repr(theirs)
    if ours.weight is not None:
        with torch.no_grad():
            theirs.weight.copy_(torch.from_numpy(rng.standard_normal(ours.num_features)))
            ours.weight[...] = md.asarray(theirs.weight.detach().numpy())
    for _ in range(2):
        x0 = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
        t = torch.from_numpy(x0).requires_grad_()
        want = theirs(t)
        want.pow(2).sum().backward()
        x = md.tensor(x0, requires_grad=True)
        got = ours(x)
        (got**2).sum().backward()
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-5)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(
        ours(md.asarray(x0)).numpy(),
        theirs(torch.from_numpy(x0)).detach().numpy(),
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize(
    ("name", "size", "shape"),
    [
        ("AdaptiveMaxPool2d", (3, 4), (2, 3, 7, 9)),
        ("AdaptiveMaxPool2d", 2, (2, 3, 8, 6)),
        ("AdaptiveMaxPool2d", (None, 2), (3, 5, 7)),
        ("AdaptiveMaxPool1d", 4, (2, 3, 10)),
    ],
)
def test_adaptive_max_pool_equals_torchs(name, size, shape):
    rng = np.random.default_rng(10)
    x0 = rng.standard_normal(shape).astype(np.float32)
    ours, theirs = getattr(md.nn, name)(size), getattr(torch.nn, name)(size)
    assert repr(ours) == repr(theirs)
    t = torch.from_numpy(x0).requires_grad_()
    want = theirs(t)
    want.sum().backward()
    x = md.tensor(x0, requires_grad=True)
    got = ours(x)
    got.sum().backward()
    np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
