"""The sequence and attention layers, gathered for ``multidev.nn``."""

from __future__ import annotations

from .attention import MultiheadAttention, NonDynamicallyQuantizableLinear
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell
from .sparse import Embedding
from .transformer import (
    GELU,
    LayerNorm,
    RMSNorm,
    Softmax,
    Softmin,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "GELU",
    "GRU",
    "LSTM",
    "RNN",
    "Embedding",
    "GRUCell",
    "LSTMCell",
    "LayerNorm",
    "MultiheadAttention",
    "NonDynamicallyQuantizableLinear",
    "RMSNorm",
    "RNNBase",
    "RNNCell",
    "Softmax",
    "Softmin",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]
