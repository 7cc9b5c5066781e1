"""Neural-network building blocks: ``Block``/``Sequential``, ``Parameter``, layers and ``init``.

The API is PyTorch's ``torch.nn`` (names, parameter names, printing), written once for every
backend.
"""

from . import functional, init, utils
from .layers import Dropout, Flatten, LazyLinear, Linear, ReLU, Sigmoid, Tanh
from .losses import CrossEntropyLoss, MSELoss
from .module import Block, IncompatibleKeys, Module, Sequential
from .parameter import Parameter, UninitializedParameter
from .sequence_layers import (
    GELU,
    GRU,
    LSTM,
    RNN,
    Embedding,
    LayerNorm,
    MultiheadAttention,
    NonDynamicallyQuantizableLinear,
    RNNBase,
    Softmax,
    TransformerEncoderLayer,
)

__all__ = [
    "GELU",
    "GRU",
    "LSTM",
    "RNN",
    "Block",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "IncompatibleKeys",
    "LayerNorm",
    "LazyLinear",
    "Linear",
    "MSELoss",
    "Module",
    "MultiheadAttention",
    "NonDynamicallyQuantizableLinear",
    "Parameter",
    "RNNBase",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "TransformerEncoderLayer",
    "UninitializedParameter",
    "functional",
    "init",
    "utils",
]
