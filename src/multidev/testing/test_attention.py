"""Section "attention": ``scaled_dot_product_attention`` (masks, causal), ``MultiheadAttention``,
``TransformerEncoderLayer``, ``LayerNorm``, ``GELU``, ``Softmax`` and ``one_hot``.

Values are compared with the NumPy reference backend (same seed, same weights; dropout in
training mode too, since masks come from multidev's host generator) and with the framework's
own code (the adapter's reference ``attention``, ``layer_norm``, ``gelu`` and, where the
framework has PyTorch's layer, ``mha`` entries), gradients included.
"""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn
from multidev.nn import functional as F

RTOL, ATOL = 1e-5, 1e-5
B, HEADS, L, S, E = 2, 2, 4, 5, 8


def _qkv(rng):
    return [
        rng.standard_normal(shape).astype(np.float32)
        for shape in ((B, HEADS, L, E), (B, HEADS, S, E), (B, HEADS, S, E))
    ]


def _key_mask(rng):
    m = rng.random((L, S)) > 0.3
    m[:, 0] = True  # every query attends to at least one key
    return m


MASKS = ["none", "bool", "causal"]


def _sdpa(mask_kind, q, k, v, *, mask):
    if mask_kind == "causal":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@pytest.mark.parametrize("mask_kind", MASKS)
def test_sdpa_matches_numpy_reference_backend(mask_kind, rng):
    q, k, v = _qkv(rng)
    mask = _key_mask(rng) if mask_kind == "bool" else None

    def run():
        return _sdpa(mask_kind, *(md.asarray(a) for a in (q, k, v)), mask=mask).numpy()

    got = run()
    with md.use_backend("numpy"):
        want = run()
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.requires("autograd")
@pytest.mark.parametrize("mask_kind", MASKS)
def test_sdpa_and_gradients_match_framework_code(mask_kind, rng, native_ops):
    q, k, v = _qkv(rng)
    mask = _key_mask(rng) if mask_kind == "bool" else None
    gy = rng.standard_normal((B, HEADS, L, E)).astype(np.float32)
    ps = [nn.Parameter(md.asarray(a)) for a in (q, k, v)]
    with md.autograd.record():
        out = _sdpa(mask_kind, *ps, mask=mask)
        loss = md.sum(out * md.asarray(gy))
    loss.backward()
    want = native_ops["attention"](q, k, v, mask, mask_kind == "causal", gy)
    np.testing.assert_allclose(out.numpy(), want[0], rtol=RTOL, atol=ATOL)
    for p, w in zip(ps, want[1:], strict=True):
        assert p.grad is not None
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-4, atol=1e-5)


def _masks(rng):
    kpm = np.zeros((B, S), bool)
    kpm[1, -2:] = True  # padded keys of the second sequence
    attn = ~_key_mask(rng)  # MultiheadAttention's bool masks: True = not attended
    return kpm, attn


def _mha_run(x, kpm, attn, batch_first=True, train=False, dropout=0.0):
    md.manual_seed(0)
    m = nn.MultiheadAttention(E, HEADS, dropout=dropout, batch_first=batch_first)
    m.train(train)
    xt = md.asarray(x if batch_first else x.transpose(1, 0, 2).copy())
    out, w = m(
        xt, xt, xt, key_padding_mask=md.asarray(kpm[:, :L]), attn_mask=md.asarray(attn[:, :L])
    )
    out = out.numpy() if batch_first else out.numpy().transpose(1, 0, 2)
    return out, w.numpy(), m


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_matches_numpy_reference_backend(batch_first, rng):
    x = rng.standard_normal((B, L, E)).astype(np.float32)
    kpm, attn = _masks(rng)
    got = _mha_run(x, kpm, attn, batch_first, train=True, dropout=0.3)[:2]
    with md.use_backend("numpy"):
        want = _mha_run(x, kpm, attn, batch_first, train=True, dropout=0.3)[:2]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def test_multihead_attention_matches_framework_layer(rng, native_ops):
    if "mha" not in native_ops:
        pytest.skip("the framework has no layer with PyTorch's MultiheadAttention parameters")
    x = rng.standard_normal((B, L, E)).astype(np.float32)
    kpm, attn = _masks(rng)
    out, w, m = _mha_run(x, kpm, attn)
    want_out, want_w = native_ops["mha"](
        x, *(p.numpy() for p in m.parameters()), HEADS, kpm[:, :L], attn[:, :L]
    )
    np.testing.assert_allclose(out, want_out, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(w, want_w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer_matches_numpy_reference_backend(norm_first, activation, rng):
    x = rng.standard_normal((B, L, E)).astype(np.float32)
    kpm = np.zeros((B, L), bool)
    kpm[0, -1] = True

    def run():
        md.manual_seed(0)
        layer = nn.TransformerEncoderLayer(
            E,
            HEADS,
            16,
            dropout=0.2,
            activation=activation,
            batch_first=True,
            norm_first=norm_first,
        )
        return layer(md.asarray(x), src_key_padding_mask=md.asarray(kpm), is_causal=True).numpy()

    got = run()
    with md.use_backend("numpy"):
        want = run()
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_layer_norm_gelu_softmax_match_framework_code(rng, native_ops):
    x = rng.standard_normal((3, 4, E)).astype(np.float32)
    w = rng.standard_normal(E).astype(np.float32)
    b = rng.standard_normal(E).astype(np.float32)
    ln = nn.LayerNorm(E)
    ln.weight.data = md.asarray(w)
    ln.bias.data = md.asarray(b)
    np.testing.assert_allclose(
        ln(md.asarray(x)).numpy(), native_ops["layer_norm"](x, w, b, 1e-5), rtol=RTOL, atol=ATOL
    )
    for approximate in ("none", "tanh"):
        np.testing.assert_allclose(
            nn.GELU(approximate)(md.asarray(x)).numpy(),
            native_ops["gelu"](x, approximate),
            rtol=RTOL,
            atol=ATOL,
        )
    np.testing.assert_allclose(
        nn.Softmax(1)(md.asarray(x)).numpy(), native_ops["softmax"](x, 1), rtol=RTOL, atol=ATOL
    )


def test_layer_norm_over_two_axes_matches_numpy_reference_backend(rng):
    x = rng.standard_normal((3, 4, E)).astype(np.float32)
    got = nn.LayerNorm((4, E))(md.asarray(x)).numpy()
    with md.use_backend("numpy"):
        want = nn.LayerNorm((4, E))(md.asarray(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    normalised = (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, normalised, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("eps", [1e-1, 1e-3])
def test_layer_norm_honours_a_non_default_eps(rng, eps, native_ops):
    """Inputs whose variance (~1e-4) is far below eps: an eps that is ignored or replaced by
    the default changes every output."""
    x = (1e-2 * rng.standard_normal((3, E))).astype(np.float32)
    w = rng.standard_normal(E).astype(np.float32)
    b = rng.standard_normal(E).astype(np.float32)
    ln = nn.LayerNorm(E, eps=eps)
    ln.weight.data = md.asarray(w)
    ln.bias.data = md.asarray(b)
    got = ln(md.asarray(x)).numpy()
    x64 = x.astype(np.float64)
    mean, var = x64.mean(-1, keepdims=True), x64.var(-1, keepdims=True)
    np.testing.assert_allclose(got, (x64 - mean) / np.sqrt(var + eps) * w + b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, native_ops["layer_norm"](x, w, b, eps), rtol=RTOL, atol=ATOL)
    functional = F.layer_norm(md.asarray(x), (E,), md.asarray(w), md.asarray(b), eps=eps)
    np.testing.assert_allclose(functional.numpy(), got, rtol=RTOL, atol=ATOL)


def test_one_hot():
    out = F.one_hot(md.asarray([2, 0, 1]), 4)
    assert out.dtype is md.int64
    np.testing.assert_array_equal(out.numpy(), np.eye(4, dtype=np.int64)[[2, 0, 1]])
    assert F.one_hot(md.asarray([[1], [3]])).shape == (2, 1, 4)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        F.one_hot(md.asarray([3]), 3)


def test_attention_errors_are_clear(rng):
    q, k, v = (md.asarray(a) for a in _qkv(rng))
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=md.ones((L, S)), is_causal=True)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="normalized_shape"):
        nn.LayerNorm(5)(md.zeros((2, 4)))


# ---------------------------------------------------------------- kdim / vdim

KDIM, VDIM = 3, 6


def _mha_kv_run(q, k, v, batch_first, average):
    md.manual_seed(0)
    m = nn.MultiheadAttention(E, HEADS, kdim=KDIM, vdim=VDIM, batch_first=batch_first)
    out, w = m(md.asarray(q), md.asarray(k), md.asarray(v), average_attn_weights=average)
    return out.numpy(), w.numpy(), m


def _kv_inputs(rng, batch_first):
    shapes = [(B, L, E), (B, S, KDIM), (B, S, VDIM)]
    ts = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return ts if batch_first else [t.transpose(1, 0, 2).copy() for t in ts]


def test_multihead_attention_kdim_vdim_parameters_are_pytorchs():
    m = nn.MultiheadAttention(E, HEADS, kdim=KDIM, vdim=VDIM)
    assert [n for n, _ in m.named_parameters()] == [
        "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
        "out_proj.weight", "out_proj.bias",
    ]  # fmt: skip
    assert m.in_proj_weight is None and not m._qkv_same_embed_dim
    assert m.k_proj_weight.shape == (E, KDIM) and m.v_proj_weight.shape == (E, VDIM)
    same = nn.MultiheadAttention(E, HEADS, kdim=E, vdim=E)
    assert same._qkv_same_embed_dim and same.in_proj_weight.shape == (3 * E, E)
    with pytest.raises(ValueError, match=f"key with {KDIM} features"):
        m(md.zeros((L, B, E)), md.zeros((S, B, E)), md.zeros((S, B, VDIM)))


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention_kdim_vdim_matches_numpy_reference_backend(batch_first, average, rng):
    q, k, v = _kv_inputs(rng, batch_first)
    got = _mha_kv_run(q, k, v, batch_first, average)[:2]
    assert got[1].shape == ((B, L, S) if average else (B, HEADS, L, S))
    with md.use_backend("numpy"):
        want = _mha_kv_run(q, k, v, batch_first, average)[:2]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention_kdim_vdim_matches_framework_layer(average, rng, native_ops):
    if "mha_kv" not in native_ops:
        pytest.skip("the framework has no layer with PyTorch's MultiheadAttention parameters")
    q, k, v = _kv_inputs(rng, False)
    out, w, m = _mha_kv_run(q, k, v, False, average)
    state = {k: v.numpy() for k, v in m.state_dict().items()}  # loads under torch's keys
    want_out, want_w = native_ops["mha_kv"](q, k, v, state, HEADS, False, average)
    np.testing.assert_allclose(out, want_out, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(w, want_w, rtol=RTOL, atol=ATOL)


def test_multihead_attention_need_weights_false_returns_none(rng):
    q, k, v = _kv_inputs(rng, True)
    md.manual_seed(0)
    m = nn.MultiheadAttention(E, HEADS, kdim=KDIM, vdim=VDIM, batch_first=True)
    out, w = m(md.asarray(q), md.asarray(k), md.asarray(v), need_weights=False)
    assert w is None
    np.testing.assert_allclose(
        out.numpy(), _mha_kv_run(q, k, v, True, True)[0], rtol=RTOL, atol=ATOL
    )


def test_transformer_stacks_copy_their_layer_and_respect_the_causal_mask(rng):
    """TransformerEncoder and TransformerDecoder start their layers as copies of the one
    given (as PyTorch's; nn.Transformer then draws every matrix anew); nn.Transformer's output
    has the target's shape, and a target position does not see the ones after it under
    generate_square_subsequent_mask."""
    for stack in (
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2),
        nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 2),
    ):
        sd = stack.state_dict()
        for key in [k for k in sd if k.startswith("layers.0.")]:
            other = key.replace("layers.0.", "layers.1.")
            np.testing.assert_array_equal(sd[key].numpy(), sd[other].numpy())
        assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight
    net = nn.Transformer(8, 2, 2, 2, 16, dropout=0.0)
    src = md.asarray(rng.standard_normal((5, 2, 8)).astype(np.float32))
    tgt = rng.standard_normal((4, 2, 8)).astype(np.float32)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    assert mask.shape == (4, 4) and float(mask[0, 1].item()) == -np.inf
    out = net(src, md.asarray(tgt), tgt_mask=mask)
    assert out.shape == (4, 2, 8)
    changed = tgt.copy()
    changed[3] += 1.0  # the last position: the first three outputs must not move
    again = net(src, md.asarray(changed), tgt_mask=mask)
    np.testing.assert_allclose(again.numpy()[:3], out.numpy()[:3], rtol=1e-5, atol=1e-6)
    assert not np.allclose(again.numpy()[3], out.numpy()[3])


@pytest.mark.requires("autograd")
def test_transformer_parameters_all_get_gradients(rng):
    net = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True, norm_first=True)
    src = md.asarray(rng.standard_normal((2, 5, 8)).astype(np.float32))
    tgt = md.asarray(rng.standard_normal((2, 4, 8)).astype(np.float32))
    net(src, tgt, tgt_is_causal=True, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4))
    with md.autograd.record():
        loss = (net(src, tgt) ** 2).mean()
    loss.backward()
    missing = [n for n, p in net.named_parameters() if p.grad is None]
    assert not missing, missing
