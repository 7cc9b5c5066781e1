"""Optimisers and learning-rate schedules with PyTorch's rules and state-dict layout:
``md.optim.SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``, ``Adadelta`` and ``md.optim.lr_scheduler``."""

from . import lr_scheduler
from .optimizer import SGD, Adadelta, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
