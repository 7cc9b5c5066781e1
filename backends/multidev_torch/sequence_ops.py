"""PyTorch lowerings of the sequence ops (``multidev.nn.sequence_functional``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["LOWERINGS"]


def _rnn(mode, x, h0, c0, weights, num_layers, bidirectional):
    """torch's fused RNN kernels (cuDNN on CUDA), time-major, no dropout (the core drops)."""
    has_biases = len(weights) // (num_layers * (2 if bidirectional else 1)) >= 4  # 5: w_hr too
    if mode == "lstm":
        y, h, c = torch._VF.lstm(
            x, (h0, c0), weights, has_biases, num_layers, 0.0, False, bidirectional, False
        )
        return y, h, c
    fn = {"gru": torch._VF.gru, "rnn_tanh": torch._VF.rnn_tanh, "rnn_relu": torch._VF.rnn_relu}
    y, h = fn[mode](x, h0, weights, has_biases, num_layers, 0.0, False, bidirectional, False)
    return y, h, None


#: op name -> lowering, passed to this adapter's op_table
LOWERINGS = {
    "embedding": lambda w, idx: F.embedding(idx, w),
    "one_hot": F.one_hot,
    "stop_gradient": torch.Tensor.detach,
    "layer_norm": lambda x, w, b, eps: F.layer_norm(x, (x.shape[-1],), w, b, eps),
    "gelu": lambda x, tanh: F.gelu(x, approximate="tanh" if tanh else "none"),
    "scaled_dot_product_attention": lambda q, k, v, mask, scale: F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, scale=scale
    ),
    "rnn": _rnn,
    "rnn_projected": _rnn,  # torch's LSTM kernel takes w_hr (h0 smaller than c0)
}
