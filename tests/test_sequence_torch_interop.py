"""The sequence layers against ``torch.nn`` (runs where PyTorch is installed): a seeded multidev
model's state dict has torch's keys and shapes, loads into the torch layer, and gives the same
outputs; ``print(net)`` matches torch's."""

from __future__ import annotations

import numpy as np
import pytest

import multidev as md
from multidev import nn

torch = pytest.importorskip("torch")
tnn = torch.nn


def _pairs():
    return [
        (
            lambda m: m.GRU(4, 3, num_layers=2, bidirectional=True, batch_first=True),
            "seq",
        ),
        (lambda m: m.LSTM(4, 3, 2, dropout=0.2), "seq"),
        (lambda m: m.RNN(4, 3, 1, "relu", bias=False), "seq"),
        (lambda m: m.Embedding(10, 4, padding_idx=0), "idx"),
        (lambda m: m.LayerNorm(4), "seq"),
        (lambda m: m.GELU("tanh"), "seq"),
        (lambda m: m.Softmax(1), "seq"),
        (lambda m: m.MultiheadAttention(4, 2), "mha"),
        (
            lambda m: m.TransformerEncoderLayer(4, 2, 8, batch_first=True, norm_first=True),
            "seq",
        ),
        (lambda m: m.TransformerEncoderLayer(4, 2, 8, activation="gelu"), "seq"),
    ]


def _flat(out):
    if isinstance(out, tuple):
        return [t for o in out if o is not None for t in _flat(o)]
    return [out]


@pytest.mark.parametrize("index", range(len(_pairs())))
def test_state_dict_loads_into_torch_and_outputs_match(index):
    make, kind = _pairs()[index]
    md.manual_seed(0)
    net = make(nn)
    ref = make(tnn)
    assert repr(net) == repr(ref)
    sd = net.state_dict()
    tsd = ref.state_dict()
    assert list(sd) == list(tsd)
    assert [tuple(v.shape) for v in sd.values()] == [tuple(v.shape) for v in tsd.values()]
    ref.load_state_dict({k: torch.from_numpy(np.array(v.numpy())) for k, v in sd.items()})
    net.eval()
    ref.eval()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 4)).astype(np.float32)
    if kind == "idx":
        idx = np.array([[0, 3, 9], [1, 1, 0]])
        got, want = net(md.asarray(idx)), ref(torch.from_numpy(idx))
    elif kind == "mha":
        kpm = np.zeros((5, 2), bool)
        kpm[1, 1] = True
        attn = np.array([[False, True], [False, False]])
        got = net(
            *(md.asarray(x),) * 3, key_padding_mask=md.asarray(kpm), attn_mask=md.asarray(attn)
        )
        want = ref(
            *(torch.from_numpy(x),) * 3,
            key_padding_mask=torch.from_numpy(kpm),
            attn_mask=torch.from_numpy(attn),
        )
    else:
        got, want = net(md.asarray(x)), ref(torch.from_numpy(x))
    for g, w in zip(_flat(got), _flat(want), strict=True):
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_default_initialisation_has_torchs_ranges():
    md.manual_seed(0)
    gru = nn.GRU(8, 16, num_layers=2)
    bound = 1 / np.sqrt(16)
    for p in gru.parameters():
        v = p.numpy()
        assert np.abs(v).max() <= bound and np.abs(v).max() > 0.8 * bound
    mha = nn.MultiheadAttention(8, 2)
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()
    xavier = np.sqrt(6 / (8 + 24))
    assert np.abs(mha.in_proj_weight.numpy()).max() <= xavier
    emb = nn.Embedding(1000, 8)
    assert abs(float(emb.weight.numpy().std()) - 1.0) < 0.05
