"""Neural-network building blocks: ``Block``/``Sequential``, ``Parameter``, layers and ``init``.

The API is PyTorch's ``torch.nn`` (names, parameter names, printing), written once for every
backend.
"""

from . import functional, init
from .layers import Dropout, Flatten, LazyLinear, Linear, ReLU, Sigmoid, Tanh
from .losses import CrossEntropyLoss, MSELoss
from .module import Block, IncompatibleKeys, Module, Sequential
from .parameter import Parameter, UninitializedParameter
from .sequence_layers import *  # noqa: F403
from .sequence_layers import __all__ as _sequence_all

__all__ = [
    "Block",
    "CrossEntropyLoss",
    "Dropout",
    "Flatten",
    "IncompatibleKeys",
    "LazyLinear",
    "Linear",
    "MSELoss",
    "Module",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Tanh",
    "UninitializedParameter",
    "functional",
    "init",
    *_sequence_all,
]
