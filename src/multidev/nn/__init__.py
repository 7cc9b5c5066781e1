"""Neural-network building blocks: ``Block``/``Sequential``, ``Parameter``, layers and ``init``.

The API is PyTorch's ``torch.nn`` (names, parameter names, printing), written once for every
backend.
"""

from . import functional, init, utils
from .activations import ELU, Hardtanh, LeakyReLU, LogSigmoid, SiLU, Softplus
from .conv import Conv1d, Conv2d, ConvTranspose2d, LazyConv2d
from .layers import Dropout, Flatten, LazyLinear, Linear, LogSoftmax, ReLU, Sigmoid, Tanh
from .losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Block, IncompatibleKeys, Module, ModuleDict, ModuleList, Sequential
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
    "ELU",
    "GELU",
    "GRU",
    "LSTM",
    "RNN",
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
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
    "Hardtanh",
    "HuberLoss",
    "Identity",
    "IncompatibleKeys",
    "KLDivLoss",
    "L1Loss",
    "LayerNorm",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyConv2d",
    "LazyLinear",
    "LeakyReLU",
    "Linear",
    "LogSigmoid",
    "LogSoftmax",
    "MSELoss",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "NLLLoss",
    "NonDynamicallyQuantizableLinear",
    "Parameter",
    "RNNBase",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "SyncBatchNorm",
    "Tanh",
    "TransformerEncoderLayer",
    "UninitializedParameter",
    "functional",
    "init",
    "utils",
]
