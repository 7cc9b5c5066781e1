"""Neural-network building blocks: ``Block``/``Sequential``, ``Parameter``, layers and ``init``.

The API is PyTorch's ``torch.nn`` (names, parameter names, printing), written once for every
backend.
"""

from . import functional, init, utils
from .conv import Conv1d, Conv2d, ConvTranspose2d, LazyConv2d
from .layers import Dropout, Flatten, LazyLinear, Linear, ReLU, Sigmoid, Tanh
from .losses import CrossEntropyLoss, MSELoss
from .module import Block, IncompatibleKeys, Module, Sequential
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    GroupNorm,
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    SyncBatchNorm,
)
from .parameter import Parameter, UninitializedParameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, Identity, MaxPool2d
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
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Block",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "GroupNorm",
    "Identity",
    "IncompatibleKeys",
    "LayerNorm",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyConv2d",
    "LazyLinear",
    "Linear",
    "MSELoss",
    "MaxPool2d",
    "Module",
    "MultiheadAttention",
    "NonDynamicallyQuantizableLinear",
    "Parameter",
    "RNNBase",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "SyncBatchNorm",
    "Tanh",
    "TransformerEncoderLayer",
    "UninitializedParameter",
    "functional",
    "init",
    "utils",
]
