"""Section "recurrent": ``nn.RNN``, ``nn.GRU`` and ``nn.LSTM`` (multi-layer, bidirectional,
batch-first) and ``nn.Embedding``.

Forward values are compared with the NumPy reference backend (same seed, same weights) and,
with gradients, with the framework's own recurrent layer loaded with the same weights
(``torch.nn.GRU``, Keras ``GRU``, ``paddle.nn.GRU``, Gluon ``rnn.GRU``; the adapter's
reference ``rnn_layer`` entry).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import multidev as md
from multidev import nn

RTOL, ATOL = 1e-5, 1e-5
LAYERS = {"rnn_tanh": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}
#: (mode, num_layers, bidirectional, batch_first)
CONFIGS = [
    ("gru", 2, True, True),
    ("lstm", 2, True, False),
    ("rnn_tanh", 2, True, True),
    ("gru", 1, False, False),
    ("lstm", 1, False, True),
]
IDS = [f"{m}-l{n}-{'bi' if b else 'uni'}-{'bf' if f else 'tf'}" for m, n, b, f in CONFIGS]
IN, H, N, T = 4, 3, 2, 5


def _layer(mode, num_layers, bidirectional, batch_first, **kw):
    md.manual_seed(0)
    return LAYERS[mode](
        IN, H, num_layers, batch_first=batch_first, bidirectional=bidirectional, **kw
    )


def _input(rng, batch_first):
    x = rng.standard_normal((N, T, IN)).astype(np.float32)
    return x if batch_first else x.transpose(1, 0, 2).copy()


def _run(cfg, x, train=False, **kw):
    layer = _layer(*cfg, **kw)
    layer.train(train)
    y, state = layer(md.asarray(x))
    states = state if isinstance(state, tuple) else (state,)
    return [y.numpy(), *(s.numpy() for s in states)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_forward_matches_numpy_reference_backend(cfg, rng):
    x = _input(rng, cfg[3])
    got = _run(cfg, x)
    with md.use_backend("numpy"):
        want = _run(cfg, x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def test_dropout_between_layers_matches_numpy_reference_backend(rng):
    """Inter-layer dropout draws from multidev's host generator: the same on every backend."""
    cfg = ("lstm", 3, True, True)
    x = _input(rng, True)
    got = _run(cfg, x, train=True, dropout=0.5)
    with md.use_backend("numpy"):
        want = _run(cfg, x, train=True, dropout=0.5)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    evaluated = _run(cfg, x, train=False, dropout=0.5)
    assert not np.allclose(got[0], evaluated[0])


@pytest.mark.requires("autograd")
@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_forward_and_gradients_match_framework_layer(cfg, rng, native_ops):
    mode, num_layers, bidirectional, batch_first = cfg
    layer = _layer(*cfg)
    x = _input(rng, True)  # the framework layers run batch-first
    dirs = 2 if bidirectional else 1
    gy = rng.standard_normal((N, T, H * dirs)).astype(np.float32)
    xp = nn.Parameter(md.asarray(x if batch_first else x.transpose(1, 0, 2).copy()))
    with md.autograd.record():
        y = layer(xp)[0]
        if not batch_first:
            y = md.transpose(y, 0, 1)
        loss = md.sum(y * md.asarray(gy))
    loss.backward()
    weights = [p.numpy() for p in layer.parameters()]
    want_y, want_dx, *want_dw = native_ops["rnn_layer"](
        mode, x, weights, num_layers, bidirectional, gy
    )
    np.testing.assert_allclose(y.numpy(), want_y, rtol=RTOL, atol=ATOL)
    assert xp.grad is not None
    dx = xp.grad.numpy() if batch_first else xp.grad.numpy().transpose(1, 0, 2)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-5)
    for (name, p), w in zip(layer.named_parameters(), want_dw, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-4, atol=1e-5, err_msg=name)


def test_parameter_names_and_shapes_are_pytorchs():
    gru = nn.GRU(IN, H, num_layers=2, bidirectional=True)
    names = [n for n, _ in gru.named_parameters()]
    expected = [
        f"{kind}_l{layer}{sfx}"
        for layer in range(2)
        for sfx in ("", "_reverse")
        for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    ]
    assert names == expected
    assert gru.weight_ih_l0.shape == (3 * H, IN)
    assert gru.weight_ih_l1.shape == (3 * H, 2 * H)
    assert nn.LSTM(IN, H).weight_hh_l0.shape == (4 * H, H)
    assert repr(gru) == f"GRU({IN}, {H}, num_layers=2, bidirectional=True)"


def test_carried_state_continues_the_sequence(rng):
    """Running two halves, passing (h, c) on, equals running the whole sequence."""
    lstm = _layer("lstm", 2, False, True)
    x = md.asarray(_input(rng, True))
    y, (h, c) = lstm(x)
    y1, state = lstm(x[:, :2])
    y2, (h2, c2) = lstm(x[:, 2:], state)
    np.testing.assert_allclose(md.concat([y1, y2], axis=1).numpy(), y.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(h2.numpy(), h.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(c2.numpy(), c.numpy(), rtol=RTOL, atol=ATOL)


def test_unbatched_input(rng):
    gru = _layer("gru", 1, True, False)
    x = rng.standard_normal((T, IN)).astype(np.float32)
    y, h = gru(md.asarray(x))
    yb, _ = gru(md.asarray(x[:, None]))
    assert y.shape == (T, 2 * H) and h.shape == (2, H)
    np.testing.assert_allclose(y.numpy(), yb.numpy()[:, 0], rtol=RTOL, atol=ATOL)


def test_recurrent_errors_are_clear(rng):
    gru = nn.GRU(IN, H)
    with pytest.raises(ValueError, match="input_size=4"):
        gru(md.asarray(rng.standard_normal((T, N, IN + 1)).astype(np.float32)))
    with pytest.raises(TypeError, match=r"hx=\(h0, c0\)"):
        nn.LSTM(IN, H)(md.zeros((T, N, IN)), md.zeros((1, N, H)))
    with pytest.raises(ValueError, match="hidden_size"):
        nn.GRU(IN, 0)


def test_embedding_matches_framework_and_padding_row_gets_no_gradient(rng, native_ops):
    md.manual_seed(0)
    emb = nn.Embedding(10, 4, padding_idx=0)
    assert not emb.weight.numpy()[0].any()
    idx = np.array([[0, 3, 9], [3, 1, 0]])
    out = emb(md.asarray(idx))
    np.testing.assert_allclose(out.numpy(), native_ops["embedding"](idx, emb.weight.numpy()))
    if "autograd" in md.registry.current().capabilities:
        with md.autograd.record():
            loss = md.sum(emb(md.asarray(idx)))
        loss.backward()
        assert emb.weight.grad is not None
        grad = emb.weight.grad.numpy()
        assert not grad[0].any()
        np.testing.assert_allclose(grad[3], np.full(4, 2.0))
    with pytest.raises(IndexError, match=r"\[0, 10\)"):
        emb(md.asarray([10]))


def test_embedding_gradient_sums_the_upstream_rows_except_the_padding_row(rng):
    """A weighted loss: each row's gradient is the sum of the upstream gradients of the
    positions that looked it up, computed here with NumPy; the padding row (given as -1,
    i.e. the last row) gets none."""
    if "autograd" not in md.registry.current().capabilities:
        pytest.skip("the backend has no autograd")
    emb = nn.Embedding(6, 3, padding_idx=-1)
    idx = np.array([[5, 2, 2], [0, 5, 4]])
    upstream = rng.standard_normal((2, 3, 3)).astype(np.float32)
    with md.autograd.record():
        loss = md.sum(emb(md.asarray(idx)) * md.asarray(upstream))
    loss.backward()
    want = np.zeros((6, 3), np.float32)
    np.add.at(want, idx.reshape(-1), upstream.reshape(-1, 3))
    want[5] = 0
    assert emb.weight.grad is not None
    np.testing.assert_allclose(emb.weight.grad.numpy(), want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- LSTM projections

PROJ = 2


def _projected(num_layers, bidirectional, batch_first=True):
    md.manual_seed(0)
    return nn.LSTM(
        IN, H, num_layers, batch_first=batch_first, bidirectional=bidirectional, proj_size=PROJ
    )


def test_lstm_projection_parameters_are_pytorchs():
    lstm = _projected(2, True)
    names = [n for n, _ in lstm.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert lstm.weight_hh_l0.shape == (4 * H, PROJ)
    assert lstm.weight_hr_l0_reverse.shape == (PROJ, H)
    assert lstm.weight_ih_l1.shape == (4 * H, 2 * PROJ)
    assert repr(lstm) == (
        f"LSTM({IN}, {H}, proj_size={PROJ}, num_layers=2, batch_first=True, bidirectional=True)"
    )
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        nn.LSTM(IN, H, proj_size=H)
    with pytest.raises(ValueError, match="LSTM only"):
        nn.GRU(IN, H, proj_size=1)


@pytest.mark.parametrize("num_layers,bidirectional", [(1, False), (2, True)])
def test_lstm_projection_matches_numpy_reference_backend(num_layers, bidirectional, rng):
    x = _input(rng, True)

    def run():
        y, (h, c) = _projected(num_layers, bidirectional)(md.asarray(x))
        return y.numpy(), h.numpy(), c.numpy()

    got = run()
    dirs = 2 if bidirectional else 1
    assert got[0].shape == (N, T, PROJ * dirs)
    assert got[1].shape == (num_layers * dirs, N, PROJ)
    assert got[2].shape == (num_layers * dirs, N, H)
    with md.use_backend("numpy"):
        want = run()
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.requires("autograd")
def test_lstm_projection_and_gradients_match_framework_layer(rng, native_ops):
    if "lstm_projected_layer" not in native_ops:
        pytest.skip("the framework has no LSTM layer with PyTorch's projection")
    lstm = _projected(2, True)
    x = _input(rng, True)
    gy = rng.standard_normal((N, T, 2 * PROJ)).astype(np.float32)
    xp = nn.Parameter(md.asarray(x))
    with md.autograd.record():
        loss = md.sum(lstm(xp)[0] * md.asarray(gy))
    loss.backward()
    state = {k: v.numpy() for k, v in lstm.state_dict().items()}  # loads under torch's keys
    want_y, want_dx, *want_dw = native_ops["lstm_projected_layer"](x, state, 2, True, PROJ, gy)
    np.testing.assert_allclose(lstm(md.asarray(x))[0].numpy(), want_y, rtol=RTOL, atol=ATOL)
    assert xp.grad is not None
    np.testing.assert_allclose(xp.grad.numpy(), want_dx, rtol=1e-4, atol=1e-5)
    for (name, p), w in zip(lstm.named_parameters(), want_dw, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize(
    ("cell", "layer"),
    [("RNNCell", "RNN"), ("GRUCell", "GRU"), ("LSTMCell", "LSTM")],
)
def test_cells_step_as_their_layers(cell, layer, rng):
    """A cell run step by step over a sequence gives the states of the layer with the same
    parameters over that sequence (batched and unbatched), and its parameters are PyTorch's."""
    c = getattr(nn, cell)(4, 3)
    assert [(k, v.shape) for k, v in c.state_dict().items()] == [
        ("weight_ih", (c.weight_ih.shape[0], 4)),
        ("weight_hh", (c.weight_hh.shape[0], 3)),
        ("bias_ih", (c.weight_ih.shape[0],)),
        ("bias_hh", (c.weight_ih.shape[0],)),
    ]
    full = getattr(nn, layer)(4, 3)
    full.load_state_dict({k + "_l0": v for k, v in c.state_dict().items()})
    x = md.asarray(rng.standard_normal((5, 2, 4)).astype(np.float32))
    y, final = full(x)
    state: Any = None
    for t in range(5):
        state = c(x[t], state)
        h = state[0] if cell == "LSTMCell" else state
        np.testing.assert_allclose(h.numpy(), y[t].numpy(), rtol=1e-5, atol=1e-6)
    if cell == "LSTMCell":
        np.testing.assert_allclose(state[1].numpy(), final[1][0].numpy(), rtol=1e-5, atol=1e-6)
    one = c(x[0, 0])
    assert (one[0] if cell == "LSTMCell" else one).shape == (3,)
    with pytest.raises(md.ShapeError, match=r"hidden state.* of shape \(2, 3\)"):
        c(x[0], md.zeros((2, 4)) if cell != "LSTMCell" else (md.zeros((2, 4)), md.zeros((2, 4))))
